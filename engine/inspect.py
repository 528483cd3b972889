"""Table inspection: what a table's timeline, partitions and file groups hold, and its health.

Pure functions over the table's files (no Spark, nothing written), shared by the ``dbt-hudi``
command and the dbt ``hudi_health`` operation. Every result is a dataclass of plain values, so
``dataclasses.asdict`` gives the JSON the command prints.

Times: table version 6 keeps no completion time, so (as Hudi's own ``stateTransitionTime``) the
completion time of an instant is the modification time of its completed file, and its duration
is that minus the modification time of its requested file (one clock: the storage's).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from engine import config
from engine.config import HoodieConfig
from engine.errors import HudiError
from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage
from engine.fs.view import FileSlice, FileSystemView
from engine.read.plan import TableInfo, load_table_info
from engine.services.archival import instants_to_archive
from engine.services.clean import plan_clean
from engine.services.compaction import HoodieCompactionPlan, pending_compactions
from engine.timeline.avro_metadata import deserialize
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.instant import COMMIT_ACTIONS, Action, Instant, State, instant_file_name
from engine.timeline.timeline import Timeline
from engine.write.conflict import is_write_alive

__all__ = [
    "CommitDetail",
    "FileGroupRow",
    "Finding",
    "HealthReport",
    "InspectedTable",
    "InstantRow",
    "PartitionRow",
    "SchemaChange",
    "SchemaField",
    "commit_detail",
    "file_groups",
    "health",
    "open_table",
    "partitions",
    "schema_fields",
    "schema_history",
    "timeline_rows",
]

# table properties that also steer the table services health evaluates
_PERSISTED_SERVICE_OPTIONS = (config.ARCHIVELOG_FOLDER,)
METADATA_TABLE_FOLDER = f"{METAFOLDER}/metadata"


@dataclass
class InspectedTable:
    """One table as read for inspection: properties, active timeline, service options."""

    storage: Storage
    info: TableInfo
    timeline: Timeline
    cfg: HoodieConfig
    _metadata: dict[str, HoodieCommitMetadata] = field(default_factory=dict, repr=False)

    @property
    def base_path(self) -> str:
        return self.storage.base_path

    @property
    def table_version(self) -> int:
        # Hudi reads a missing hoodie.table.version as version 0 (HoodieTableVersion.ZERO)
        return int(self.info.properties.get(config.TABLE_VERSION.key) or 0)

    def commit_metadata(self, instant: Instant) -> HoodieCommitMetadata:
        """Commit metadata of a completed write instant, read once."""
        if instant.instant_time not in self._metadata:
            self._metadata[instant.instant_time] = self.timeline.read_commit_metadata(instant)
        return self._metadata[instant.instant_time]

    @cached_property
    def view(self) -> FileSystemView:
        return FileSystemView(self.storage, self.timeline)

    @cached_property
    def latest_slices(self) -> list[FileSlice]:
        return self.view.latest_file_slices()

    @cached_property
    def instant_file_mtimes(self) -> dict[str, float]:
        """Modification time (epoch seconds, to the millisecond like instant times) of every
        file directly under ``.hoodie``."""
        selector = pafs.FileSelector(self.storage.full_path(METAFOLDER), allow_not_found=True)
        return {
            info.base_name: info.mtime_ns // 1_000_000 / 1000
            for info in self.storage.fs.get_file_info(selector)
            if info.type == pafs.FileType.File and info.mtime_ns is not None
        }


def open_table(base_path: str, options: Mapping[str, Any] | None = None) -> InspectedTable:
    """Open a table for inspection.

    ``options`` are the ``hoodie.*`` write and service options the table's writers use
    (small-file limit, cleaner retention, compaction trigger, ...): they are not persisted in
    ``hoodie.properties``, so health is judged against these and the defaults.

    Raises:
        TableNotFoundError: no table at ``base_path``.
        QueryError: a table version other than 5/6 (timeline layout 1).
        ConfigError: an unknown ``hoodie.*`` key or a malformed value in ``options``.
    """
    storage = Storage(base_path)
    info = load_table_info(storage)
    persisted = {
        opt.key: info.properties[opt.key]
        for opt in _PERSISTED_SERVICE_OPTIONS
        if info.properties.get(opt.key)
    }
    cfg = config.parse_options(persisted).merged(config.parse_options(options))
    return InspectedTable(storage, info, Timeline.load(storage), cfg)


# ---- time ---------------------------------------------------------------------------------------


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def instant_epoch(table: InspectedTable, instant_time: str) -> float:
    """The moment an instant time names, in the table's timeline time zone."""
    digits = instant_time.ljust(17, "0")[:17]
    naive = dt.datetime.strptime(digits + "000", "%Y%m%d%H%M%S%f")
    zone = table.info.properties.get(config.TIMELINE_TIMEZONE.key, "UTC")
    if str(zone).upper() == "LOCAL":
        return naive.astimezone().timestamp()
    return naive.replace(tzinfo=dt.UTC).timestamp()


