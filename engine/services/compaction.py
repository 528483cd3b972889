"""Compaction of merge-on-read tables: file slices (base ⊕ logs) back into base files.

Timeline of one compaction at instant ``C`` (synchronous: nothing writes in between)::

    <C>.compaction.requested   Avro HoodieCompactionPlan (version 2): per file slice with logs
                               baseInstantTime, dataFilePath (base file name or null),
                               deltaFilePaths (log file names), fileId, partitionPath, metrics
    <C>.compaction.inflight    empty
    {file_id}_{token}_{C}.parquet   one task per operation: the slice merged as a snapshot read
                               merges it (same log scanner, same payload rules), every record
                               keeping its _hoodie_commit_time / _hoodie_commit_seqno
    <C>.commit                 HoodieCommitMetadata, compacted: true, operationType COMPACT

Scheduling follows Hudi's ``hoodie.compact.inline.trigger.strategy``, counting the delta commits
since the last ``commit``/``replacecommit`` (or since the first delta commit) and the seconds
between that instant and ``C``::

    NUM_COMMITS    delta commits >= hoodie.compact.inline.max.delta.commits
    TIME_ELAPSED   seconds       >= hoodie.compact.inline.max.delta.seconds
    NUM_AND_TIME   both          NUM_OR_TIME   either

A compaction found pending by the next run is retried: files an earlier attempt left for ``C``
are deleted and the plan runs again (a plan whose files are gone is rolled back instead). Readers
never see a half-done compaction: until ``<C>.commit`` exists its base files are not committed, and
no log file is ever written against a pending compaction's instant.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.config import HoodieConfig
from engine.errors import HudiError, TimelineError
from engine.faults import checkpoint
from engine.fs.filenames import (
    TaskInfo,
    parse_base_file_name,
    partition_file_path,
)
from engine.fs.s3 import S3Settings
from engine.fs.storage import Storage
from engine.io.bloom_filter import BloomFilterSpec
from engine.io.logfile import HoodieLogBlockType, read_log_blocks
from engine.io.parquet import (
    avro_schema_with_meta,
    read_base_file,
    table_arrow_schema,
)
from engine.metadata.sync import record_commit
from engine.model.schema import (
    COMMIT_SEQNO_COLUMN,
    RECORD_KEY_COLUMN,
    add_operation_field,
    schema_json,
    with_operation_column,
)
from engine.read.file_columns import table_has_operation_field
from engine.read.plan import QueryPlan, ReadQuery, TableInfo, load_table_info
from engine.services.clustering_plan import clustering_file_groups
from engine.services.new_files import NewBaseFile
from engine.timeline.avro_metadata import COMPACTION_PLAN_SCHEMA, deserialize, serialize
from engine.timeline.commit_metadata import (
    HoodieCommitMetadata,
    HoodieWriteStat,
    build_commit_metadata,
)
from engine.timeline.instant import (
    Action,
    Instant,
    State,
    instant_file_name,
    new_instant_time,
    parse_instant_time,
)
from engine.timeline.layout import TimelineLayout
from engine.timeline.markers import (
    delete_markers,
    list_marked_files,
    remove_unreported_files,
)
from engine.timeline.timeline import (
    Timeline,
    complete,
    create_requested,
    delete_instant_files,
    transition_to_inflight,
)
from engine.view.fs_view import FileSlice, FileSystemView, Visibility, plan_slice_files

__all__ = [
    "CompactionContext",
    "CompactionOperation",
    "HoodieCompactionPlan",
    "compact_file_slice",
    "compact_inline_if_due",
    "compacting_file_groups",
    "execute_compaction",
    "is_compaction_due",
    "pending_compactions",
    "plan_compaction",
    "run_operations_locally",
    "run_pending_compactions",
    "schedule_compaction",
]

PLAN_VERSION = 2  # operation paths are file names
COMPACT_OPERATION = "COMPACT"
Order = Literal["FIFO", "LIFO"]


@dataclass(frozen=True, slots=True)
class CompactionOperation:
    """One file slice to compact (a HoodieCompactionOperation)."""

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file: str | None
    log_files: tuple[str, ...]
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def file_slice(self) -> FileSlice:
        return FileSlice(
            self.partition_path,
            self.file_id,
            self.base_instant_time,
            self.base_file,
            self.log_files,
        )

    def to_avro(self) -> dict[str, Any]:
        return {
            "baseInstantTime": self.base_instant_time,
            "deltaFilePaths": list(self.log_files),
            "dataFilePath": self.base_file,
            "fileId": self.file_id,
            "partitionPath": self.partition_path,
            "metrics": dict(self.metrics),
            "bootstrapFilePath": None,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> CompactionOperation:
        partition_path, file_id, base_file, log_files = plan_slice_files(record)
        return cls(
            partition_path=partition_path,
            file_id=file_id,
            base_instant_time=record.get("baseInstantTime") or "",
            base_file=base_file,
            log_files=log_files,
            metrics=dict(record.get("metrics") or {}),
        )


@dataclass(frozen=True)
class HoodieCompactionPlan:
    """The content of ``<C>.compaction.requested``."""

    operations: tuple[CompactionOperation, ...]
    extra_metadata: dict[str, str] | None = None
    version: int = PLAN_VERSION

    def to_bytes(self) -> bytes:
        record = {
            "operations": [op.to_avro() for op in self.operations],
            "extraMetadata": self.extra_metadata,
            "version": self.version,
            "strategy": None,
            "preserveHoodieMetadata": True,
        }
        return serialize(COMPACTION_PLAN_SCHEMA, record)

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "compaction plan") -> HoodieCompactionPlan:
        record = deserialize(data, source=source)
        ops = tuple(CompactionOperation.from_avro(op) for op in record.get("operations") or ())
        return cls(ops, record.get("extraMetadata"), int(record.get("version") or 1))


# ---- scheduling -------------------------------------------------------------------------------


def _seconds(instant_time: str) -> float:
    return parse_instant_time(instant_time).timestamp()


def is_compaction_due(timeline: Timeline, cfg: HoodieConfig, instant_time: str) -> bool:
    """Whether the trigger strategy asks for a compaction scheduled at ``instant_time``."""
    compactions = timeline.completed([Action.COMMIT, Action.REPLACE_COMMIT])
    deltas = [i for i in timeline.instants if i.action is Action.DELTA_COMMIT]
    if compactions:
        since = compactions[-1].instant_time
        deltas = [i for i in deltas if i.instant_time > since]
    elif deltas:
        since = deltas[0].instant_time
    else:
        return False
    max_commits = cfg.get(config.INLINE_COMPACT_NUM_DELTA_COMMITS)
    max_seconds = cfg.get(config.INLINE_COMPACT_TIME_DELTA_SECONDS)
    enough_commits = len(deltas) >= max_commits
    enough_time = _seconds(instant_time) - _seconds(since) >= max_seconds
    strategy = cfg.get(config.INLINE_COMPACT_TRIGGER_STRATEGY)
    if strategy == "NUM_COMMITS":
        return enough_commits
    if strategy == "TIME_ELAPSED":
        return enough_time
    if strategy == "NUM_AND_TIME":
        return enough_commits and enough_time
    if strategy == "NUM_OR_TIME":
        return enough_commits or enough_time
    raise HudiError(
        f"Unsupported compaction trigger strategy {strategy!r} "
        f"({config.INLINE_COMPACT_TRIGGER_STRATEGY.key})"
    )


def pending_compactions(timeline: Timeline) -> list[Instant]:
    """Requested or inflight compactions, oldest first."""
    done = {i.instant_time for i in timeline.completed()}
    return [i for i in timeline.pending([Action.COMPACTION]) if i.instant_time not in done]


def compacting_file_groups(storage: Storage, timeline: Timeline) -> frozenset[tuple[str, str]]:
    """(partition path, file id) of every file group a pending compaction plan compacts: a
    write must not size such a group as a small file (its slice is being replaced)."""
    return frozenset(
        (op.partition_path, op.file_id)
        for instant in pending_compactions(timeline)
        for op in _read_plan(storage, instant).operations
    )


def _read_plan(storage: Storage, instant: Instant) -> HoodieCompactionPlan:
    name = instant_file_name(instant.instant_time, Action.COMPACTION, State.REQUESTED)
    rel = f"{TimelineLayout.of(storage).directory}/{name}"
    return HoodieCompactionPlan.from_bytes(storage.read_bytes(rel), source=rel)


def plan_compaction(storage: Storage, timeline: Timeline) -> HoodieCompactionPlan:
    """One operation per latest file slice with log files (groups of pending compaction and
    clustering plans excluded),
    largest logs first (Hudi's LogFileSizeBasedCompactionStrategy order)."""
    # groups of pending compactions and of pending clustering (Hudi excludes both)
    busy = compacting_file_groups(storage, timeline) | clustering_file_groups(storage, timeline)
    view = FileSystemView(storage, timeline)  # sizes come from the view's own listing
    operations = []
    for file_slice in view.latest_file_slices():
        if not file_slice.has_logs or (file_slice.partition_path, file_slice.file_id) in busy:
            continue
        log_bytes = sum(view.file_size(p) for p in file_slice.log_file_paths)
        base_bytes = view.file_size(file_slice.base_file_path or "")
        mb = 1024.0 * 1024.0
        metrics = {
            "TOTAL_LOG_FILES": float(len(file_slice.log_files)),
            "TOTAL_LOG_FILES_SIZE": float(log_bytes),
            "TOTAL_IO_READ_MB": (log_bytes + base_bytes) / mb,
            "TOTAL_IO_WRITE_MB": base_bytes / mb,
            "TOTAL_IO_MB": (log_bytes + 2 * base_bytes) / mb,
        }
        operations.append(
            CompactionOperation(
                file_slice.partition_path,
                file_slice.file_id,
                file_slice.base_instant_time,
                file_slice.base_file,
                file_slice.log_files,
                metrics,
            )
        )
    operations.sort(key=lambda op: (-op.metrics["TOTAL_LOG_FILES_SIZE"], op.file_id))
    return HoodieCompactionPlan(tuple(operations))


def schedule_compaction(storage: Storage, cfg: HoodieConfig, *, force: bool = False) -> str | None:
    """Write ``<C>.compaction.requested`` when due (always with ``force``) and any slice has logs.

    Returns:
        The compaction instant, or ``None`` when nothing was scheduled.

    Raises:
        TimelineError: a write is still pending (Hudi refuses to compact past it).
    """
    timeline = Timeline.load(storage)
    instant_time = new_instant_time(timeline.max_instant_time())
    inflight = [
        i
        for i in timeline.pending([Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT])
        if i.instant_time < instant_time
    ]
    if inflight:
        raise TimelineError(
            f"Cannot schedule a compaction at {instant_time} in {storage.base_path}: write "
            f"{inflight[0]} is still pending (roll it back first)"
        )
    if not force and not is_compaction_due(timeline, cfg, instant_time):
        return None
    plan = plan_compaction(storage, timeline)
    if not plan.operations:
        return None
    create_requested(storage, instant_time, Action.COMPACTION, plan.to_bytes())
    return instant_time


# ---- execution (task side) --------------------------------------------------------------------


@dataclass(frozen=True)
class CompactionContext:
    """What every compaction task needs (picklable)."""

    base_path: str
    instant_time: str
    table: TableInfo
    visibility: Visibility
    commit_schema: str
    bloom: BloomFilterSpec  # the bloom filter every compacted base file carries
    compression: str = config.PARQUET_COMPRESSION_CODEC.default
    s3: S3Settings | None = None  # how tasks reach a table on S3
    operation_field: bool = False  # the table's files carry _hoodie_operation: keep it


def _count_log_blocks(storage: Storage, paths: Sequence[str]) -> tuple[int, int, int, int]:
    """(log bytes, intact blocks, corrupt blocks, rollback blocks) of a slice's log files."""
    size = total = corrupt = rollbacks = 0
    for path in paths:
        data = storage.read_bytes(path)
        size += len(data)
        for block in read_log_blocks(data, include_corrupt=True):
            if block.is_corrupt:
                corrupt += 1
                continue
            total += 1
            rollbacks += block.block_type is HoodieLogBlockType.COMMAND_BLOCK
    return size, total, corrupt, rollbacks


class SliceReading(Protocol):
    """What merging a file slice's logs onto its base needs of a table service's context."""

    @property
    def table(self) -> TableInfo: ...
    @property
    def visibility(self) -> Visibility: ...
    @property
    def commit_schema(self) -> str: ...


def rewrite_schemas(commit_schema: str, operation_field: bool) -> tuple[pa.Schema, str]:
    """The Arrow schema and the Avro writer schema (meta fields included) of the base files a
    table service rewrites: with ``_hoodie_operation`` when the table carries it."""
    if operation_field:
        return (
            with_operation_column(table_arrow_schema(commit_schema)),
            schema_json(add_operation_field(commit_schema)),
        )
    return table_arrow_schema(commit_schema), avro_schema_with_meta(commit_schema)


def slice_base_rows(storage: Storage, file_slice: FileSlice, schema: pa.Schema) -> pa.Table | None:
    """The rows of the slice's base file in ``schema``; None for a log-only slice."""
    from engine.read.arrow import conform

    path = file_slice.base_file_path
    return conform(read_base_file(storage, path), schema) if path else None


def merged_slice_rows(
    ctx: SliceReading, file_slice: FileSlice, base: pa.Table | None, schema: pa.Schema
) -> pa.Table:
    """The slice's live rows: its logs merged onto ``base`` as a snapshot read merges them
    (compaction and clustering rewrite exactly what a reader sees)."""
    from engine.read.arrow import merge_file_slice

    plan = QueryPlan(
        table=ctx.table,
        query=ReadQuery(),
        file_slices=(file_slice,),
        visibility=ctx.visibility,
        begin=None,
        merge_logs=True,
        avro_schema=ctx.commit_schema,
    )
    return merge_file_slice(plan, file_slice, base, schema)


def compact_file_slice(
    op: CompactionOperation, ctx: CompactionContext, task: TaskInfo, number: int
) -> HoodieWriteStat:
    """Merge one file slice into a new base file at the compaction instant (pure, in a task).

    The merge is the snapshot reader's (:func:`engine.read.arrow.merge_file_slice`), so after
    the compaction the read-optimized view equals the snapshot.
    """
    started = time.monotonic()
    storage = Storage(ctx.base_path, ctx.s3)
    schema, writer_schema = rewrite_schemas(ctx.commit_schema, ctx.operation_field)
    file_slice = op.file_slice
    base = slice_base_rows(storage, file_slice, schema)
    merged = merged_slice_rows(ctx, file_slice, base, schema)
    new = NewBaseFile.named(op.partition_path, op.file_id, number, task, ctx.instant_time, started)
    merged = new.stamp(merged)  # commit times and seqnos are kept
    size = new.write(
        storage,
        merged,
        instant_time=ctx.instant_time,
        io_type="MERGE" if base else "CREATE",
        avro_schema_with_meta=writer_schema,
        bloom=ctx.bloom,
        compression=ctx.compression,
        fault_point=False,
    )
    stored = base if base is not None else schema.empty_table()
    log_counts = _count_log_blocks(storage, file_slice.log_file_paths)
    return _compaction_stat(op, new, merged, stored, size, log_counts)


def _compaction_stat(
    op: CompactionOperation,
    new: NewBaseFile,
    merged: pa.Table,
    stored: pa.Table,
    size: int,
    log_counts: tuple[int, int, int, int],
) -> HoodieWriteStat:
    """The write stat of a compacted file slice: inserts are keys not in the base file, updates
    rows whose commit seqno changed, deletes the base rows that are gone."""
    in_base = pc.is_in(merged.column(RECORD_KEY_COLUMN), value_set=stored[RECORD_KEY_COLUMN])
    kept = pc.is_in(merged.column(COMMIT_SEQNO_COLUMN), value_set=stored[COMMIT_SEQNO_COLUMN])
    num_inserts = merged.num_rows - int(pc.sum(pc.cast(in_base, pa.int64())).as_py() or 0)
    num_updates = (
        merged.num_rows - num_inserts - int(pc.sum(pc.cast(kept, pa.int64())).as_py() or 0)
    )
    log_bytes, blocks, corrupt, rollbacks = log_counts
    return new.stat(
        prev_commit=op.base_instant_time if op.base_file else "null",
        size=size,
        created=False,  # Hudi reports a compaction's time as upsert time
        num_writes=merged.num_rows,
        num_deletes=stored.num_rows - (merged.num_rows - num_inserts),
        num_update_writes=num_updates,
        num_inserts=num_inserts,
        total_log_records=int(op.metrics.get("TOTAL_LOG_RECORDS", 0)),
        total_log_files_compacted=len(op.log_files),
        total_log_size_compacted=log_bytes,
        total_updated_records_compacted=num_updates,
        total_log_blocks=blocks,
        total_corrupt_log_block=corrupt,
        total_rollback_blocks=rollbacks,
    )


OperationRunner = Callable[
    [Sequence[CompactionOperation], CompactionContext], list[HoodieWriteStat]
]


def run_operations_locally(
    operations: Sequence[CompactionOperation], ctx: CompactionContext
) -> list[HoodieWriteStat]:
    """Run every operation in this process (tools and tests without Spark)."""
    return [compact_file_slice(op, ctx, TaskInfo(), k) for k, op in enumerate(operations)]


# ---- execution (driver side) ------------------------------------------------------------------


def _leftovers(storage: Storage, instant_time: str, plan: HoodieCompactionPlan) -> list[str]:
    """Files an earlier attempt of the compaction wrote: marked ones and the plan's file
    groups' base files at the compaction instant."""
    found = set(list_marked_files(storage, instant_time))
    for partition in sorted({op.partition_path for op in plan.operations}):
        groups = {op.file_id for op in plan.operations if op.partition_path == partition}
        for entry in storage.list_dir(partition):
            if entry.is_dir or not entry.name.endswith(".parquet"):
                continue
            try:
                parsed = parse_base_file_name(entry.name)
            except HudiError:
                continue
            if parsed.instant_time == instant_time and parsed.file_id in groups:
                found.add(partition_file_path(partition, entry.name))
    return sorted(f for f in found if storage.exists(f))


def rollback_compaction(storage: Storage, instant_time: str) -> None:
    """Remove a pending compaction entirely: its files, markers and instant files."""
    timeline = Timeline.load(storage)
    instant = timeline.get(instant_time)
    if instant is None or instant.is_completed:
        return
    plan = _read_plan(storage, instant)
    for rel in _leftovers(storage, instant_time, plan):
        storage.delete(rel)
    delete_markers(storage, instant_time)
    delete_instant_files(storage, instant_time, Action.COMPACTION)


def _refuse_missing_files(storage: Storage, instant_time: str, plan: HoodieCompactionPlan) -> None:
    """Roll the compaction back when its plan names files that are gone (cleaned or rolled
    back meanwhile): the plan cannot run any more.

    Raises:
        TimelineError: naming the instant and the first missing files.
    """
    missing = [
        path
        for op in plan.operations
        for path in (op.file_slice.base_file_path, *op.file_slice.log_file_paths)
        if path is not None and not storage.exists(path)
    ]
    if missing:
        rollback_compaction(storage, instant_time)
        raise TimelineError(
            f"Compaction {instant_time} rolled back: its plan names missing files {missing[:3]}"
        )


def execute_compaction(
    storage: Storage,
    instant_time: str,
    *,
    runner: OperationRunner,
    bloom: BloomFilterSpec | None = None,
) -> HoodieCommitMetadata:
    """Run a requested (or retry an inflight) compaction and complete it as ``<C>.commit``.

    ``bloom`` is the filter of the compacted base files: the compacting write's options (as
    Hudi's compactor uses its write config), else what the table's properties name (the
    defaults: Hudi persists no bloom key).

    Raises:
        TimelineError: ``instant_time`` is not a pending compaction.
    """
    timeline = Timeline.load(storage)
    instant = timeline.get(instant_time)
    if instant is None or instant.action is not Action.COMPACTION or instant.is_completed:
        raise TimelineError(f"No pending compaction {instant_time} in {storage.base_path}")
    plan = _read_plan(storage, instant)
    _refuse_missing_files(storage, instant_time, plan)
    for rel in _leftovers(storage, instant_time, plan):
        storage.delete(rel)  # a failed attempt's partial output
    delete_markers(storage, instant_time)
    if instant.state is State.REQUESTED:
        transition_to_inflight(storage, instant_time, Action.COMPACTION)
    commit_schema = timeline.latest_schema()
    if commit_schema is None:
        raise TimelineError(f"Table {storage.base_path} has no schema to compact with")
    table = load_table_info(storage)
    ctx = CompactionContext(
        base_path=storage.base_path,
        s3=storage.s3,
        instant_time=instant_time,
        table=table,
        visibility=Visibility.of(timeline.until(instant_time)),
        commit_schema=commit_schema,
        operation_field=table_has_operation_field(storage, timeline),
        compression=_compression_codec(table),
        bloom=bloom or BloomFilterSpec.of_properties(table.properties),
    )
    stats = runner(plan.operations, ctx) if plan.operations else []
    remove_unreported_files(storage, instant_time, stats)
    metadata = replace(
        build_commit_metadata(stats, schema=commit_schema, operation=None),
        compacted=True,
        operation_type=COMPACT_OPERATION,
    )
    checkpoint("compaction.before_complete")
    record_commit(storage, instant_time, metadata)  # the metadata table lists them first
    complete(storage, instant_time, Action.COMPACTION, metadata)
    delete_markers(storage, instant_time)
    return metadata


def _compression_codec(table: TableInfo) -> str:
    """The base file codec the table's properties name, else the engine's default."""
    codec = config.PARQUET_COMPRESSION_CODEC
    return str(codec.parse(table.properties.get(codec.key, codec.default)))


def run_pending_compactions(
    storage: Storage,
    *,
    runner: OperationRunner,
    order: Order = "FIFO",
    done: Callable[[str], None] | None = None,
    bloom: BloomFilterSpec | None = None,
) -> list[str]:
    """Run every pending compaction, oldest first (FIFO) or newest first (LIFO); ``done`` is
    told each completed instant (progress); ``bloom`` as :func:`execute_compaction` says."""
    pending = [i.instant_time for i in pending_compactions(Timeline.load(storage))]
    if order == "LIFO":
        pending.reverse()
    completed = []
    for instant_time in pending:
        execute_compaction(storage, instant_time, runner=runner, bloom=bloom)
        completed.append(instant_time)
        if done is not None:
            done(instant_time)
    return completed


def compact_inline_if_due(
    storage: Storage, cfg: HoodieConfig, *, runner: OperationRunner | None
) -> str | None:
    """After a merge-on-read write: schedule and run a compaction when
    ``hoodie.compact.inline`` is set and the trigger strategy says it is due.

    Raises:
        HudiError: a compaction is due and there is no ``runner`` to run it.
    """
    if cfg.get(config.INLINE_COMPACT) is not True:
        return None
    if runner is None:
        raise HudiError(
            f"{config.INLINE_COMPACT.key}=true on {storage.base_path} needs a runner to compact"
        )
    instant_time = schedule_compaction(storage, cfg)
    if instant_time is not None:
        execute_compaction(storage, instant_time, runner=runner, bloom=BloomFilterSpec.of(cfg))
    return instant_time
