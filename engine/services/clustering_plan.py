"""Clustering plans: what ``<t>.replacecommit.requested`` (table version 6) or
``<t>.clustering.requested`` (versions 8 and 9) holds, which file groups pending plans hold, and
how a new plan is made from Hudi's size-based planning keys.

The requested file is one Avro ``HoodieRequestedReplaceMetadata`` record::

    operationType  "CLUSTER"
    clusteringPlan HoodieClusteringPlan
        inputGroups   [HoodieClusteringGroup: slices [HoodieSliceInfo: dataFilePath (full path),
                       deltaFilePaths, fileId, partitionPath, bootstrapFilePath "", version 1],
                       metrics (Hudi's file slice metrics, MB as whole numbers),
                       numOutputFileGroups, extraMetadata null, version 1]
        strategy      HoodieClusteringStrategy: strategyClassName (Hudi's
                      SparkSortAndSizeExecutionStrategy), strategyParams (the sort columns under
                      hoodie.clustering.plan.strategy.sort.columns, and the curve under
                      hoodie.layout.optimize.strategy when it is not linear), version 1
        extraMetadata {}, version 1, preserveHoodieMetadata,
        missingSchedulePartitions [] (Hudi 1.x only: version 6 writes 0.x's plan)
    extraMetadata  {}
    version        1

Planning follows Hudi's ``SparkSizeBasedClusteringPlanStrategy``: in each partition the
partition filter keeps, the latest file slices whose base file is below
``hoodie.clustering.plan.strategy.small.file.limit`` (a slice without a base file counts as
empty), outside pending compaction and pending clustering, largest first, are packed into groups
of at most ``max.bytes.per.group`` bytes (a log-only slice counts as
``hoodie.parquet.max.file.size``), each writing ``ceil(bytes / target.file.max.bytes)`` file
groups, at most ``max.num.groups`` groups in the plan.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import fastavro

from engine import config
from engine.config import HoodieConfig
from engine.errors import ConfigError, TimelineError
from engine.fs.filenames import parse_base_file_name, parse_log_file_name, partition_file_path
from engine.fs.storage import Storage
from engine.timeline.avro_metadata import (
    REQUESTED_REPLACE_METADATA_SCHEMA,
    deserialize,
    serialize,
)
from engine.timeline.instant import Action, Instant, State, instant_file_name
from engine.timeline.layout import TimelineLayout
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSlice, FileSystemView, plan_slice_files

__all__ = [
    "CLUSTER_OPERATION",
    "ClusteringGroup",
    "ClusteringPlan",
    "ClusteringSlice",
    "clustering_action",
    "clustering_file_groups",
    "is_scheduled_clustering",
    "pending_clustering",
    "plan_clustering",
    "read_clustering_plan",
]

CLUSTER_OPERATION = "CLUSTER"
_MB = 1024 * 1024


@cache
def _plan_schema_0x() -> Any:
    """The requested replace metadata as Hudi 0.x writes it for version 6: the one definition
    (Hudi 1.x's, :data:`REQUESTED_REPLACE_METADATA_SCHEMA`) without the plan's
    ``missingSchedulePartitions``, which 0.x's plan does not have."""
    schema = copy.deepcopy(REQUESTED_REPLACE_METADATA_SCHEMA.as_dict)
    plan = next(f for f in schema["fields"] if f["name"] == "clusteringPlan")["type"][1]
    plan["fields"] = [f for f in plan["fields"] if f["name"] != "missingSchedulePartitions"]
    return fastavro.parse_schema(schema)


@dataclass(frozen=True, slots=True)
class ClusteringSlice:
    """One file slice of an input group (a HoodieSliceInfo); files by name."""

    partition_path: str
    file_id: str
    base_file: str | None
    log_files: tuple[str, ...] = ()

    @property
    def base_instant_time(self) -> str:
        if self.base_file is not None:
            return parse_base_file_name(self.base_file).instant_time
        return parse_log_file_name(self.log_files[0]).base_instant_time

    @property
    def file_slice(self) -> FileSlice:
        return FileSlice(
            self.partition_path,
            self.file_id,
            self.base_instant_time,
            self.base_file,
            self.log_files,
        )

    def to_avro(self, storage: Storage) -> dict[str, Any]:
        def full(name: str) -> str:
            return storage.qualified(partition_file_path(self.partition_path, name))

        return {
            "dataFilePath": full(self.base_file) if self.base_file else None,
            "deltaFilePaths": [full(n) for n in self.log_files],
            "fileId": self.file_id,
            "partitionPath": self.partition_path,
            "bootstrapFilePath": "",
            "version": 1,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> ClusteringSlice:
        partition_path, file_id, base_file, log_files = plan_slice_files(record)
        return cls(partition_path, file_id, base_file, log_files)


@dataclass(frozen=True, slots=True)
class ClusteringGroup:
    """One input group (a HoodieClusteringGroup): slices of one partition rewritten together
    into ``num_output_file_groups`` new file groups."""

    slices: tuple[ClusteringSlice, ...]
    num_output_file_groups: int = 1
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def partition_path(self) -> str:
        return self.slices[0].partition_path if self.slices else ""

    def to_avro(self, storage: Storage) -> dict[str, Any]:
        return {
            "slices": [s.to_avro(storage) for s in self.slices],
            "metrics": dict(self.metrics),
            "numOutputFileGroups": self.num_output_file_groups,
            "extraMetadata": None,
            "version": 1,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> ClusteringGroup:
        return cls(
            slices=tuple(ClusteringSlice.from_avro(s) for s in record.get("slices") or ()),
            num_output_file_groups=int(record.get("numOutputFileGroups") or 1),
            metrics=dict(record.get("metrics") or {}),
        )


@dataclass(frozen=True)
class ClusteringPlan:
    """The content of a requested clustering instant."""

    groups: tuple[ClusteringGroup, ...]
    strategy_class: str = config.CLUSTERING_EXECUTION_STRATEGY_CLASS.default
    strategy_params: dict[str, str] = field(default_factory=dict)
    preserve_hoodie_metadata: bool = True

    @property
    def sort_columns(self) -> tuple[str, ...]:
        raw = self.strategy_params.get(config.CLUSTERING_SORT_COLUMNS.key, "")
        return tuple(c.strip() for c in raw.split(",") if c.strip())

    @property
    def layout_strategy(self) -> str:
        raw = self.strategy_params.get(config.LAYOUT_OPTIMIZE_STRATEGY.key)
        return config.LAYOUT_OPTIMIZE_STRATEGY.parse(raw) if raw else "linear"

    @property
    def file_groups(self) -> frozenset[tuple[str, str]]:
        return frozenset((s.partition_path, s.file_id) for g in self.groups for s in g.slices)

    def replaced_file_ids(self) -> dict[str, list[str]]:
        """``partitionToReplaceFileIds``: every input file group, by partition."""
        out: dict[str, list[str]] = {}
        for partition, file_id in sorted(self.file_groups):
            out.setdefault(partition, []).append(file_id)
        return out

    def to_bytes(self, storage: Storage, *, table_version: int) -> bytes:
        """The Avro record Hudi writes for this table version."""
        plan: dict[str, Any] = {
            "inputGroups": [g.to_avro(storage) for g in self.groups],
            "strategy": {
                "strategyClassName": self.strategy_class,
                "strategyParams": dict(self.strategy_params),
                "version": 1,
            },
            "extraMetadata": {},
            "version": 1,
            "preserveHoodieMetadata": self.preserve_hoodie_metadata,
        }
        record = {
            "operationType": CLUSTER_OPERATION,
            "clusteringPlan": plan,
            "extraMetadata": {},
            "version": 1,
        }
        if table_version >= 8:
            plan["missingSchedulePartitions"] = []
            return serialize(REQUESTED_REPLACE_METADATA_SCHEMA, record)
        return serialize(_plan_schema_0x(), record)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ClusteringPlan:
        plan = record.get("clusteringPlan") or {}
        strategy = plan.get("strategy") or {}
        return cls(
            groups=tuple(ClusteringGroup.from_avro(g) for g in plan.get("inputGroups") or ()),
            strategy_class=strategy.get("strategyClassName")
            or config.CLUSTERING_EXECUTION_STRATEGY_CLASS.default,
            strategy_params=dict(strategy.get("strategyParams") or {}),
            preserve_hoodie_metadata=plan.get("preserveHoodieMetadata") is not False,
        )


# ---- pending plans --------------------------------------------------------------------------


def clustering_action(storage: Storage) -> Action:
    """The action of a pending clustering: ``clustering`` in timeline layout 2, else
    ``replacecommit`` (both complete as ``replacecommit``)."""
    return Action.CLUSTERING if TimelineLayout.of(storage).version >= 2 else Action.REPLACE_COMMIT


def _requested_record(storage: Storage, instant: Instant) -> dict[str, Any] | None:
    """The requested replace metadata of a pending instant (``None``: empty content, an
    insert_overwrite of Hudi's Java writers)."""
    name = instant_file_name(instant.instant_time, instant.action, State.REQUESTED)
    rel = f"{TimelineLayout.of(storage).directory}/{name}"
    if not storage.exists(rel):
        return None
    data = storage.read_bytes(rel)
    return deserialize(data, source=rel) if data else None


def _is_clustering(storage: Storage, instant: Instant) -> bool:
    if instant.action is Action.CLUSTERING:
        return True
    if instant.action is not Action.REPLACE_COMMIT:
        return False
    record = _requested_record(storage, instant)
    return record is not None and record.get("operationType") == CLUSTER_OPERATION


def pending_clustering(storage: Storage, timeline: Timeline) -> list[Instant]:
    """Requested or inflight clustering instants, oldest first."""
    done = {i.instant_time for i in timeline.completed()}
    return [
        i
        for i in timeline.pending([Action.REPLACE_COMMIT, Action.CLUSTERING])
        if i.instant_time not in done and _is_clustering(storage, i)
    ]


def is_scheduled_clustering(storage: Storage, instant: Instant) -> bool:
    """A clustering plan not started yet: it stays pending for its execution, no failed
    write to roll back (Hudi's rollback of failed writes leaves clustering alone)."""
    return instant.state is State.REQUESTED and _is_clustering(storage, instant)


def read_clustering_plan(storage: Storage, instant: Instant) -> ClusteringPlan:
    """The plan of a pending (or completed) clustering instant.

    Raises:
        TimelineError: the instant holds no clustering plan.
    """
    for action in (instant.action, Action.CLUSTERING, Action.REPLACE_COMMIT):
        found = Instant(instant.instant_time, action, State.REQUESTED)
        record = _requested_record(storage, found)
        if record is not None and record.get("operationType") == CLUSTER_OPERATION:
            return ClusteringPlan.from_record(record)
    raise TimelineError(f"Instant {instant} in {storage.base_path} holds no clustering plan")


def clustering_file_groups(storage: Storage, timeline: Timeline) -> frozenset[tuple[str, str]]:
    """(partition path, file id) of every file group a pending clustering rewrites."""
    groups: set[tuple[str, str]] = set()
    for instant in pending_clustering(storage, timeline):
        groups |= read_clustering_plan(storage, instant).file_groups
    return frozenset(groups)


# ---- planning -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanLimits:
    """Hudi's size-based planning keys, read once."""

    small_file_limit: int
    target_file_max_bytes: int
    max_bytes_per_group: int
    max_num_groups: int
    parquet_max_file_size: int
    single_group: bool

    @classmethod
    def of(cls, cfg: HoodieConfig) -> PlanLimits:
        """The limits of ``cfg``; its plan strategy is read too, so that a strategy other than
        the size-based one (the one implemented) is refused before planning, naming the key."""
        cfg.get(config.CLUSTERING_PLAN_STRATEGY_CLASS)
        return cls(
            small_file_limit=cfg.get(config.CLUSTERING_SMALL_FILE_LIMIT),
            target_file_max_bytes=cfg.get(config.CLUSTERING_TARGET_FILE_MAX_BYTES),
            max_bytes_per_group=cfg.get(config.CLUSTERING_MAX_BYTES_PER_GROUP),
            max_num_groups=cfg.get(config.CLUSTERING_MAX_NUM_GROUPS),
            parquet_max_file_size=cfg.get(config.PARQUET_MAX_FILE_SIZE),
            single_group=cfg.get(config.CLUSTERING_SINGLE_GROUP_ENABLED),
        )


def filter_partitions(partitions: Sequence[str], cfg: HoodieConfig) -> list[str]:
    """The partitions ``hoodie.clustering.plan.partition.filter.mode`` keeps (after
    ``partition.selected`` and ``partition.regex.pattern``, as Hudi applies them first).

    Raises:
        ConfigError: SELECTED_PARTITIONS without a begin and an end partition.
    """
    chosen = sorted(partitions)
    selected = cfg.get(config.CLUSTERING_PARTITION_SELECTED)
    if selected:
        chosen = [p for p in chosen if p in set(selected)]
    pattern = cfg.get(config.CLUSTERING_PARTITION_REGEX_PATTERN)
    if pattern:
        chosen = [p for p in chosen if re.fullmatch(pattern, p)]
    mode = cfg.get(config.CLUSTERING_PARTITION_FILTER_MODE)
    if mode == "RECENT_DAYS":
        lookback = cfg.get(config.CLUSTERING_DAYBASED_LOOKBACK_PARTITIONS)
        skip = cfg.get(config.CLUSTERING_DAYBASED_SKIP_FROM_LATEST)
        newest_first = sorted(chosen, reverse=True)  # Hudi: partition paths, descending
        return sorted(newest_first[skip : skip + lookback])
    if mode == "SELECTED_PARTITIONS":
        begin = cfg.get(config.CLUSTERING_BEGIN_PARTITION)
        end = cfg.get(config.CLUSTERING_END_PARTITION)
        if begin is None or end is None:
            raise ConfigError(
                f"{config.CLUSTERING_PARTITION_FILTER_MODE.key}=SELECTED_PARTITIONS needs "
                f"{config.CLUSTERING_BEGIN_PARTITION.key} and {config.CLUSTERING_END_PARTITION.key}"
            )
        return [p for p in chosen if begin <= p <= end]
    return chosen


def _metrics(
    slices: Iterable[FileSlice], view: FileSystemView, default_size: int
) -> dict[str, float]:
    """Hudi's file slice metrics of a group (MB as whole numbers, as Java's long division)."""
    log_files = log_bytes = read = write = 0
    for s in slices:
        log_files += len(s.log_files)
        log_bytes += sum(view.file_size(p) for p in s.log_file_paths)
        base = view.file_size(s.base_file_path) if s.base_file_path else 0
        read += base
        write += base if base > 0 else default_size
    read_mb, write_mb = (read + log_bytes) // _MB, write // _MB
    return {
        "TOTAL_LOG_FILES": float(log_files),
        "TOTAL_IO_MB": float(read_mb + write_mb),
        "TOTAL_IO_READ_MB": float(read_mb),
        "TOTAL_LOG_FILES_SIZE": float(log_bytes),
        "TOTAL_IO_WRITE_MB": float(write_mb),
    }


def _candidates(
    view: FileSystemView, partition: str, busy: frozenset[tuple[str, str]], limit: int
) -> list[tuple[int, FileSlice]]:
    """(base file size, slice) of the partition's small latest slices, largest first."""
    out = []
    for s in view.latest_file_slices():
        if s.partition_path != partition or (s.partition_path, s.file_id) in busy:
            continue
        size = view.file_size(s.base_file_path) if s.base_file_path else 0
        if size < limit:
            out.append((size, s))
    out.sort(key=lambda pair: (-pair[0], pair[1].file_id))
    return out


def _groups_of_partition(
    view: FileSystemView, partition: str, busy: frozenset[tuple[str, str]], limits: PlanLimits
) -> list[ClusteringGroup]:
    groups: list[ClusteringGroup] = []
    current: list[FileSlice] = []
    total = 0

    def close() -> None:
        n = max(1, math.ceil(total / limits.target_file_max_bytes))
        slices = tuple(
            ClusteringSlice(s.partition_path, s.file_id, s.base_file, tuple(s.log_files))
            for s in current
        )
        metrics = _metrics(current, view, limits.parquet_max_file_size)
        groups.append(ClusteringGroup(slices, n, metrics))

    for size, s in _candidates(view, partition, busy, limits.small_file_limit):
        counted = size if s.base_file is not None else limits.parquet_max_file_size
        if current and total + counted > limits.max_bytes_per_group:
            close()
            current, total = [], 0
        current.append(s)
        total += counted
    if current:
        close()
    if not limits.single_group:
        groups = [g for g in groups if len(g.slices) > 1]
    return groups


def plan_clustering(
    storage: Storage,
    timeline: Timeline,
    cfg: HoodieConfig,
    *,
    busy: frozenset[tuple[str, str]] = frozenset(),
) -> ClusteringPlan:
    """A plan over the table as ``timeline`` shows it; ``busy`` are the file groups of
    pending compactions (pending clustering ones are added here). No group: nothing to do."""
    busy = busy | clustering_file_groups(storage, timeline)
    limits = PlanLimits.of(cfg)
    view = FileSystemView(storage, timeline)
    groups: list[ClusteringGroup] = []
    for partition in filter_partitions(view.partition_paths, cfg):
        groups.extend(_groups_of_partition(view, partition, busy, limits))
        if len(groups) >= limits.max_num_groups:
            groups = groups[: limits.max_num_groups]
            break
    params: dict[str, str] = {}
    columns = cfg.get(config.CLUSTERING_SORT_COLUMNS)
    if columns:
        params[config.CLUSTERING_SORT_COLUMNS.key] = ",".join(columns)
    strategy = cfg.get(config.LAYOUT_OPTIMIZE_STRATEGY)
    if strategy != "linear":
        params[config.LAYOUT_OPTIMIZE_STRATEGY.key] = strategy
        params[config.LAYOUT_OPTIMIZE_CURVE_METHOD.key] = cfg.get(
            config.LAYOUT_OPTIMIZE_CURVE_METHOD
        )
    return ClusteringPlan(
        groups=tuple(groups),
        strategy_class=cfg.get(config.CLUSTERING_EXECUTION_STRATEGY_CLASS),
        strategy_params=params,
        preserve_hoodie_metadata=cfg.get(config.CLUSTERING_PRESERVE_COMMIT_METADATA),
    )