def _requested_file_mtime(table: InspectedTable, instant: Instant) -> float | None:
    times = table.instant_file_mtimes
    for action in _pending_actions(instant.action):
        for state in (State.REQUESTED, State.INFLIGHT):
            name = instant_file_name(instant.instant_time, action, state)
            if name in times:
                return times[name]
    return None


def _pending_actions(action: Action) -> tuple[Action, ...]:
    # a completed compaction is a `commit` whose pending files say `compaction`
    return (Action.COMMIT, Action.COMPACTION) if action is Action.COMMIT else (action,)


def _completed_file_mtime(table: InspectedTable, instant: Instant) -> float | None:
    if not instant.is_completed:
        return None
    return table.instant_file_mtimes.get(instant.file_name)


# ---- timeline -----------------------------------------------------------------------------------


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
    requested = _requested_file_mtime(table, instant)
    completed = _completed_file_mtime(table, instant)
    duration = (
        round(completed - requested, 3) if completed is not None and requested is not None else None
    )
    row: dict[str, Any] = {
        "instant_time": instant.instant_time,
        "action": instant.action.value,
        "state": instant.state.value,
        "requested_time": _iso(instant_epoch(table, instant.instant_time)),
        "completed_time": _iso(completed),
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


# ---- file groups and partitions -----------------------------------------------------------------


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


def int_setting(table: InspectedTable, option: config.ConfigOption[int]) -> int:
    value: int = table.cfg.get(option)
    return value


def setting(table: InspectedTable, option: config.ConfigOption[Any]) -> str:
    """``key=value`` of an option as the inspection applies it."""
    return f"{option.key}={config.format_value(table.cfg.get(option))}"


def small_file_limit(table: InspectedTable) -> int:
    return int_setting(table, config.PARQUET_SMALL_FILE_LIMIT)


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


# ---- schema -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaField:
    name: str
    type: str
    nullable: bool


@dataclass(frozen=True)
class SchemaChange:
    """A commit whose schema differs from the one before it."""

    instant_time: str
    action: str
    fields: int
    added: list[str]
    removed: list[str]
    changed: list[dict[str, str]]


def _type_name(avro: Any) -> tuple[str, bool]:
    """Readable Avro type and whether it is nullable (a union with null)."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        inner = [_type_name(b)[0] for b in branches]
        return (inner[0] if len(inner) == 1 else "union<" + ",".join(inner) + ">"), (
            len(branches) < len(avro)
        )
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        if logical == "decimal":
            return f"decimal({avro.get('precision')},{avro.get('scale', 0)})", False
        if logical:
            return str(logical), False
        kind = avro.get("type")
        if kind == "array":
            return f"array<{_type_name(avro.get('items'))[0]}>", False
        if kind == "map":
            return f"map<string,{_type_name(avro.get('values'))[0]}>", False
        if kind == "record":
            parts = [f"{f['name']}:{_type_name(f['type'])[0]}" for f in avro.get("fields", [])]
            return "struct<" + ",".join(parts) + ">", False
        if kind == "enum":
            return "enum", False
        if kind == "fixed":
            return f"fixed({avro.get('size')})", False
        return _type_name(kind)
    return str(avro), False


def _fields_of(schema_json: str) -> list[SchemaField]:
    try:
        record = json.loads(schema_json)
    except ValueError as e:
        raise HudiError(f"Unreadable Avro schema in the commit metadata: {e}") from e
    out = []
    for f in record.get("fields", []):
        type_name, nullable = _type_name(f.get("type"))
        out.append(SchemaField(str(f.get("name")), type_name, nullable))
    return out


def schema_fields(table: InspectedTable) -> list[SchemaField]:
    """Fields of the latest commit schema (else the create schema), meta fields excluded.

    Raises:
        HudiError: the table has no recorded schema.
    """
    schema = table.timeline.latest_schema() or table.info.properties.get(config.CREATE_SCHEMA.key)
    if not schema:
        raise HudiError(f"No schema recorded in {table.base_path} (no commit carries one)")
    return _fields_of(schema)


def schema_history(table: InspectedTable) -> list[SchemaChange]:
    """The commits on the active timeline that wrote with a new schema, oldest first."""
    changes: list[SchemaChange] = []
    before: dict[str, SchemaField] | None = None
    for instant in table.timeline.commits_timeline():
        schema = table.commit_metadata(instant).schema
        if not schema:
            continue
        now = {f.name: f for f in _fields_of(schema)}
        if before is not None and now == before:
            continue
        old = before or {}
        changes.append(
            SchemaChange(
                instant_time=instant.instant_time,
                action=instant.action.value,
                fields=len(now),
                added=[n for n in now if n not in old],
                removed=[n for n in old if n not in now],
                changed=[
                    {
                        "name": n,
                        "from": f"{old[n].type}{'?' if old[n].nullable else ''}",
                        "to": f"{now[n].type}{'?' if now[n].nullable else ''}",
                    }
                    for n in now
                    if n in old and old[n] != now[n]
                ],
            )
        )
        before = now
    return changes


# ---- health -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One thing to act on: what is wrong, where, and what to run to fix it."""

    check: str
    severity: str  # "error": data at risk or invisible; "warning": cost or lag; "info"
    subject: str
    message: str
    fix: str


@dataclass(frozen=True)
class HealthReport:
    base_path: str
    table_name: str
    table_type: str
    table_version: int
    facts: dict[str, Any]
    findings: list[Finding]

    @property
    def healthy(self) -> bool:
        return not any(f.severity in ("error", "warning") for f in self.findings)


def _age(now: float, epoch: float) -> str:
    seconds = max(0, int(now - epoch))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds}s"


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _cmd(table: InspectedTable, verb: str, *args: str) -> str:
    return " ".join(["dbt-hudi", verb, table.base_path, *args])


