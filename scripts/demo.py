"""`make demo`: start the embedded Spark and show what the package provides."""

from __future__ import annotations

import tempfile

import engine
from engine.spark.session import local_session


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="dbt-hudi-demo-") as work:
        spark = local_session(work, app_name="dbt-hudi-demo")
        print(f"dbt-hudi {engine.__version__} on Spark {spark.version}")
        spark.stop()


if __name__ == "__main__":
    main()
