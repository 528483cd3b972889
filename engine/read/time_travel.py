"""Time travel (and incremental queries with an end) only to instants whose files are still on
storage.

A time-travel query reads, for every file group, the file slice that was latest at the as-of
instant. Once the cleaner has removed that slice (it retains only the slices recent commits
need), listing storage would silently fall back to an older slice or drop the group: rows would
be wrong without a word. So the planner checks first. The completed commits up to the as-of
instant, archived ones included (layout 2 keeps their metadata in the LSM history), name the
files each wrote; for every file group not replaced by then, the base file of its latest slice
and the log files written onto it since must all exist. A missing one is a ``QueryError`` naming
the as-of instant, the file and the instant that wrote it.

A restore removes instants from the timeline: time travel to an instant it removed (or to any
time before the restore at which one of them was visible) would read the restored state as if it
were the past one. :func:`require_not_restored` refuses it, naming the instant and the restore.
"""

from __future__ import annotations

from collections.abc import Collection

from engine.errors import QueryError
from engine.fs.storage import Storage
from engine.timeline.avro_metadata import deserialize
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action, Instant
from engine.timeline.timeline import Timeline

__all__ = ["require_begin_not_restored", "require_not_restored", "require_retained_files"]


def _is_log(stat: HoodieWriteStat) -> bool:
    name = (stat.path or "").rsplit("/", 1)[-1]
    return name.startswith(".") and ".log." in name


def _slice_files(
    timeline: Timeline, as_of: str
) -> dict[tuple[str, str], list[tuple[Instant, str]]]:
    """(partition, file id) -> files of its latest slice as of ``as_of``, with their writers."""
    files: dict[tuple[str, str], list[tuple[Instant, str]]] = {}
    replaced: set[tuple[str, str]] = set()
    for instant in timeline.commits_timeline():
        if instant.instant_time > as_of:
            break
        metadata = timeline.read_commit_metadata(instant)
        replaced |= metadata.replaced_file_ids()
        for partition, stats in metadata.partition_to_write_stats.items():
            for stat in stats:
                if not stat.path:
                    continue
                key = (partition, stat.file_id)
                if _is_log(stat):
                    written = files.setdefault(key, [])
                    if (instant, stat.path) not in written:
                        written.append((instant, stat.path))
                else:
                    files[key] = [(instant, stat.path)]
    return {k: v for k, v in files.items() if k not in replaced}


def require_retained_files(
    storage: Storage,
    timeline: Timeline,
    as_of: str,
    *,
    query: str = "Time travel to",
    file_groups: Collection[tuple[str, str]] | None = None,
) -> None:
    """Fail when the table as of ``as_of`` needs a file no longer on storage (time travel, and
    incremental queries with an end instant: they read the slices as of their end, of the
    ``file_groups`` their commits wrote).

    Raises:
        QueryError: naming ``as_of``, the missing file and the instant that wrote it.
    """
    for group, group_files in _slice_files(timeline, as_of).items():
        if file_groups is not None and group not in file_groups:
            continue
        for instant, path in group_files:
            if not storage.exists(path):
                raise QueryError(
                    f"{query} instant {as_of} needs {path}, written by instant "
                    f"{instant.instant_time} ({instant.action.value}), which is no longer on "
                    "storage: the cleaner removed that file slice. Query a later instant, or "
                    "retain more commits (hoodie.cleaner.commits.retained) before cleaning."
                )


def require_not_restored(timeline: Timeline, as_of: str) -> None:
    """Fail when a restore completed after ``as_of`` removed an instant at or before it.

    Raises:
        QueryError: naming ``as_of``, the removed instant and the restore.
    """
    _refuse_removed(
        timeline,
        as_of,
        f"Time travel to instant {as_of} is not possible",
        "it would read. Query {target} or an earlier instant.",
    )


def require_begin_not_restored(timeline: Timeline, begin: str) -> None:
    """Fail an incremental (or CDC) query from ``begin`` when a restore completed after it
    removed an instant at or before it.

    A reader that consumed the table up to ``begin`` has seen the removed commits' rows; the
    changes after ``begin`` do not undo them (a restore writes no change records), so answering
    would leave the reader holding rows the table no longer has.

    Raises:
        QueryError: naming ``begin``, the removed instant and the restore.
    """
    _refuse_removed(
        timeline,
        begin,
        f"An incremental query from instant {begin} is not possible",
        f"whose rows a reader at {begin} has already read, and no change record undoes them. "
        "Read the table's snapshot again (a full refresh), or begin at {target} or earlier.",
    )


def _refuse_removed(timeline: Timeline, instant_time: str, refusal: str, reason: str) -> None:
    """Raise ``refusal`` when a later restore removed an instant at or before ``instant_time``;
    ``reason`` follows the removed instants (``{target}``: the instant restored to)."""
    found = _restore_removing(timeline, instant_time)
    if found is not None:
        restore, removed, target = found
        raise QueryError(
            f"{refusal}: restore {restore} (to {target}) removed instant(s) "
            f"{', '.join(removed[-3:])} " + reason.replace("{target}", target)
        )


def _restore_removing(timeline: Timeline, instant_time: str) -> tuple[str, list[str], str] | None:
    """The first restore completed after ``instant_time`` that removed instants at or before
    it: (restore instant, removed instants, the instant it restored to)."""
    for restore in timeline.completed([Action.RESTORE]):
        if restore.instant_time <= instant_time:
            continue
        metadata = deserialize(timeline.read_content(restore), source=str(restore))
        removed = sorted(t for t in metadata.get("instantsToRollback") or [] if t <= instant_time)
        if removed:
            target = (metadata.get("extraMetadata") or {}).get("restoredTo", "an earlier instant")
            return restore.instant_time, removed, str(target)
    return None
