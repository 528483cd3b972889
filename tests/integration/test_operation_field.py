"""The ``_hoodie_operation`` meta column (``hoodie.allow.operation.metadata.field=true``) on
copy-on-write and merge-on-read tables: where it sits in base files and log blocks, the values
each write gives it against an oracle, what readers return, and hudi-rs reading the tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import read_hudi, write_hudi
from engine.errors import ConfigError
from engine.read.arrow import read_table
from tests.hudi_rs import hudi_rs_rows
from tests.integration.metafolder import instant_metadata
from tests.keyed_table import SCHEMA, write_options
from tests.unit.test_append import avro_records, parse_blocks

pytestmark = pytest.mark.spark

META = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
OPERATION = "_hoodie_operation"


def opts(table_type: str, operation: str = "upsert", **extra: Any) -> dict[str, Any]:
    return write_options(
        "orders",
        {
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.operation": operation,
            "hoodie.allow.operation.metadata.field": "true",
        },
        extra,
    )


class Oracle:
    """What a batch writer leaves in ``_hoodie_operation``: ``I`` for a key the table did not
    hold, ``U`` for a key it replaced; deleted keys are gone; untouched keys keep theirs."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[str, str]] = {}  # key -> (v, operation)

    def upsert(self, rows: list[tuple[str, str, int, str]]) -> None:
        for key, _, _, v in rows:
            self.rows[key] = (v, "U" if key in self.rows else "I")

    def delete(self, keys: list[str]) -> None:
        for key in keys:
            self.rows.pop(key, None)


def engine_rows(path: Path) -> dict[str, tuple[str, str]]:
    rows = read_table(str(path)).to_pylist()
    return {r["id"]: (r["v"], r[OPERATION]) for r in rows}


def check_files(path: Path) -> None:
    """Every base file and log data block: ``_hoodie_operation`` right after the five meta
    columns (Parquet schema and footer Avro schema, log block SCHEMA headers), values I/U."""
    for base in path.rglob("*.parquet"):
        schema = pq.read_schema(base)
        assert schema.names[:6] == [*META, OPERATION]
        avro = json.loads(schema.metadata[b"parquet.avro.schema"])
        assert [f["name"] for f in avro["fields"][:6]] == [*META, OPERATION]
        assert avro["fields"][5] == {
            "name": OPERATION,
            "type": ["null", "string"],
            "doc": "",
            "default": None,
        }
        assert set(pq.read_table(base).column(OPERATION).to_pylist()) <= {"I", "U"}
    for log in path.rglob(".*.log.*"):
        if log.name.endswith(".cdc"):
            continue
        for block in parse_blocks(log.read_bytes()):
            if block["type"] not in (3, 5):  # AVRO_DATA_BLOCK, PARQUET_DATA_BLOCK
                continue
            fields = json.loads(block["header"][2])["fields"]
            assert [f["name"] for f in fields[:6]] == [*META, OPERATION]
            if block["type"] == 3:
                records = avro_records(block)
            else:
                records = pq.read_table(pa.BufferReader(block["content"])).to_pylist()
                assert list(records[0])[:6] == [*META, OPERATION]
            assert {r[OPERATION] for r in records} == {"U"}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_operation_field_values_through_insert_update_delete(spark, tmp_path, table_type) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    oracle = Oracle()
    batches: list[tuple[str, list[tuple[str, str, int, str]]]] = [
        ("upsert", [("k1", "p", 1, "a"), ("k2", "p", 1, "b"), ("k3", "q", 1, "c")]),
        ("upsert", [("k1", "p", 2, "a2"), ("k4", "q", 2, "d")]),
        ("insert", [("k5", "p", 3, "e")]),
        ("delete", [("k2", "p", 4, "b")]),
        ("upsert", [("k3", "q", 5, "c2"), ("k5", "p", 5, "e2")]),
    ]
    instants = []
    for operation, rows in batches:
        df = spark.createDataFrame(rows, SCHEMA)
        instants.append(write_hudi(df, str(path), opts(table_type, operation)).instant_time)
        if operation == "delete":
            oracle.delete([r[0] for r in rows])
        else:
            oracle.upsert(rows)
        assert engine_rows(path) == oracle.rows
    check_files(path)
    if table_type == "MERGE_ON_READ":
        assert list(path.rglob(".*.log.*")), "the updates went to log files"
    # the commit schema carries no meta field: readers learn the column from the files
    action = "commit" if table_type == "COPY_ON_WRITE" else "deltacommit"
    schema = json.loads(instant_metadata(path, instants[-1], action)["extraMetadata"]["schema"])
    assert OPERATION not in [f["name"] for f in schema["fields"]]

    # the Spark reader (read_hudi) returns the column as the Arrow reader does
    spark_rows = read_hudi(spark, str(path)).collect()
    assert {r["id"]: (r["v"], r[OPERATION]) for r in spark_rows} == oracle.rows

    # hudi-rs 0.5 reads every row and meta column right; it resolves the table's columns from
    # the commit schema plus the five meta fields, so it does not return _hoodie_operation
    ours = read_table(str(path)).drop_columns([OPERATION]).to_pylist()
    theirs = hudi_rs_rows(path)
    assert all(OPERATION not in r for r in theirs)
    assert sorted(theirs, key=lambda r: r["id"]) == sorted(ours, key=lambda r: r["id"])


