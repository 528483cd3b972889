"""Undo a run: restore every table a dbt invocation wrote to its state just before it.

Every commit a dbt run makes carries the invocation's id and the model's unique id in its
extraMetadata (:data:`RUN_ID_KEY`, :data:`RUN_NODE_KEY`). For one table, the run's commits are
those carrying the id; the restore target is the latest completed write before the first of
them. Refused, with nothing changed:

* the run created the table (no write before it: there is no state to go back to);
* a later writer also changed the table (a commit after the run's first one that the run did not
  make; compactions change no rows and do not count), naming its instant and who wrote it,
  unless ``force``: then the restore removes that writer's commits too;
* the target cannot be restored (its slices cleaned and not savepointed: see
  :mod:`engine.services.restore`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from engine.errors import TimelineError
from engine.fs.storage import Storage
from engine.services.restore import plan_restore
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import Instant
from engine.timeline.timeline import Timeline

__all__ = ["RUN_ID_KEY", "RUN_NODE_KEY", "RunRestorePlan", "plan_run_restore"]

RUN_ID_KEY = "_dbt_hudi.invocation_id"
RUN_NODE_KEY = "_dbt_hudi.unique_id"


@dataclass(frozen=True)
class RunRestorePlan:
    """What restoring one table to its state before a run does."""

    base_path: str
    invocation_id: str
    written: tuple[str, ...]  # the run's commits, oldest first
    models: tuple[str, ...]  # unique ids of the models whose commits they are
    target: str | None  # the instant the table goes back to
    rolled_back: tuple[str, ...]  # every instant the restore removes, newest first
    later_writers: tuple[tuple[str, str], ...]  # (instant, who wrote it) after the run began
    refusal: str | None = None

    @property
    def status(self) -> str:
        if not self.written:
            return "not written by the run"
        return "refused" if self.refusal else "to restore"


def who_wrote(metadata: HoodieCommitMetadata) -> str:
    """The writer of a commit, as its extraMetadata names it."""
    run = metadata.extra_metadata.get(RUN_ID_KEY)
    if run is None:
        return f"a writer outside dbt ({metadata.operation_type.lower()})"
    node = metadata.extra_metadata.get(RUN_NODE_KEY, "a dbt node")
    return f"{node} in dbt invocation {run}"


def _is_compaction(metadata: HoodieCommitMetadata) -> bool:
    return metadata.compacted or metadata.operation_type.upper() in ("COMPACT", "LOG_COMPACT")


def plan_run_restore(
    storage: Storage,
    invocation_id: str,
    *,
    force: bool = False,
    is_alive: Callable[[Instant], bool] | None = None,
) -> RunRestorePlan:
    """Plan the restore of one table to its state before run ``invocation_id`` (writes
    nothing); a plan with a ``refusal`` says why the table cannot be restored."""
    timeline = Timeline.load(storage)
    commits = [(i, timeline.read_commit_metadata(i)) for i in timeline.commits_timeline()]
    mine = [(i, m) for i, m in commits if m.extra_metadata.get(RUN_ID_KEY) == invocation_id]
    base = storage.base_path
    if not mine:
        return RunRestorePlan(base, invocation_id, (), (), None, (), ())
    first = mine[0][0].instant_time
    written = tuple(i.instant_time for i, _ in mine)
    models = tuple(sorted({m.extra_metadata.get(RUN_NODE_KEY, "") for _, m in mine} - {""}))
    before = [i.instant_time for i, _ in commits if i.instant_time < first]
    later = tuple(
        (i.instant_time, who_wrote(m))
        for i, m in commits
        if i.instant_time > first
        and m.extra_metadata.get(RUN_ID_KEY) != invocation_id
        and not _is_compaction(m)
    )
    plan = RunRestorePlan(base, invocation_id, written, models, None, (), later)
    if not before:
        return _refused(plan, f"run {invocation_id} created the table at {first}: there is no "
                        "earlier state to restore (drop the table, or rebuild it)")  # fmt: skip
    target = before[-1]
    if later and not force:
        instant, who = later[0]
        return _refused(
            plan, f"instant {instant} was written after the run by {who} (force to remove it too)"
        )
    try:
        restore = plan_restore(storage, timeline, target, is_alive=is_alive)
    except TimelineError as e:
        return _refused(plan, str(e))
    rolled_back = tuple(i.instant_time for i in restore.instants)
    return RunRestorePlan(base, invocation_id, written, models, target, rolled_back, later)


def _refused(plan: RunRestorePlan, reason: str) -> RunRestorePlan:
    why = f"Cannot restore {plan.base_path} to before run {plan.invocation_id}: {reason}"
    return replace(plan, refusal=why)
