"""Keyless tables: writes without a record key field get Hudi's auto-generated keys.

The keys are ``<instant_time>_<spark partition id>_<row index>``, unique in the table, nothing
about them is persisted (no ``hoodie.table.recordkey.fields``), and hudi-rs reads the rows back.
What Hudi refuses with auto-generated keys (operations that need keys, combining, dropping
duplicates, virtual keys, keying a keyless table later) fails before anything is written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from engine import read_hudi, write_hudi
from engine.errors import ConfigError
from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from engine.model.auto_keys import auto_record_key
from tests.hudi_rs import hudi_rs_rows

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SCHEMA = "dt string, ts long, v string"
KEY = re.compile(r"^(\d{17})_(\d+)_(\d+)$")


def _options(**extra: Any) -> dict[str, Any]:
    return {
        "hoodie.table.name": "keyless",
        "hoodie.datasource.write.partitionpath.field": "dt",
        **extra,
    }


def _rows(n: int, dt: str = "p1") -> list[tuple[Any, ...]]:
    return [(dt if i % 3 else "p2", i, f"v{i}") for i in range(n)]


def _commits(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie").iterdir() if "." in p.name and p.is_file())


def _assert_auto_keys(rows: list[dict[str, Any]]) -> None:
    """Every key has Hudi's shape, names its commit, and is unique."""
    keys = [r["_hoodie_record_key"] for r in rows]
    assert len(set(keys)) == len(keys)
    for row in rows:
        match = KEY.match(row["_hoodie_record_key"])
        assert match, row
        assert match.group(1) == row["_hoodie_commit_time"]
        partition, index = int(match.group(2)), int(match.group(3))
        assert row["_hoodie_record_key"] == auto_record_key(match.group(1), partition, index)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_keyless_bulk_insert_then_insert_hudi_rs_reads_every_row(
    spark: Any, tmp_path: Path, table_type: str
) -> None:
    path = tmp_path / "t"
    opts = _options(**{"hoodie.datasource.write.table.type": table_type})
    df = spark.createDataFrame(_rows(7), SCHEMA).repartition(2)
    first = write_hudi(df, str(path), opts)  # no operation given: bulk_insert, as Hudi deduces
    assert first.operation.value == "bulk_insert"
    props = read_properties(Storage(str(path)))
    assert "hoodie.table.recordkey.fields" not in props
    assert props["hoodie.table.keygenerator.class"] == "org.apache.hudi.keygen.SimpleKeyGenerator"
    second = write_hudi(
        spark.createDataFrame(_rows(5, "p3"), SCHEMA),
        str(path),
        {**opts, "hoodie.datasource.write.operation": "insert"},
    )
    rows = hudi_rs_rows(path)
    assert len(rows) == 12
    _assert_auto_keys(rows)
    assert {r["_hoodie_commit_time"] for r in rows} == {first.instant_time, second.instant_time}
    # the row indexes of one Spark partition run 0, 1, 2... with no gap
    by_task: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        instant, task, index = KEY.match(r["_hoodie_record_key"]).groups()  # type: ignore[union-attr]
        by_task.setdefault((instant, task), []).append(int(index))
    assert all(sorted(ix) == list(range(len(ix))) for ix in by_task.values())
    assert len({t for (i, t) in by_task if i == first.instant_time}) == 2  # two Spark partitions
    expected = sorted((d, ts, v) for d, ts, v in _rows(7) + _rows(5, "p3"))
    assert sorted((r["dt"], r["ts"], r["v"]) for r in rows) == expected
    spark_rows = read_hudi(spark, str(path)).collect()
    assert sorted(r["_hoodie_record_key"] for r in spark_rows) == sorted(
        r["_hoodie_record_key"] for r in rows
    )


def test_keyless_insert_overwrite_replaces_partitions_non_partitioned_table(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    opts = {"hoodie.table.name": "keyless_np"}
    write_hudi(spark.createDataFrame(_rows(4), SCHEMA), str(path), opts)
    props = read_properties(Storage(str(path)))
    assert props["hoodie.table.keygenerator.class"].endswith("NonpartitionedKeyGenerator")
    over = write_hudi(
        spark.createDataFrame(_rows(3, "p9"), SCHEMA),
        str(path),
        {**opts, "hoodie.datasource.write.operation": "insert_overwrite_table"},
    )
    rows = hudi_rs_rows(path)
    assert sorted(r["v"] for r in rows) == ["v0", "v1", "v2"]
    assert {r["_hoodie_commit_time"] for r in rows} == {over.instant_time}
    _assert_auto_keys(rows)


REFUSED = [
    ({"hoodie.datasource.write.operation": "upsert"}, "'upsert' needs record keys"),
    ({"hoodie.datasource.write.operation": "delete"}, "'delete' needs record keys"),
    ({"hoodie.combine.before.insert": "true"}, "hoodie.combine.before.insert"),
    (
        {"hoodie.datasource.write.insert.drop.duplicates": "true"},
        "hoodie.datasource.write.insert.drop.duplicates",
    ),
    ({"hoodie.populate.meta.fields": "false"}, "Disabling 'hoodie.populate.meta.fields'"),
    ({"hoodie.datasource.write.recordkey.field": "v"}, "has auto-generated record keys"),
    ({"hoodie.index.type": "BUCKET"}, "hoodie.index.type=BUCKET needs record keys to hash"),
]


def test_keyless_refusals_leave_the_table_untouched(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_hudi(spark.createDataFrame(_rows(3), SCHEMA), str(path), _options())
    before = _commits(path)
    df = spark.createDataFrame(_rows(2), SCHEMA)
    for extra, words in REFUSED:
        with pytest.raises(ConfigError, match=re.escape(words)):
            write_hudi(df, str(path), _options(**extra))
        assert _commits(path) == before, extra
    assert len(hudi_rs_rows(path)) == 3


def test_keyed_table_cannot_drop_its_keys(spark: Any, tmp_path: Path) -> None:
    """A keyed table keeps its persisted record key: a write without one is keyed by it."""
    path = tmp_path / "t"
    keyed = _options(**{"hoodie.datasource.write.recordkey.field": "v"})
    write_hudi(spark.createDataFrame(_rows(3), SCHEMA), str(path), keyed)
    write_hudi(spark.createDataFrame([("p1", 9, "v1")], SCHEMA), str(path), _options())
    rows = hudi_rs_rows(path)
    assert sorted(r["_hoodie_record_key"] for r in rows) == ["v0", "v1", "v2"]
    assert [r["ts"] for r in rows if r["v"] == "v1"] == [9]
