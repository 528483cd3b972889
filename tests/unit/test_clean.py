"""Cleaner planning and execution on hand-laid tables (file layout + timeline, no data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import config
from engine.fs.filenames import format_base_file_name
from engine.fs.properties import write_partition_metadata
from engine.fs.storage import Storage
from engine.services.clean import CleanPlan, clean, plan_clean
from engine.timeline.avro_metadata import COMPACTION_PLAN_SCHEMA, deserialize, serialize
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline, complete, create_requested, transition_to_inflight

pytestmark = pytest.mark.unit

T = [f"2024010100000{i}000" for i in range(10)]


def _commit(
    storage: Storage,
    t: str,
    files: dict[str, str],
    action: Action = Action.COMMIT,
    *,
    replaced: dict[str, list[str]] | None = None,
    done: bool = True,
) -> None:
    """Lay base files {file_id: partition} written at instant t."""
    create_requested(storage, t, action)
    transition_to_inflight(storage, t, action)
    for file_id, partition in files.items():
        write_partition_metadata(storage, partition, t)
        storage.write_bytes(f"{partition}/{format_base_file_name(file_id, '0-0-0', t)}", b"x")
    if done:
        meta = HoodieCommitMetadata(partition_to_replace_file_ids=replaced)
        complete(storage, t, action, meta.to_json())


def _cfg(**kv: object) -> config.HoodieConfig:
    return config.parse_options(kv)


def _names(plan: CleanPlan) -> list[str]:
    return sorted(Path(f).name for files in plan.files_per_partition.values() for f in files)


def test_plan_clean_keep_latest_commits_keeps_slice_in_effect(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for t in T[:5]:
        _commit(storage, t, {"fg-0": "p"})
    timeline = Timeline.load(storage)
    plan = plan_clean(storage, timeline, _cfg(**{"hoodie.cleaner.commits.retained": 2}))
    # retained commits T3, T4: slices T3, T4 kept, and T2 (in effect just before T3) kept
    assert plan.earliest_instant_to_retain == T[3]
    assert _names(plan) == [format_base_file_name("fg-0", "0-0-0", t) for t in T[:2]]


def test_plan_clean_too_few_commits_nothing(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for t in T[:3]:
        _commit(storage, t, {"fg-0": "p"})
    plan = plan_clean(storage, Timeline.load(storage), _cfg())
    assert plan.is_empty


def test_plan_clean_file_versions_policy(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for t in T[:4]:
        _commit(storage, t, {"fg-0": "p", "fg-1": "q"})
    cfg = _cfg(
        **{
            "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
            "hoodie.cleaner.fileversions.retained": 1,
        }
    )
    plan = plan_clean(storage, Timeline.load(storage), cfg)
    assert len(_names(plan)) == 6 and set(plan.files_per_partition) == {"p", "q"}


def test_plan_clean_uncommitted_slice_untouched(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for t in T[:4]:
        _commit(storage, t, {"fg-0": "p"})
    _commit(storage, T[0][:-3] + "500", {"fg-1": "p"}, done=False)  # a dead writer's file
    plan = plan_clean(
        storage, Timeline.load(storage), _cfg(**{"hoodie.cleaner.commits.retained": 1})
    )
    assert all("fg-1" not in n for n in _names(plan))


def test_plan_clean_replaced_group_removed_after_retention(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    _commit(storage, T[0], {"old-0": "p"})
    _commit(storage, T[1], {"new-0": "p"}, Action.REPLACE_COMMIT, replaced={"p": ["old-0"]})
    cfg = _cfg(**{"hoodie.cleaner.commits.retained": 1})
    _commit(storage, T[2], {"new-0": "p"})
    plan = plan_clean(storage, Timeline.load(storage), cfg)
    assert format_base_file_name("old-0", "0-0-0", T[0]) in _names(plan)


def test_plan_clean_pending_compaction_inputs_kept(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for t in T[:4]:
        _commit(storage, t, {"fg-0": "p"}, Action.DELTA_COMMIT)
    op = {
        "baseInstantTime": T[3],
        "deltaFilePaths": [],
        "dataFilePath": format_base_file_name("fg-0", "0-0-0", T[3]),
        "fileId": "fg-0",
        "partitionPath": "p",
        "metrics": None,
        "bootstrapFilePath": None,
    }
    plan_record = {
        "operations": [op],
        "extraMetadata": None,
        "version": 2,
        "strategy": None,
        "preserveHoodieMetadata": True,
    }
    create_requested(
        storage, T[5], Action.COMPACTION, serialize(COMPACTION_PLAN_SCHEMA, plan_record)
    )
    plan = plan_clean(
        storage, Timeline.load(storage), _cfg(**{"hoodie.cleaner.commits.retained": 1})
    )
    assert plan.is_empty


def test_clean_deletes_and_writes_avro_timeline(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for t in T[:5]:
        _commit(storage, t, {"fg-0": "p"})
    result = clean(storage, _cfg(**{"hoodie.cleaner.commits.retained": 2}))
    assert result is not None and result.total_deleted == 2
    left = sorted(p.name for p in (tmp_path / "p").glob("*.parquet"))
    assert left == [format_base_file_name("fg-0", "0-0-0", t) for t in T[2:5]]
    hoodie = tmp_path / ".hoodie"
    meta = deserialize((hoodie / f"{result.instant_time}.clean").read_bytes())
    assert meta["totalFilesDeleted"] == 2 and meta["earliestCommitToRetain"] == T[3]
    plan = deserialize((hoodie / f"{result.instant_time}.clean.requested").read_bytes())
    assert plan["policy"] == "KEEP_LATEST_COMMITS"
    assert clean(storage, _cfg(**{"hoodie.cleaner.commits.retained": 2})) is None


def test_clean_finishes_a_clean_left_inflight(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for t in T[:5]:
        _commit(storage, t, {"fg-0": "p"})
    cfg = _cfg(**{"hoodie.cleaner.commits.retained": 2})
    timeline = Timeline.load(storage)
    plan = plan_clean(storage, timeline, cfg)
    create_requested(storage, T[6], Action.CLEAN, plan.to_avro(storage))
    transition_to_inflight(storage, T[6], Action.CLEAN)  # the cleaner died here
    assert clean(storage, cfg) is None
    assert (tmp_path / ".hoodie" / f"{T[6]}.clean").exists()
    assert len(list((tmp_path / "p").glob("*.parquet"))) == 3
