"""The global simple index: a key that arrives with a new partition value.

``hoodie.index.type=GLOBAL_SIMPLE``: with ``hoodie.simple.index.update.partition.path`` on (Hudi's
default) the key leaves its old partition and lives in the new one; off, the record is updated
in place in its old partition. Deletes find the key wherever it lives. SIMPLE (the default)
keeps one record per key and partition, as Hudi's does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import read_hudi, write_hudi
from engine.errors import ConfigError, RecordKeyError
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

pytestmark = [pytest.mark.spark, pytest.mark.interop]

GLOBAL = {"hoodie.index.type": "GLOBAL_SIMPLE"}
IN_PLACE = {**GLOBAL, "hoodie.simple.index.update.partition.path": "false"}


def _state(path: Path) -> list[tuple[str, str, str, int, str]]:
    """(key, partition path, dt, ts, v) of every row hudi-rs reads."""
    return sorted(
        (r["id"], r["_hoodie_partition_path"], r["dt"], r["ts"], r["v"]) for r in hudi_rs_rows(path)
    )


def _write(spark: Any, path: Path, rows: list[tuple[Any, ...]], opts: dict[str, Any]) -> None:
    write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), opts)


def test_global_index_moves_updates_in_place_and_deletes_anywhere(
    spark: Any, tmp_path: Path
) -> None:
    """Merge-on-read (the property test draws both table types): a move leaves the key in the
    old base file until compaction, which the lookup must not take for the live copy."""
    path = tmp_path / "t"
    base = write_options("glob", {"hoodie.datasource.write.table.type": "MERGE_ON_READ"})
    _write(spark, path, [("a", "p1", 1, "a1"), ("b", "p1", 1, "b1"), ("c", "p2", 1, "c1")], base)
    # flag on: a moves to p2 (deleted from p1), b is updated in p1
    _write(spark, path, [("a", "p2", 2, "a2"), ("b", "p1", 2, "b2")], {**base, **GLOBAL})
    assert _state(path) == [
        ("a", "p2", "p2", 2, "a2"),
        ("b", "p1", "p1", 2, "b2"),
        ("c", "p2", "p2", 1, "c1"),
    ]
    # merge-on-read: p1's base file still holds the moved key (its log deleted it); the live
    # copy is found, never the stale one
    _write(spark, path, [("a", "p2", 5, "a5")], {**base, **GLOBAL})
    _write(spark, path, [("a", "p7", 6, "a6")], {**base, **IN_PLACE})
    assert [(k, p, v) for k, p, _, _, v in _state(path) if k == "a"] == [("a", "p2", "a6")]
    # flag off: c arrives in p3 and is updated where it lives (p2)
    _write(spark, path, [("c", "p3", 3, "c3")], {**base, **IN_PLACE})
    assert ("c", "p2", "p3", 3, "c3") in _state(path)
    # a delete naming another partition finds the key where it lives
    _write(
        spark,
        path,
        [("a", "p9", 9, "x")],
        {**base, **GLOBAL, "hoodie.datasource.write.operation": "delete"},
    )
    assert [k for k, *_ in _state(path)] == ["b", "c"]
    spark_rows = read_hudi(spark, str(path)).collect()
    assert sorted((r["id"], r["_hoodie_partition_path"], r["v"]) for r in spark_rows) == [
        ("b", "p1", "b2"),
        ("c", "p2", "c3"),
    ]
    # the default SIMPLE index keys records by (key, partition): a moved key is a new record
    _write(spark, path, [("b", "p2", 4, "b4")], base)
    assert [k for k, *_ in _state(path)] == ["b", "b", "c"]


def test_global_index_refusals(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    base = write_options("glob")
    _write(spark, path, [("a", "p1", 1, "a1")], base)
    before = _state(path)
    with pytest.raises(RecordKeyError, match="'a' arrives in partitions 'p1' and 'p2'"):
        _write(spark, path, [("a", "p1", 2, "x"), ("a", "p2", 3, "y")], {**base, **GLOBAL})
    default_payload = {"hoodie.datasource.write.payload.class": "DefaultHoodieRecordPayload"}
    with pytest.raises(ConfigError, match=r"update\.partition\.path=false"):
        _write(spark, tmp_path / "u", [("a", "p2", 2, "x")], {**base, **GLOBAL, **default_payload})
    assert not (tmp_path / "u" / ".hoodie").exists()
    with pytest.raises(ConfigError, match="'HBASE'"):
        _write(spark, path, [("a", "p2", 2, "x")], {**base, "hoodie.index.type": "HBASE"})
    assert _state(path) == before


def test_global_index_without_partitions_takes_any_payload(spark: Any, tmp_path: Path) -> None:
    """No record of a table without partitions moves, so the payload's merge is the upsert's
    (Apache Hudi 1.1 creates version 6 tables with DefaultHoodieRecordPayload)."""
    path = tmp_path / "t"
    opts = {
        "hoodie.table.name": "glob_np",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.payload.class": "DefaultHoodieRecordPayload",
        **GLOBAL,
    }
    _write(spark, path, [("a", "p1", 2, "a2"), ("b", "p1", 1, "b1")], opts)
    _write(spark, path, [("a", "p1", 1, "older"), ("b", "p1", 3, "b3")], opts)
    rows = {r["id"]: r["v"] for r in hudi_rs_rows(path)}
    assert rows == {"a": "a2", "b": "b3"}  # event time: the older ts does not win
