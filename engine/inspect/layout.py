"""Partitions and file groups: the latest slice of each live file group, sizes on storage."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow.parquet as pq

from engine.errors import HudiError
from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage
from engine.inspect.table import InspectedTable, small_file_limit
from engine.services.compaction import HoodieCompactionPlan, pending_compactions
from engine.timeline.instant import Action, State, instant_file_name
from engine.view.fs_view import FileSlice


@dataclass(frozen=True)
class FileGroupRow:
    """The latest file slice of one live file group."""

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file: str | None
    base_bytes: int
    log_files: list[str]
    log_bytes: int
    slices: int
    delta_commits: int
    pending_compaction: str | None


def _pending_compaction_groups(table: InspectedTable) -> dict[tuple[str, str], str]:
    """(partition_path, file_id) → instant time of the pending compaction that plans it."""
    out: dict[tuple[str, str], str] = {}
    for instant in pending_compactions(table.timeline):
        rel = f"{METAFOLDER}/" + instant_file_name(
            instant.instant_time, Action.COMPACTION, State.REQUESTED
        )
        plan = HoodieCompactionPlan.from_bytes(table.storage.read_bytes(rel), source=rel)
        for op in plan.operations:
            out.setdefault((op.partition_path, op.file_id), instant.instant_time)
    return out


def _delta_commits_since(table: InspectedTable, slices: Iterable[FileSlice]) -> dict[Any, int]:
    """Per file group: completed deltacommits that wrote to it after its latest slice opened."""
    opened = {(s.partition_path, s.file_id): s.base_instant_time for s in slices}
    counts = dict.fromkeys(opened, 0)
    for instant in table.timeline.completed([Action.DELTA_COMMIT]):
        for key in table.commit_metadata(instant).file_ids_written():
            if key in opened and instant.instant_time >= opened[key]:
                counts[key] += 1
    return counts


def _check_partition(table: InspectedTable, partition: str | None) -> None:
    if partition is not None and partition not in table.view.partition_paths:
        known = ", ".join(repr(p) for p in table.view.partition_paths[:5]) or "none"
        raise HudiError(
            f"No partition {partition!r} in {table.base_path} (partitions: {known}"
            + (", ...)" if len(table.view.partition_paths) > 5 else ")")
        )


def file_groups(table: InspectedTable, partition: str | None = None) -> list[FileGroupRow]:
    """The latest slice of every live file group (of one partition when given).

    Raises:
        HudiError: ``partition`` is not a partition of the table.
    """
    _check_partition(table, partition)
    slices = [s for s in table.latest_slices if partition is None or s.partition_path == partition]
    planned = _pending_compaction_groups(table)
    deltas = _delta_commits_since(table, slices)
    groups = {(g.partition_path, g.file_id): g for g in table.view.file_groups()}
    rows = []
    for s in slices:
        key = (s.partition_path, s.file_id)
        rows.append(
            FileGroupRow(
                partition_path=s.partition_path,
                file_id=s.file_id,
                base_instant_time=s.base_instant_time,
                base_file=s.base_file,
                base_bytes=table.view.file_size(s.base_file_path) if s.base_file_path else 0,
                log_files=list(s.log_files),
                log_bytes=sum(table.view.file_size(p) for p in s.log_file_paths),
                slices=len(groups[key].base_instants()),
                delta_commits=deltas[key],
                pending_compaction=planned.get(key),
            )
        )
    return rows


@dataclass(frozen=True)
class PartitionRow:
    """A partition: its live file groups' latest slices and every Hudi file it holds."""

    partition_path: str
    file_groups: int
    base_files: int
    base_bytes: int
    base_records: int
    log_files: int
    log_bytes: int
    small_base_files: int
    files_on_storage: int
    bytes_on_storage: int


def _footer_rows(storage: Storage, rel: str) -> int:
    with storage.open_input(rel) as f:
        return int(pq.read_metadata(f).num_rows)


def partitions(table: InspectedTable) -> list[PartitionRow]:
    """Every partition with the sizes of its latest slices and of all its Hudi files."""
    limit = small_file_limit(table)
    view = table.view
    rows = []
    for partition in view.partition_paths:
        slices = [s for s in table.latest_slices if s.partition_path == partition]
        bases = [s.base_file_path for s in slices if s.base_file_path]
        base_sizes = [view.file_size(p) for p in bases]
        logs = [p for s in slices for p in s.log_file_paths]
        on_storage = [
            f for g in view.file_groups() if g.partition_path == partition for f in _group_files(g)
        ]
        rows.append(
            PartitionRow(
                partition_path=partition,
                file_groups=len(slices),
                base_files=len(bases),
                base_bytes=sum(base_sizes),
                base_records=sum(_footer_rows(table.storage, p) for p in bases),
                log_files=len(logs),
                log_bytes=sum(view.file_size(p) for p in logs),
                small_base_files=sum(1 for size in base_sizes if size < limit),
                files_on_storage=len(on_storage),
                bytes_on_storage=sum(view.file_size(p) for p in on_storage),
            )
        )
    return rows


def _group_files(group: Any) -> list[str]:
    prefix = f"{group.partition_path}/" if group.partition_path else ""
    names = list(group.base_files.values()) + [
        log.name for logs in group.log_files.values() for log in logs
    ]
    return [prefix + n for n in names]


def base_file_sizes(table: InspectedTable) -> dict[str, list[int]]:
    """Partition → sizes of the latest base files of its live file groups."""
    out: dict[str, list[int]] = {p: [] for p in table.view.partition_paths}
    for s in table.latest_slices:
        if s.base_file_path:
            out[s.partition_path].append(table.view.file_size(s.base_file_path))
    return out
