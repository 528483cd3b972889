"""Archival in timeline layout 2 (table versions 8 and 9): into the LSM history, as Hudi 1.x's
``TimelineArchiverV2`` does.

The instants to archive are chosen as in layout 1 (``engine.services.archival``: the keep
min/max commits window, nothing at or after the oldest pending instant, nothing the last clean
retains, no replacecommit whose replaced files are still on storage). Each becomes one
``HoodieLSMTimelineInstant`` row: the completed file's bytes as ``metadata`` and, per pending
action, the ``plan`` (the cleaner plan; the compaction plan; the requested, else inflight,
metadata of a replacecommit or clustering). The rows go into a level-0 history file published
in a new snapshot (``engine.timeline.lsm_writer``) **before** any instant file is removed; then
the pending files go first and the completed ones last, oldest first, so an interrupted archival
never leaves an instant looking pending, and a repeated one finds its file already published.
Last, the history is compacted and old snapshots cleaned.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine import config
from engine.config import HoodieConfig
from engine.errors import ConfigError
from engine.faults import checkpoint
from engine.fs.storage import Storage
from engine.timeline.instant import Action, Instant, completed_action
from engine.timeline.lsm_writer import LSMInstant, append_history, compact_and_clean
from engine.timeline.timeline import Timeline

__all__ = ["archive_to_history"]

# pending action -> the states whose content is the archived plan, in order of preference
_PLAN_STATES: dict[Action, tuple[str, ...]] = {
    Action.CLEAN: ("requested",),
    Action.COMPACTION: ("requested",),
    Action.LOG_COMPACTION: ("requested",),
    Action.REPLACE_COMMIT: ("inflight", "requested"),
    Action.CLUSTERING: ("inflight", "requested"),
}


_Pending = dict[str, tuple[Action, str]]  # state value -> (pending action, file name)


def _pending_files(timeline: Timeline) -> dict[tuple[str, Action], _Pending]:
    """Requested and inflight files of the active timeline, by instant time and the action
    they complete as (a compaction's files under its ``commit``)."""
    out: dict[tuple[str, Action], _Pending] = {}
    for entry in timeline.storage.list_dir(timeline.layout.directory):
        parsed = timeline.layout.parse(entry.name)
        if parsed is not None and not parsed.is_completed:
            key = (parsed.instant_time, completed_action(parsed.action))
            out.setdefault(key, {})[parsed.state.value] = (parsed.action, entry.name)
    return out


def _content(timeline: Timeline, name: str) -> bytes | None:
    data = timeline.storage.read_bytes(f"{timeline.layout.directory}/{name}")
    return data or None


def _plan(timeline: Timeline, pending: _Pending) -> bytes | None:
    first = pending.get("requested") or pending.get("inflight")
    if first is None:
        return None
    for state in _PLAN_STATES.get(first[0], ()):
        if state in pending and (content := _content(timeline, pending[state][1])) is not None:
            return content
    return None


def _lsm_instant(timeline: Timeline, instant: Instant, pending: _Pending) -> LSMInstant:
    return LSMInstant(
        instant_time=instant.instant_time,
        # a legacy-named completed file has no completion time: readers take the requested one
        completion_time=instant.completion_time or instant.instant_time,
        action=instant.action.value,
        metadata=_content(timeline, timeline.layout.file_name(instant)),
        plan=_plan(timeline, pending),
    )


def _batch_size(cfg: HoodieConfig) -> int:
    size = cfg.get(config.TIMELINE_COMPACTION_BATCH_SIZE)
    if size < 2:
        raise ConfigError(
            f"{config.TIMELINE_COMPACTION_BATCH_SIZE.key}={size} must be at least 2 "
            "(that many history files of one level are merged into one)"
        )
    return size


def _remove_from_active(
    timeline: Timeline, chosen: Sequence[Instant], pending: dict[tuple[str, Action], _Pending]
) -> None:
    folder = timeline.layout.directory
    for instant in chosen:
        files = pending.get((instant.instant_time, instant.action), {})
        for state in ("requested", "inflight"):
            if state in files:
                timeline.storage.delete(f"{folder}/{files[state][1]}")
    for instant in chosen:
        timeline.storage.delete(f"{folder}/{timeline.layout.file_name(instant)}")


def archive_to_history(
    storage: Storage, timeline: Timeline, chosen: Sequence[Instant], cfg: HoodieConfig
) -> list[Instant]:
    """Move ``chosen`` (completed instants, oldest first) into the LSM history; returns them.

    Raises:
        ConfigError: an invalid ``hoodie.timeline.compaction.batch.size`` (nothing changed).
    """
    batch_size = _batch_size(cfg)
    history_dir = timeline.layout.table_format.history_dir
    if history_dir is None or not chosen:
        return []
    pending = _pending_files(timeline)
    rows = [_lsm_instant(timeline, i, pending.get((i.instant_time, i.action), {})) for i in chosen]
    append_history(storage, history_dir, rows)
    checkpoint("archive.after_write")
    _remove_from_active(timeline, chosen, pending)
    compact_and_clean(storage, history_dir, batch_size)
    return list(chosen)
