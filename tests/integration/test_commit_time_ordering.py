"""Merge-on-read under commit-time ordering: the latest write of a key wins, whatever its ordering
value says.

``hoodie.record.merge.mode=COMMIT_TIME_ORDERING`` (table versions 8 and 9), and its version 6
analogue ``OverwriteWithLatestAvroPayload``: Hudi 1.x's file group reader merges with
``BufferedRecordMergerFactory.CommitTimeRecordMerger`` (a later log record or delete replaces the
earlier one, the log record replaces the base row), and hudi-rs 0.5.0 does the same. Each case
writes a few one-row commits with ordering values that go down, and the snapshot (Arrow and
Spark readers), a compaction of the slice and hudi-rs must all read the latest write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import SparkRunner, config, read_hudi, write_hudi
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.services.compaction import execute_compaction, schedule_compaction
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

# the subject is the order merges keep, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.interop, pytest.mark.driver_writes]

OVERWRITE = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
Step = tuple[str, int, str | None]  # operation, ts, v
_SCHEMA = f"{SCHEMA}, _hoodie_is_deleted boolean"


def _options(version: str, payload: str, bulk: bool) -> dict[str, Any]:
    return write_options(
        "ct",
        {
            "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.index.type": "SIMPLE",
            "hoodie.write.table.version": version,
            "hoodie.datasource.write.payload.class": payload,
            # the first commit's operation (either writes the slice's base file); later ones
            # append log blocks to that slice
            "hoodie.datasource.write.operation": "bulk_insert" if bulk else "upsert",
        },
    )


def _write(spark: Any, path: Path, options: dict[str, Any], steps: list[Step]) -> None:
    """The first step writes with the options' operation; ``soft_delete`` upserts the row with
    ``_hoodie_is_deleted`` true, ``delete`` deletes the key (a delete block)."""
    key = "hoodie.datasource.write.operation"
    for k, (operation, ts, v) in enumerate(steps):
        df = spark.createDataFrame([("a", "p1", ts, v, operation == "soft_delete")], _SCHEMA)
        op = options[key] if k == 0 else operation.replace("soft_delete", "upsert")
        write_hudi(df, str(path), {**options, key: op})


def _rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["ts"], r["v"]) for r in rows)


def _all_readers_agree(spark: Any, path: Path, expected: list[tuple[Any, ...]]) -> None:
    """hudi-rs, the Arrow and Spark readers, then (after compacting) hudi-rs again."""
    assert _rows(hudi_rs_rows(path)) == expected, "hudi-rs"
    assert _rows(read_table(str(path)).to_pylist()) == expected, "read_table"
    assert _rows([r.asDict() for r in read_hudi(spark, str(path)).collect()]) == expected
    storage = Storage(str(path))
    instant = schedule_compaction(storage, config.parse_options({}), force=True)
    assert instant is not None
    execute_compaction(storage, instant, runner=SparkRunner().compact)
    assert _rows(hudi_rs_rows(path)) == expected, "hudi-rs after compaction"
    assert _rows(read_table(str(path)).to_pylist()) == expected, "read_table after compaction"


CASES = {
    # log records of one slice: ts 1, 2, then 0 -> the last one
    "log-log": (
        False, [("upsert", 1, "x"), ("upsert", 2, "y"), ("upsert", 0, "z")], [("a", 0, "z")]
    ),
    # a log record with a smaller ordering value than the base row replaces it
    "base-log": (True, [("upsert", 5, "x"), ("upsert", 1, "y")], [("a", 1, "y")]),
    # a later delete (soft, with an ordering value) wins over a greater log record
    "log-delete": (False, [("upsert", 1, "x"), ("upsert", 5, "y"), ("soft_delete", 2, "d")], []),
    # a later delete by key (a delete block record) wins over a greater log record
    "log-hard-delete": (False, [("upsert", 1, "x"), ("upsert", 5, "y"), ("delete", 2, "d")], []),
    # a record after a delete comes back, whatever its ordering value
    "delete-then-record": (
        True, [("upsert", 5, "x"), ("delete", 9, "d"), ("upsert", 1, "z")], [("a", 1, "z")]
    ),
}  # fmt: skip
# the two slices of log records on versions 6, 8 and 9 (6 and 9 for the delete); the cases that
# Java 0.14's rules already read right on version 9 only
VERSIONS = {"log-log": ("6", "8", "9"), "log-delete": ("6", "9")}
PARAMS = [(case, version) for case in CASES for version in VERSIONS.get(case, ("9",))]


@pytest.mark.parametrize(("case", "version"), PARAMS)
def test_commit_time_ordering_latest_write_wins(
    spark: Any, tmp_path: Path, case: str, version: str
) -> None:
    """Version 8/9 tables say COMMIT_TIME_ORDERING; version 6 keeps OverwriteWithLatest."""
    bulk, steps, expected = CASES[case]
    path = tmp_path / "t"
    options = _options(version, OVERWRITE, bulk)
    _write(spark, path, options, steps)
    assert _commit_time_mode(path, version)
    _all_readers_agree(spark, path, expected)


def _commit_time_mode(path: Path, version: str) -> bool:
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    if version == "6":
        return "payload.class=" + OVERWRITE in props.replace("\\", "")
    return "hoodie.record.merge.mode=COMMIT_TIME_ORDERING" in props


@pytest.mark.parametrize("version", ["9"])
def test_event_time_ordering_greater_log_record_still_wins(
    spark: Any, tmp_path: Path, version: str
) -> None:
    """Event-time ordering is unchanged: among log records the greatest ordering value wins, and
    a log record smaller than the base row leaves it."""
    path = tmp_path / "t"
    options = _options(version, DEFAULT, True)
    steps = [("upsert", 5, "x"), ("upsert", 3, "y"), ("upsert", 7, "z"), ("upsert", 6, "w")]
    _write(spark, path, options, steps)
    _all_readers_agree(spark, path, [("a", 7, "z")])


def test_commit_time_partial_update_fills_from_earlier_log_records(
    spark: Any, tmp_path: Path
) -> None:
    """Version 9 OverwriteNonDefaults (COMMIT_TIME_ORDERING, partial update mode
    IGNORE_DEFAULTS): the latest log record wins, its null fields filled from the key's earlier
    log record (Hudi 1.1's ``CommitTimePartialRecordMerger.deltaMerge``), not from the base row."""
    path = tmp_path / "t"
    payload = "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload"
    options = _options("9", payload, True)
    _write(spark, path, options, [("upsert", 5, "b"), ("upsert", 3, "x"), ("upsert", 1, None)])
    _all_readers_agree(spark, path, [("a", 1, "x")])
