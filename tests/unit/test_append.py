"""Append handle: block sizing, log roll-over, delete records, and the byte layout of our blocks
against the blocks Apache Hudi wrote into the corpus (decoded here with an independent parser)."""

from __future__ import annotations

import io
import json
import struct
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.fs.filenames import TaskInfo, parse_log_file_name
from engine.io import avro as avro_codec
from engine.io.bloom_filter import BloomFilterSpec
from engine.io.parquet import avro_schema_with_meta, commit_schema_of, table_arrow_schema
from engine.model.merge import DELETE_RECORD_COLUMN, MergeSpec
from engine.write.append import (
    AppendSlice,
    LogWriteConfig,
    append_to_file_slice,
    estimate_record_sizes,
    plan_data_blocks,
)
from engine.write.handles import WriteContext

pytestmark = pytest.mark.unit

FILE_ID = "6d3d1d6e-2298-4080-a0c1-494877d6f40a-0"
BASE_INSTANT = "20250101000000000"
INSTANT = "20250102000000000"


def _context(base_path: Path, data: pa.Table, ordering: str | None = "ts") -> WriteContext:
    commit_schema = commit_schema_of(data.schema, "t")
    return WriteContext(
        base_path=str(base_path),
        instant_time=INSTANT,
        operation="upsert",
        arrow_schema=table_arrow_schema(commit_schema),
        avro_schema_with_meta=avro_schema_with_meta(commit_schema),
        merge_spec=MergeSpec(ordering_field=ordering),
        combine=True,
        bloom=BloomFilterSpec(),
    )


def _records(n: int, *, start: int = 0, partition: str = "p=1") -> pa.Table:
    ids = [f"k{i:05d}" for i in range(start, start + n)]
    return pa.table(
        {
            "id": ids,
            "name": [f"name-{i}" for i in range(start, start + n)],
            "ts": pa.array(np.arange(n, dtype=np.int64) + 10),
            "_hoodie_record_key": ids,
            "_hoodie_partition_path": [partition] * n,
        }
    )


def _slice(**kw: Any) -> AppendSlice:
    defaults: dict[str, Any] = {
        "partition_path": "p=1",
        "file_id": FILE_ID,
        "base_instant_time": BASE_INSTANT,
        "base_file": f"{FILE_ID}_0-1-2_{BASE_INSTANT}.parquet",
        "log_files": (),
        "next_log_version": 1,
    }
    defaults.update(kw)
    return AppendSlice(**defaults)


# ---- an independent parser of the log format (struct + fastavro only) ---------------------------


def parse_blocks(data: bytes) -> list[dict[str, Any]]:
    """Split a log file into blocks following hudi-format.md §5.1, checking every length."""
    blocks = []
    pos = 0
    while pos < len(data):
        assert data[pos : pos + 6] == b"#HUDI#"
        (block_length,) = struct.unpack_from(">q", data, pos + 6)
        end = pos + 14 + block_length
        version, block_type, count = struct.unpack_from(">iii", data, pos + 14)
        cursor = pos + 26
        header: dict[int, str] = {}
        for _ in range(count):
            key, length = struct.unpack_from(">ii", data, cursor)
            header[key] = data[cursor + 8 : cursor + 8 + length].decode()
            cursor += 8 + length
        (content_length,) = struct.unpack_from(">q", data, cursor)
        content = data[cursor + 8 : cursor + 8 + content_length]
        cursor += 8 + content_length
        (footer_count,) = struct.unpack_from(">i", data, cursor)
        cursor += 4
        (reverse,) = struct.unpack_from(">q", data, cursor)
        assert cursor + 8 == end
        blocks.append(
            {
                "version": version,
                "type": block_type,
                "header_keys": sorted(header),
                "header": header,
                "content": content,
                "footer_count": footer_count,
                "reverse_ok": reverse == block_length + 6,
            }
        )
        pos = end
    return blocks