def _small_files(table: InspectedTable) -> list[Finding]:
    limit = small_file_limit(table)
    if limit <= 0:
        return []
    out = []
    for partition, sizes in base_file_sizes(table).items():
        small = sorted(size for size in sizes if size < limit)
        if len(small) < 2:
            continue  # one small file per partition is where the next inserts go
        out.append(
            Finding(
                "small_files",
                "warning",
                partition or "(non-partitioned)",
                f"{len(small)} base files under {config.PARQUET_SMALL_FILE_LIMIT.key}="
                f"{limit} ({human_bytes(limit)}): {human_bytes(sum(small))} in all, "
                f"smallest {human_bytes(small[0])}",
                f"rewrite the partition with {config.OPERATION.key}=insert_overwrite "
                "(materialized='hudi_insert_overwrite'), and keep "
                f"{config.PARQUET_SMALL_FILE_LIMIT.key} above 0 so inserts fill small files",
            )
        )
    return out


def _compaction_trigger(table: InspectedTable) -> list[Finding]:
    if not table.info.is_mor:
        return []
    trigger = int_setting(table, config.INLINE_COMPACT_NUM_DELTA_COMMITS)
    rows = [
        r
        for r in file_groups(table)
        if r.pending_compaction is None and r.log_files and r.delta_commits >= trigger
    ]
    if not rows:
        return []
    rows.sort(key=lambda r: -r.delta_commits)
    sample = ", ".join(f"{_group_name(r)} ({r.delta_commits})" for r in rows[:3])
    return [
        Finding(
            "compaction_due",
            "warning",
            f"{len(rows)} file group(s)",
            f"{len(rows)} file slice(s) have at least {config.INLINE_COMPACT_NUM_DELTA_COMMITS.key}"
            f"={trigger} delta commits since their base file: {sample}",
            _cmd(table, "compact"),
        )
    ]


def _group_name(row: FileGroupRow) -> str:
    return f"{row.partition_path}/{row.file_id}" if row.partition_path else row.file_id


