"""Archival on hand-laid timelines: what is archived, what stays, and the archive's content."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pytest

from engine import config
from engine.fs.storage import Storage
from engine.io.logfile import HeaderMetadataType, read_log_blocks
from engine.services.archival import archive
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline, complete, create_requested, transition_to_inflight

pytestmark = pytest.mark.unit

CFG = config.parse_options({"hoodie.keep.min.commits": 3, "hoodie.keep.max.commits": 5})


def _t(i: int) -> str:
    return f"202401010000{i:02d}000"


def _commit(storage: Storage, t: str, action: Action = Action.COMMIT, done: bool = True) -> None:
    create_requested(storage, t, action)
    transition_to_inflight(storage, t, action)
    if done:
        stat = HoodieWriteStat(file_id="fg-0", path=f"p/fg-0_0-0-0_{t}.parquet", partition_path="p")
        meta = HoodieCommitMetadata({"p": [stat]}, operation_type="UPSERT")
        complete(storage, t, action, meta.to_json())


def _decode_archive(path: Path) -> list[dict[str, object]]:
    blocks = list(read_log_blocks(path.read_bytes()))
    assert len(blocks) == 1
    schema = fastavro.parse_schema(
        __import__("json").loads(blocks[0].header[HeaderMetadataType.SCHEMA])
    )
    content = blocks[0].content
    count = int.from_bytes(content[4:8], "big")
    pos, out = 8, []
    for _ in range(count):
        n = int.from_bytes(content[pos : pos + 4], "big")
        out.append(fastavro.schemaless_reader(io.BytesIO(content[pos + 4 : pos + 4 + n]), schema))
        pos += 4 + n
    return out


def test_archive_over_max_keeps_min_and_writes_entries(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for i in range(7):
        _commit(storage, _t(i), Action.DELTA_COMMIT if i % 2 else Action.COMMIT)
    archived = archive(storage, CFG)
    assert [i.instant_time for i in archived] == [_t(i) for i in range(4)]
    timeline = Timeline.load(storage)
    assert [i.instant_time for i in timeline.commits_timeline()] == [_t(4), _t(5), _t(6)]
    assert not list((tmp_path / ".hoodie").glob(f"{_t(0)}*"))
    entries = _decode_archive(tmp_path / ".hoodie" / "archived" / ".commits_.archive.1_1-0-1")
    assert [e["commitTime"] for e in entries] == [_t(i) for i in range(4)]
    assert entries[1]["actionType"] == "deltacommit"
    stats = entries[0]["hoodieCommitMetadata"]["partitionToWriteStats"]["p"]  # type: ignore[index]
    assert stats[0]["fileId"] == "fg-0"
    assert archive(storage, CFG) == []


def test_archive_stops_before_oldest_pending_instant(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for i in range(7):
        _commit(storage, _t(i), done=(i != 1))
    archived = archive(storage, CFG)
    assert [i.instant_time for i in archived] == [_t(0)]
    assert Timeline.load(storage).pending()[0].instant_time == _t(1)


def test_archive_below_max_does_nothing(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for i in range(5):
        _commit(storage, _t(i))
    assert archive(storage, CFG) == []


def test_archive_replacecommit_with_replaced_files_on_storage_kept(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    _commit(storage, _t(0))
    storage.write_bytes("p/.hoodie_partition_metadata", b"commitTime=1\npartitionDepth=1\n")
    storage.write_bytes(f"p/old-0_0-0-0_{_t(0)}.parquet", b"x")
    create_requested(storage, _t(1), Action.REPLACE_COMMIT)
    transition_to_inflight(storage, _t(1), Action.REPLACE_COMMIT)
    meta = HoodieCommitMetadata(partition_to_replace_file_ids={"p": ["old-0"]})
    complete(storage, _t(1), Action.REPLACE_COMMIT, meta.to_json())
    for i in range(2, 8):
        _commit(storage, _t(i))
    archived = archive(storage, CFG)
    assert [i.instant_time for i in archived] == [_t(0)]