def avro_records(block: dict[str, Any]) -> list[dict[str, Any]]:
    content = block["content"]
    content_version, count = struct.unpack_from(">ii", content, 0)
    assert content_version == 3
    schema = fastavro.parse_schema(json.loads(block["header"][2]))
    out, pos = [], 8
    for _ in range(count):
        (length,) = struct.unpack_from(">i", content, pos)
        datum = io.BytesIO(content[pos + 4 : pos + 4 + length])
        out.append(fastavro.schemaless_reader(datum, schema, None))
        assert datum.tell() == length
        pos += 4 + length
    assert pos == len(content)
    return out


def layout(block: dict[str, Any]) -> tuple[Any, ...]:
    """What must be identical to Java's blocks: framing, header keys, content version."""
    return (
        block["version"],
        block["type"],
        block["header_keys"],
        struct.unpack_from(">i", block["content"], 0)[0],
        block["footer_count"],
        block["reverse_ok"],
    )


# ---- block sizing ----


def test_plan_data_blocks_small_batch_one_block() -> None:
    assert plan_data_blocks([100] * 50, 1 << 20) == [50]
    assert plan_data_blocks([], 1 << 20) == []


def test_plan_data_blocks_flushes_at_estimated_block_size() -> None:
    # constant 100-byte records and 10 000-byte blocks: 100 records per block
    assert plan_data_blocks([100] * 1000, 10_000) == [100] * 10


def test_plan_data_blocks_estimate_refined_every_100_records() -> None:
    # the first 100 records estimate 10 bytes, the rest are 1000 bytes: the estimate only
    # moves at record 100 (0.8*10 + 0.2*1000 = 208), so the first block is far past 2000 bytes
    sizes = [10] * 100 + [1000] * 400
    blocks = plan_data_blocks(sizes, 20_000)
    assert sum(blocks) == 500
    assert blocks[0] == 100  # 20000 // 208 = 96 <= 100 buffered: flushed at the refinement
    # later blocks converge on 20000 / 1000 = 20 records as the estimate refines at each flush
    middle = blocks[1:-1]
    assert middle == sorted(middle, reverse=True) and min(middle) >= 20 and middle[-1] <= 22


def test_plan_data_blocks_record_larger_than_block_one_per_block() -> None:
    assert plan_data_blocks([5000, 5000, 5000], 1000) == [1, 1, 1]


def test_estimate_record_sizes_follows_string_lengths() -> None:
    table = pa.table({"s": ["a", "bbbbbbbbbb", None], "n": pa.array([1, 2, 3], pa.int64())})
    sizes = estimate_record_sizes(table)
    assert sizes[1] - sizes[0] == 9
    assert sizes[2] < sizes[0]
    nested = pa.table({"l": pa.array([[1, 2], [3]], pa.list_(pa.int64())), "t": ["x", "y"]})
    assert (estimate_record_sizes(nested) > 0).all()


# ---- append_to_file_slice ----------------------------------------------------------------------


def test_append_updates_new_log_version_avro_blocks_decode(tmp_path: Path) -> None:
    data = _records(20)
    ctx = _context(tmp_path, data)
    existing = f".{FILE_ID}_{BASE_INSTANT}.log.1_0-1-1"
    stats = append_to_file_slice(
        data,
        _slice(log_files=(existing,), next_log_version=2),
        ctx,
        TaskInfo(stage_id=7, task_attempt_id=9),
        bucket_number=3,
        log_config=LogWriteConfig(data_block_format="avro"),
    )
    assert len(stats) == 1
    stat = stats[0]
    name = stat.path.split("/")[-1]
    parsed = parse_log_file_name(name)
    assert (parsed.file_id, parsed.base_instant_time, parsed.version) == (FILE_ID, BASE_INSTANT, 2)
    assert parsed.write_token == "3-7-9"
    assert stat.log_files == (existing, name)
    assert stat.prev_commit == BASE_INSTANT and stat.log_version == 2 and stat.log_offset == 0
    assert (stat.num_writes, stat.num_update_writes, stat.num_deletes) == (20, 20, 0)
    raw = (tmp_path / stat.path).read_bytes()
    assert stat.file_size_in_bytes == stat.total_write_bytes == len(raw)
    blocks = parse_blocks(raw)
    assert [b["type"] for b in blocks] == [3]
    assert blocks[0]["header"][0] == INSTANT
    rows = avro_records(blocks[0])
    assert sorted(r["id"] for r in rows) == sorted(data["id"].to_pylist())
    assert {r["_hoodie_commit_time"] for r in rows} == {INSTANT}
    assert {r["_hoodie_file_name"] for r in rows} == {FILE_ID}
    assert sorted(r["_hoodie_commit_seqno"] for r in rows)[0] == f"{INSTANT}_3_0"
    # the marker names the file so a failed write can be rolled back
    assert (tmp_path / ".hoodie" / ".temp" / INSTANT / "p=1" / f"{name}.marker.APPEND").exists()


