"""Savepoints: a completed commit's file slices pinned against the cleaner.

Hudi writes a savepoint at the time of the commit it pins, with no requested state::

    <t>.savepoint.inflight     empty
    <t>.savepoint              Avro HoodieSavepointMetadata (layout 2: <t>_<completion>.savepoint)

Its metadata names, per partition, the files (base and log) of every file slice a snapshot as of
``t`` reads. The cleaner never deletes a slice holding one of them, archival stops before the
oldest savepoint, a restore can go back to it whatever was cleaned since, and the rollback of
the savepointed commit is refused. Deleting a savepoint removes its instant files; the slices it
pinned go at the next clean that no longer needs them.
"""

from __future__ import annotations

import getpass
import time
from dataclasses import dataclass

from engine.errors import QueryError, TimelineError
from engine.fs.storage import Storage
from engine.read.time_travel import require_retained_files
from engine.timeline.avro_metadata import SAVEPOINT_METADATA_SCHEMA, deserialize, serialize
from engine.timeline.instant import Action, Instant
from engine.timeline.timeline import Timeline, complete, create_inflight, delete_instant_files
from engine.view.fs_view import FileSystemView

__all__ = [
    "Savepoint",
    "create_savepoint",
    "delete_savepoint",
    "list_savepoints",
    "savepointed_files",
]


@dataclass(frozen=True)
class Savepoint:
    """One completed savepoint as its metadata records it."""

    instant_time: str
    savepointed_by: str
    savepointed_at: int  # milliseconds since the epoch, as Hudi records it
    comments: str
    files: dict[str, list[str]]  # partition path -> file names


def _read(timeline: Timeline, instant: Instant) -> Savepoint:
    record = deserialize(timeline.read_content(instant), source=str(instant))
    files = {
        str(p): [str(n) for n in (m.get("savepointDataFile") or [])]
        for p, m in (record.get("partitionMetadata") or {}).items()
    }
    return Savepoint(
        instant.instant_time,
        str(record.get("savepointedBy") or ""),
        int(record.get("savepointedAt") or 0),
        str(record.get("comments") or ""),
        files,
    )


def list_savepoints(timeline: Timeline) -> list[Savepoint]:
    """The completed savepoints of a timeline, oldest first."""
    return [_read(timeline, i) for i in timeline.completed([Action.SAVEPOINT])]


def savepointed_files(timeline: Timeline) -> frozenset[tuple[str, str]]:
    """(partition path, file name) of every file a savepoint pins."""
    return frozenset(
        (partition, name)
        for sp in list_savepoints(timeline)
        for partition, names in sp.files.items()
        for name in names
    )


def _pinned_files(storage: Storage, timeline: Timeline, instant_time: str) -> dict[str, list[str]]:
    """Partition path -> names of the files of every slice a snapshot as of the instant reads."""
    files: dict[str, list[str]] = {}
    for s in FileSystemView(storage, timeline).latest_file_slices(instant_time):
        names = [s.base_file] if s.base_file else []
        names += [p.rsplit("/", 1)[-1] for p in s.log_file_paths]
        files.setdefault(s.partition_path, []).extend(names)
    return {p: sorted(n) for p, n in sorted(files.items())}


def create_savepoint(
    storage: Storage, instant_time: str | None = None, *, user: str | None = None, comment: str = ""
) -> Savepoint:
    """Savepoint a completed commit (default: the latest). The caller holds the table lock.

    Raises:
        TimelineError: no such completed commit, already savepointed, or the cleaner removed
            files of its slices (nothing is written then).
    """
    timeline = Timeline.load(storage)
    commits = [i.instant_time for i in timeline.commits_timeline()]
    target = instant_time or (commits[-1] if commits else None)
    if target is None or target not in commits:
        raise TimelineError(
            f"Cannot savepoint {target or 'the latest commit'} of {storage.base_path}: not a "
            f"completed commit on its active timeline (latest: {commits[-1] if commits else None})"
        )
    if target in timeline.savepoint_times():
        raise TimelineError(f"Instant {target} of {storage.base_path} is savepointed already")
    try:
        require_retained_files(storage, timeline, target, query="Savepoint of")
    except QueryError as e:
        raise TimelineError(str(e)) from None
    savepoint = Savepoint(
        target,
        user or getpass.getuser(),
        int(time.time() * 1000),
        comment,
        _pinned_files(storage, timeline, target),
    )
    record = {
        "savepointedBy": savepoint.savepointed_by,
        "savepointedAt": savepoint.savepointed_at,
        "comments": savepoint.comments,
        "partitionMetadata": {
            p: {"partitionPath": p, "savepointDataFile": names}
            for p, names in savepoint.files.items()
        },
        "version": 1,
    }
    create_inflight(storage, target, Action.SAVEPOINT)
    complete(storage, target, Action.SAVEPOINT, serialize(SAVEPOINT_METADATA_SCHEMA, record))
    return savepoint


def delete_savepoint(storage: Storage, instant_time: str) -> None:
    """Remove the savepoint at ``instant_time``. The caller holds the table lock.

    Raises:
        TimelineError: no completed savepoint at that instant.
    """
    timeline = Timeline.load(storage)
    if instant_time not in timeline.savepoint_times():
        raise TimelineError(
            f"No savepoint at {instant_time} on {storage.base_path} "
            f"(savepoints: {', '.join(timeline.savepoint_times()) or 'none'})"
        )
    delete_instant_files(storage, instant_time, Action.SAVEPOINT)
