"""Merge-on-read appends written as PARQUET_DATA_BLOCKs (``hoodie.logfile.data.block.format``).

The blocks on disk are type 5 holding a Parquet file of the table's codec, with the same SCHEMA
header and records an Avro block carries; tables written with them (alone, or mixed with Avro
blocks in one file slice) read as the row model says through the engine's reader (snapshot,
read-optimized, incremental) and hudi-rs, on the simple and the bucket index, through
compaction; every column type reads back exactly as an Avro block carries it.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import config, write_hudi
from engine.errors import ConfigError
from engine.fs.storage import Storage
from engine.io.logfile import (
    HeaderMetadataType,
    HoodieLogBlockType,
    decode_avro_data_block,
    read_log_blocks,
)
from engine.read.arrow import read_table
from engine.services.compaction import execute_compaction, schedule_compaction
from engine.spark.runner import SparkRunner
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options
from tests.property.oracle import OVERWRITE, Oracle, actual_set

# the subject is the Parquet log blocks on disk and how they read, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.interop, pytest.mark.driver_writes]

FORMAT = config.LOGFILE_DATA_BLOCK_FORMAT.key
FIELDS = ["id", "dt", "ts", "v"]
COLUMNS = ["dt", "ts", "v", "_hoodie_commit_time"]
MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
BUCKET = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 2}


def identity(row: dict[str, Any]) -> tuple[str, str]:
    return row["id"], row["dt"]


def data_blocks(path: Path) -> list[Any]:
    """Every data block of the table's log files."""
    blocks = []
    for log in sorted(path.rglob(".*.log.*")):
        for block in read_log_blocks(log.read_bytes()):
            if block.block_type is not HoodieLogBlockType.DELETE_BLOCK:
                blocks.append(block)
    return blocks


def block_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """Records of a block without what differs between two tables (instant, file id): seqno
    suffix, key, partition path and data columns."""
    seqno = [s.split("_", 1)[1] for s in table.column("_hoodie_commit_seqno").to_pylist()]
    kept = [
        c
        for c in table.column_names
        if c not in ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name")
    ]
    return list(zip(seqno, *(table.column(c).to_pylist() for c in kept), strict=True))


def test_parquet_blocks_on_disk_carry_the_codec_and_the_avro_blocks_content(
    spark: Any, tmp_path: Path
) -> None:
    schemas: dict[str, set[str]] = {}
    contents: dict[str, list[tuple[Any, ...]]] = {}
    for block_format in ("avro", "parquet"):
        path = tmp_path / block_format
        options = write_options(
            "blocks", MOR, {FORMAT: block_format, "hoodie.parquet.compression.codec": "snappy"}
        )
        for ts, keys in ((1, range(8)), (2, range(0, 8, 2))):
            df = spark.createDataFrame(
                [(f"k{i}", f"p{i % 2}", ts, f"v{ts}{i}") for i in keys], SCHEMA
            )
            write_hudi(df, str(path), {**options, "hoodie.datasource.write.operation": "upsert"})
        blocks = data_blocks(path)
        assert blocks
        schemas[block_format] = {b.header[HeaderMetadataType.SCHEMA] for b in blocks}
        rows: list[tuple[Any, ...]] = []
        for block in blocks:
            if block_format == "avro":
                assert block.block_type is HoodieLogBlockType.AVRO_DATA_BLOCK
                continue
            assert block.block_type is HoodieLogBlockType.PARQUET_DATA_BLOCK
            assert block.content[:4] == b"PAR1" and block.content[-4:] == b"PAR1"
            parquet = pq.ParquetFile(pa.BufferReader(block.content))
            group = parquet.metadata.row_group(0)
            codecs = {group.column(i).compression for i in range(group.num_columns)}
            assert codecs == {"SNAPPY"}
            footer = parquet.metadata.metadata
            assert (
                footer[b"parquet.avro.schema"].decode() == block.header[HeaderMetadataType.SCHEMA]
            )
            rows.extend(block_rows(parquet.read()))
        contents[block_format] = rows
    assert schemas["avro"] == schemas["parquet"]
    assert '"_hoodie_commit_time"' in next(iter(schemas["parquet"]))
    # the Avro twin's records, decoded, are the same rows (seqnos after the instant included)
    avro_rows = [
        r for b in data_blocks(tmp_path / "avro") for r in block_rows(decode_avro_data_block(b))
    ]
    assert sorted(avro_rows) == sorted(contents["parquet"])