def test_append_deletes_one_delete_block_after_data_blocks(tmp_path: Path) -> None:
    data = _records(300)
    soft = pa.array([i % 10 == 0 for i in range(300)])
    data = data.append_column("_hoodie_is_deleted", soft)
    hard = _records(2, start=1000).append_column("_hoodie_is_deleted", pa.array([False, False]))
    hard = hard.set_column(2, "ts", pa.nulls(2, pa.int64()))
    hard = hard.append_column(DELETE_RECORD_COLUMN, pa.array([True, True]))
    batch = pa.concat_tables([data, hard], promote_options="default")
    ctx = _context(tmp_path, data)
    stats = append_to_file_slice(
        batch,
        _slice(),
        ctx,
        TaskInfo(),
        bucket_number=0,
        log_config=LogWriteConfig(data_block_format="avro", data_block_max_size=4096),
    )
    blocks = parse_blocks((tmp_path / stats[0].path).read_bytes())
    types = [b["type"] for b in blocks]
    assert types[-1] == 1 and types.count(1) == 1 and len(types) > 2
    assert sum(len(avro_records(b)) for b in blocks[:-1]) == 270
    assert stats[0].num_deletes == 32 and stats[0].num_writes == 270
    # delete payload: HoodieDeleteRecordList; soft deletes keep their ordering value in a
    # LongWrapper (branch 3), hard deletes without one are IntWrapper(0) (branch 2)
    content = blocks[-1]["content"]
    version, length = struct.unpack_from(">ii", content, 0)
    assert version == 3 and length == len(content) - 8
    from engine.io.delete_block import decode_delete_record_list

    deleted = {d.record_key: d for d in decode_delete_record_list(content[8:])}
    assert len(deleted) == 32
    assert deleted["k00010"].ordering_wrapper == "LongWrapper"
    assert deleted["k00010"].ordering_value == 20
    assert deleted["k01000"].ordering_wrapper == "IntWrapper"
    assert deleted["k01000"].ordering_value == 0


def test_append_parquet_blocks_hold_the_avro_blocks_records_in_the_same_sizes(
    tmp_path: Path,
) -> None:
    data = _records(300)
    per_format = {}
    for block_format in ("avro", "parquet"):
        base = tmp_path / block_format
        ctx = replace(_context(base, data), compression="snappy")
        (stat,) = append_to_file_slice(
            data,
            _slice(),
            ctx,
            TaskInfo(),
            bucket_number=2,
            log_config=LogWriteConfig(data_block_format=block_format, data_block_max_size=4096),
        )
        per_format[block_format] = parse_blocks((base / stat.path).read_bytes())
    avro, parquet = per_format["avro"], per_format["parquet"]
    assert {b["type"] for b in avro} == {3} and {b["type"] for b in parquet} == {5}
    assert len(avro) == len(parquet) > 1  # the same block sizing, whatever the encoding
    for a, p in zip(avro, parquet, strict=True):
        assert a["header"] == p["header"]  # INSTANT_TIME and the same SCHEMA
        file = pq.ParquetFile(pa.BufferReader(p["content"]))
        assert file.metadata.row_group(0).column(0).compression == "SNAPPY"
        assert file.read().to_pylist() == avro_records(a)


