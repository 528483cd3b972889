"""Tables the CLI tests inspect, written once per test run by the engine on the shared session.

* ``cow_table``: copy-on-write, partitioned by ``dt``: an insert of 3,000 rows over two
  partitions, then an upsert (updates and deletes) — a healthy table.
* ``mor_table``: merge-on-read, an insert and two upserts — log files, no compaction due.

Both are read-only for the tests (copy before changing one).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from tests.keyed_table import SCHEMA, write_options

MERGE_ON_READ = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
DELETE = {"hoodie.datasource.write.operation": "delete"}


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``dbt-hudi ARGV`` in process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def cli_json(*argv: str) -> Any:
    status, out, err = run_cli(*argv, "--json")
    assert status in (0, 1), err
    return json.loads(out)


def rows(
    n: int, start: int = 0, ts: int = 1, parts: Sequence[str] = ("2024-01-01", "2024-01-02")
) -> list[tuple[Any, ...]]:
    return [(f"k{i:05d}", parts[i % len(parts)], ts, f"v{i}-{ts}") for i in range(start, start + n)]


@pytest.fixture(scope="session")
def cow_table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine import write_hudi

    path = tmp_path_factory.mktemp("cli") / "cow"
    write_hudi(spark.createDataFrame(rows(3000), SCHEMA), str(path), write_options("cow"))
    changed = rows(40, ts=2)
    write_hudi(spark.createDataFrame(changed, SCHEMA), str(path), write_options("cow"))
    deleted = rows(5, start=100, ts=3)
    write_hudi(spark.createDataFrame(deleted, SCHEMA), str(path), write_options("cow", DELETE))
    return path


@pytest.fixture(scope="session")
def mor_table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine import write_hudi

    path = tmp_path_factory.mktemp("cli") / "mor"
    opts = write_options("mor", MERGE_ON_READ)
    write_hudi(spark.createDataFrame(rows(200), SCHEMA), str(path), opts)
    write_hudi(spark.createDataFrame(rows(30, ts=2), SCHEMA), str(path), opts)
    write_hudi(spark.createDataFrame(rows(20, start=10, ts=3), SCHEMA), str(path), opts)
    return path
