"""SIGKILL inside a write's pre-commit audit (``hoodie.precommit.validators``).

A writer killed before the audit's queries run, or after they ran and before the verdict is
acted on, leaves an inflight instant whose files are written: hudi-rs and ``read_hudi`` read
exactly the last committed rows, the metadata table holds nothing of it, and the next writer
rolls it back and commits; no file of the killed instant is left behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from tests.faults.harness import (
    Rows,
    assert_no_orphans,
    assert_reads,
    pending_writes,
    run_writer,
)
from tests.faults.writer import SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.interop]

BASE = {
    "hoodie.table.name": "audit_faults",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}
AUDITED = {
    "hoodie.precommit.validators": "org.apache.hudi.client.validator."
    "SqlQuerySingleResultPreCommitValidator",
    "hoodie.precommit.validators.single.value.sql.queries": "select count(*) from <TABLE_NAME>#4",
}
Row = tuple[str, str, int, str]


def _write(spark: Any, path: str, rows: list[Row], state: Rows, options: dict[str, str]) -> Rows:
    write_hudi(spark.createDataFrame(rows, SCHEMA), path, options)
    return {**state, **{rid: (dt, ts, v) for rid, dt, ts, v in rows}}


@pytest.mark.parametrize(
    ("point", "table"),
    [
        pytest.param(  # the same kill an instant earlier, on the simplest table: long only
            "audit.before_queries", {"hoodie.write.table.version": "6"}, marks=pytest.mark.long
        ),
        (
            "audit.after_queries",
            {
                "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                "hoodie.write.table.version": "9",
                "hoodie.metadata.enable": "true",
            },
        ),
    ],
    ids=["cow-v6-before-queries", "mor-v9-after-queries"],
)
def test_kill_inside_the_audit_then_next_write_rolls_it_back(
    spark: Any, tmp_path: Path, point: str, table: dict[str, str]
) -> None:
    path = str(tmp_path / "t")
    options = {**BASE, **table}
    state = _write(spark, path, [("k1", "d1", 1, "a"), ("k2", "d2", 1, "b")], {}, options)
    state = _write(spark, path, [("k1", "d1", 2, "a2"), ("k3", "d1", 2, "c")], state, options)
    batch = [["k1", "d1", 3, "killed"], ["k4", "d2", 3, "killed"]]
    step = {"kind": "write", "rows": batch, "options": {**options, **AUDITED}}
    killed, output = run_writer(path, tmp_path / "w", [step], point)
    assert killed, output
    (failed,) = pending_writes(path)
    assert list(Path(path).rglob(f"*{failed}*.parquet")) or list(Path(path).rglob(".*.log.*"))
    assert_reads(spark, path, state, f"a kill at {point}")
    metadata = Path(path, ".hoodie", "metadata")
    if metadata.exists():
        assert not list(metadata.rglob(f"{failed}*"))

    state = _write(spark, path, [("k5", "d1", 4, "e")], state, {**options, **AUDITED})
    assert_reads(spark, path, state, "the next audited write")
    assert not pending_writes(path)
    assert_no_orphans(path)
