"""Pending clustering on the timeline: the file groups a clustering plan will rewrite.

A clustering is scheduled as a plan in the requested file of its instant (a ``replacecommit``
on table version 6, a ``clustering`` instant on 8 and 9): the ``HoodieRequestedReplaceMetadata``
record with ``operationType`` ``CLUSTER`` and a ``clusteringPlan`` whose input groups list the
file slices to rewrite. Apache Hudi's pending plans keep no heartbeat and are never rolled back
as failed writes (:func:`engine.services.rollback.rollback_failed_writes`); updates to their file
groups are refused by ``hoodie.clustering.updates.strategy``
(:func:`engine.services.clustering.check_clustering_updates`).
"""

from __future__ import annotations

from typing import Any

from engine.errors import HudiError
from engine.fs.storage import Storage
from engine.timeline.avro_metadata import deserialize
from engine.timeline.instant import Action, Instant, State, instant_file_name
from engine.timeline.timeline import Timeline

__all__ = ["clustering_plan_groups"]


def _requested_record(storage: Storage, timeline: Timeline, instant: Instant) -> dict[str, Any]:
    name = instant_file_name(instant.instant_time, instant.action, State.REQUESTED)
    try:
        data = storage.read_bytes(f"{timeline.layout.directory}/{name}")
        return deserialize(data, source=f"requested {instant.action.value} {instant.instant_time}")
    except (HudiError, OSError):
        return {}  # empty (an insert overwrite's) or gone


def clustering_plan_groups(
    storage: Storage, timeline: Timeline, instant: Instant
) -> set[tuple[str, str]] | None:
    """(partition path, file id) of every slice the clustering plan of pending ``instant``
    rewrites; ``None`` when the instant is no clustering."""
    if instant.action not in (Action.REPLACE_COMMIT, Action.CLUSTERING):
        return None
    record = _requested_record(storage, timeline, instant)
    plan = record.get("clusteringPlan")
    if not isinstance(plan, dict):
        return None if record.get("operationType") != "CLUSTER" else set()
    return {
        (str(s.get("partitionPath") or ""), str(s.get("fileId")))
        for group in plan.get("inputGroups") or []
        for s in group.get("slices") or []
    }
