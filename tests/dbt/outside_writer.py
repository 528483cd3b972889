"""Another pipeline, in its own process: writes Hudi tables a dbt project built, through the
engine alone (no dbt, no catalog), as a streaming job or Apache Hudi's own writers would.

Usage: ``python -m tests.dbt.outside_writer SPEC_JSON`` with ``{"work": dir, "writes": [{"path",
"schema", "rows", "options"}, ...]}``; the writes run in order, each one a commit.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    from engine import config, write_hudi
    from engine.spark.local_runner import LONG_MAX
    from engine.spark.session import local_session

    spark = local_session(spec["work"], master="local[1]", extra_conf={"spark.driver.memory": "1g"})
    for write in spec["writes"]:
        rows = [tuple(r) for r in write["rows"]]
        # a few rows, written in the driver as a pipeline's small batch is (rows made in Python
        # are a batch Spark cannot size, which would otherwise go to Spark's tasks)
        options = {config.WRITE_LOCAL_MAX_BYTES.key: str(LONG_MAX), **write["options"]}
        write_hudi(spark.createDataFrame(rows, write["schema"]), write["path"], options)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
