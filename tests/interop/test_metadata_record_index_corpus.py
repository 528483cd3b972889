"""The record index Apache Hudi keeps (``record_index`` partition of the corpus's metadata
tables): every live key of the table, and only those, maps to the partition and file group our
reader finds it in, and sits in the file group Hudi's key hash picks."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.fs.storage import Storage
from engine.io.delete_block import encode_delete_record_list
from engine.io.hfile import read_hfile
from engine.io.hfile_writer import callers_file_info, write_hfile
from engine.io.logfile import HoodieLogBlockType, LogBlock, decode_delete_block, read_log_blocks
from engine.metadata.record_index import (
    decode_record_index_record,
    decode_record_location,
    encode_record_index_record,
    instant_time_millis,
    locate,
    read_record_index,
    record_index_file_group,
)
from engine.metadata.record_index_writer import (
    KeyLocation,
    commit_cells,
    delete_records,
    initialization_cells,
)
from engine.read.arrow import read_table
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_rows
from tests.interop.test_metadata_files_corpus import FILES_TABLES

pytestmark = pytest.mark.interop

HFILE_DATA_BLOCK = HoodieLogBlockType.HFILE_DATA_BLOCK


@pytest.mark.parametrize("table", FILES_TABLES)
def test_every_live_key_maps_to_its_file_group(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    base = corpus_table(table)
    storage = Storage(str(base))
    index = read_record_index(storage, Timeline.load(storage))
    assert index is not None
    rows = read_table(str(base)).to_pylist()
    live = {
        r["_hoodie_record_key"]: (r["_hoodie_partition_path"], r["_hoodie_file_name"].split("_")[0])
        for r in rows
    }
    assert {k: (v.partition_path, v.file_id) for k, v in index.items()} == live
    assert len(live) >= 3


@pytest.mark.parametrize("table", ("cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta"))
def test_keys_sit_in_the_file_group_their_hash_picks(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    folder = corpus_table(table) / ".hoodie" / "metadata" / "record_index"
    groups = sorted({p.name.split("_")[0].lstrip(".") for p in folder.iterdir() if "-0" in p.name})
    assert len(groups) == 10
    seen = 0
    for path in folder.iterdir():
        if path.name.endswith(".hfile"):
            contents = [path.read_bytes()]
        elif ".log." in path.name:
            blocks = read_log_blocks(path.read_bytes())
            contents = [b.content for b in blocks if b.block_type is HFILE_DATA_BLOCK]
        else:
            continue
        group = groups.index(path.name.split("_")[0].lstrip("."))
        for content in contents:
            for key, _ in read_hfile(content).entries:
                assert record_index_file_group(key.decode(), len(groups)) == group, key
                seen += 1
    assert seen >= 20


# the zone each table's writer read its instant times in (hoodie.table.timeline.timezone LOCAL)
WRITER_ZONES = {
    "cow__v9_txns_simple_meta": dt.timezone(dt.timedelta(hours=-6)),
    "mor_avro__v9_txns_simple_meta": dt.timezone(dt.timedelta(hours=-6)),
    "cow__v9_txns_simple_overwrite": dt.UTC,
    "mor_avro__v9_nonpartitioned_rollback": dt.UTC,
    "trips_mor_avro__v8_trips_8i3u1d": dt.UTC,
}


def _record_index_files(base: Path) -> Iterator[tuple[str, str | None, bytes | LogBlock]]:
    """(file group id, None for a base file or the block's instant, HFile bytes or block) of
    every record_index file: base HFiles, HFILE_DATA_BLOCKs and DELETE_BLOCKs."""
    folder = base / ".hoodie" / "metadata" / "record_index"
    for path in sorted(folder.iterdir()):
        group = path.name.split("_")[0].lstrip(".")
        if path.name.endswith(".hfile"):
            yield group, None, path.read_bytes()
        elif ".log." in path.name:
            for block in read_log_blocks(path.read_bytes()):
                if block.block_type in (HFILE_DATA_BLOCK, HoodieLogBlockType.DELETE_BLOCK):
                    yield group, block.instant_time, block


@pytest.mark.parametrize("table", FILES_TABLES)
def test_every_record_encodes_to_the_bytes_hudi_wrote(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    """Base files (v8's compacted ones stamp _hoodie_file_name) and log blocks, v8 and v9: each
    value decodes and encodes again to its bytes; a log record's instantTime is its block's
    instant read in the writer's zone; each DELETE_BLOCK is Hudi's empty-payload delete."""
    records = deletes = 0
    for _group, instant, content in _record_index_files(corpus_table(table)):
        if isinstance(content, LogBlock) and content.block_type is not HFILE_DATA_BLOCK:
            keys = [r.record_key for r in decode_delete_block(content)]
            payload = content.content[8:]
            assert encode_delete_record_list(delete_records(keys)) == payload
            deletes += len(keys)
            continue
        hfile = read_hfile(content.content if isinstance(content, LogBlock) else content)
        schema = hfile.file_info["schema"].decode()
        for key, value in hfile.entries:
            record = decode_record_index_record(key, value, schema)
            assert encode_record_index_record(record, schema) == value, key
            if instant is not None:
                millis = instant_time_millis(instant, WRITER_ZONES[table])
                assert record.location.instant_time_ms == millis
            records += 1
    assert records >= 3
    assert deletes >= (0 if "rollback" in table else 1)


@pytest.mark.parametrize("table", FILES_TABLES[:4])
def test_commit_cells_are_the_log_blocks_hudi_wrote(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    """Per data commit, the cells built from its inserted keys and its deleted keys are, file
    group by file group, the HFILE_DATA_BLOCKs (byte for byte, written by our HFile writer with
    the block's creation time) and DELETE_BLOCKs Hudi wrote (Hudi 1.1, table version 9)."""
    by_instant: dict[str, dict[str, list[bytes | LogBlock]]] = {}
    schema = ""
    for group, instant, content in _record_index_files(corpus_table(table)):
        if instant is not None and not instant.startswith("000"):
            by_instant.setdefault(instant, {}).setdefault(group, []).append(content)
    checked = 0
    for instant, groups in sorted(by_instant.items()):
        inserted: dict[str, tuple[str, str]] = {}
        deleted: list[str] = []
        for blocks in groups.values():
            for block in blocks:
                assert isinstance(block, LogBlock)
                if block.block_type is HFILE_DATA_BLOCK:
                    hfile = read_hfile(block.content)
                    schema = hfile.file_info["schema"].decode()
                    for key, value in hfile.entries:
                        loc = decode_record_location(value, schema)
                        inserted[key.decode()] = (loc.partition_path, loc.file_id)
                else:
                    deleted += [r.record_key for r in decode_delete_block(block)]
        cells = commit_cells(
            instant, 10, schema, inserted=inserted, moved={}, deleted=deleted,
            zone=WRITER_ZONES[table],
        )  # fmt: skip
        assert sorted(c.file_id for c in cells) == sorted(groups)
        for cell in cells:
            for block in groups[cell.file_id]:
                assert isinstance(block, LogBlock)
                if block.block_type is HFILE_DATA_BLOCK:
                    hfile = read_hfile(block.content)
                    info = callers_file_info(hfile)
                    ours = write_hfile(cell.upserts, create_time_ms=hfile.create_time_ms,
                                       file_info=info)  # fmt: skip
                    assert ours == block.content, (instant, cell.file_id)
                else:
                    want = encode_delete_record_list(cell.delete_records())
                    assert block.content[8:] == want, (instant, cell.file_id)
                checked += 1
    assert checked >= 3


@pytest.mark.parametrize("table", FILES_TABLES)
def test_locate_finds_what_hudi_rs_reads(table: str, corpus_table: Callable[[str], Path]) -> None:
    """Every key hudi-rs reads is located at its row's partition and file group; keys the table
    does not hold are not found. A key the table holds twice (the rollback table's ``INSERT
    INTO`` of a stored key: insert does not deduplicate) is where its latest write put it."""
    base = corpus_table(table)
    storage = Storage(str(base))
    rows = sorted(hudi_rs_rows(base), key=lambda r: str(r["_hoodie_commit_time"]))
    want = {
        r["_hoodie_record_key"]: (r["_hoodie_partition_path"], r["_hoodie_file_name"].split("_")[0])
        for r in rows
    }
    found = locate(storage, Timeline.load(storage), [*want, "no-such-key", "TXN-999"])
    assert found is not None
    assert {k: (v.partition_path, v.file_id) for k, v in found.items()} == want
    assert len(want) >= 3


class _RecordingStorage(Storage):
    """A local storage that records the files it reads or opens (its metadata table's too)."""

    def __init__(self, base_path: str, reads: list[str]) -> None:
        super().__init__(base_path)
        self.reads = reads

    def child(self, rel: str) -> Storage:
        return _RecordingStorage(self.full_path(rel), self.reads)

    def read_bytes(self, rel: str) -> bytes:
        self.reads.append(rel)
        return super().read_bytes(rel)

    def open_input(self, rel: str) -> Any:
        self.reads.append(rel)
        return super().open_input(rel)


@pytest.mark.parametrize("table", ("cow__v9_txns_simple_meta", "trips_mor_avro__v8_trips_8i3u1d"))
def test_locate_reads_only_the_file_groups_the_keys_hash_to(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    base = corpus_table(table)
    timeline = Timeline.load(Storage(str(base)))
    index = read_record_index(Storage(str(base)), timeline)
    assert index is not None
    keys = sorted(index)[:2]
    reads: list[str] = []
    found = locate(_RecordingStorage(str(base), reads), timeline, keys)
    assert found == {k: index[k] for k in keys}
    read_groups = {r.split("/")[1].lstrip(".")[:19] for r in reads if r.startswith("record_index/")}
    assert read_groups == {f"record-index-{record_index_file_group(k, 10):04d}-0" for k in keys}


@pytest.mark.parametrize("table", ("cow__v9_txns_simple_meta", "cow__v9_txns_simple_overwrite"))
def test_initialization_over_the_latest_base_files_maps_keys_as_hudis_index(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    """Initializing from the rows of the latest base files (key, partition, file id, the base
    file's instant) puts each key in the file group where Hudi's maintained index holds it, with
    the same partition and file id, stamped with the base file's instant."""
    base = corpus_table(table)
    storage = Storage(str(base))
    index = read_record_index(storage, Timeline.load(storage))
    assert index is not None
    stored_groups = {
        key.decode(): group
        for group, _instant, content in _record_index_files(base)
        if isinstance(content, LogBlock) and content.block_type is HFILE_DATA_BLOCK
        for key, _ in read_hfile(content.content).entries
    }
    rows = []
    for r in hudi_rs_rows(base):
        file_id, _token, tail = r["_hoodie_file_name"].split("_")
        rows.append(KeyLocation(r["_hoodie_record_key"], r["_hoodie_partition_path"], file_id,
                                tail.split(".")[0]))  # fmt: skip
    schema = _a_record_index_schema(base)
    cells = initialization_cells(rows, 10, schema, zone=WRITER_ZONES[table])
    assert len(cells) == 10
    located = {}
    for cell in cells:
        for key, value in cell.upserts:
            record = decode_record_index_record(key, value, schema)
            assert stored_groups[record.key] == cell.file_id
            located[record.key] = record.location
    assert {k: (v.partition_path, v.file_id) for k, v in located.items()} == {
        k: (v.partition_path, v.file_id) for k, v in index.items()
    }
    for row in rows:
        millis = instant_time_millis(row.instant_time, WRITER_ZONES[table])
        assert located[row.record_key].instant_time_ms == millis


def _a_record_index_schema(base: Path) -> str:
    for _group, _instant, content in _record_index_files(base):
        if isinstance(content, LogBlock) and content.block_type is HFILE_DATA_BLOCK:
            return read_hfile(content.content).file_info["schema"].decode()
    raise AssertionError("no record_index HFile")