def _pending_instants(table: InspectedTable, now: float) -> list[Finding]:
    out = []
    for instant in table.timeline.pending():
        since = _requested_file_mtime(table, instant) or instant_epoch(table, instant.instant_time)
        age = _age(now, since)
        what = f"{instant.action.value} {instant.instant_time} {instant.state.value} for {age}"
        if instant.action is Action.COMPACTION:
            out.append(
                Finding(
                    "pending_compaction",
                    "warning",
                    instant.instant_time,
                    what,
                    _cmd(table, "compact"),
                )
            )
        elif instant.action in COMMIT_ACTIONS:
            out.append(_pending_write(table, instant, what))
        elif instant.action is Action.CLEAN:
            out.append(
                Finding(
                    "pending_clean", "warning", instant.instant_time, what, _cmd(table, "clean")
                )
            )
        elif instant.action is Action.ROLLBACK:
            out.append(
                Finding(
                    "pending_rollback",
                    "error",
                    instant.instant_time,
                    what + ": files of the write it undoes may still be on storage",
                    _cmd(table, "rollback", "--failed"),
                )
            )
        else:
            out.append(
                Finding(
                    f"pending_{instant.action.value}",
                    "warning",
                    instant.instant_time,
                    what,
                    "finish it with the tool that started it (Apache Hudi)",
                )
            )
    return out


def _pending_write(table: InspectedTable, instant: Instant, what: str) -> Finding:
    if is_write_alive(table.storage, instant, table.cfg):
        return Finding(
            "inflight_write",
            "info",
            instant.instant_time,
            what + ": its writer is alive (heartbeat)",
            "none while it runs; if it hangs, stop the writer, then "
            + _cmd(table, "rollback", instant.instant_time),
        )
    return Finding(
        "failed_write",
        "error",
        instant.instant_time,
        what + ": its writer is gone; its files are invisible and block compaction and archival",
        _cmd(table, "rollback", instant.instant_time),
    )


def _clean_due(table: InspectedTable, now: float, facts: dict[str, Any]) -> list[Finding]:
    plan = plan_clean(table.storage, table.timeline, table.cfg)
    files = [f for rels in plan.files_per_partition.values() for f in rels]
    facts["clean_would_delete_files"] = len(files)
    facts["clean_would_delete_bytes"] = sum(table.view.file_size(f) for f in files)
    if plan.is_empty:
        return []
    last = facts.get("last_clean")
    when = (
        f"last clean {last} ({_age(now, instant_epoch(table, last))} ago)"
        if last
        else "never cleaned"
    )
    retained = setting(
        table,
        config.CLEANER_COMMITS_RETAINED
        if plan.policy == "KEEP_LATEST_COMMITS"
        else config.CLEANER_FILEVERSIONS_RETAINED,
    )
    return [
        Finding(
            "clean_due",
            "warning",
            "cleaner",
            f"a clean would delete {len(files)} file(s), "
            f"{human_bytes(facts['clean_would_delete_bytes'])}, that no retained query needs "
            f"({plan.policy}, {retained}); {when}",
            _cmd(table, "clean", *_option_args(table, plan.policy)),
        )
    ]


def _option_args(table: InspectedTable, policy: str) -> list[str]:
    """``--option`` arguments repeating the cleaner settings the inspection was given."""
    retained = (
        config.CLEANER_COMMITS_RETAINED
        if policy == "KEEP_LATEST_COMMITS"
        else config.CLEANER_FILEVERSIONS_RETAINED
    )
    args = []
    for option in (config.CLEANER_POLICY, retained):
        if table.cfg.is_set(option):
            args += ["--option", setting(table, option)]
    return args


def _archival_lag(table: InspectedTable) -> list[Finding]:
    due = instants_to_archive(table.storage, table.timeline, table.cfg)
    if not due:
        return []
    commits = len(table.timeline.commits_timeline())
    return [
        Finding(
            "archival_due",
            "warning",
            f"{len(due)} instant(s)",
            f"{commits} completed commits are active, over "
            f"{setting(table, config.KEEP_MAX_COMMITS)}: {len(due)} instant(s) up to "
            f"{due[-1].instant_time} are due for archival",
            _cmd(table, "archive"),
        )
    ]