def test_hfile_and_unknown_formats_are_refused_before_anything_is_written(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    df = spark.createDataFrame([("k1", "p0", 1, "a")], SCHEMA)
    for value in ("hfile", "orc"):
        with pytest.raises(ConfigError, match=rf"{value}.*{FORMAT}|{FORMAT}.*{value}"):
            write_hudi(df, str(path), write_options("refused", MOR, {FORMAT: value}))
        assert not path.exists()


def compact(path: str) -> None:
    storage = Storage(path)
    plan = schedule_compaction(storage, config.parse_options({}), force=True)
    assert plan is not None
    execute_compaction(storage, plan, runner=SparkRunner().compact)


def judge(path: str, oracle: Oracle, context: Any) -> None:
    expected = oracle.expected(COLUMNS)
    assert actual_set(read_table(path).to_pylist(), COLUMNS) == expected, context
    assert actual_set(hudi_rs_rows(path), COLUMNS) == expected, context


# (operation, keys, block format): updates and inserts, deletes, Avro and Parquet blocks in one
# file slice, then compaction and appends to the compacted slice
STEPS: list[tuple[str, range, str]] = [
    ("insert", range(12), "parquet"),
    ("upsert", range(0, 16, 2), "parquet"),
    ("upsert", range(1, 14, 3), ""),  # the default: Avro blocks
    ("delete", range(0, 12, 5), "parquet"),
    ("upsert", range(3, 18, 4), "parquet"),
    ("compact", range(0), ""),
    ("upsert", range(0, 20, 3), "parquet"),
]


@pytest.mark.parametrize("index", ["SIMPLE", "BUCKET"])
def test_parquet_block_tables_read_as_the_model_says(
    spark: Any, tmp_path: Path, index: str
) -> None:
    path = str(tmp_path / "t")
    options = write_options("pq_blocks", MOR, BUCKET if index == "BUCKET" else {})
    oracle = Oracle(OVERWRITE, "ts", identity, FIELDS)
    instants: list[str] = []
    for ts, (operation, keys, block_format) in enumerate(STEPS, start=1):
        if operation == "compact":
            compact(path)
            judge(path, oracle, operation)
            ro = read_table(path, {config.QUERY_TYPE.key: "read_optimized"}).to_pylist()
            assert actual_set(ro, COLUMNS) == oracle.expected(COLUMNS)
            continue
        rows = [
            {"id": f"k{i}", "dt": f"p{i % 2}", "ts": ts, "v": f"{operation}{ts}-{i}"} for i in keys
        ]
        df = spark.createDataFrame([tuple(r[c] for c in FIELDS) for r in rows], SCHEMA)
        chosen = {FORMAT: block_format} if block_format else {}
        result = write_hudi(
            df, path, {**options, **chosen, "hoodie.datasource.write.operation": operation}
        )
        oracle.apply(rows, operation, result.instant_time)
        instants.append(result.instant_time)
        judge(path, oracle, (operation, block_format))
    blocks = data_blocks(Path(path))
    kinds = {b.block_type for b in blocks}
    assert kinds == {HoodieLogBlockType.PARQUET_DATA_BLOCK, HoodieLogBlockType.AVRO_DATA_BLOCK}
    default = {b.block_type for b in blocks if b.instant_time == instants[2]}
    assert default == {HoodieLogBlockType.AVRO_DATA_BLOCK}
    for begin, end in pairwise(instants):
        read = read_table(
            path,
            {
                config.QUERY_TYPE.key: "incremental",
                config.READ_BEGIN_INSTANTTIME.key: begin,
                config.READ_END_INSTANTTIME.key: end,
            },
        ).to_pylist()
        expected = oracle.changed(COLUMNS, begin, end)
        assert actual_set(read, COLUMNS) == expected, (begin, end)
        assert actual_set(hudi_rs_rows(path, incremental=(begin, end)), COLUMNS) == expected


TYPED_SCHEMA = (
    "id string, dt string, ts long, b tinyint, s smallint, i int, f float, d double, "
    "amount decimal(20,4), small decimal(5,2), day date, at timestamp, bin binary, flag boolean, "
    "tags array<string>, point struct<x: double, label: string>, attrs map<string, int>"
)


def typed_rows(ts: int, keys: range) -> list[tuple[Any, ...]]:
    at = dt.datetime(2024, 3, 1, 12, 30, 15, 123456, tzinfo=dt.UTC)
    return [
        (
            f"k{i}",
            f"p{i % 2}",
            ts,
            i - 100,
            30000 + i,
            -(2**31) + i,
            1.5 * i,
            1e300 / (i + 1),
            Decimal(f"1234567890123456.{i:04d}"),
            Decimal(f"-999.{i:02d}"),
            dt.date(1970, 1, 1) + dt.timedelta(days=i * 1000),
            at + dt.timedelta(microseconds=i),
            bytes([i, 0, 255]),
            i % 2 == 0,
            [f"t{i}", None],
            {"x": i / 3, "label": None},
            {"a": i, "b": None},
        )
        if i % 4
        else (f"k{i}", f"p{i % 2}", ts, *([None] * 14))
        for i in keys
    ]


def comparable(rows: list[dict[str, Any]]) -> list[Any]:
    """Data columns of every row, sorted (a map as its sorted pairs: Arrow gives pairs)."""
    out = []
    for row in rows:
        data = {k: v for k, v in row.items() if not k.startswith("_hoodie")}
        attrs = data.get("attrs")
        if attrs is not None:
            data["attrs"] = sorted(attrs.items() if isinstance(attrs, dict) else attrs)
        out.append(sorted(data.items()))
    return sorted(out, key=repr)


def test_every_column_type_reads_back_as_an_avro_block_carries_it(
    spark: Any, tmp_path: Path
) -> None:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    reads: dict[str, list[Any]] = {}
    for block_format in ("avro", "parquet"):
        path = str(tmp_path / block_format)
        options = write_options("typed", MOR, {FORMAT: block_format})
        for ts, keys in ((1, range(12)), (2, range(0, 12, 3))):
            df = spark.createDataFrame(typed_rows(ts, keys), TYPED_SCHEMA)
            write_hudi(df, path, {**options, "hoodie.datasource.write.operation": "upsert"})
        kinds = {b.block_type.name for b in data_blocks(Path(path))}
        assert kinds == {f"{block_format.upper()}_DATA_BLOCK"}
        ours = read_table(path)
        reads[block_format] = comparable(ours.to_pylist())
        theirs = comparable(hudi_rs_rows(path))
        assert theirs == reads[block_format], block_format
        reads[f"{block_format}-schema"] = [str(f) for f in ours.schema]
    assert reads["parquet"] == reads["avro"]
    assert reads["parquet-schema"] == reads["avro-schema"]
    names = [f.name for f in spark.createDataFrame([], TYPED_SCHEMA).schema.fields]
    written = {r[0]: dict(zip(names, r, strict=True)) for r in typed_rows(1, range(12))}
    written.update({r[0]: dict(zip(names, r, strict=True)) for r in typed_rows(2, range(0, 12, 3))})
    assert reads["parquet"] == comparable(list(written.values()))
