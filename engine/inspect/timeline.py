"""The timeline as rows: what each instant wrote (or deleted), when, and how long it took; the
write stats of one commit."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.errors import HudiError
from engine.inspect.table import (
    InspectedTable,
    completed_file_mtime,
    instant_epoch,
    iso_time,
    requested_file_mtime,
)
from engine.timeline.avro_metadata import deserialize
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import COMMIT_ACTIONS, Action, Instant


@dataclass(frozen=True)
class InstantRow:
    """One instant of the active timeline with what it wrote (write actions) or deleted."""

    instant_time: str
    action: str
    state: str
    requested_time: str | None
    completed_time: str | None
    duration_seconds: float | None
    operation: str | None = None
    partitions: int | None = None
    rows_inserted: int | None = None
    rows_updated: int | None = None
    rows_deleted: int | None = None
    files_written: int | None = None
    bytes_written: int | None = None
    file_groups_replaced: int | None = None
    files_deleted: int | None = None


def _write_totals(stats: Iterable[HoodieWriteStat]) -> dict[str, int]:
    listed = list(stats)
    return {
        "rows_inserted": sum(s.num_inserts for s in listed),
        "rows_updated": sum(s.num_update_writes for s in listed),
        "rows_deleted": sum(s.num_deletes for s in listed),
        "files_written": len({s.path or s.file_id for s in listed}),
        "bytes_written": sum(s.total_write_bytes for s in listed),
    }


def instant_row(table: InspectedTable, instant: Instant) -> InstantRow:
    # layout 2 keeps both times in the instant; layout 1 only the requested time, so both ends
    # of the duration come from the instant files' modification times there
    requested = (
        instant_epoch(table, instant.instant_time)
        if instant.completion_time is not None
        else requested_file_mtime(table, instant)
    )
    completed = completed_file_mtime(table, instant)
    duration = (
        round(completed - requested, 3) if completed is not None and requested is not None else None
    )
    row: dict[str, Any] = {
        "instant_time": instant.instant_time,
        "action": instant.action.value,
        "state": instant.state.value,
        "requested_time": iso_time(instant_epoch(table, instant.instant_time)),
        "completed_time": iso_time(completed),
        "duration_seconds": duration,
    }
    if instant.is_completed and instant.action in COMMIT_ACTIONS:
        meta = table.commit_metadata(instant)
        row.update(_write_totals(meta.write_stats()))
        row["operation"] = meta.operation_type
        row["partitions"] = len(meta.partition_to_write_stats)
        if meta.partition_to_replace_file_ids is not None:
            row["file_groups_replaced"] = len(meta.replaced_file_ids())
    elif instant.is_completed and instant.action in (Action.CLEAN, Action.ROLLBACK):
        record = deserialize(table.timeline.read_content(instant), source=str(instant))
        row["files_deleted"] = int(record.get("totalFilesDeleted") or 0)
    return InstantRow(**row)


def timeline_rows(table: InspectedTable) -> list[InstantRow]:
    """Every instant of the active timeline, oldest first."""
    return [instant_row(table, i) for i in table.timeline.instants]


# ---- one commit ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteStatRow:
    """What a commit wrote to one file group."""

    partition_path: str
    file_id: str
    path: str | None
    prev_commit: str
    rows_written: int
    rows_inserted: int
    rows_updated: int
    rows_deleted: int
    bytes_written: int
    file_size: int
    log_blocks: int
    log_records: int


@dataclass(frozen=True)
class CommitDetail:
    """A completed write instant: its totals and its write stats by partition and file group."""

    timeline: InstantRow
    write_stats: list[WriteStatRow]
    replaced_file_groups: list[dict[str, str]]
    schema: str | None


def commit_detail(table: InspectedTable, instant_time: str) -> CommitDetail:
    """The write stats of one completed commit, deltacommit or replacecommit.

    Raises:
        HudiError: no such completed write instant on the active timeline.
    """
    instant = table.timeline.get(instant_time)
    if instant is None or not instant.is_completed or instant.action not in COMMIT_ACTIONS:
        state = f" ({instant.action.value} {instant.state.value})" if instant else ""
        raise HudiError(
            f"No completed write instant {instant_time}{state} on the active timeline of "
            f"{table.base_path}"
        )
    meta = table.commit_metadata(instant)
    stats = [
        WriteStatRow(
            partition_path=partition,
            file_id=s.file_id,
            path=s.path,
            prev_commit=s.prev_commit,
            rows_written=s.num_writes,
            rows_inserted=s.num_inserts,
            rows_updated=s.num_update_writes,
            rows_deleted=s.num_deletes,
            bytes_written=s.total_write_bytes,
            file_size=s.file_size_in_bytes,
            log_blocks=s.total_log_blocks,
            log_records=s.total_log_records,
        )
        for partition, listed in sorted(meta.partition_to_write_stats.items())
        for s in listed
    ]
    replaced = [{"partition_path": p, "file_id": f} for p, f in sorted(meta.replaced_file_ids())]
    return CommitDetail(instant_row(table, instant), stats, replaced, meta.schema)
