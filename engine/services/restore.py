"""Restore: the table rolled back to a completed instant (a savepoint or any commit whose file
slices are still on storage), as one ``restore`` action every Hudi reader understands::

    <r>.restore.requested   Avro HoodieRestorePlan: the instants after the target, newest first
    <r>.restore.inflight    empty
    (each instant rolled back in plan order through engine.services.rollback: <x>.rollback.requested
     and .inflight are written, its files deleted or, for a merge-on-read log file in a slice an
     older instant opened in table version 6, a rollback COMMAND block appended; the rollbacks are
     never completed on their own)
    <r>.restore             Avro HoodieRestoreMetadata: per rolled-back instant, its
                            HoodieRollbackMetadata
    (then the restore's pending rollback instants are deleted, as Hudi does)

Rolled back: every commit, deltacommit, replacecommit and compaction (completed or pending)
after the target, and the savepoints after it. Refused with nothing changed: a target that is
not a completed write on the active timeline, one whose slices the cleaner removed (a savepoint
pins them), a write after it whose writer is still running.

A restore killed midway stays pending; :func:`finish_pending_restores` (run by the next writer
and by every service that rolls back failed writes) completes it from its plan: instants whose
rollback already started resume from their rollback plans, the others are rolled back anew.
After a restore, time travel to an instant it removed fails, naming the instant and the restore
(:func:`engine.read.time_travel.require_not_restored`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.errors import QueryError, TimelineError
from engine.faults import checkpoint
from engine.fs.storage import Storage
from engine.metadata.sync import record_restore
from engine.read.time_travel import require_retained_files
from engine.services.rollback import (
    apply_rollback,
    pending_rollback_plans,
    roll_back_metadata_instant,
    rollback_failed_writes,
    start_rollback,
)
from engine.timeline.avro_metadata import (
    RESTORE_METADATA_SCHEMA,
    RESTORE_PLAN_SCHEMA,
    deserialize,
    serialize,
)
from engine.timeline.instant import COMMIT_ACTIONS, Action, Instant, State, new_instant_time
from engine.timeline.timeline import (
    Timeline,
    complete,
    create_requested,
    delete_instant_files,
    transition_to_inflight,
)

__all__ = ["RestorePlan", "RestoreResult", "finish_pending_restores", "plan_restore", "restore"]

# what a restore rolls back: every action that writes data files
RESTORED_ACTIONS = frozenset(
    {*COMMIT_ACTIONS, Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING}
)


@dataclass(frozen=True)
class RestorePlan:
    """The instants a restore to ``target`` rolls back, newest first."""

    target: str  # Hudi's plan names it savepointToRestoreTimestamp, savepointed or not
    instants: tuple[Instant, ...]

    def to_avro(self) -> bytes:
        record = {
            "instantsToRollback": [
                {"commitTime": i.instant_time, "action": i.action.value} for i in self.instants
            ],
            "version": 2,
            "savepointToRestoreTimestamp": self.target,
        }
        return serialize(RESTORE_PLAN_SCHEMA, record)

    @classmethod
    def from_avro(cls, data: bytes, *, source: str) -> RestorePlan:
        record = deserialize(data, source=source)
        try:
            instants = tuple(
                Instant(str(i["commitTime"]), Action(str(i["action"])), State.COMPLETED)
                for i in record.get("instantsToRollback") or []
            )
        except (KeyError, ValueError) as e:
            raise TimelineError(f"Unreadable restore plan {source}: {e}") from e
        target = record.get("savepointToRestoreTimestamp")
        if not target:
            raise TimelineError(f"Restore plan {source} names no instant to restore to")
        return cls(str(target), instants)


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did."""

    instant_time: str
    target: str
    rolled_back: tuple[Instant, ...]  # newest first
    savepoints_deleted: tuple[str, ...]


def plan_restore(
    storage: Storage,
    timeline: Timeline,
    target: str,
    *,
    is_alive: Callable[[Instant], bool] | None = None,
) -> RestorePlan:
    """What restoring to ``target`` rolls back (writes nothing).

    Raises:
        TimelineError: the target is not a completed write on the active timeline, the cleaner
            removed files of its slices, or a write after it is still running.
    """
    done = [i.instant_time for i in timeline.commits_timeline()]
    if target not in done:
        raise TimelineError(
            f"Cannot restore {storage.base_path} to {target}: not a completed write on its "
            f"active timeline (completed writes: {', '.join(done[-5:]) or 'none'})"
        )
    try:
        require_retained_files(storage, timeline, target, query="Restore to")
    except QueryError as e:
        raise TimelineError(f"{e} No savepoint pins them: nothing was changed.") from None
    later = [
        i for i in reversed(timeline.instants)
        if i.instant_time > target and i.action in RESTORED_ACTIONS
    ]  # fmt: skip
    alive = [i for i in later if not i.is_completed and is_alive is not None and is_alive(i)]
    if alive:
        raise TimelineError(
            f"Cannot restore {storage.base_path} to {target}: write {alive[0].instant_time} "
            f"({alive[0].action.value}) is still running (its heartbeat is alive)"
        )
    return RestorePlan(target, tuple(later))


