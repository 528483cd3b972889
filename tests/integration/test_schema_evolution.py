"""Evolved tables written and read end to end: the two reported bugs, widenings refused for the
values the table holds, and the readers on old files and old log blocks (snapshot,
read-optimized, time travel before the change, incremental across it, the CLI), compaction of a
slice whose base file and log blocks differ in schema.

hudi-rs 0.5 answers time travel with the table's latest schema (the old rows promoted, new
columns null); the engine's readers return the schema of the instant. Both hold the same values.
hudi-rs 0.5 cannot merge a log record whose block lacks a column added since when another of its
columns was widened since (it takes the record for a partial update and requires the table's
type): that exact error is asserted, and hudi-rs judges the table once compacted.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import SparkRunner, config, read_hudi, write_hudi
from engine.cli import main as cli_main
from engine.errors import SchemaEvolutionError
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.services.compaction import execute_compaction, schedule_compaction
from engine.table import HudiTable
from tests.hudi_rs import hudi_rs_batches, hudi_rs_rows
from tests.keyed_table import write_options

# the subject is the schema each write evolves to, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.interop, pytest.mark.driver_writes]

OLD = "id string, dt string, ts long, v int, f float, s struct<x:int>"
NEW = "id string, dt string, ts long, v bigint, f double, s struct<x:bigint,y:string>, n string"


HUDI_RS_OLD_LOG_RECORD = (
    "partial-update column 'v' has type Int32 but the table schema expects Int64"
)


def options(table_type: str, **extra: Any) -> dict[str, Any]:
    return write_options("evolve", {config.WRITE_TABLE_TYPE.key: table_type}, extra)


def files(path: Path) -> dict[str, int]:
    return {
        os.path.relpath(os.path.join(root, n), path): os.path.getsize(os.path.join(root, n))
        for root, _, names in os.walk(path)
        for n in names
    }


def rows_by_id(rows: list[dict[str, Any]], columns: list[str]) -> dict[str, tuple[Any, ...]]:
    return {r["id"]: tuple(r.get(c) for c in columns) for r in rows}


def test_bigint_into_int_column_widens_and_keeps_the_value(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    write_hudi(
        spark.createDataFrame([("a", "p", 1, 7)], "id string, dt string, ts long, v int"),
        path,
        options("COPY_ON_WRITE"),
    )
    big = spark.createDataFrame(
        [("b", "p", 2, 5_000_000_000)], "id string, dt string, ts long, v bigint"
    )
    write_hudi(big, path, options("COPY_ON_WRITE"))
    assert rows_by_id(hudi_rs_rows(path), ["v"]) == {"a": (7,), "b": (5_000_000_000,)}
    schema = HudiTable(path).schema()
    assert schema is not None and schema.field("v").type == pa.int64()


def test_double_into_float_column_widens_and_keeps_the_value(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    write_hudi(
        spark.createDataFrame([("a", "p", 1, 1.5)], "id string, dt string, ts long, f float"),
        path,
        options("COPY_ON_WRITE"),
    )
    write_hudi(
        spark.createDataFrame([("b", "q", 2, 0.1)], "id string, dt string, ts long, f double"),
        path,
        options("COPY_ON_WRITE"),
    )
    assert rows_by_id(read_table(path).to_pylist(), ["f"]) == {"a": (1.5,), "b": (0.1,)}
    assert rows_by_id(hudi_rs_rows(path), ["f"]) == {"a": (1.5,), "b": (0.1,)}


@pytest.mark.parametrize(
    ("stored", "incoming", "value"),
    [("int", "float", 16_777_217), ("bigint", "double", 2**53 + 1)],
)
def test_widening_refused_when_a_stored_value_would_change(
    spark, tmp_path, stored: str, incoming: str, value: int
) -> None:  # type: ignore[no-untyped-def]
    """Avro lets float read int, double read long; not every value survives: the table's values
    are checked before the write is requested."""
    path = tmp_path / "t"
    first = spark.createDataFrame(
        [("a", "p", 1, value)], f"id string, dt string, ts long, v {stored}"
    )
    write_hudi(first, str(path), options("COPY_ON_WRITE"))
    before = files(path)
    batch = spark.createDataFrame(
        [("b", "q", 2, 0.5)], f"id string, dt string, ts long, v {incoming}"
    )
    with pytest.raises(SchemaEvolutionError, match=rf"'v'.*{value}"):
        write_hudi(batch, str(path), options("COPY_ON_WRITE"))
    assert files(path) == before


@pytest.mark.parametrize(
    ("stored", "incoming"), [("int", "float"), ("bigint", "float"), ("bigint", "double")]
)
def test_integer_widened_to_floating_point_reads_old_files(
    spark, tmp_path, stored: str, incoming: str
) -> None:  # type: ignore[no-untyped-def]
    """Spark's Parquet reader refuses these widenings of old files; read_hudi promotes them
    with the Arrow reader."""
    path = str(tmp_path / "t")
    first = spark.createDataFrame(
        [("a", "p", 1, 2**20)], f"id string, dt string, ts long, v {stored}"
    )
    write_hudi(first, path, options("COPY_ON_WRITE"))
    second = spark.createDataFrame(
        [("b", "q", 2, 0.5)], f"id string, dt string, ts long, v {incoming}"
    )
    write_hudi(second, path, options("COPY_ON_WRITE"))
    expected = {"a": (2.0**20,), "b": (0.5,)}
    spark_rows = [r.asDict() for r in read_hudi(spark, path).collect()]
    assert rows_by_id(spark_rows, ["v"]) == expected
    assert rows_by_id(read_table(path).to_pylist(), ["v"]) == expected
    assert rows_by_id(hudi_rs_rows(path), ["v"]) == expected


def test_narrower_batch_value_that_does_not_fit_is_refused(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    write_hudi(
        spark.createDataFrame([("a", "p", 1, 0.5)], "id string, dt string, ts long, f float"),
        str(path),
        options("MERGE_ON_READ"),
    )
    before = files(path)
    batch = spark.createDataFrame(
        [("a", "p", 2, 16_777_217)], "id string, dt string, ts long, f bigint"
    )
    with pytest.raises(SchemaEvolutionError, match=r"'f'.*16777217.*float"):
        write_hudi(batch, str(path), options("MERGE_ON_READ"))
    assert files(path) == before


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_readers_on_old_files_and_old_log_blocks(spark, tmp_path, table_type: str) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    opts = options(table_type)
    r1 = write_hudi(
        spark.createDataFrame([("a", "p", 1, 1, 1.5, (1,)), ("b", "q", 1, 2, 2.5, (2,))], OLD),
        path,
        opts,
    )
    r2 = write_hudi(
        spark.createDataFrame([("a", "p", 2, 3, 3.5, (3,))], OLD), path, opts
    )  # MOR: an old log block
    r3 = write_hudi(
        spark.createDataFrame([("c", "p", 3, 5_000_000_000, 0.1, (4, "y"), "n")], NEW), path, opts
    )
    columns = ["v", "f", "s", "n"]
    expected = {
        "a": (3, 3.5, {"x": 3, "y": None}, None),
        "b": (2, 2.5, {"x": 2, "y": None}, None),
        "c": (5_000_000_000, 0.1, {"x": 4, "y": "y"}, "n"),
    }
    spark_rows = [r.asDict(recursive=True) for r in read_hudi(spark, path).collect()]
    assert rows_by_id(read_table(path).to_pylist(), columns) == expected
    assert rows_by_id(spark_rows, columns) == expected
    arrow_schema = read_table(path).schema
    assert (
        arrow_schema.field("v").type == pa.int64() and arrow_schema.field("f").type == pa.float64()
    )
    mor = table_type == "MERGE_ON_READ"
    if mor:  # key a's latest version is an old log record (no s.y, no n; v int, f float)
        with pytest.raises(Exception, match=HUDI_RS_OLD_LOG_RECORD):
            hudi_rs_rows(path)
    else:
        assert rows_by_id(hudi_rs_rows(path), columns) == expected
        assert hudi_rs_batches(path)[0].schema.field("v").type == pa.int64()

    # time travel before the change: the schema of that instant
    as_of = {"as.of.instant": r2.instant_time}
    old = read_table(path, as_of)
    assert old.schema.field("v").type == pa.int32() and "n" not in old.column_names
    assert rows_by_id(old.to_pylist(), ["v", "f"]) == {"a": (3, 3.5), "b": (2, 2.5)}
    spark_old = read_hudi(spark, path, as_of)
    assert dict(spark_old.dtypes)["v"] == "int" and "n" not in spark_old.columns
    assert rows_by_id([r.asDict() for r in spark_old.collect()], ["v", "f"]) == {
        "a": (3, 3.5),
        "b": (2, 2.5),
    }
    if not mor:
        rs_old = hudi_rs_rows(path, r2.instant_time)
        assert rows_by_id(rs_old, ["v", "f"]) == {"a": (3, 3.5), "b": (2, 2.5)}
        # hudi-rs 0.5: the latest schema, old values promoted
        assert hudi_rs_batches(path, r2.instant_time)[0].schema.field("v").type == pa.int64()

    # incremental across the change: the current schema
    incremental = {
        config.QUERY_TYPE.key: "incremental",
        config.READ_BEGIN_INSTANTTIME.key: r1.instant_time,
    }
    changed = {"a": expected["a"], "c": expected["c"]}
    assert rows_by_id(read_table(path, incremental).to_pylist(), columns) == changed
    spark_incr = [r.asDict(recursive=True) for r in read_hudi(spark, path, incremental).collect()]
    assert rows_by_id(spark_incr, columns) == changed
    if not mor:
        rs_incr = hudi_rs_rows(path, incremental=(r1.instant_time, r3.instant_time))
        assert rows_by_id(rs_incr, columns) == changed

    # the CLI reads the evolved table as the Arrow reader does
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert cli_main(["read", path, "--columns", "id,v,n"]) == 0
    got = {json.loads(line)["id"]: json.loads(line)["v"] for line in buffer.getvalue().splitlines()}
    assert got == {"a": 3, "b": 2, "c": 5_000_000_000}

    if table_type == "MERGE_ON_READ":
        ro = read_table(path, {config.QUERY_TYPE.key: "read_optimized"})
        assert ro.schema.field("v").type == pa.int64()
        assert rows_by_id(ro.to_pylist(), ["v"]) == {"a": (1,), "b": (2,), "c": (5_000_000_000,)}
        assert rows_by_id(hudi_rs_rows(path, read_optimized=True), ["v"]) == {
            "a": (1,),
            "b": (2,),
            "c": (5_000_000_000,),
        }


def test_compaction_of_old_base_and_old_log_writes_the_current_schema(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    opts = options("MERGE_ON_READ")
    write_hudi(
        spark.createDataFrame([("a", "p", 1, 1, 1.5, (1,)), ("b", "p", 1, 2, 2.5, (2,))], OLD),
        path,
        opts,
    )
    write_hudi(spark.createDataFrame([("a", "p", 2, 3, 3.5, (3,))], OLD), path, opts)
    write_hudi(
        spark.createDataFrame([("b", "p", 3, 5_000_000_000, 0.1, (4, "y"), "n")], NEW), path, opts
    )
    storage = Storage(path)
    instant = schedule_compaction(storage, config.parse_options({}), force=True)
    assert instant is not None
    execute_compaction(storage, instant, runner=SparkRunner().compact)
    bases = list(Path(path, "p").glob(f"*_{instant}.parquet"))
    assert len(bases) == 1
    stored = pq.read_schema(bases[0])
    assert stored.field("v").type == pa.int64() and stored.field("f").type == pa.float64()
    assert stored.field("s").type == pa.struct([("x", pa.int64()), ("y", pa.string())])
    footer = json.loads(stored.metadata[b"parquet.avro.schema"])
    assert [f["name"] for f in footer["fields"]][-4:] == ["v", "f", "s", "n"]
    expected = {"a": (3, 3.5, None), "b": (5_000_000_000, 0.1, "n")}
    ro = read_table(path, {config.QUERY_TYPE.key: "read_optimized"}).to_pylist()
    assert rows_by_id(ro, ["v", "f", "n"]) == expected
    assert rows_by_id(hudi_rs_rows(path), ["v", "f", "n"]) == expected
