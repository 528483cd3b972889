"""Savepoints on hand-laid tables: what the cleaner and archival leave because of one."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import TimelineError
from engine.fs.filenames import format_base_file_name
from engine.fs.storage import Storage
from engine.services.archival import instants_to_archive
from engine.services.clean import plan_clean
from engine.services.savepoint import create_savepoint, delete_savepoint, list_savepoints
from engine.timeline.timeline import Timeline
from tests.unit.test_clean import T, _cfg, _commit, _names

pytestmark = pytest.mark.unit


def _table(tmp_path: Path, commits: int) -> Storage:
    storage = Storage(str(tmp_path))
    for t in T[:commits]:
        _commit(storage, t, {"fg-0": "p"})
    return storage


def test_cleaner_keeps_the_savepointed_slice(tmp_path: Path) -> None:
    storage = _table(tmp_path, 5)
    retained = {"hoodie.cleaner.commits.retained": 1}
    unpinned = plan_clean(storage, Timeline.load(storage), _cfg(**retained))
    assert format_base_file_name("fg-0", "0-0-0", T[1]) in _names(unpinned)
    savepoint = create_savepoint(storage, T[1], user="u", comment="c")
    assert savepoint.files == {"p": [format_base_file_name("fg-0", "0-0-0", T[1])]}
    pinned = plan_clean(storage, Timeline.load(storage), _cfg(**retained))
    assert _names(pinned) == sorted(set(_names(unpinned)) - {savepoint.files["p"][0]})
    delete_savepoint(storage, T[1])
    assert plan_clean(storage, Timeline.load(storage), _cfg(**retained)) == unpinned


def test_archival_stops_before_the_oldest_savepoint(tmp_path: Path) -> None:
    storage = _table(tmp_path, 8)
    keep = _cfg(**{"hoodie.keep.min.commits": 1, "hoodie.keep.max.commits": 2})
    assert len(instants_to_archive(storage, Timeline.load(storage), keep)) == 7
    create_savepoint(storage, T[3])
    chosen = instants_to_archive(storage, Timeline.load(storage), keep)
    assert [i.instant_time for i in chosen] == T[:3]


def test_savepoint_refusals_name_the_instant(tmp_path: Path) -> None:
    storage = _table(tmp_path, 2)
    with pytest.raises(TimelineError, match="not a completed commit"):
        create_savepoint(storage, T[5])
    latest = create_savepoint(storage)
    assert latest.instant_time == T[1]
    assert [s.instant_time for s in list_savepoints(Timeline.load(storage))] == [T[1]]
    with pytest.raises(TimelineError, match=f"{T[1]} of .* is savepointed already"):
        create_savepoint(storage, T[1])
    with pytest.raises(TimelineError, match=f"No savepoint at {T[0]}"):
        delete_savepoint(storage, T[0])
