"""engine.io.logfile against the log files Apache Hudi wrote into the corpus, and hudi-rs."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from engine.errors import LogFormatError, SchemaError
from engine.io.delete_block import (
    DeleteRecord,
    decode_delete_record_list,
    encode_delete_record_list,
)
from engine.io.logfile import (
    HeaderMetadataType,
    HoodieLogBlockType,
    LogBlock,
    decode_avro_data_block,
    decode_command_block,
    decode_delete_block,
    decode_parquet_data_block,
    encode_avro_data_block,
    encode_block,
    encode_command_block,
    encode_delete_block,
    encode_parquet_data_block,
    read_log_blocks,
)
from engine.model.schema import add_meta_fields, arrow_to_avro_schema, avro_to_arrow_schema

MOR_TABLES = [
    "mor_parquet__v6_complexkeygen_hivestyle",
    "mor_parquet__v6_nonpartitioned",
    "mor_parquet__v6_nonpartitioned_rollback",
    "mor_parquet__v6_simplekeygen_nonhivestyle",
    "mor_parquet__v6_simplekeygen_nonhivestyle_overwritetable",
    "trips_mor_avro__v6_trips_8i1u",
    "trips_mor_avro__v6_trips_8i3d",
]
SCHEMA = HeaderMetadataType.SCHEMA


def log_files(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob(".*.log.*") if ".hoodie" not in p.relative_to(base).parts)


def completed_deltacommits(base: Path) -> dict[str, dict]:
    return {
        p.name.split(".")[0]: json.loads(p.read_text())
        for p in (base / ".hoodie").glob("*.deltacommit")
    }


def write_stat_for(commit: dict, rel_path: str) -> dict:
    for stats in commit["partitionToWriteStats"].values():
        for stat in stats:
            if stat["path"] == rel_path:
                return stat
    raise AssertionError(f"no write stat for {rel_path}")


def trips_schema() -> dict:
    fields = [
        pa.field("ts", pa.int64()),
        pa.field("uuid", pa.string()),
        pa.field("rider", pa.string()),
        pa.field("fare", pa.float64()),
        pa.field("city", pa.string()),
    ]
    return arrow_to_avro_schema(pa.schema(fields), "trips", with_meta=True)


def trips_rows(n: int, instant_time: str = "20240101000000000") -> pa.Table:
    schema = avro_to_arrow_schema(trips_schema())
    rows = [
        {
            "_hoodie_commit_time": instant_time,
            "_hoodie_commit_seqno": f"{instant_time}_0_{i}",
            "_hoodie_record_key": f"k{i}",
            "_hoodie_partition_path": "city=x",
            "_hoodie_file_name": "f-0",
            "ts": 1000 + i,
            "uuid": f"k{i}",
            "rider": None if i % 3 == 0 else f"rider-{i}",
            "fare": i * 1.5,
            "city": "x",
        }
        for i in range(n)
    ]
    return pa.Table.from_pylist(rows, schema=schema)


# ---------------------------------------------------------------------------------------------
# corpus


@pytest.mark.unit
@pytest.mark.parametrize("name", MOR_TABLES)
def test_read_log_blocks_corpus_blocks_match_commit_write_stats(
    corpus_table: Callable[[str], Path], name: str
) -> None:
    base = corpus_table(name)
    commits = completed_deltacommits(base)
    files = log_files(base)
    assert files
    for path in files:
        raw = path.read_bytes()
        blocks = list(read_log_blocks(raw, include_corrupt=True))
        assert blocks and not any(b.is_corrupt for b in blocks)
        assert sum(b.size for b in blocks) == len(raw)
        rel = path.relative_to(base).as_posix()
        for block in blocks:
            if block.block_type is HoodieLogBlockType.COMMAND_BLOCK:
                target = decode_command_block(block)
                assert target not in commits, "a rolled-back instant must not stay completed"
                continue
            if block.instant_time not in commits:
                continue  # written by an instant that was rolled back later
            stat = write_stat_for(commits[block.instant_time], rel)
            if block.block_type is HoodieLogBlockType.DELETE_BLOCK:
                assert len(decode_delete_block(block)) == stat["numDeletes"]
                continue
            if block.block_type is HoodieLogBlockType.AVRO_DATA_BLOCK:
                table = decode_avro_data_block(block)
            else:
                assert block.block_type is HoodieLogBlockType.PARQUET_DATA_BLOCK
                table = decode_parquet_data_block(block)
            assert table.num_rows == stat["numWrites"]
            assert set(table.column("_hoodie_commit_time").to_pylist()) == {block.instant_time}
            assert table.column_names == avro_to_arrow_schema(block.header[SCHEMA]).names


@pytest.mark.unit
@pytest.mark.parametrize("name", MOR_TABLES)
def test_encode_block_corpus_blocks_reencode_byte_exact(
    corpus_table: Callable[[str], Path], name: str
) -> None:
    for path in log_files(corpus_table(name)):
        raw = path.read_bytes()
        blocks = list(read_log_blocks(io.BytesIO(raw)))
        again = b"".join(encode_block(b.block_type, b.header, b.content, b.footer) for b in blocks)
        assert again == raw


@pytest.mark.unit
def test_encode_command_block_corpus_rollback_block_byte_exact(
    corpus_table: Callable[[str], Path],
) -> None:
    base = corpus_table("mor_parquet__v6_nonpartitioned_rollback")
    (path,) = [p for p in log_files(base) if p.name.endswith(".log.2_1-0-1")]
    raw = path.read_bytes()
    (block,) = read_log_blocks(raw)
    assert len(raw) == 105
    assert decode_command_block(block) == "20250126040826878"
    assert encode_command_block("20250126040936578", "20250126040826878") == raw


@pytest.mark.unit
def test_decode_delete_block_corpus_deletes_sql_keys_and_reencodes_exactly(
    corpus_table: Callable[[str], Path], shared_dir: Path
) -> None:
    base = corpus_table("trips_mor_avro__v6_trips_8i3d")
    (path,) = log_files(base)
    (block,) = read_log_blocks(path.read_bytes())
    records = decode_delete_block(block)
    sql = (shared_dir / "corpus" / "sql" / "trips_mor_avro__v6_trips_8i3d.sql").read_text()
    match = re.search(r"DELETE FROM \w+ WHERE rider in \(([^)]*)\)", sql)
    assert match is not None
    deleted = {r.strip(" '") for r in match.group(1).split(",")}
    values = re.findall(r"\(\d+, '([^']+)', '([^']+)'", sql)
    keys = {uuid for uuid, rider in values if rider in deleted}
    assert {r.record_key for r in records} == keys and len(records) == 3
    assert {r.partition_path for r in records} == {"city=san_francisco"}
    assert all(r.is_natural_order and r.ordering_wrapper == "IntWrapper" for r in records)
    payload = block.content[8:]
    assert encode_delete_record_list(records) == payload
    natural = [DeleteRecord(r.record_key, r.partition_path) for r in records]
    encoded = encode_delete_block(natural, block.instant_time or "", block.header[SCHEMA])
    assert next(read_log_blocks(encoded)).content == block.content


@pytest.mark.unit
def test_encode_avro_data_block_corpus_update_block_byte_exact(
    corpus_table: Callable[[str], Path],
) -> None:
    base = corpus_table("trips_mor_avro__v6_trips_8i1u")
    (path,) = log_files(base)
    raw = path.read_bytes()
    (block,) = read_log_blocks(raw)
    table = decode_avro_data_block(block)
    assert table.num_rows == 1
    assert table.column("rider").to_pylist() == ["rider-D"]
    assert table.column("fare").to_pylist() == [25.0]
    assert encode_avro_data_block(table, block.header[SCHEMA], block.instant_time or "") == raw


# ---------------------------------------------------------------------------------------------
# round trips and corruption


@pytest.mark.unit
def test_encode_avro_data_block_round_trip_preserves_rows() -> None:
    table = trips_rows(50)
    raw = encode_avro_data_block(table, trips_schema(), "20240101000000000")
    (block,) = read_log_blocks(raw)
    assert block.block_type is HoodieLogBlockType.AVRO_DATA_BLOCK
    assert list(block.header) == [HeaderMetadataType.INSTANT_TIME, SCHEMA]
    assert decode_avro_data_block(block).equals(table)


@pytest.mark.unit
def test_decode_avro_data_block_reader_schema_resolves_added_column() -> None:
    table = trips_rows(3)
    raw = encode_avro_data_block(table, trips_schema(), "20240101000000000")
    reader = trips_schema()
    reader["fields"].append({"name": "extra", "type": ["null", "string"], "default": None})
    decoded = decode_avro_data_block(next(read_log_blocks(raw)), reader)
    assert decoded.column("extra").to_pylist() == [None, None, None]
    assert decoded.column("fare").to_pylist() == table.column("fare").to_pylist()


@pytest.mark.unit
def test_encode_parquet_data_block_round_trip_preserves_rows() -> None:
    table = trips_rows(10)
    raw = encode_parquet_data_block(table, trips_schema(), "20240101000000000")
    (block,) = read_log_blocks(raw)
    assert block.content[:4] == b"PAR1"
    assert decode_parquet_data_block(block).equals(table)


def three_blocks() -> tuple[bytes, list[int]]:
    parts = [
        encode_avro_data_block(trips_rows(2), trips_schema(), "20240101000000001"),
        encode_delete_block([DeleteRecord("k1", "city=x")], "20240101000000002", trips_schema()),
        encode_command_block("20240101000000003", "20240101000000001"),
    ]
    return b"".join(parts), [len(p) for p in parts]


@pytest.mark.unit
def test_read_log_blocks_truncated_tail_yields_intact_blocks_only() -> None:
    raw, sizes = three_blocks()
    for cut in (1, 7, 20, sizes[2] - 1):
        blocks = list(read_log_blocks(raw[: len(raw) - cut], include_corrupt=True))
        assert [b.instant_time for b in blocks[:2]] == ["20240101000000001", "20240101000000002"]
        assert blocks[2].is_corrupt and blocks[2].offset == sizes[0] + sizes[1]
        assert len(list(read_log_blocks(raw[: len(raw) - cut]))) == 2


@pytest.mark.unit
def test_read_log_blocks_bad_reverse_pointer_skips_to_next_magic() -> None:
    raw, sizes = three_blocks()
    damaged = bytearray(raw)
    damaged[sizes[0] - 1] ^= 0xFF  # reverse pointer of the first block
    blocks = list(read_log_blocks(bytes(damaged), include_corrupt=True))
    assert [b.block_type for b in blocks] == [
        HoodieLogBlockType.CORRUPT_BLOCK,
        HoodieLogBlockType.DELETE_BLOCK,
        HoodieLogBlockType.COMMAND_BLOCK,
    ]
    assert blocks[0].size == sizes[0] and blocks[1].offset == sizes[0]


@pytest.mark.unit
def test_read_log_blocks_garbage_after_block_marks_it_corrupt() -> None:
    raw, sizes = three_blocks()
    # an intact first block followed by bytes that are not a magic: Java rejects the block
    damaged = raw[: sizes[0]] + b"garbage!" + raw[sizes[0] :]
    blocks = list(read_log_blocks(damaged, include_corrupt=True))
    assert blocks[0].is_corrupt and blocks[0].size == sizes[0] + len(b"garbage!")
    assert [b.block_type for b in blocks[1:]] == [
        HoodieLogBlockType.DELETE_BLOCK,
        HoodieLogBlockType.COMMAND_BLOCK,
    ]


@pytest.mark.unit
def test_read_log_blocks_empty_file_yields_nothing() -> None:
    assert list(read_log_blocks(b"")) == []


@pytest.mark.unit
def test_encode_delete_block_ordering_wrappers_follow_field_type() -> None:
    fields = [
        pa.field("l", pa.int64()),
        pa.field("i", pa.int32()),
        pa.field("d", pa.date32()),
        pa.field("s", pa.string()),
        pa.field("dec", pa.decimal128(10, 2)),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
    schema = add_meta_fields(arrow_to_avro_schema(pa.schema(fields), "t", with_meta=False))
    cases = [
        ("l", 20, "LongWrapper", 20),
        ("i", 20, "IntWrapper", 20),
        ("d", dt.date(2024, 1, 2), "DateWrapper", dt.date(2024, 1, 2)),
        ("s", "b", "StringWrapper", "b"),
        ("dec", decimal.Decimal("-1.25"), "DecimalWrapper", decimal.Decimal("-1.25")),
        ("ts", 1_700_000_000_000_000, "LongWrapper", 1_700_000_000_000_000),
    ]
    for field, value, wrapper, expected in cases:
        raw = encode_delete_block(
            [DeleteRecord("k", "p", value)], "1", schema, ordering_field=field
        )
        (record,) = decode_delete_block(next(read_log_blocks(raw)))
        assert (record.ordering_wrapper, record.ordering_value) == (wrapper, expected), field
        assert not record.is_natural_order


@pytest.mark.unit
def test_encode_delete_record_list_python_types_and_none() -> None:
    moment = dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    records = [
        DeleteRecord("a", "p"),
        DeleteRecord("b", "p", 7),
        DeleteRecord("c", "p", 2.5),
        DeleteRecord("d", "p", True),
        DeleteRecord("e", "p", moment),
        DeleteRecord("f", "p", b"\x01"),
    ]
    decoded = decode_delete_record_list(encode_delete_record_list(records))
    assert [(r.ordering_wrapper, r.ordering_value) for r in decoded] == [
        ("IntWrapper", 0),
        ("LongWrapper", 7),
        ("DoubleWrapper", 2.5),
        ("BooleanWrapper", True),
        ("TimestampMicrosWrapper", moment),
        ("BytesWrapper", b"\x01"),
    ]
    # the natural-order marker is Integer 0 only (hudi-rs event-time mode depends on it)
    assert (
        decoded[0].is_natural_order
        and not DeleteRecord("x", "p", 0, "LongWrapper").is_natural_order
    )
    assert encode_delete_record_list(records[:1])[-3:] == b"\x04\x00\x00"  # IntWrapper(0); end


@pytest.mark.unit
def test_encode_delete_block_unknown_ordering_field_raises() -> None:
    with pytest.raises(SchemaError, match="nope"):
        encode_delete_block([DeleteRecord("k", "p", 1)], "1", trips_schema(), ordering_field="nope")


@pytest.mark.unit
def test_decode_blocks_wrong_type_or_version_raises() -> None:
    command = next(read_log_blocks(encode_command_block("2", "1")))
    with pytest.raises(LogFormatError, match="AVRO_DATA_BLOCK"):
        decode_avro_data_block(command)
    with pytest.raises(LogFormatError, match="DELETE_BLOCK"):
        decode_delete_block(command)
    old = LogBlock(HoodieLogBlockType.DELETE_BLOCK, {}, b"\x00\x00\x00\x02\x00\x00\x00\x00", 0, 0)
    with pytest.raises(LogFormatError, match="content version 2"):
        decode_delete_block(old)
    with pytest.raises(LogFormatError, match="INSTANT_TIME"):
        encode_block(HoodieLogBlockType.COMMAND_BLOCK, {}, b"")
    with pytest.raises(LogFormatError, match="unknown log block type"):
        bad = bytearray(encode_command_block("2", "1"))
        bad[21] = 9
        list(read_log_blocks(bytes(bad)))


@pytest.mark.unit
def test_encode_avro_data_block_missing_column_raises() -> None:
    with pytest.raises(SchemaError, match="fare"):
        encode_avro_data_block(trips_rows(2).drop_columns(["fare"]), trips_schema(), "1")


# ---------------------------------------------------------------------------------------------
# hudi-rs reads what the encoders write


def _append_deltacommit(
    base: Path, instant_time: str, blocks: list[bytes], n_writes: int, n_deletes: int
) -> None:
    """Commit ``blocks`` as a new log file of the san_francisco file group of the 8i1u table."""
    from engine.fs.filenames import format_log_file_name, parse_base_file_name
    from engine.fs.storage import Storage
    from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat
    from engine.timeline.instant import Action
    from engine.timeline.timeline import complete, create_requested, transition_to_inflight

    partition = "city=san_francisco"
    (base_file,) = (base / partition).glob("*.parquet")
    parsed = parse_base_file_name(base_file.name)
    name = format_log_file_name(parsed.file_id, parsed.instant_time, 2, "0-1-0")
    storage = Storage(str(base))
    create_requested(storage, instant_time, Action.DELTA_COMMIT)
    transition_to_inflight(storage, instant_time, Action.DELTA_COMMIT)
    data = b"".join(blocks)
    storage.write_bytes(f"{partition}/{name}", data)
    stat = HoodieWriteStat(
        file_id=parsed.file_id,
        path=f"{partition}/{name}",
        partition_path=partition,
        prev_commit=parsed.instant_time,
        num_writes=n_writes,
        num_deletes=n_deletes,
        num_update_writes=n_writes,
        total_write_bytes=len(data),
        total_log_blocks=len(blocks),
        file_size_in_bytes=len(data),
        log_version=2,
        log_offset=0,
        base_file=base_file.name,
        log_files=(name,),
    )
    schema = json.loads((base / ".hoodie" / "20250331030645735.deltacommit").read_text())
    metadata = HoodieCommitMetadata(
        {partition: [stat]},
        extra_metadata={"schema": schema["extraMetadata"]["schema"]},
        operation_type="UPSERT",
    )
    complete(storage, instant_time, Action.DELTA_COMMIT, metadata.to_json())


@pytest.mark.interop
def test_encode_blocks_hudi_rs_reads_appended_log_file(
    corpus_copy: Callable[[str], Path],
) -> None:
    hudi = pytest.importorskip("hudi")
    import pyarrow.parquet as pq

    base = corpus_copy("trips_mor_avro__v6_trips_8i1u")
    partition = base / "city=san_francisco"
    (base_file,) = partition.glob("*.parquet")
    (old_log,) = partition.glob(".*.log.*")
    header_schema = next(read_log_blocks(old_log.read_bytes())).header[SCHEMA]
    before = pq.read_table(base_file).to_pylist()
    by_rider = {r["rider"]: r for r in before}
    instant_time = "20250401000000000"
    updated = dict(by_rider["rider-E"], fare=99.5, ts=by_rider["rider-E"]["ts"] + 1)
    inserted = dict(updated, uuid="new-key", rider="rider-Z", fare=1.25)
    rows = []
    for i, row in enumerate((updated, inserted)):
        rows.append(
            dict(
                row,
                _hoodie_commit_time=instant_time,
                _hoodie_commit_seqno=f"{instant_time}_0_{i}",
                _hoodie_record_key=row["uuid"],
                _hoodie_file_name=parse_file_id(base_file.name),
            )
        )
    table = pa.Table.from_pylist(rows, schema=avro_to_arrow_schema(header_schema))
    deleted = by_rider["rider-A"]
    blocks = [
        encode_avro_data_block(table, header_schema, instant_time),
        encode_delete_block(
            [DeleteRecord(deleted["uuid"], "city=san_francisco", deleted["ts"] + 1)],
            instant_time,
            header_schema,
            ordering_field="ts",
        ),
    ]
    _append_deltacommit(base, instant_time, blocks, n_writes=2, n_deletes=1)

    batches = hudi.HudiTableBuilder.from_base_uri(str(base)).build().read()
    result = {r["uuid"]: r for r in pa.Table.from_batches(batches).to_pylist()}
    assert result["1dced545-862b-4ceb-8b43-d2a568f6616b"]["fare"] == 99.5  # rider-E
    assert result["new-key"]["rider"] == "rider-Z"
    assert result["new-key"]["_hoodie_commit_time"] == instant_time
    assert deleted["uuid"] not in result
    assert by_rider["rider-D"]["uuid"] in result  # the earlier corpus log block still applies
    assert result[by_rider["rider-D"]["uuid"]]["fare"] == 25.0
    assert len(result) == 8  # 8 inserted - 1 deleted + 1 new


def parse_file_id(base_file_name: str) -> str:
    return base_file_name.split("_", 1)[0]


@pytest.mark.unit
def test_a_block_newer_than_the_query_is_skipped_not_the_blocks_after_it(tmp_path: Path) -> None:
    """A writer's eager rollback appends its command block under a later instant than its own
    write's, then the write's data: the data is read (Hudi 1.x skips the newer block; 0.14 and
    0.15 stopped there, hiding the committed write until the next commit)."""
    from engine.fs.storage import Storage
    from engine.read.log_scanner import collect_log_blocks
    from engine.view.fs_view import Visibility

    failed, write, rollback = "20240101000000002", "20240101000000003", "20240101000000004"
    raw = (
        encode_avro_data_block(trips_rows(2, failed), trips_schema(), failed)
        + encode_command_block(rollback, failed)
        + encode_avro_data_block(trips_rows(3, write), trips_schema(), write)
    )
    (tmp_path / ".f1_20240101000000001.log.1_0-0-0").write_bytes(raw)
    seen = Visibility(write, frozenset({write}), frozenset(), None, frozenset({write, rollback}))
    blocks = collect_log_blocks(Storage(str(tmp_path)), [".f1_20240101000000001.log.1_0-0-0"], seen)
    assert [b.instant_time for b in blocks] == [write]
    as_of_failed = Visibility(failed, frozenset(), frozenset(), None, frozenset({write}))
    assert (
        collect_log_blocks(
            Storage(str(tmp_path)), [".f1_20240101000000001.log.1_0-0-0"], as_of_failed
        )
        == []
    )
