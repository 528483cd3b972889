"""Rollback of failed writes: remove what a pending (requested/inflight) instant left behind.

A write killed before its commit leaves ``<t>.commit.requested`` / ``<t>.inflight`` and maybe data
files; readers already ignore them, and the next write cleans them up, as Hudi's eager
failed-writes policy does::

    <r>.rollback.requested   Avro HoodieRollbackPlan (files to delete per partition)
    <r>.rollback.inflight    empty
    (delete the files)
    <r>.rollback             Avro HoodieRollbackMetadata
    (delete the failed instant's requested/inflight files, then its markers)

The files to delete are those named by the instant's markers, plus (for writes that died before
creating a marker directory) every base file in the table whose name carries the instant time.
Plan and metadata are single-record Avro container files (:mod:`engine.timeline_metadata`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from engine.filenames import is_base_file, parse_base_file_name
from engine.fs_view import list_partition_paths
from engine.instant import COMMIT_ACTIONS, Action, Instant, new_instant_time
from engine.storage import Storage
from engine.timeline import (
    Timeline,
    complete,
    create_requested,
    delete_instant_files,
    transition_to_inflight,
)
from engine.timeline_metadata import (
    ROLLBACK_METADATA_SCHEMA,
    ROLLBACK_PLAN_SCHEMA,
    serialize,
)
from engine.write.markers import delete_markers, list_marked_files

__all__ = ["rollback_failed_writes", "rollback_instant"]


def _files_of_instant(storage: Storage, instant_time: str) -> list[str]:
    marked = set(list_marked_files(storage, instant_time))
    for partition, entries in list_partition_paths(storage).items():
        for entry in entries:
            if entry.is_dir or not is_base_file(entry.name):
                continue
            if parse_base_file_name(entry.name).instant_time == instant_time:
                marked.add(f"{partition}/{entry.name}" if partition else entry.name)
    return sorted(f for f in marked if storage.exists(f))


def _partition_of(rel: str) -> str:
    return rel.rpartition("/")[0]


def rollback_instant(storage: Storage, failed: Instant, after: str | None) -> str:
    """Roll back one failed write instant; returns the rollback instant time."""
    started = time.monotonic()
    rollback_time = new_instant_time(after)
    files = _files_of_instant(storage, failed.instant_time)
    by_partition: dict[str, list[str]] = {}
    for rel in files:
        by_partition.setdefault(_partition_of(rel), []).append(rel)
    info = {"commitTime": failed.instant_time, "action": failed.action.value}
    plan = {
        "instantToRollback": info,
        "RollbackRequests": [
            {
                "partitionPath": partition,
                "fileId": "",
                "latestBaseInstant": "",
                "filesToBeDeleted": [storage.full_path(f) for f in rels],
                "logBlocksToBeDeleted": {},
            }
            for partition, rels in sorted(by_partition.items())
        ],
        "version": 1,
    }
    create_requested(storage, rollback_time, Action.ROLLBACK, serialize(ROLLBACK_PLAN_SCHEMA, plan))
    transition_to_inflight(storage, rollback_time, Action.ROLLBACK)
    for rel in files:
        storage.delete(rel)
    metadata = {
        "startRollbackTime": rollback_time,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": len(files),
        "commitsRollback": [failed.instant_time],
        "partitionMetadata": {
            partition: {
                "partitionPath": partition,
                "successDeleteFiles": [storage.full_path(f) for f in rels],
                "failedDeleteFiles": [],
                "rollbackLogFiles": None,
                "logFilesFromFailedCommit": None,
            }
            for partition, rels in sorted(by_partition.items())
        },
        "version": 1,
        "instantsRollback": [info],
    }
    complete(storage, rollback_time, Action.ROLLBACK, serialize(ROLLBACK_METADATA_SCHEMA, metadata))
    delete_instant_files(storage, failed.instant_time, failed.action)
    delete_markers(storage, failed.instant_time)
    return rollback_time


def rollback_failed_writes(
    storage: Storage, timeline: Timeline, *, actions: Iterable[Action] = COMMIT_ACTIONS
) -> list[str]:
    """Roll back every pending write instant (single-writer: none of them is alive).

    Returns:
        The instant times rolled back.
    """
    rolled: list[str] = []
    after = timeline.max_instant_time()
    for failed in timeline.pending(actions):
        after = rollback_instant(storage, failed, after)
        rolled.append(failed.instant_time)
    return rolled
