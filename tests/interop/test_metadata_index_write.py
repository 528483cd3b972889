"""The ``record_index`` and ``column_stats`` partitions kept by our writer, judged by the rows.

A version 9 table written with both partitions on goes through inserts, upserts, a delete, a
clean and metadata compactions (every two deltacommits; merge-on-read also compacts the data
table). After every write hudi-rs and the engine's reader return the model's rows, the record
index maps exactly the read rows' keys to their file groups, and every latest base file has its
column stats. A selective filter on a non-partition column then reads fewer files with the stats
than without, with the same rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import read_hudi, spark_table, write_hudi
from engine.errors import QueryError
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.read.filter import ReadFilter
from engine.read.plan import parse_read_query, plan_query
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_rows
from tests.interop.index_partitions import column_stats_match_files, record_index_matches_rows
from tests.interop.test_metadata_write import (
    COLUMNS,
    FIELDS,
    SCHEMA,
    _identity,
    _props,
    listing_matches_storage,
    options,
)
from tests.property.oracle import DEFAULT, Oracle, actual_set

# the subject is the metadata table's index partitions, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.driver_writes]

INDEXES = {
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.record.index.min.filegroup.count": 3,
    "hoodie.metadata.record.index.max.filegroup.count": 3,
    "hoodie.metadata.compact.max.delta.commits": 2,
    "hoodie.cleaner.commits.retained": 1,
    "hoodie.compact.inline": "true",
    "hoodie.compact.inline.max.delta.commits": 2,
}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_index_partitions_follow_every_write(spark: Any, tmp_path: Path, table_type: str) -> None:
    path = str(tmp_path / "t")
    oracle = Oracle(DEFAULT, "ts", _identity, FIELDS)
    opts = options(table_type, 9, **INDEXES)

    steps: list[tuple[str, list[tuple[Any, ...]]]] = [
        ("insert", [(i, "eu" if i % 2 else "us", 1, f"a{i}") for i in range(6)]),
        ("upsert", [(1, "eu", 2, "b1"), (10, "ap", 1, "c")]),
        ("upsert", [(2, "us", 2, "b2"), (11, "ap", 1, "d")]),
        ("delete", [(3, "eu", 3, "x")]),
        ("upsert", [(12, "eu", 1, "e"), (1, "eu", 3, "b3")]),
    ]
    for operation, rows in steps:
        write_opts = {**opts, "hoodie.datasource.write.operation": operation}
        result = write_hudi(spark.createDataFrame(rows, SCHEMA), path, write_opts)
        batch = [dict(zip(FIELDS, r, strict=True)) for r in rows]
        oracle.apply(batch, operation, result.instant_time)
        for read in (hudi_rs_rows(path), read_table(path).to_pylist()):
            assert actual_set(read, COLUMNS) == oracle.expected(COLUMNS), operation
        listing_matches_storage(path)
        record_index_matches_rows(path)
        column_stats_match_files(path)
    props = _props(path)
    assert props["hoodie.table.metadata.partitions"] == "column_stats,files,record_index"
    defs = json.loads(Path(path, props["hoodie.table.index.defs.path"]).read_text())
    assert set(defs["indexDefinitions"]) == {"column_stats", "record_index"}
    mdt = Storage(path).child(".hoodie/metadata")
    assert Timeline.load(mdt).completed([Action.COMMIT])  # the metadata table compacted
    groups = sorted(p.name for p in Path(path, ".hoodie/metadata/record_index").glob("*.hfile"))
    assert {g.split("_")[0] for g in groups} == {f"record-index-000{i}-0" for i in range(3)}


def test_selective_filter_reads_fewer_files(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = options("COPY_ON_WRITE", 9, **INDEXES)
    for batch in range(3):  # three base files in one partition, disjoint ts ranges
        rows = [(batch * 10 + i, "eu", batch * 100 + i, f"v{i}") for i in range(3)]
        frame = spark.createDataFrame(rows, SCHEMA).coalesce(1)  # one base file each
        write_hudi(frame, path, {**opts, "hoodie.datasource.write.operation": "bulk_insert"})
    filters = [ReadFilter("ts", ">=", 200)]
    storage = Storage(path)
    skipping = plan_query(storage, parse_read_query({}, filters))
    no_skipping = {"hoodie.enable.data.skipping": "false"}
    every = plan_query(storage, parse_read_query(no_skipping, filters))
    assert (skipping.files_read, every.files_read) == (1, 3)
    rows = read_table(path, {}, filters).to_pylist()
    assert sorted(r["id"] for r in rows) == [20, 21, 22]
    # Spark's reader plans with the same filters: the table's own count of files opened
    table = spark_table(path, spark)
    assert table.plan_read({}, filters).files_read == 1
    assert table.plan_read(no_skipping, filters).files_read == 3
    narrow = [ReadFilter("ts", ">=", 200), ReadFilter("ts", "<", 202)]
    for query, expected in ((filters, [20, 21, 22]), (narrow, [20, 21])):
        frame = read_hudi(spark, path, {}, query)
        assert sorted(r["id"] for r in frame.collect()) == expected, query
    # every operator keeps the rows the Arrow reader keeps
    for f in [
        ReadFilter("ts", "=", 101),
        ReadFilter("ts", "!=", 101),
        ReadFilter("ts", "<=", 101),
        ReadFilter("ts", ">", 101),
        ReadFilter("v", "IN", ("v0", "v2")),
        ReadFilter("v", "NOT IN", ("v0", "v2")),
    ]:
        ids = sorted(r["id"] for r in read_hudi(spark, path, {}, [f]).collect())
        assert ids == sorted(r["id"] for r in read_table(path, {}, [f]).to_pylist()), f
    with pytest.raises(QueryError, match="'nope'"):
        read_hudi(spark, path, {}, [ReadFilter("nope", "=", 1)])


@pytest.mark.parametrize(("version", "typed"), [(8, False), (9, True)])
def test_column_stats_index_version_follows_the_table_version(
    spark: Any, tmp_path: Path, version: int, typed: bool
) -> None:
    """Hudi 1.1 writes column stats of index version V1 on table version 8 (no ``valueType``)
    and V2 on 9, and refuses to merge ranges of two value types: every record of a table
    carries its version's kind, initialization and later writes alike."""
    from engine.metadata.column_stats import read_column_stats

    path = str(tmp_path / "t")
    opts = options("COPY_ON_WRITE", version, **INDEXES)
    for ts, operation in ((1, "bulk_insert"), (2, "upsert")):
        rows = [(i, "eu" if i % 2 else "us", ts, f"v{ts}") for i in range(4)]
        write_opts = {**opts, "hoodie.datasource.write.operation": operation}
        write_hudi(spark.createDataFrame(rows, SCHEMA), path, write_opts)
    storage = Storage(path)
    stats = read_column_stats(storage, Timeline.load(storage))
    assert stats, "the column_stats partition is written"
    kinds = {s.value_type is not None for by_column in stats.values() for s in by_column.values()}
    assert kinds == {typed}
    assert all("v" in by_column and "ts" in by_column for by_column in stats.values())
