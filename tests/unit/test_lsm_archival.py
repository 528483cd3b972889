"""Archival of layout-2 timelines (table versions 8 and 9) into the LSM history, on hand-laid
timelines: the history files' schema and values, the manifests and ``_version_``, the history's
compaction and cleaning, and reading archived instants back."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import config
from engine.errors import ConfigError
from engine.fs.storage import Storage
from engine.services.archival import archive
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.instant import Action
from engine.timeline.lsm_writer import LSMInstant, append_history
from engine.timeline.timeline import Timeline, complete, create_requested, transition_to_inflight

pytestmark = pytest.mark.unit

CFG = config.parse_options({"hoodie.keep.min.commits": 3, "hoodie.keep.max.commits": 5})
HISTORY = Path(".hoodie/timeline/history")
COMPACTION_PLAN = b"compaction plan bytes"


def _t(i: int) -> str:
    return f"202401010000{i:02d}000"


def _table(tmp_path: Path, version: int = 9) -> Storage:
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(
        f"hoodie.table.name=t\nhoodie.table.version={version}\nhoodie.timeline.layout.version=2\n"
    )
    return Storage(str(tmp_path))


def _commit(storage: Storage, t: str, action: Action = Action.COMMIT, plan: bytes = b"") -> None:
    create_requested(storage, t, action, plan)
    transition_to_inflight(storage, t, action)
    stat = HoodieWriteStat(file_id="fg-0", path=f"p/fg-0_0-0-0_{t}.parquet", partition_path="p")
    complete(storage, t, action, HoodieCommitMetadata({"p": [stat]}, operation_type="UPSERT"))


def _rows(path: Path) -> list[dict[str, object]]:
    return pq.read_table(path).to_pylist()


def test_archive_writes_a_level_0_file_of_lsm_instants_and_a_snapshot(tmp_path: Path) -> None:
    storage = _table(tmp_path)
    for i in range(7):
        action = Action.COMPACTION if i == 1 else Action.COMMIT
        _commit(storage, _t(i), action, COMPACTION_PLAN if i == 1 else b"")
    before = {i.instant_time: i for i in Timeline.load(storage).instants}
    completed_bytes = {
        t: (tmp_path / ".hoodie/timeline" / f"{t}_{i.completion_time}.commit").read_bytes()
        for t, i in before.items()
    }
    archived = archive(storage, CFG)
    assert [i.instant_time for i in archived] == [_t(i) for i in range(4)]
    history = tmp_path / HISTORY
    name = f"{_t(0)}_{_t(3)}_0.parquet"
    assert sorted(p.name for p in history.iterdir()) == [name, "_version_", "manifest_1"]
    assert (history / "_version_").read_text() == "1"
    manifest = json.loads((history / "manifest_1").read_text())
    assert manifest == {"files": [{"fileName": name, "fileLen": (history / name).stat().st_size}]}
    # HoodieLSMTimelineInstant: five optional fields and a required int version
    schema = pq.read_schema(history / name)
    assert [(f.name, f.type, f.nullable) for f in schema] == [
        ("instantTime", pa.string(), True),
        ("completionTime", pa.string(), True),
        ("action", pa.string(), True),
        ("metadata", pa.binary(), True),
        ("plan", pa.binary(), True),
        ("version", pa.int32(), False),
    ]
    avro = json.loads(schema.metadata[b"parquet.avro.schema"])
    assert avro["name"] == "HoodieLSMTimelineInstant"
    assert avro["namespace"] == "org.apache.hudi.avro.model"
    rows = _rows(history / name)
    assert [r["instantTime"] for r in rows] == [_t(i) for i in range(4)]
    assert [r["completionTime"] for r in rows] == [before[_t(i)].completion_time for i in range(4)]
    assert {r["action"] for r in rows} == {"commit"}  # the compaction completed as a commit
    assert [r["metadata"] for r in rows] == [completed_bytes[_t(i)] for i in range(4)]
    assert [r["plan"] for r in rows] == [None, COMPACTION_PLAN, None, None]
    assert {r["version"] for r in rows} == {1}
    # gone from the active timeline, every state of them; the rest stays
    left = sorted(p.name for p in (tmp_path / ".hoodie/timeline").iterdir() if p.is_file())
    assert not [n for n in left if any(n.startswith(_t(i)) for i in range(4))]
    assert [i.instant_time for i in Timeline.load(storage).instants] == [_t(i) for i in (4, 5, 6)]


def test_archived_instants_read_back_with_their_metadata(tmp_path: Path) -> None:
    storage = _table(tmp_path, version=8)
    for i in range(7):
        _commit(storage, _t(i))
    before = Timeline.load(storage)
    metadata = {i.instant_time: before.read_commit_metadata(i) for i in before.instants}
    archive(storage, CFG)
    after = Timeline.load(storage).with_history()
    assert after.instants == before.instants
    for instant in before.instants:
        assert after.read_commit_metadata(instant) == metadata[instant.instant_time]


def test_history_levels_are_compacted_and_old_snapshots_cleaned(tmp_path: Path) -> None:
    storage = _table(tmp_path)
    cfg = config.parse_options(
        {
            "hoodie.keep.min.commits": 1,
            "hoodie.keep.max.commits": 2,
            "hoodie.timeline.compaction.batch.size": 2,
        }
    )
    snapshots = []
    for i in range(9):
        _commit(storage, _t(i))
        archive(storage, cfg)
        history = tmp_path / HISTORY
        snapshots.append(
            sorted(p.name for p in history.glob("*.parquet")) if history.exists() else []
        )
    history = tmp_path / HISTORY
    version = int((history / "_version_").read_text())
    files = [
        f["fileName"] for f in json.loads((history / f"manifest_{version}").read_text())["files"]
    ]
    # two level-0 files make a level-1 file, two level-1 files a level-2 file
    assert files == [f"{_t(0)}_{_t(7)}_2.parquet"]
    assert snapshots[4] == [
        f"{_t(0)}_{_t(1)}_0.parquet",
        f"{_t(0)}_{_t(3)}_1.parquet",
        f"{_t(2)}_{_t(3)}_0.parquet",
    ]
    # three snapshots, plus one per compaction of the last run (two), are kept, nothing else
    manifests = sorted(int(p.name.split("_")[1]) for p in history.glob("manifest_*"))
    assert manifests == [3, 4, 5, 6, 7] and version == 7
    kept = {
        f["fileName"]
        for v in manifests
        for f in json.loads((history / f"manifest_{v}").read_text())["files"]
    }
    assert {p.name for p in history.glob("*.parquet")} == kept
    archived = [i.instant_time for i in Timeline.load(storage).with_history().instants]
    assert archived == [_t(i) for i in range(9)]


def test_interrupted_archival_is_finished_by_the_next_one(tmp_path: Path) -> None:
    """The history file was published but the instants stayed active: the next archival keeps
    the published file and removes the instants."""
    storage = _table(tmp_path)
    for i in range(7):
        _commit(storage, _t(i))
    timeline = Timeline.load(storage)
    rows = [
        LSMInstant(i.instant_time, i.completion_time or "", i.action.value, None, None)
        for i in timeline.instants[:4]
    ]
    name = append_history(storage, str(HISTORY), rows)
    published = (tmp_path / HISTORY / name).read_bytes()
    assert Timeline.load(storage).with_history().instants == timeline.instants
    assert [i.instant_time for i in archive(storage, CFG)] == [_t(i) for i in range(4)]
    assert (tmp_path / HISTORY / name).read_bytes() == published
    assert (tmp_path / HISTORY / "_version_").read_text() == "1"
    assert [i.instant_time for i in Timeline.load(storage).instants] == [_t(i) for i in (4, 5, 6)]


def test_archive_stops_before_the_oldest_pending_instant(tmp_path: Path) -> None:
    storage = _table(tmp_path)
    for i in range(7):
        _commit(storage, _t(i))
    create_requested(storage, _t(1) + "5", Action.DELTA_COMMIT)  # pending, between 1 and 2
    archived = archive(storage, CFG)
    assert [i.instant_time for i in archived] == [_t(0), _t(1)]


def test_a_batch_size_below_two_is_refused_before_anything_changes(tmp_path: Path) -> None:
    storage = _table(tmp_path)
    for i in range(7):
        _commit(storage, _t(i))
    cfg = config.parse_options(
        {"hoodie.keep.min.commits": 3, "hoodie.keep.max.commits": 5,
         "hoodie.timeline.compaction.batch.size": 1}
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"hoodie\.timeline\.compaction\.batch\.size=1"):
        archive(storage, cfg)
    assert not (tmp_path / HISTORY).exists()
    assert len(Timeline.load(storage).instants) == 7
