"""Our metadata table writer against the files Hudi 1.1 wrote (the corpus's version 9 tables with
a metadata table): given what each instant changed and the file's creation time (the one value
two writes differ in), the producers and writers give Hudi's bytes.

- the initialization base file (an empty table's listing: ``__all_partitions__`` only);
- every HFILE_DATA_BLOCK of a data commit, from that commit's metadata (``of_commit``) and of a
  clean, from its clean metadata;
- the compacted base file, from the slice before it (base file and log blocks completed before
  the compaction).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.fs.storage import Storage
from engine.io.hfile import HFile, read_hfile
from engine.io.logfile import HoodieLogBlockType, read_log_blocks
from engine.metadata.changes import FilesChange, of_clean, of_commit
from engine.metadata.partitions import FilesPartition, MetadataUpdate
from engine.metadata.writer import base_file_bytes, log_block_hfile
from engine.timeline.avro_metadata import deserialize
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline

pytestmark = pytest.mark.interop

TABLES = ("cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta")
FILES = FilesPartition()


def _created(hfile: HFile) -> int:
    value: int = struct.unpack(">q", hfile.file_info["hfile.CREATE_TIME_TS"])[0]
    return value


def _files(base: Path) -> Path:
    return base / ".hoodie" / "metadata" / "files"


@pytest.mark.parametrize("table", TABLES)
def test_initial_base_file_is_hudis(table: str, corpus_table: Callable[[str], Path]) -> None:
    initial = sorted(_files(corpus_table(table)).glob("*_00000000000000000.hfile"))[0]
    hfile = read_hfile(initial.read_bytes())
    schema = hfile.file_info["schema"].decode()
    cells = FILES.initial_cells(FilesChange(), schema)
    assert base_file_bytes(cells, schema, _created(hfile)) == initial.read_bytes()


def _change(timeline: Timeline, storage: Storage, instant_time: str) -> MetadataUpdate | None:
    instant = timeline.get(instant_time)
    if instant is None or not instant.is_completed:
        return None
    if instant.action is Action.CLEAN:
        clean = deserialize(timeline.read_content(instant), source=str(instant))
        return MetadataUpdate(storage, instant_time, of_clean(clean))
    if instant.action in (Action.ROLLBACK, Action.RESTORE):
        return None  # Hudi 1.x writes no records for them
    metadata = timeline.read_commit_metadata(instant)
    return MetadataUpdate(storage, instant_time, of_commit(metadata), metadata)


@pytest.mark.parametrize("table", TABLES)
def test_each_data_instants_log_block_is_hudis(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    base = corpus_table(table)
    storage = Storage(str(base))
    timeline = Timeline.load(storage)
    checked = 0
    for log in sorted(_files(base).glob(".files-*")):
        for block in read_log_blocks(log.read_bytes()):
            if block.block_type is not HoodieLogBlockType.HFILE_DATA_BLOCK:
                continue
            update = _change(timeline, storage, str(block.instant_time))
            if update is None:
                continue
            hfile = read_hfile(block.content)
            schema = hfile.file_info["schema"].decode()
            cells = FILES.update_cells(update, schema)
            assert log_block_hfile(cells, schema, _created(hfile)) == block.content, log.name
            checked += 1
    assert checked >= 12


@pytest.mark.parametrize("table", TABLES)
def test_compacted_base_file_is_hudis(table: str, corpus_table: Callable[[str], Path]) -> None:
    files = _files(corpus_table(table))
    metadata = Timeline.load(Storage(str(files.parent)))
    completion = metadata.completion_times()
    initial, compacted = sorted(files.glob("*.hfile"))
    compaction_time = compacted.stem.rsplit("_", 1)[1]
    blocks = sorted(
        (completion[str(block.instant_time)], read_hfile(block.content))
        for log in files.glob(".files-*")
        for block in read_log_blocks(log.read_bytes())
        if block.block_type is HoodieLogBlockType.HFILE_DATA_BLOCK
        and completion.get(str(block.instant_time), "~") < compaction_time
    )
    expected = read_hfile(compacted.read_bytes())
    schema = expected.file_info["schema"].decode()
    logs: list[HFile | list[str]] = [hfile for _, hfile in blocks]
    cells = FILES.compacted_cells(read_hfile(initial.read_bytes()), logs, schema, compacted.name)
    assert base_file_bytes(cells, schema, _created(expected)) == compacted.read_bytes()
