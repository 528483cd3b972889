"""The ``files`` partition of the metadata tables Apache Hudi wrote (corpus tables listing
``files`` in ``hoodie.table.metadata.partitions``: table versions 8 and 9, partitioned and not,
with a rollback): its records decoded and encoded again byte for byte, merged as Hudi merges them
(a compacted base file is exactly the merge of the slice before it), and the listing they give
equal to a storage listing, names and sizes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from engine.fs.storage import Storage
from engine.io.hfile import read_hfile
from engine.io.logfile import HoodieLogBlockType, read_log_blocks
from engine.metadata.files_index import read_files_partition
from engine.metadata.payload import (
    FilesRecord,
    decode_files_record,
    encode_files_record,
    merge_file_slice,
)
from engine.timeline.timeline import Timeline
from engine.view.fs_view import list_partition_paths

pytestmark = pytest.mark.interop

# the corpus tables whose hoodie.table.metadata.partitions names files
FILES_TABLES = (
    "cow__v9_txns_simple_meta",
    "mor_avro__v9_txns_simple_meta",
    "cow__v9_txns_simple_overwrite",
    "mor_avro__v9_nonpartitioned_rollback",
    "trips_mor_avro__v8_trips_8i3u1d",
)


def files_listing(base: Path) -> dict[str, dict[str, int]]:
    """What the files partition of the table at ``base`` lists (it has a metadata table)."""
    storage = Storage(str(base))
    listing = read_files_partition(storage, Timeline.load(storage))
    assert listing is not None
    return listing.partitions


def _files_dir(base: Path) -> Path:
    return base / ".hoodie" / "metadata" / "files"


def _hfile_records(data: bytes) -> list[tuple[bytes, bytes, FilesRecord, str]]:
    hfile = read_hfile(data)
    schema = hfile.file_info["schema"].decode()
    return [(k, v, decode_files_record(k, v, schema), schema) for k, v in hfile.entries]


def _log_hfiles(path: Path) -> list[tuple[str, bytes]]:
    return [
        (block.instant_time or "", block.content)
        for block in read_log_blocks(path.read_bytes())
        if block.block_type is HoodieLogBlockType.HFILE_DATA_BLOCK
    ]


@pytest.mark.parametrize("table", FILES_TABLES)
def test_records_encode_byte_for_byte(table: str, corpus_table: Callable[[str], Path]) -> None:
    files = _files_dir(corpus_table(table))
    contents = [p.read_bytes() for p in sorted(files.glob("*.hfile"))]
    contents += [data for p in sorted(files.glob(".*.log.*")) for _, data in _log_hfiles(p)]
    count = 0
    for data in contents:
        for key, value, record, schema in _hfile_records(data):
            assert encode_files_record(record, schema) == value, key
            count += 1
    assert count >= 5


@pytest.mark.parametrize("table", ("cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta"))
def test_a_compacted_base_file_is_the_merge_of_the_slice_before_it(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    """Metadata compaction merged the initial base file and the log blocks completed before it:
    our merge gives the same records, in the same map order, so the same bytes."""
    metadata = corpus_table(table) / ".hoodie" / "metadata"
    completion = Timeline.load(Storage(str(metadata))).completion_times()
    initial, compacted = sorted(_files_dir(corpus_table(table)).glob("*.hfile"))
    compaction_time = compacted.stem.rsplit("_", 1)[1]
    blocks = [
        (completion[instant], data)
        for p in _files_dir(corpus_table(table)).glob(".*.log.*")
        for instant, data in _log_hfiles(p)
        if instant in completion and completion[instant] < compaction_time
    ]
    logs = [r for _, data in sorted(blocks) for _, _, r, _ in _hfile_records(data)]
    base = [r for _, _, r, _ in _hfile_records(initial.read_bytes())]
    merged = merge_file_slice(base, logs)
    expected = _hfile_records(compacted.read_bytes())
    assert list(merged) == [r.key for _, _, r, _ in expected]
    for key, value, record, schema in expected:
        assert merged[record.key].files == record.files, key
        # the compaction's HFile writer stamps each record with the file it writes
        stamped = replace(merged[record.key], meta={"_hoodie_file_name": compacted.name})
        assert encode_files_record(stamped, schema) == value, key


@pytest.mark.parametrize("table", FILES_TABLES)
def test_the_listing_equals_the_storage_listing(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    storage = Storage(str(corpus_table(table)))
    listing = files_listing(corpus_table(table))
    listed = {
        partition: {e.name: e.size for e in entries if not e.is_dir and e.name[0] != "."}
        | {e.name: e.size for e in entries if ".log." in e.name}
        for partition, entries in list_partition_paths(storage).items()
    }
    assert listing == listed
    assert sum(len(files) for files in listing.values()) >= 2