def test_compaction_keeps_operation_values_and_later_writes_keep_the_column(
    spark, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from engine.spark.api import spark_table

    path = tmp_path / "t"
    oracle = Oracle()
    first = [("k1", "p", 1, "a"), ("k2", "p", 1, "b")]
    write_hudi(spark.createDataFrame(first, SCHEMA), str(path), opts("MERGE_ON_READ"))
    oracle.upsert(first)
    update = [("k1", "p", 2, "a2")]
    write_hudi(spark.createDataFrame(update, SCHEMA), str(path), opts("MERGE_ON_READ"))
    oracle.upsert(update)

    [instant] = spark_table(str(path), spark).compact()
    assert list(path.rglob(f"*_{instant}.parquet")), "compaction wrote base files"
    assert engine_rows(path) == oracle.rows

    # the option off: the table's files carry the column, so the write keeps it
    plain = write_options("orders", {"hoodie.datasource.write.table.type": "MERGE_ON_READ"})
    more = [("k3", "p", 3, "c")]
    write_hudi(spark.createDataFrame(more, SCHEMA), str(path), plain)
    oracle.upsert(more)
    assert engine_rows(path) == oracle.rows
    check_files(path)


DELETABLE = "id string, dt string, ts long, v string, _hoodie_is_deleted boolean"


def delete_block_keys(path: Path, instant_time: str) -> set[str]:
    """Keys in the DELETE blocks an instant appended."""
    from engine.io.logfile import (
        HeaderMetadataType,
        HoodieLogBlockType,
        decode_delete_block,
        read_log_blocks,
    )

    keys: set[str] = set()
    for log in path.rglob(".*.log.*"):
        for block in read_log_blocks(log.read_bytes()):
            if (
                block.block_type is HoodieLogBlockType.DELETE_BLOCK
                and block.header.get(HeaderMetadataType.INSTANT_TIME) == instant_time
            ):
                keys |= {r.record_key for r in decode_delete_block(block)}
    return keys


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_batch_deletes_write_no_update_before_or_delete_rows(spark, tmp_path, table_type) -> None:  # type: ignore[no-untyped-def]
    """``-U`` and ``D`` come only from changelog writers (Flink's records carry their row
    kind); Hudi's Spark writers drop a deleted record in the merge handle (copy-on-write) and
    put it in a DELETE block in the append handle (merge-on-read), for the ``delete``
    operation and for rows with ``_hoodie_is_deleted = true`` alike. The oracle: values I/U as
    before, deleted keys gone, and on merge-on-read exactly the deleted keys in each delete
    block; compaction keeps it so."""
    from engine.spark.api import spark_table

    path = tmp_path / "t"
    oracle = Oracle()

    def write(operation: str, rows: list[tuple[str, str, int, str, bool]]) -> set[str]:
        """Write ``rows``; the keys the write deletes from the table."""
        df = spark.createDataFrame(rows, DELETABLE)
        t = write_hudi(df, str(path), opts(table_type, operation)).instant_time
        gone = {r[0] for r in rows if (operation == "delete" or r[4]) and r[0] in oracle.rows}
        oracle.delete(sorted(gone))
        oracle.upsert([r[:4] for r in rows if operation != "delete" and not r[4]])
        assert engine_rows(path) == oracle.rows
        if table_type == "MERGE_ON_READ":
            assert delete_block_keys(path, t) == gone
        return gone

    write("upsert", [(k, "p", 1, k, False) for k in ("k1", "k2", "k3", "k4")])
    assert write("upsert", [("k1", "p", 2, "a", False), ("k2", "p", 2, "b", True)]) == {"k2"}
    assert write("delete", [("k3", "p", 3, "c", False), ("k9", "p", 3, "z", False)]) == {"k3"}
    assert write("upsert", [("k4", "p", 4, "d", False), ("k1", "p", 4, "a", True)]) == {"k1"}
    check_files(path)
    if table_type == "MERGE_ON_READ":
        spark_table(str(path), spark).compact()
        assert engine_rows(path) == oracle.rows
        check_files(path)
    assert oracle.rows == {"k4": ("d", "U")}

    # Flink's changelog mode is not a mode of this writer: refused, the table untouched
    before = sorted((str(p), p.stat().st_size) for p in path.rglob("*"))
    row = spark.createDataFrame([("k4", "p", 5, "e", False)], DELETABLE)
    with pytest.raises(ConfigError, match=r"changelog\.enabled='true': Flink's changelog"):
        write_hudi(row, str(path), {**opts(table_type), "changelog.enabled": "true"})
    assert sorted((str(p), p.stat().st_size) for p in path.rglob("*")) == before
