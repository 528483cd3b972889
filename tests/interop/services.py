"""What the table-service tests share: the keyed table with services run only when asked, its
rows by key through hudi-rs and through ``read_hudi``, and the CLI with its output captured."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from engine import read_hudi, write_hudi
from engine.cli import main as cli_main
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

Rows = list[tuple[str, str, int, str]]


def service_options(table_name: str) -> dict[str, Any]:
    """Write options with automatic cleaning and archival off: each test runs them itself."""
    return write_options(
        table_name, {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}
    )


def write(spark: Any, path: Path, rows: Rows, options: dict[str, Any]) -> str:
    """Write ``rows`` (id, dt, ts, v); returns the instant time."""
    return write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), options).instant_time


def rows_by_id(path: Path, as_of: str | None = None) -> dict[str, str]:
    """id -> v as hudi-rs reads the table (as of ``as_of``)."""
    return {r["id"]: r["v"] for r in hudi_rs_rows(path, as_of)}


def spark_rows_by_id(spark: Any, path: Path) -> dict[str, str]:
    """id -> v as ``read_hudi`` reads the table."""
    return {r["id"]: r["v"] for r in read_hudi(spark, str(path)).collect()}


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``python -m engine.cli ARGV`` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(list(argv))
    return code, out.getvalue(), err.getvalue()