def test_append_rolls_over_to_next_version_past_max_size(tmp_path: Path) -> None:
    data = _records(400)
    ctx = _context(tmp_path, data)
    stats = append_to_file_slice(
        data,
        _slice(next_log_version=4),
        ctx,
        TaskInfo(),
        bucket_number=1,
        log_config=LogWriteConfig(data_block_max_size=2048, log_file_max_size=6000),
    )
    assert len(stats) > 1
    versions = [s.log_version for s in stats]
    assert versions == list(range(4, 4 + len(stats)))
    assert sum(s.num_writes for s in stats) == 400
    names = [s.path.split("/")[-1] for s in stats]
    for k, stat in enumerate(stats):
        assert stat.log_files == tuple(names[: k + 1])
        size = (tmp_path / stat.path).stat().st_size
        assert size == stat.file_size_in_bytes
        # a file rolls over only once it is past the limit
        if k < len(stats) - 1:
            assert size > 6000
            assert size - len(parse_blocks((tmp_path / stat.path).read_bytes())[-1]["content"]) <= (
                6000 + 2048 * 4
            )


def test_append_nothing_to_write_returns_no_stat(tmp_path: Path) -> None:
    data = _records(1).slice(0, 0)
    assert (
        append_to_file_slice(
            data,
            _slice(),
            _context(tmp_path, data),
            TaskInfo(),
            bucket_number=0,
            log_config=LogWriteConfig(),
        )
        == []
    )


# ---- layout against the corpus ----


def _corpus_blocks(base: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(base.rglob(".*.log.*")):
        out.extend(parse_blocks(path.read_bytes()))
    return out


def test_append_blocks_layout_matches_corpus_java_blocks(
    corpus_table: Callable[[str], Path], tmp_path: Path
) -> None:
    java_data = _corpus_blocks(corpus_table("trips_mor_avro__v6_trips_8i1u"))
    java_delete = _corpus_blocks(corpus_table("trips_mor_avro__v6_trips_8i3d"))
    assert [b["type"] for b in java_data] == [3] and [b["type"] for b in java_delete] == [1]
    data = _records(5).append_column("_hoodie_is_deleted", pa.array([True] + [False] * 4))
    stats = append_to_file_slice(
        data,
        _slice(),
        _context(tmp_path, data),
        TaskInfo(),
        bucket_number=0,
        log_config=LogWriteConfig(data_block_format="avro"),
    )
    ours = parse_blocks((tmp_path / stats[0].path).read_bytes())
    assert [layout(b) for b in ours] == [layout(java_data[0]), layout(java_delete[0])]
    # the Java data block's schema header holds the meta fields first, as ours does
    java_fields = [f["name"] for f in json.loads(java_data[0]["header"][2])["fields"]][:5]
    our_fields = [f["name"] for f in json.loads(ours[0]["header"][2])["fields"]][:5]
    assert our_fields == java_fields
    # the Java delete payload decodes with the same record list as ours
    from engine.io.delete_block import decode_delete_record_list

    java_deletes = decode_delete_record_list(java_delete[0]["content"][8:])
    assert {d.ordering_wrapper for d in java_deletes} == {"IntWrapper"}
    assert [d.record_key for d in decode_delete_record_list(ours[1]["content"][8:])] == ["k00000"]


# ---- encoding speed ----


def test_avro_encoder_not_slower_than_fastavro_schemaless_writer() -> None:
    n = 20_000
    data = _records(n)
    commit_schema = commit_schema_of(data.schema, "t")
    schema = json.loads(avro_schema_with_meta(commit_schema))
    table = pa.table(
        {
            f["name"]: data[f["name"]]
            if f["name"] in data.column_names
            else pa.nulls(n, pa.string())
            for f in schema["fields"]
        }
    )
    started = time.perf_counter()
    ours = avro_codec.encode_length_prefixed(table, schema)
    ours_s = time.perf_counter() - started
    parsed = fastavro.parse_schema(schema)
    started = time.perf_counter()
    out = io.BytesIO()
    for row in table.to_pylist():
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, row)
        out.write(struct.pack(">i", buf.tell()))
        out.write(buf.getvalue())
    baseline_s = time.perf_counter() - started
    assert ours == out.getvalue()
    assert ours_s < baseline_s
