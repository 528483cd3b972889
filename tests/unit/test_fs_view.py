"""File system view: partitions, file slices and visibility against the timeline (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.fs.storage import Storage
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSystemView, Visibility, list_partition_paths

pytestmark = pytest.mark.unit

T1, T2, T3, T4, T5 = (f"2024010100000{i}000" for i in range(1, 6))
FG1 = "aaaaaaaa-0000-0000-0000-000000000001-0"
FG2 = "bbbbbbbb-0000-0000-0000-000000000002-0"


def base(file_id: str, instant: str, token: str = "0-1-1") -> str:
    return f"{file_id}_{token}_{instant}.parquet"


def log(file_id: str, base_instant: str, version: int, token: str = "0-1-1") -> str:
    return f".{file_id}_{base_instant}.log.{version}_{token}"


def make_table(root: Path, files: dict[str, list[str]], instants: list[str]) -> Storage:
    """Files per partition (empty content) and timeline files (completed ones hold JSON)."""
    (root / ".hoodie").mkdir(parents=True)
    for partition, names in files.items():
        folder = root / partition if partition else root
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".hoodie_partition_metadata").write_text("commitTime=0\npartitionDepth=1\n")
        for name in names:
            (folder / name).write_bytes(b"")
    for name in instants:
        content = b""
        if name.endswith((".commit", ".deltacommit", ".replacecommit")):
            content = json.dumps({"partitionToWriteStats": {}, "extraMetadata": {}}).encode()
        (root / ".hoodie" / name).write_bytes(content)
    return Storage(str(root))


def replacecommit(root: Path, instant: str, replaced: dict[str, list[str]]) -> None:
    doc = {"partitionToWriteStats": {}, "partitionToReplaceFileIds": replaced}
    (root / ".hoodie" / f"{instant}.replacecommit").write_text(json.dumps(doc))


def slices(
    storage: Storage, as_of: str | None = None
) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
    view = FileSystemView(storage, Timeline.load(storage))
    return [
        (s.file_id, s.base_instant_time, s.base_file, s.log_files)
        for s in view.latest_file_slices(as_of)
    ]


def test_list_partition_paths_stops_at_partition_metafile_and_skips_hidden(tmp_path: Path) -> None:
    storage = make_table(
        tmp_path, {"a=1/b=2": [base(FG1, T1)], "a=1/b=3": [], "": []}, [f"{T1}.commit"]
    )
    (tmp_path / "a=1" / "b=2" / "nested").mkdir()  # below a partition: not listed
    (tmp_path / ".hidden").mkdir()
    # the base path itself has the metafile (non-partitioned marker) -> only "" is a partition
    assert list(list_partition_paths(storage)) == [""]
    (tmp_path / ".hoodie_partition_metadata").unlink()
    assert list(list_partition_paths(storage)) == ["a=1/b=2", "a=1/b=3"]
    assert list(list_partition_paths(storage, lambda p: p.endswith("3"))) == ["a=1/b=3"]


def test_latest_file_slices_latest_committed_base_wins(tmp_path: Path) -> None:
    storage = make_table(
        tmp_path,
        {"p": [base(FG1, T1), base(FG1, T2), base(FG2, T2)]},
        [f"{T1}.commit", f"{T2}.commit"],
    )
    assert slices(storage) == [(FG1, T2, base(FG1, T2), ()), (FG2, T2, base(FG2, T2), ())]


def test_latest_file_slices_inflight_instant_invisible(tmp_path: Path) -> None:
    storage = make_table(
        tmp_path,
        {"p": [base(FG1, T1), base(FG1, T2), base(FG2, T2)]},
        [f"{T1}.commit", f"{T2}.commit.requested", f"{T2}.inflight"],
    )
    assert slices(storage) == [(FG1, T1, base(FG1, T1), ())]


def test_latest_file_slices_rolled_back_file_newer_than_start_invisible(tmp_path: Path) -> None:
    # T2 was rolled back: its instant files are gone, its base file is left over
    storage = make_table(
        tmp_path, {"p": [base(FG1, T1), base(FG1, T2), base(FG1, T3)]},
        [f"{T1}.commit", f"{T3}.commit"],
    )  # fmt: skip
    assert slices(storage, as_of=T2) == [(FG1, T1, base(FG1, T1), ())]
    assert slices(storage) == [(FG1, T3, base(FG1, T3), ())]


def test_latest_file_slices_archived_instant_counts_as_committed(tmp_path: Path) -> None:
    # T1 is older than the active timeline (archived): its files are committed
    storage = make_table(tmp_path, {"p": [base(FG1, T1), base(FG2, T2)]}, [f"{T2}.commit"])
    assert [s[0] for s in slices(storage)] == [FG1, FG2]


def test_latest_file_slices_as_of_time_travel(tmp_path: Path) -> None:
    storage = make_table(
        tmp_path,
        {"p": [base(FG1, T1), base(FG1, T2), base(FG2, T2)]},
        [f"{T1}.commit", f"{T2}.commit"],
    )
    assert slices(storage, as_of=T1) == [(FG1, T1, base(FG1, T1), ())]


def test_latest_file_slices_logs_attach_by_base_instant_in_log_order(tmp_path: Path) -> None:
    logs = [log(FG1, T1, 2), log(FG1, T1, 1, "1-0-1"), log(FG1, T1, 1, "0-2-3")]
    storage = make_table(
        tmp_path,
        {"": [base(FG1, T1), *logs]},
        [f"{T1}.deltacommit", f"{T2}.deltacommit"],
    )
    assert slices(storage) == [
        (
            FG1,
            T1,
            base(FG1, T1),
            (log(FG1, T1, 1, "0-2-3"), log(FG1, T1, 1, "1-0-1"), log(FG1, T1, 2)),
        )
    ]


def test_latest_file_slices_log_only_group_visible_once_committed(tmp_path: Path) -> None:
    files = {"": [log(FG2, T2, 1)]}
    storage = make_table(tmp_path, files, [f"{T1}.deltacommit", f"{T2}.deltacommit.inflight"])
    assert slices(storage) == []
    (tmp_path / ".hoodie" / f"{T2}.deltacommit").write_text("{}")
    assert slices(Storage(str(tmp_path))) == [(FG2, T2, None, (log(FG2, T2, 1),))]


def test_latest_file_slices_replaced_file_group_dropped_after_replacecommit(tmp_path: Path) -> None:
    storage = make_table(
        tmp_path,
        {"p": [base(FG1, T1), base(FG2, T2)]},
        [f"{T1}.commit", f"{T2}.replacecommit.requested", f"{T2}.replacecommit.inflight"],
    )
    replacecommit(tmp_path, T2, {"p": [FG1]})
    assert slices(storage) == [(FG2, T2, base(FG2, T2), ())]
    assert slices(storage, as_of=T1) == [(FG1, T1, base(FG1, T1), ())]


def test_latest_file_slices_pending_compaction_merges_logs_onto_previous_slice(
    tmp_path: Path,
) -> None:
    # compaction T3 is scheduled; a log written after scheduling carries T3; the compacted base
    # file is partially written and must stay invisible
    files = {"": [base(FG1, T1), log(FG1, T1, 1), base(FG1, T3), log(FG1, T3, 1)]}
    instants = [f"{T1}.deltacommit", f"{T2}.deltacommit", f"{T3}.compaction.requested",
                f"{T3}.compaction.inflight", f"{T4}.deltacommit"]  # fmt: skip
    storage = make_table(tmp_path, files, instants)
    assert slices(storage) == [(FG1, T1, base(FG1, T1), (log(FG1, T1, 1), log(FG1, T3, 1)))]
    view = FileSystemView(storage, Timeline.load(storage))
    assert [s.base_file for s in view.latest_base_files()] == [base(FG1, T1)]


def test_latest_file_slices_completed_compaction_opens_new_slice(tmp_path: Path) -> None:
    files = {"": [base(FG1, T1), log(FG1, T1, 1), base(FG1, T3), log(FG1, T3, 1)]}
    instants = [f"{T1}.deltacommit", f"{T2}.deltacommit", f"{T3}.compaction.requested",
                f"{T3}.compaction.inflight", f"{T3}.commit", f"{T4}.deltacommit"]  # fmt: skip
    storage = make_table(tmp_path, files, instants)
    assert slices(storage) == [(FG1, T3, base(FG1, T3), (log(FG1, T3, 1),))]
    assert slices(storage, as_of=T2) == [(FG1, T1, base(FG1, T1), (log(FG1, T1, 1),))]


def test_file_system_view_foreign_files_ignored(tmp_path: Path) -> None:
    storage = make_table(
        tmp_path, {"p": [base(FG1, T1), "_SUCCESS", ".crc", "notes.txt", "x.parquet"]},
        [f"{T1}.commit"],
    )  # fmt: skip
    assert slices(storage) == [(FG1, T1, base(FG1, T1), ())]


def test_visibility_empty_timeline_sees_nothing(tmp_path: Path) -> None:
    storage = make_table(tmp_path, {"p": [base(FG1, T1)]}, [])
    vis = Visibility.of(Timeline.load(storage))
    assert vis.max_instant is None
    assert not vis.is_committed(T1)
    assert slices(storage) == []


def test_snapshot_sees_a_delta_commit_completed_after_a_later_compaction_was_scheduled(
    tmp_path: Path,
) -> None:
    # layout 2: delta commit T2 starts, compaction T3 is scheduled, then T2 completes. Its log
    # belongs to T3's slice (sliced by completion time), and the last completed instant is T2:
    # Hudi's snapshot query instant is the last instant of the completed and pending-compaction
    # timeline (BaseHoodieTableFileIndex), T3, so the slice is read and T2's rows are seen
    storage = make_table(tmp_path, {"p": [base(FG1, T1), log(FG1, T2, 1)]}, [])
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(
        "hoodie.table.name=t\nhoodie.table.type=MERGE_ON_READ\nhoodie.table.version=9\n"
        "hoodie.timeline.layout.version=2\nhoodie.timeline.path=timeline\n"
    )
    timeline = tmp_path / ".hoodie" / "timeline"
    timeline.mkdir()
    completed = {f"{T1}_{T1}.deltacommit": T1, f"{T2}_{T4}.deltacommit": T2}
    for name in (
        f"{T1}.deltacommit.requested", f"{T1}.deltacommit.inflight", *completed,
        f"{T2}.deltacommit.requested", f"{T2}.deltacommit.inflight",
        f"{T3}.compaction.requested", f"{T3}.compaction.inflight",
    ):  # fmt: skip
        content = json.dumps({"partitionToWriteStats": {}, "extraMetadata": {}})
        (timeline / name).write_text(content if name in completed else "")
    assert slices(storage) == [(FG1, T1, base(FG1, T1), (log(FG1, T2, 1),))]
    vis = Visibility.of(Timeline.load(storage))
    assert vis.max_instant == T3 and vis.is_committed(T2) and not vis.is_committed(T3)
