"""Rollback: undo a failed (pending) write, or the last completed write.

A write killed before its commit leaves ``<t>.commit.requested`` / ``<t>.inflight`` and maybe data
files; readers already ignore them, and the next write cleans them up, as Hudi's eager
failed-writes policy does::

    <r>.rollback.requested   Avro HoodieRollbackPlan (files to delete, log blocks to roll back)
    <r>.rollback.inflight    empty
    (delete the files; append a rollback COMMAND block per merge-on-read file slice)
    <r>.rollback             Avro HoodieRollbackMetadata
    (delete the rolled-back instant's files from the timeline, then its markers)

What a write left behind:

* base files: every file its markers name, plus every base file whose name carries the instant
  (a write that died before its first marker), plus, for a completed write, its write stats;
* log files (merge-on-read): a log file the write added to a file slice that an earlier
  instant opened stays, and a COMMAND block targeting the instant is appended to that slice in a
  new log file ``.{file_id}_{base_instant}.log.{n+1}_1-0-1``, as Hudi does (readers then skip the
  instant's blocks even once it is older than the active timeline); a log file in a slice the
  write itself opened is deleted.

A rollback killed midway stays pending; :func:`rollback_failed_writes` finishes it from its plan
(same rollback instant) before anything else. Plan and metadata are single-record Avro container
files (:mod:`engine.timeline.avro_metadata`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.errors import FileNameError, TimelineError
from engine.faults import checkpoint
from engine.fs.filenames import (
    UNKNOWN_WRITE_TOKEN,
    format_log_file_name,
    is_base_file,
    is_log_file,
    parse_base_file_name,
    parse_log_file_name,
    partition_file_path,
)
from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage
from engine.io.logfile import encode_command_block
from engine.metadata.sync import record_rollback
from engine.services.clustering_plan import is_scheduled_clustering
from engine.services.heartbeat import has_heartbeat
from engine.timeline.avro_metadata import (
    ROLLBACK_METADATA_SCHEMA,
    ROLLBACK_PLAN_SCHEMA,
    deserialize,
    serialize,
)
from engine.timeline.clustering import clustering_plan_groups
from engine.timeline.instant import COMMIT_ACTIONS, Action, Instant, State, new_instant_time
from engine.timeline.markers import delete_markers, list_marked_files
from engine.timeline.timeline import (
    Timeline,
    complete,
    create_requested,
    delete_instant_files,
    transition_to_inflight,
)
from engine.view.fs_view import list_partition_paths

__all__ = [
    "RollbackPlan",
    "apply_rollback",
    "execute_rollback",
    "pending_rollback_plans",
    "plan_rollback",
    "roll_back_metadata_instant",
    "rollback_failed_writes",
    "rollback_instant",
    "rollback_last_commit",
    "start_rollback",
]


@dataclass(frozen=True)
class LogRollback:
    """A merge-on-read file slice the rolled-back instant appended log files to."""

    partition_path: str
    file_id: str
    base_instant_time: str
    failed_logs: dict[str, int]  # log file (relative path) -> size


@dataclass(frozen=True)
class RollbackPlan:
    """What rolling back ``instant`` does (paths relative to the table's base path)."""

    instant: Instant
    files_to_delete: list[str] = field(default_factory=list)
    log_rollbacks: list[LogRollback] = field(default_factory=list)

    def to_avro(self, storage: Storage) -> bytes:
        by_partition: dict[str, list[str]] = {}
        for rel in self.files_to_delete:
            by_partition.setdefault(_partition_of(rel), []).append(rel)
        requests: list[dict[str, object]] = [
            {
                "partitionPath": partition,
                "fileId": "",
                "latestBaseInstant": "",
                "filesToBeDeleted": [storage.qualified(f) for f in rels],
                "logBlocksToBeDeleted": {},
            }
            for partition, rels in sorted(by_partition.items())
        ]
        requests += [
            {
                "partitionPath": lr.partition_path,
                "fileId": lr.file_id,
                "latestBaseInstant": lr.base_instant_time,
                "filesToBeDeleted": [],
                "logBlocksToBeDeleted": {storage.uri(r): n for r, n in lr.failed_logs.items()},
            }
            for lr in self.log_rollbacks
        ]
        record = {
            "instantToRollback": _instant_info(self.instant),
            "RollbackRequests": requests,
            "version": 1,
        }
        return serialize(ROLLBACK_PLAN_SCHEMA, record)

    @classmethod
    def from_avro(cls, storage: Storage, data: bytes, *, source: str) -> RollbackPlan:
        record = deserialize(data, source=source)
        info = record.get("instantToRollback") or {}
        try:
            action = Action(str(info.get("action")))
        except ValueError as e:
            raise TimelineError(f"Unknown action in rollback plan {source}: {info}") from e
        instant = Instant(str(info.get("commitTime")), action, State.INFLIGHT)
        files: list[str] = []
        logs: list[LogRollback] = []
        for request in record.get("RollbackRequests") or []:
            files += [_relative(storage, p) for p in request.get("filesToBeDeleted") or []]
            blocks = request.get("logBlocksToBeDeleted") or {}
            if blocks:
                logs.append(
                    LogRollback(
                        str(request.get("partitionPath") or ""),
                        str(request.get("fileId") or ""),
                        str(request.get("latestBaseInstant") or ""),
                        {_relative(storage, p): int(n) for p, n in blocks.items()},
                    )
                )
        return cls(instant, sorted(files), logs)


def _instant_info(instant: Instant) -> dict[str, str]:
    return {"commitTime": instant.instant_time, "action": instant.action.value}


def _partition_of(rel: str) -> str:
    return rel.rpartition("/")[0]


def _relative(storage: Storage, path: str) -> str:
    """A path from a plan (full path or URI) relative to the base path."""
    for prefix in storage.known_prefixes():
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _written_files(storage: Storage, instant: Instant) -> set[str]:
    """Files a completed instant's write stats name."""
    timeline = Timeline.load(storage)
    found = timeline.get(instant.instant_time)
    if found is None or not found.is_completed:
        return set()
    return {p for s in timeline.read_commit_metadata(found).write_stats() for p in s.written_paths}


def plan_rollback(storage: Storage, instant: Instant) -> RollbackPlan:
    """Find what ``instant`` wrote: markers, base files carrying its time, its write stats."""
    t = instant.instant_time
    candidates = set(list_marked_files(storage, t)) | _written_files(storage, instant)
    for partition, entries in list_partition_paths(storage).items():
        for entry in entries:
            if not entry.is_dir and is_base_file(entry.name):
                if parse_base_file_name(entry.name).instant_time == t:
                    candidates.add(partition_file_path(partition, entry.name))
            elif not entry.is_dir and is_log_file(entry.name):
                # layout 2 names a log file by the delta commit that wrote it
                if parse_log_file_name(entry.name).base_instant_time == t:
                    candidates.add(partition_file_path(partition, entry.name))
    deletes: list[str] = []
    slices: dict[tuple[str, str, str], dict[str, int]] = {}
    for rel in sorted(candidates):
        if not storage.exists(rel):
            continue
        name = rel.rpartition("/")[2]
        try:
            log = parse_log_file_name(name)
        except FileNameError:
            deletes.append(rel)
            continue
        if log.base_instant_time == t:
            deletes.append(rel)  # a slice the instant opened goes whole
        else:
            key = (_partition_of(rel), log.file_id, log.base_instant_time)
            slices.setdefault(key, {})[rel] = storage.size(rel)
    logs = [LogRollback(p, f, b, files) for (p, f, b), files in sorted(slices.items())]
    return RollbackPlan(instant, deletes, logs)


def _append_command_block(
    storage: Storage, lr: LogRollback, rollback_time: str, target: str
) -> str:
    """Write the slice's rollback COMMAND block in a new log file; returns its path."""
    versions = []
    for entry in storage.list_dir(lr.partition_path):
        try:
            log = parse_log_file_name(entry.name)
        except FileNameError:
            continue
        if log.file_id == lr.file_id and log.base_instant_time == lr.base_instant_time:
            versions.append(log.version)
    name = format_log_file_name(
        lr.file_id, lr.base_instant_time, max(versions, default=0) + 1, UNKNOWN_WRITE_TOKEN
    )
    rel = partition_file_path(lr.partition_path, name)
    storage.write_bytes(rel, encode_command_block(rollback_time, target))
    return rel


def _has_command_block(storage: Storage, lr: LogRollback, rollback_time: str) -> str | None:
    """A command block this rollback already wrote (a resumed rollback writes none again)."""
    from engine.io.logfile import HoodieLogBlockType, read_log_blocks

    for entry in storage.list_dir(lr.partition_path):
        if not entry.name.endswith(UNKNOWN_WRITE_TOKEN) or entry.size > 4096:
            continue
        try:
            log = parse_log_file_name(entry.name)
        except FileNameError:
            continue
        if log.file_id != lr.file_id or log.base_instant_time != lr.base_instant_time:
            continue
        rel = partition_file_path(lr.partition_path, entry.name)
        for block in read_log_blocks(storage.read_bytes(rel)):
            if block.block_type is HoodieLogBlockType.COMMAND_BLOCK and (
                block.instant_time == rollback_time
            ):
                return rel
    return None


def _roll_back_files(
    storage: Storage, plan: RollbackPlan, rollback_time: str, started: float
) -> dict[str, Any]:
    """Delete the plan's files and append its command blocks; the HoodieRollbackMetadata
    record of what was done (a resumed rollback redoes nothing already done)."""
    failed = plan.instant
    deleted: dict[str, list[str]] = {}
    for k, rel in enumerate(plan.files_to_delete):
        storage.delete(rel)
        deleted.setdefault(_partition_of(rel), []).append(rel)
        if k == 0:
            checkpoint("rollback.mid_delete")
    rollback_logs: dict[str, dict[str, int]] = {}
    failed_logs: dict[str, dict[str, int]] = {}
    for lr in plan.log_rollbacks:
        rel = _has_command_block(storage, lr, rollback_time) or _append_command_block(
            storage, lr, rollback_time, failed.instant_time
        )
        rollback_logs.setdefault(lr.partition_path, {})[storage.uri(rel)] = storage.size(rel)
        failed_logs.setdefault(lr.partition_path, {}).update(
            {storage.uri(r): n for r, n in lr.failed_logs.items()}
        )
    checkpoint("rollback.before_complete")
    partitions = sorted(set(deleted) | set(rollback_logs))
    return {
        "startRollbackTime": rollback_time,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": sum(len(v) for v in deleted.values()),
        "commitsRollback": [failed.instant_time],
        "partitionMetadata": {
            partition: {
                "partitionPath": partition,
                "successDeleteFiles": [storage.qualified(f) for f in deleted.get(partition, [])],
                "failedDeleteFiles": [],
                "rollbackLogFiles": rollback_logs.get(partition),
                "logFilesFromFailedCommit": failed_logs.get(partition),
            }
            for partition in partitions
        },
        "version": 1,
        "instantsRollback": [_instant_info(failed)],
    }


def _forget(storage: Storage, failed: Instant) -> None:
    """Drop a rolled-back instant from the timeline, then its markers and heartbeat."""
    # a completed compaction is a `commit` whose pending files say `compaction`, a completed
    # clustering of timeline layout 2 a `replacecommit` whose pending files say `clustering`
    pending_as = {Action.COMMIT: Action.COMPACTION, Action.REPLACE_COMMIT: Action.CLUSTERING}
    actions = [failed.action, *([pending_as[failed.action]] if failed.action in pending_as else [])]
    for action in actions:
        delete_instant_files(storage, failed.instant_time, action)
    delete_markers(storage, failed.instant_time)
    storage.delete(f"{METAFOLDER}/.heartbeat/{failed.instant_time}")  # a dead writer's heartbeat


def execute_rollback(
    storage: Storage, plan: RollbackPlan, rollback_time: str, started: float
) -> None:
    """Delete, append command blocks and complete an inflight rollback; then drop the
    rolled-back instant from the timeline. The metadata table, if the table keeps one, rolls
    back the instant's deltacommit before the rollback completes."""
    metadata = _roll_back_files(storage, plan, rollback_time, started)
    record_rollback(storage, rollback_time, metadata, roll_back_metadata_instant)
    complete(storage, rollback_time, Action.ROLLBACK, serialize(ROLLBACK_METADATA_SCHEMA, metadata))
    _forget(storage, plan.instant)


def _written_by(name: str, instant_time: str) -> bool:
    """A metadata table file the instant wrote: a log file of its deltacommit, or the HFile
    base file of its compaction."""
    try:
        if is_log_file(name):
            return parse_log_file_name(name).base_instant_time == instant_time
        return name.endswith(".hfile") and parse_base_file_name(name).instant_time == instant_time
    except FileNameError:
        return False


def roll_back_metadata_instant(mdt: Storage, instant: Instant, rollback_time: str) -> None:
    """Roll back one instant of a metadata table (``mdt``): its files go, then the instant,
    and the metadata timeline records the rollback at ``rollback_time``."""
    files = [
        f"{entry.name}/{f.name}"
        for entry in mdt.list_dir()
        if entry.is_dir and not entry.name.startswith(".")
        for f in mdt.list_dir(entry.name)
        if _written_by(f.name, instant.instant_time)
    ]
    plan = RollbackPlan(instant, sorted(files), [])
    create_requested(mdt, rollback_time, Action.ROLLBACK, plan.to_avro(mdt))
    transition_to_inflight(mdt, rollback_time, Action.ROLLBACK)
    execute_rollback(mdt, plan, rollback_time, time.monotonic())


def start_rollback(
    storage: Storage, instant: Instant, after: str | None
) -> tuple[str, RollbackPlan]:
    """Plan the rollback of ``instant`` and leave it inflight (what a restore runs); returns
    the rollback instant time and the plan."""
    rollback_time = new_instant_time(after)
    plan = plan_rollback(storage, instant)
    create_requested(storage, rollback_time, Action.ROLLBACK, plan.to_avro(storage))
    transition_to_inflight(storage, rollback_time, Action.ROLLBACK)
    return rollback_time, plan


def pending_rollback_plans(
    storage: Storage, timeline: Timeline
) -> dict[str, tuple[str, RollbackPlan]]:
    """Rolled-back instant time -> (rollback instant time, plan) of every pending rollback."""
    plans: dict[str, tuple[str, RollbackPlan]] = {}
    for pending in timeline.pending([Action.ROLLBACK]):
        requested = Instant(pending.instant_time, Action.ROLLBACK, State.REQUESTED)
        plan = RollbackPlan.from_avro(
            storage, timeline.read_content(requested), source=str(requested)
        )
        if pending.state is State.REQUESTED:
            transition_to_inflight(storage, pending.instant_time, Action.ROLLBACK)
        plans[plan.instant.instant_time] = (pending.instant_time, plan)
    return plans


def apply_rollback(storage: Storage, plan: RollbackPlan, rollback_time: str) -> dict[str, Any]:
    """Carry out an inflight rollback without completing it (a restore completes one
    ``restore`` instant instead); returns its HoodieRollbackMetadata record."""
    metadata = _roll_back_files(storage, plan, rollback_time, time.monotonic())
    _forget(storage, plan.instant)
    return metadata


def rollback_instant(storage: Storage, failed: Instant, after: str | None) -> str:
    """Roll back one write instant (pending, or completed: see :func:`rollback_last_commit`);
    returns the rollback instant time."""
    started = time.monotonic()
    rollback_time = new_instant_time(after)
    plan = plan_rollback(storage, failed)
    create_requested(storage, rollback_time, Action.ROLLBACK, plan.to_avro(storage))
    transition_to_inflight(storage, rollback_time, Action.ROLLBACK)
    execute_rollback(storage, plan, rollback_time, started)
    return rollback_time


def _finish_pending_rollbacks(storage: Storage, timeline: Timeline) -> list[str]:
    """Complete rollbacks a killed process left pending, from their plans."""
    done = []
    for target, (rollback_time, plan) in pending_rollback_plans(storage, timeline).items():
        execute_rollback(storage, plan, rollback_time, time.monotonic())
        done.append(target)
    return done


def rollback_failed_writes(
    storage: Storage,
    timeline: Timeline,
    *,
    actions: Iterable[Action] = (*COMMIT_ACTIONS, Action.CLUSTERING),
    is_alive: Callable[[Instant], bool] | None = None,
) -> list[str]:
    """Finish pending rollbacks, then roll back every pending write instant whose writer is
    gone (all of them when ``is_alive`` is not given: the single-writer assumption).

    Returns:
        The instant times rolled back.
    """
    rolled = _finish_pending_rollbacks(storage, timeline)
    if rolled:
        timeline = timeline.reload()
    after = timeline.max_instant_time()
    for failed in timeline.pending(actions):
        alive = is_alive is not None and is_alive(failed)
        if alive or (is_alive is not None and _is_pending_clustering(storage, timeline, failed)):
            continue
        if is_scheduled_clustering(storage, failed):
            continue  # a plan waiting for its execution, not a failed write
        after = rollback_instant(storage, failed, after)
        rolled.append(failed.instant_time)
    return rolled


def _is_pending_clustering(storage: Storage, timeline: Timeline, instant: Instant) -> bool:
    """A pending replacecommit of table version 6 whose requested file carries a clustering plan
    (versions 8 and 9 name clustering ``clustering``, never among the writes rolled back here)
    and that keeps no heartbeat. Apache Hudi's clustering keeps none, and Hudi never rolls it
    back as a failed write (its own clustering retries or rolls it back): beside a running Hudi
    writer the missing heartbeat says nothing, so other writers leave it
    (:mod:`engine.timeline.clustering`). The engine's clustering beats
    (:mod:`engine.services.clustering`): once its heartbeat stopped, it is a failed write."""
    if has_heartbeat(storage, instant.instant_time):
        return False
    return clustering_plan_groups(storage, timeline, instant) is not None


def rollback_last_commit(storage: Storage, instant_time: str) -> str:
    """Roll back the latest completed write (commit, deltacommit, replacecommit, compaction).

    Its new files are deleted (merge-on-read log files get a rollback COMMAND block) and its
    instant leaves the timeline, so readers see the table as of the previous commit. The
    caller holds the table lock.

    Raises:
        TimelineError: ``instant_time`` is not the latest completed write, a later instant is
            pending, or files it replaced or superseded were cleaned already.
    """
    timeline = Timeline.load(storage)
    last = timeline.last_completed()
    if last is None or last.instant_time != instant_time:
        latest = last.instant_time if last else None
        raise TimelineError(
            f"Instant {instant_time} is not the latest completed write of {storage.base_path} "
            f"(latest: {latest}); only the last write can be rolled back"
        )
    if instant_time in timeline.savepoint_times():
        raise TimelineError(
            f"Cannot roll back {instant_time}: it is savepointed (delete the savepoint first, "
            "or restore to an earlier instant)"
        )
    later = [i for i in timeline.pending(COMMIT_ACTIONS) if i.instant_time > instant_time]
    if later:
        raise TimelineError(
            f"Cannot roll back {instant_time}: write {later[0].instant_time} is pending after it"
        )
    metadata = timeline.read_commit_metadata(last)
    missing = [
        f"{s.partition_path}/{s.prev_commit}"
        for s in metadata.write_stats()
        if s.prev_commit
        and s.prev_commit != "null"
        and not s.is_delta
        and not _slice_on_storage(storage, s.partition_path or "", s.file_id, s.prev_commit)
    ]
    missing += [
        f"{p}/{f}"
        for p, f in sorted(metadata.replaced_file_ids())
        if not _group_on_storage(storage, p, f)
    ]
    if missing:
        raise TimelineError(
            f"Cannot roll back {instant_time}: file slices it superseded were cleaned "
            f"({', '.join(missing[:3])})"
        )
    return rollback_instant(storage, last, timeline.max_instant_time())


def _slice_on_storage(storage: Storage, partition: str, file_id: str, base_instant: str) -> bool:
    for entry in storage.list_dir(partition):
        if entry.name.startswith(file_id) and is_base_file(entry.name):
            if parse_base_file_name(entry.name).instant_time == base_instant:
                return True
    return False


def _group_on_storage(storage: Storage, partition: str, file_id: str) -> bool:
    return any(file_id in entry.name and not entry.is_dir for entry in storage.list_dir(partition))