def _roll_back(
    storage: Storage, plan: RestorePlan, restore_time: str
) -> dict[str, list[dict[str, Any]]]:
    """Roll back the plan's instants newest first, resuming rollbacks a killed restore began;
    rolled-back instant time -> its rollback metadata."""
    timeline = Timeline.load(storage)
    resumed = pending_rollback_plans(storage, timeline)
    on_timeline = {(i.instant_time, i.action) for i in timeline.instants}
    after = max(restore_time, timeline.max_instant_time() or restore_time)
    metadata: dict[str, list[dict[str, Any]]] = {}
    for k, instant in enumerate(plan.instants):
        if instant.instant_time in resumed:
            rollback_time, rollback = resumed[instant.instant_time]
        elif (instant.instant_time, instant.action) in on_timeline or _completed_compaction(
            instant, on_timeline
        ):
            rollback_time, rollback = start_rollback(storage, instant, after)
            after = rollback_time
        else:
            continue  # rolled back before the restore was killed, its rollback gone
        metadata[instant.instant_time] = [apply_rollback(storage, rollback, rollback_time)]
        if k == 0:
            checkpoint("restore.mid_rollback")
    return metadata


def _completed_compaction(instant: Instant, on_timeline: set[tuple[str, Action]]) -> bool:
    return instant.action is Action.COMPACTION and (instant.instant_time, Action.COMMIT) in (
        on_timeline
    )


def _execute(storage: Storage, plan: RestorePlan, restore_time: str) -> RestoreResult:
    """Run an inflight restore to completion."""
    started = time.monotonic()
    timeline = Timeline.load(storage)
    later_savepoints = tuple(t for t in timeline.savepoint_times() if t > plan.target)
    for t in later_savepoints:
        delete_instant_files(storage, t, Action.SAVEPOINT)
    rollbacks = _roll_back(storage, plan, restore_time)
    checkpoint("restore.before_complete")
    metadata = {
        "startRestoreTime": restore_time,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "instantsToRollback": [i.instant_time for i in plan.instants],
        "hoodieRestoreMetadata": rollbacks,
        "version": 1,
        "restoreInstantInfo": [
            {"commitTime": i.instant_time, "action": i.action.value} for i in plan.instants
        ],
        "extraMetadata": {"restoredTo": plan.target},
    }
    record_restore(
        storage, restore_time, metadata, roll_back_metadata_instant
    )  # the metadata table is restored first
    complete(storage, restore_time, Action.RESTORE, serialize(RESTORE_METADATA_SCHEMA, metadata))
    for pending in Timeline.load(storage).pending([Action.ROLLBACK]):
        if pending.instant_time > restore_time:
            delete_instant_files(storage, pending.instant_time, Action.ROLLBACK)
    return RestoreResult(restore_time, plan.target, plan.instants, later_savepoints)


def restore(
    storage: Storage,
    target: str,
    *,
    is_alive: Callable[[Instant], bool] | None = None,
) -> RestoreResult:
    """Restore the table to ``target``. The caller holds the table lock.

    Pending rollbacks and restores are finished first, then writes whose writer is gone are
    rolled back, so the plan sees the table as the next writer would.

    Raises:
        TimelineError: see :func:`plan_restore` (nothing is changed then).
    """
    plan_restore(storage, Timeline.load(storage), target, is_alive=is_alive)  # refuse first
    finish_pending_restores(storage)
    rollback_failed_writes(storage, Timeline.load(storage), is_alive=is_alive)
    timeline = Timeline.load(storage)
    plan = plan_restore(storage, timeline, target, is_alive=is_alive)
    restore_time = new_instant_time(timeline.max_instant_time())
    create_requested(storage, restore_time, Action.RESTORE, plan.to_avro())
    checkpoint("restore.requested")
    transition_to_inflight(storage, restore_time, Action.RESTORE)
    return _execute(storage, plan, restore_time)


def finish_pending_restores(storage: Storage) -> list[RestoreResult]:
    """Complete the restores a killed process left pending, from their plans."""
    timeline = Timeline.load(storage)
    done = []
    for pending in timeline.pending([Action.RESTORE]):
        requested = Instant(pending.instant_time, Action.RESTORE, State.REQUESTED)
        content = timeline.read_content(requested)
        plan = RestorePlan.from_avro(content, source=str(requested))
        if pending.state is State.REQUESTED:
            transition_to_inflight(storage, pending.instant_time, Action.RESTORE)
        done.append(_execute(storage, plan, pending.instant_time))
    return done