def metadata_table_state(table: InspectedTable) -> tuple[str, Finding | None]:
    """'absent', 'in sync' or 'stale' (it lacks a commit of the data table) and a finding."""
    partitions_prop = table.info.properties.get(config.METADATA_PARTITIONS.key, "")
    if not table.storage.exists(METADATA_TABLE_FOLDER):
        return "absent", None
    mdt = Timeline.load(Storage(table.storage.full_path(METADATA_TABLE_FOLDER)))
    synced = {i.instant_time for i in mdt.completed()}
    last = table.timeline.last_completed()
    if not partitions_prop:
        state = "disabled"
        return state, Finding(
            "metadata_table",
            "warning",
            METADATA_TABLE_FOLDER,
            f"{METADATA_TABLE_FOLDER} is left on storage while {config.METADATA_PARTITIONS.key} "
            "is empty: a reader with the metadata table on may list stale files",
            "the next dbt-hudi write removes it",
        )
    if last is None or last.instant_time in synced:
        return "in sync", None
    return "stale", Finding(
        "metadata_table",
        "error",
        METADATA_TABLE_FOLDER,
        f"the metadata table lacks commit {last.instant_time}: readers that list files "
        "through it (Hudi's, with the metadata table on) miss the newest files",
        "the next dbt-hudi write disables and removes it; until then read with the metadata "
        "table off",
    )


def _table_version(table: InspectedTable) -> list[Finding]:
    if table.table_version == 6:
        return []
    return [
        Finding(
            "table_version",
            "info",
            f"version {table.table_version}",
            f"{config.TABLE_VERSION.key}={table.table_version}: read as is; dbt-hudi writes "
            "table version 6",
            "rewrite the table with a table-version-6 writer to upgrade it",
        )
    ]


def _facts(table: InspectedTable, now: float) -> dict[str, Any]:
    tl = table.timeline
    last_commit = tl.last_completed()
    cleans = tl.completed([Action.CLEAN])
    compactions = [i for i in tl.completed([Action.COMMIT]) if table.commit_metadata(i).compacted]
    slices = table.latest_slices
    facts: dict[str, Any] = {
        "active_instants": len(tl.instants),
        "completed_commits": len(tl.commits_timeline()),
        "pending_instants": len(tl.pending()),
        "last_commit": last_commit.instant_time if last_commit else None,
        "last_commit_age_seconds": (
            round(now - instant_epoch(table, last_commit.instant_time), 1) if last_commit else None
        ),
        "last_clean": cleans[-1].instant_time if cleans else None,
        "last_compaction": compactions[-1].instant_time if compactions else None,
        "partitions": len(table.view.partition_paths),
        "file_groups": len(slices),
        "base_bytes": sum(
            table.view.file_size(s.base_file_path) for s in slices if s.base_file_path
        ),
        "log_bytes": sum(table.view.file_size(p) for s in slices for p in s.log_file_paths),
        "small_file_limit": small_file_limit(table),
        "max_file_size": table.cfg.get(config.PARQUET_MAX_FILE_SIZE),
        "cleaner_policy": table.cfg.get(config.CLEANER_POLICY),
        "cleaner_commits_retained": table.cfg.get(config.CLEANER_COMMITS_RETAINED),
        "keep_min_commits": table.cfg.get(config.KEEP_MIN_COMMITS),
        "keep_max_commits": table.cfg.get(config.KEEP_MAX_COMMITS),
    }
    if table.info.is_mor:
        facts["compaction_trigger_delta_commits"] = table.cfg.get(
            config.INLINE_COMPACT_NUM_DELTA_COMMITS
        )
    return facts


def health(table: InspectedTable, *, now: float | None = None) -> HealthReport:
    """Everything about the table someone should act on, each with what to run."""
    now = time.time() if now is None else now
    facts = _facts(table, now)
    state, mdt_finding = metadata_table_state(table)
    facts["metadata_table"] = state
    findings = [
        *_pending_instants(table, now),
        *_small_files(table),
        *_compaction_trigger(table),
        *_clean_due(table, now, facts),
        *_archival_lag(table),
        *([mdt_finding] if mdt_finding else []),
        *_table_version(table),
    ]
    return HealthReport(
        base_path=table.base_path,
        table_name=table.info.table_name,
        table_type=table.info.table_type,
        table_version=table.table_version,
        facts=facts,
        findings=findings,
    )
