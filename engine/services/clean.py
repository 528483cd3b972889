"""The cleaner: deletes file slices no retained query needs any more.

Policies (``hoodie.cleaner.policy``):

* ``KEEP_LATEST_COMMITS`` (``hoodie.cleaner.commits.retained`` = N): queries as of any of the last
  N commits stay answerable. Per file group the latest slice, every slice opened at or after the
  earliest retained commit, and the one slice in effect at that commit are kept; older slices go.
  File groups replaced by a replacecommit older than the earliest retained commit go whole.
* ``KEEP_LATEST_FILE_VERSIONS`` (``hoodie.cleaner.fileversions.retained`` = N): the N latest slices
  of each file group are kept; replaced file groups go whole.

Never touched: slices of instants that are not committed (an inflight writer or a pending rollback
owns them), slices a pending compaction reads, the latest slice of a live file group, and a slice
holding a file a savepoint pins (:mod:`engine.services.savepoint`), replaced or not.
Timeline: ``<t>.clean.requested`` (Avro HoodieCleanerPlan), ``<t>.clean.inflight``, ``<t>.clean``
(Avro HoodieCleanMetadata). A clean left inflight is finished by the next clean from its plan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from engine import config
from engine.config import HoodieConfig
from engine.faults import checkpoint
from engine.fs.filenames import partition_file_path
from engine.fs.storage import Storage
from engine.metadata.sync import record_clean
from engine.services.savepoint import savepointed_files
from engine.timeline.avro_metadata import (
    CLEAN_METADATA_SCHEMA,
    CLEANER_PLAN_SCHEMA,
    deserialize,
    serialize,
)
from engine.timeline.instant import Action, Instant, State, new_instant_time
from engine.timeline.timeline import Timeline, complete, create_requested, transition_to_inflight
from engine.view.fs_view import FileGroup, FileSystemView, Visibility

CLEANER_PLAN_VERSION = 2


@dataclass(frozen=True)
class CleanPlan:
    """Files to delete, by partition (paths relative to the table's base path)."""

    policy: str
    earliest_instant_to_retain: str | None
    files_per_partition: dict[str, list[str]]

    @property
    def is_empty(self) -> bool:
        return not any(self.files_per_partition.values())

    def to_avro(self, storage: Storage) -> bytes:
        earliest = (
            {
                "timestamp": self.earliest_instant_to_retain,
                "action": Action.COMMIT.value,
                "state": "COMPLETED",
            }
            if self.earliest_instant_to_retain
            else None
        )
        record: dict[str, object] = {
            "earliestInstantToRetain": earliest,
            "policy": self.policy,
            "filesToBeDeletedPerPartition": None,
            "version": CLEANER_PLAN_VERSION,
            "filePathsToBeDeletedPerPartition": {
                partition: [
                    {"filePath": storage.uri(rel), "isBootstrapBaseFile": False} for rel in files
                ]
                for partition, files in self.files_per_partition.items()
            },
            "partitionsToBeDeleted": [],
        }
        return serialize(CLEANER_PLAN_SCHEMA, record)

    @classmethod
    def from_avro(cls, storage: Storage, data: bytes) -> CleanPlan:
        record = deserialize(data, source="clean plan")
        earliest = record.get("earliestInstantToRetain") or {}
        prefixes = storage.known_prefixes()
        files: dict[str, list[str]] = {}
        for partition, infos in (record.get("filePathsToBeDeletedPerPartition") or {}).items():
            for info in infos:
                path = str(info.get("filePath") or "")
                name = path.rsplit("/", 1)[-1]
                prefix = next((p for p in prefixes if path.startswith(p)), None)
                rel = path[len(prefix) :] if prefix else partition_file_path(partition, name)
                files.setdefault(partition, []).append(rel)
        return cls(str(record.get("policy") or ""), earliest.get("timestamp"), files)


@dataclass(frozen=True)
class CleanResult:
    instant_time: str
    deleted: dict[str, list[str]]
    failed: dict[str, list[str]]

    @property
    def total_deleted(self) -> int:
        return sum(len(v) for v in self.deleted.values())


def _slice_files(group: FileGroup, base_instant_time: str) -> list[str]:
    s = group.slice_at(base_instant_time)
    cdc = [
        partition_file_path(group.partition_path, n)
        for n in group.cdc_files.get(base_instant_time, [])
    ]
    return ([s.base_file_path] if s.base_file_path else []) + s.log_file_paths + sorted(cdc)


def _compaction_inputs(timeline: Timeline) -> set[tuple[str, str]]:
    """(partition_path, file_id) of groups a pending compaction reads: their slices stay."""
    groups: set[tuple[str, str]] = set()
    for instant in timeline.pending([Action.COMPACTION]):
        plan = deserialize(timeline.read_content(instant), source=str(instant))
        for op in plan.get("operations") or []:
            groups.add((op.get("partitionPath") or "", op.get("fileId") or ""))
    return groups


def _replace_instants(timeline: Timeline) -> dict[tuple[str, str], str]:
    """Replaced (partition_path, file_id) → instant time of the replacecommit."""
    out: dict[tuple[str, str], str] = {}
    for instant in timeline.completed([Action.REPLACE_COMMIT]):
        for key in timeline.read_commit_metadata(instant).replaced_file_ids():
            out.setdefault(key, instant.instant_time)
    return out


def plan_clean(storage: Storage, timeline: Timeline, cfg: HoodieConfig) -> CleanPlan:
    """Decide what to delete (pure given the listing; writes nothing)."""
    policy = cfg.get(config.CLEANER_POLICY)
    commits = [i.instant_time for i in timeline.commits_timeline()]
    earliest: str | None = None
    if policy == "KEEP_LATEST_COMMITS":
        retained = max(1, cfg.get(config.CLEANER_COMMITS_RETAINED))
        if len(commits) <= retained:
            return CleanPlan(policy, None, {})
        earliest = commits[-retained]
        pending = [i.instant_time for i in timeline.pending() if i.action is not Action.CLEAN]
        if pending and pending[0] < earliest:
            earliest = pending[0]
    keep_versions = max(1, cfg.get(config.CLEANER_FILEVERSIONS_RETAINED))
    visibility = Visibility.of(timeline)
    view = FileSystemView(storage, timeline)
    replaced = _replace_instants(timeline)
    protected = _compaction_inputs(timeline)
    pinned = savepointed_files(timeline)
    files: dict[str, list[str]] = {}
    for group in view.file_groups():
        key = (group.partition_path, group.file_id)
        if key in protected:
            continue
        committed = [t for t in group.base_instants() if visibility.is_committed(t)]
        doomed: list[str] = []
        if key in replaced:
            if earliest is None or replaced[key] < earliest:
                doomed = committed
        elif policy == "KEEP_LATEST_FILE_VERSIONS":
            doomed = committed[:-keep_versions]
        elif earliest is not None:
            older = [t for t in committed[:-1] if t < earliest]
            doomed = older[:-1]  # the newest of them is in effect at `earliest`: kept
        for t in doomed:
            slice_files = _slice_files(group, t)
            if not any((group.partition_path, f.rsplit("/", 1)[-1]) in pinned for f in slice_files):
                files.setdefault(group.partition_path, []).extend(slice_files)
    return CleanPlan(policy, earliest, {p: sorted(f) for p, f in files.items() if f})


def execute_clean(storage: Storage, plan: CleanPlan, instant_time: str) -> CleanResult:
    """Delete the plan's files and complete the clean instant (already inflight)."""
    started = time.monotonic()
    deleted: dict[str, list[str]] = {}
    failed: dict[str, list[str]] = {}
    for partition, rels in plan.files_per_partition.items():
        for rel in rels:
            try:
                storage.delete(rel)
                deleted.setdefault(partition, []).append(rel)
                checkpoint("clean.mid_delete")
            except OSError:
                failed.setdefault(partition, []).append(rel)
    partition_metadata = {
        partition: {
            "partitionPath": partition,
            "policy": plan.policy,
            "deletePathPatterns": [r.rsplit("/", 1)[-1] for r in rels],
            "successDeleteFiles": [r.rsplit("/", 1)[-1] for r in deleted.get(partition, [])],
            "failedDeleteFiles": [r.rsplit("/", 1)[-1] for r in failed.get(partition, [])],
            "isPartitionDeleted": False,
        }
        for partition, rels in plan.files_per_partition.items()
    }
    metadata = {
        "policy": plan.policy,
        "startCleanTime": instant_time,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": sum(len(v) for v in deleted.values()),
        "earliestCommitToRetain": plan.earliest_instant_to_retain or "",
        "lastCompletedCommitTimestamp": "",
        "partitionMetadata": partition_metadata,
        "version": CLEANER_PLAN_VERSION,
        "bootstrapPartitionMetadata": {},
    }
    record_clean(storage, instant_time, metadata)  # the metadata table deletes them first
    complete(storage, instant_time, Action.CLEAN, serialize(CLEAN_METADATA_SCHEMA, metadata))
    return CleanResult(instant_time, deleted, failed)


def finish_pending_cleans(storage: Storage, timeline: Timeline) -> Timeline:
    """Finish the cleans a killed process left pending, from their plans; the timeline after."""
    pending = timeline.pending([Action.CLEAN])
    for instant in pending:
        requested = Instant(instant.instant_time, Action.CLEAN, State.REQUESTED)
        plan = CleanPlan.from_avro(storage, timeline.read_content(requested))
        if instant.state is State.REQUESTED:
            transition_to_inflight(storage, instant.instant_time, Action.CLEAN)
        execute_clean(storage, plan, instant.instant_time)
    return timeline.reload() if pending else timeline


def clean(storage: Storage, cfg: HoodieConfig) -> CleanResult | None:
    """Finish any clean left pending, then schedule and run a new one if it has work.

    Returns the result of the new clean, or ``None`` when nothing was due. The caller holds
    the table lock.
    """
    timeline = finish_pending_cleans(storage, Timeline.load(storage))
    plan = plan_clean(storage, timeline, cfg)
    if plan.is_empty:
        return None
    instant_time = new_instant_time(timeline.max_instant_time())
    create_requested(storage, instant_time, Action.CLEAN, plan.to_avro(storage))
    checkpoint("clean.requested")
    transition_to_inflight(storage, instant_time, Action.CLEAN)
    return execute_clean(storage, plan, instant_time)
