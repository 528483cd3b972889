"""Clustering: file groups rewritten into new ones, stitched to a target size and sorted, as a
``replacecommit`` (Hudi's layout optimisation).

Timeline of one clustering at instant ``T``::

    table version 6                      table versions 8, 9
    <T>.replacecommit.requested          <T>.clustering.requested   Avro plan
                                                                    (engine.services.clustering_plan)
    <T>.replacecommit.inflight (empty)   <T>.clustering.inflight (empty)
    <partition>/<new file id>-0_<token>_<T>.parquet   one Spark task per input group: its slices
                                         read (merge-on-read: logs merged as a snapshot read
                                         merges them), ordered (engine.services.layout_curves),
                                         split into numOutputFileGroups files
    <T>.replacecommit                    <T>_<completion>.replacecommit
        HoodieReplaceCommitMetadata, operationType CLUSTER, partitionToReplaceFileIds = the
        input file groups, one write stat per new file (every row an insert)

Rows keep ``_hoodie_commit_time`` and ``_hoodie_commit_seqno`` (unless
``hoodie.clustering.preserve.commit.metadata`` is false: then they take ``T``'s), so incremental
and CDC readers see no new data. The commit goes through the write path's steps: files no
write stat names are deleted, the metadata table records the new files (files, column stats,
record index: the keys move to the new file groups), then the completed instant. Readers drop
the replaced groups the moment it exists; the cleaner deletes them after retention.

A pending plan holds its file groups: an upsert or delete into one is rejected
(``hoodie.clustering.updates.strategy``, Hudi's SparkRejectUpdateStrategy) unless the allow
strategy is set; then the clustering, finding at its commit that an input slice is no longer
the latest, is rolled back instead. A clustering whose process died (its heartbeat stopped) is
rolled back by the next writer; a plan not yet started stays pending for its execution.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from engine import config
from engine.config import HoodieConfig
from engine.errors import (
    ClusteringUpdateError,
    ConfigError,
    HudiError,
    TimelineError,
    WriteConflictError,
)
from engine.faults import checkpoint
from engine.fs.filenames import (
    TaskInfo,
    new_file_id,
)
from engine.fs.s3 import S3Settings
from engine.fs.storage import Storage
from engine.io.bloom_filter import BloomFilterSpec
from engine.metadata.sync import record_commit
from engine.model.meta_fields import stamp_commit
from engine.read.file_columns import table_has_operation_field
from engine.read.plan import TableInfo, load_table_info
from engine.services.clustering_plan import (
    CLUSTER_OPERATION,
    ClusteringGroup,
    ClusteringPlan,
    clustering_action,
    clustering_file_groups,
    pending_clustering,
    plan_clustering,
    read_clustering_plan,
)
from engine.services.compaction import (
    compacting_file_groups,
    merged_slice_rows,
    rewrite_schemas,
    slice_base_rows,
)
from engine.services.heartbeat import Heartbeat
from engine.services.layout_curves import order_rows
from engine.services.new_files import NewBaseFile
from engine.services.rollback import rollback_instant
from engine.timeline.commit_metadata import HoodieWriteStat, build_commit_metadata
from engine.timeline.instant import COMMIT_ACTIONS, Action, Instant, State, new_instant_time
from engine.timeline.markers import delete_markers, remove_unreported_files
from engine.timeline.timeline import Timeline, complete, create_requested, transition_to_inflight
from engine.view.fs_view import FileSystemView, Visibility

__all__ = [
    "ClusteringContext",
    "GroupRunner",
    "check_clustering_updates",
    "cluster_group",
    "cluster_inline_if_due",
    "clustering_option_problems",
    "execute_clustering",
    "is_clustering_due",
    "run_groups_locally",
    "run_pending_clustering",
    "schedule_clustering",
]


# ---- scheduling -----------------------------------------------------------------------------


def _is_clustering_commit(storage: Storage, timeline: Timeline, instant: Instant) -> bool:
    if instant.action is not Action.REPLACE_COMMIT:
        return False
    return timeline.read_commit_metadata(instant).operation_type == CLUSTER_OPERATION


def is_clustering_due(storage: Storage, timeline: Timeline, cfg: HoodieConfig) -> bool:
    """``hoodie.clustering.inline.max.commits`` commits completed since the last clustering
    (completed or pending), or since the first commit."""
    pending = pending_clustering(storage, timeline)
    since = pending[-1].instant_time if pending else ""
    for instant in reversed(timeline.completed(COMMIT_ACTIONS)):
        if instant.instant_time <= since:
            break
        if _is_clustering_commit(storage, timeline, instant):
            since = instant.instant_time
            break
    commits = [
        i
        for i in timeline.completed([Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT])
        if i.instant_time > since
    ]
    return len(commits) >= cfg.get(config.INLINE_CLUSTERING_MAX_COMMITS)


def clustering_option_problems(cfg: HoodieConfig) -> list[str]:
    """What makes clustering impossible with ``cfg`` (checked before a write starts when it
    clusters inline): a bucket-index table is clustered by Hudi only with consistent hashing,
    which this engine does not write; new file groups would break its bucket layout."""
    inline = cfg.get(config.INLINE_CLUSTERING) or cfg.get(config.SCHEDULE_INLINE_CLUSTERING)
    if inline and cfg.get(config.INDEX_TYPE).is_bucket:
        return [
            f"{config.INLINE_CLUSTERING.key} / {config.SCHEDULE_INLINE_CLUSTERING.key} on a "
            f"table with {config.INDEX_TYPE.key}=BUCKET: a bucket-index table is not clustered"
        ]
    return []


def schedule_clustering(
    storage: Storage, cfg: HoodieConfig, *, force: bool = False
) -> tuple[str, ClusteringPlan] | None:
    """Plan a clustering and write its requested instant, when due (always with ``force``)
    and the plan has a group. The caller holds the table lock.

    Returns:
        The instant and its plan, or ``None`` when nothing was scheduled.

    Raises:
        ConfigError: the table has the bucket index (Hudi clusters it only with consistent
            hashing, which this engine does not write).
    """
    if cfg.get(config.INDEX_TYPE).is_bucket:
        raise ConfigError(
            f"Cannot cluster {storage.base_path}: its {config.INDEX_TYPE.key} is BUCKET (new "
            "file groups would break the bucket layout; Hudi clusters it only with consistent "
            "hashing)"
        )
    timeline = Timeline.load(storage)
    if not force and not is_clustering_due(storage, timeline, cfg):
        return None
    plan = plan_clustering(storage, timeline, cfg, busy=compacting_file_groups(storage, timeline))
    if not plan.groups:
        return None
    instant_time = new_instant_time(timeline.max_instant_time())
    version = timeline.layout.table_format.table_version
    content = plan.to_bytes(storage, table_version=version)
    create_requested(storage, instant_time, clustering_action(storage), content)
    return instant_time, plan


# ---- execution (task side) ------------------------------------------------------------------


@dataclass(frozen=True)
class ClusteringContext:
    """What every clustering task needs (picklable)."""

    base_path: str
    instant_time: str
    table: TableInfo
    visibility: Visibility
    commit_schema: str
    bloom: BloomFilterSpec
    sort_columns: tuple[str, ...] = ()
    layout_strategy: str = "linear"
    curve_method: str = "direct"
    preserve_commit_metadata: bool = True
    compression: str = config.PARQUET_COMPRESSION_CODEC.default
    s3: S3Settings | None = None
    operation_field: bool = False


def _group_rows(
    storage: Storage, group: ClusteringGroup, ctx: ClusteringContext, schema: pa.Schema
) -> pa.Table:
    """Every live row of the group's slices (logs merged as a snapshot read merges them)."""
    parts = []
    for s in group.slices:
        file_slice = s.file_slice
        base = slice_base_rows(storage, file_slice, schema)
        if not file_slice.log_files and base is not None:
            parts.append(base)
            continue
        parts.append(merged_slice_rows(ctx, file_slice, base, schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _chunks(rows: pa.Table, count: int) -> list[pa.Table]:
    """``rows`` split in order into ``count`` files of even row counts (none empty)."""
    count = max(1, min(count, rows.num_rows))
    size, extra = divmod(rows.num_rows, count)
    out, start = [], 0
    for k in range(count):
        length = size + (1 if k < extra else 0)
        out.append(rows.slice(start, length))
        start += length
    return out


def cluster_group(
    group: ClusteringGroup, ctx: ClusteringContext, task: TaskInfo, number: int
) -> list[HoodieWriteStat]:
    """Rewrite one input group into new file groups at the clustering instant (pure, in a
    task): its rows ordered, split into ``numOutputFileGroups`` files of even size."""
    started = time.monotonic()
    storage = Storage(ctx.base_path, ctx.s3)
    schema, writer_schema = rewrite_schemas(ctx.commit_schema, ctx.operation_field)
    rows = order_rows(
        _group_rows(storage, group, ctx, schema),
        ctx.sort_columns,
        ctx.layout_strategy,
        ctx.curve_method,
    )
    stats = []
    partition = group.partition_path
    seq_start = 0
    for chunk in _chunks(rows, group.num_output_file_groups):
        new = NewBaseFile.named(partition, new_file_id(), number, task, ctx.instant_time, started)
        if not ctx.preserve_commit_metadata:
            chunk = stamp_commit(chunk, ctx.instant_time, number, seq_start)
            seq_start += chunk.num_rows
        chunk = new.stamp(chunk)
        size = new.write(
            storage,
            chunk,
            instant_time=ctx.instant_time,
            io_type="CREATE",
            avro_schema_with_meta=writer_schema,
            bloom=ctx.bloom,
            compression=ctx.compression,
            fault_point=False,
        )
        stats.append(
            new.stat(
                prev_commit="null",
                size=size,
                created=True,
                num_writes=chunk.num_rows,
                num_inserts=chunk.num_rows,
            )
        )
        checkpoint("clustering.task_after_file")
    checkpoint("clustering.task_before_return")
    return stats


GroupRunner = Callable[[Sequence[ClusteringGroup], ClusteringContext], list[HoodieWriteStat]]


def run_groups_locally(
    groups: Sequence[ClusteringGroup], ctx: ClusteringContext
) -> list[HoodieWriteStat]:
    """Run every group in this process (tools and tests without Spark)."""
    return [s for k, g in enumerate(groups) for s in cluster_group(g, ctx, TaskInfo(), k)]


# ---- execution (driver side) ----------------------------------------------------------------


def _context(
    storage: Storage, instant_time: str, plan: ClusteringPlan, cfg: HoodieConfig
) -> ClusteringContext:
    timeline = Timeline.load(storage)
    commit_schema = timeline.latest_schema()
    if commit_schema is None:
        raise TimelineError(f"Table {storage.base_path} has no schema to cluster with")
    table = load_table_info(storage)
    codec = config.PARQUET_COMPRESSION_CODEC
    return ClusteringContext(
        base_path=storage.base_path,
        s3=storage.s3,
        instant_time=instant_time,
        table=table,
        visibility=Visibility.of(timeline.until(instant_time)),
        commit_schema=commit_schema,
        bloom=BloomFilterSpec.of(cfg),
        sort_columns=plan.sort_columns,
        layout_strategy=plan.layout_strategy,
        curve_method=plan.strategy_params.get(
            config.LAYOUT_OPTIMIZE_CURVE_METHOD.key, cfg.get(config.LAYOUT_OPTIMIZE_CURVE_METHOD)
        ),
        preserve_commit_metadata=plan.preserve_hoodie_metadata,
        compression=str(codec.parse(table.properties.get(codec.key, codec.default))),
        operation_field=table_has_operation_field(storage, timeline),
    )


def _changed_slices(storage: Storage, plan: ClusteringPlan) -> list[str]:
    """Input file groups whose latest slice is no longer the planned one (an update the allow
    strategy let through, a compaction): clustering them would lose that change."""
    timeline = Timeline.load(storage)
    partitions = {g.partition_path for g in plan.groups}
    view = FileSystemView(storage, timeline, partition_paths=partitions)
    latest = {(s.partition_path, s.file_id): s for s in view.latest_file_slices()}
    changed = []
    for group in plan.groups:
        for planned in group.slices:
            now = latest.get((planned.partition_path, planned.file_id))
            same = (
                now is not None
                and now.base_file == planned.base_file
                and tuple(now.log_files) == planned.log_files
            )
            if not same:
                changed.append(f"{planned.partition_path}/{planned.file_id}")
    return changed


def _roll_back(storage: Storage, instant_time: str) -> None:
    timeline = Timeline.load(storage)
    found = timeline.get(instant_time)
    if found is not None and not found.is_completed:
        rollback_instant(storage, found, timeline.max_instant_time())


def _start(storage: Storage, instant_time: str) -> Instant:
    timeline = Timeline.load(storage)
    instant = timeline.get(instant_time)
    if instant is None or instant.is_completed:
        raise TimelineError(f"No pending clustering {instant_time} in {storage.base_path}")
    if instant.state is State.INFLIGHT:  # an earlier attempt of this process: start again
        rollback_instant(storage, instant, timeline.max_instant_time())
        raise TimelineError(
            f"Clustering {instant_time} in {storage.base_path} was left inflight and is rolled "
            "back; plan again"
        )
    transition_to_inflight(storage, instant_time, instant.action)
    return instant


def execute_clustering(
    storage: Storage, instant_time: str, cfg: HoodieConfig, *, runner: GroupRunner
) -> ClusteringPlan:
    """Run a requested clustering and complete it as a replacecommit (the caller holds the
    table lock). A failure rolls the instant back, so nothing it wrote is ever visible.

    Raises:
        TimelineError: ``instant_time`` is not a requested clustering.
        WriteConflictError: an input slice changed after planning (the clustering is rolled
            back).
    """
    instant = _start(storage, instant_time)
    plan = read_clustering_plan(storage, instant)
    with Heartbeat(storage, instant_time, cfg):
        try:
            ctx = _context(storage, instant_time, plan, cfg)
            stats = runner(plan.groups, ctx)
            checkpoint("clustering.before_complete")
            _complete(storage, instant, plan, stats, ctx.commit_schema)
        except BaseException:
            _roll_back(storage, instant_time)
            raise
    return plan


def _complete(
    storage: Storage,
    instant: Instant,
    plan: ClusteringPlan,
    stats: list[HoodieWriteStat],
    schema: str,
) -> None:
    changed = _changed_slices(storage, plan)
    if changed:
        raise WriteConflictError(
            f"Clustering {instant.instant_time} on {storage.base_path}: file groups "
            f"{changed[:3]} changed after it was planned; it is rolled back"
        )
    remove_unreported_files(storage, instant.instant_time, stats)
    metadata = replace(
        build_commit_metadata(
            stats, schema=schema, operation=None, replaced=plan.replaced_file_ids()
        ),
        operation_type=CLUSTER_OPERATION,
    )
    record_commit(storage, instant.instant_time, metadata)  # the metadata table first
    complete(storage, instant.instant_time, instant.action, metadata)
    checkpoint("clustering.after_complete")
    delete_markers(storage, instant.instant_time)


def run_pending_clustering(
    storage: Storage,
    cfg: HoodieConfig,
    *,
    runner: GroupRunner,
    done: Callable[[str], None] | None = None,
) -> list[str]:
    """Execute every requested clustering, oldest first; ``done`` is told each instant."""
    completed = []
    for instant in pending_clustering(storage, Timeline.load(storage)):
        if instant.state is not State.REQUESTED:
            continue  # another process runs it
        execute_clustering(storage, instant.instant_time, cfg, runner=runner)
        completed.append(instant.instant_time)
        if done is not None:
            done(instant.instant_time)
    return completed


def cluster_inline_if_due(
    storage: Storage, cfg: HoodieConfig, *, runner: GroupRunner | None
) -> str | None:
    """After a write: with ``hoodie.clustering.inline`` schedule and run a clustering when due;
    with ``hoodie.clustering.schedule.inline`` only schedule it.

    Raises:
        HudiError: a clustering is due and there is no ``runner`` to run it.
    """
    inline = cfg.get(config.INLINE_CLUSTERING)
    if not inline and not cfg.get(config.SCHEDULE_INLINE_CLUSTERING):
        return None
    scheduled = schedule_clustering(storage, cfg)
    if scheduled is None or not inline:
        return scheduled[0] if scheduled else None
    if runner is None:
        raise HudiError(
            f"{config.INLINE_CLUSTERING.key}=true on {storage.base_path} needs a runner to cluster"
        )
    execute_clustering(storage, scheduled[0], cfg, runner=runner)
    return scheduled[0]


# ---- updates under pending clustering ---------------------------------------------------------


def check_clustering_updates(
    storage: Storage,
    cfg: HoodieConfig,
    stats: Iterable[HoodieWriteStat],
    instant_time: str,
    action: Action,
) -> None:
    """Reject a write that updated or deleted in a file group a pending clustering rewrites
    (Hudi's SparkRejectUpdateStrategy); nothing under the allow strategy. Call under the table
    lock, before the commit: a rejected write (inflight ``instant_time`` of ``action``) is
    rolled back, as the conflict check rolls back the writes it refuses.

    Raises:
        ClusteringUpdateError: naming the file groups and the clustering instants.
    """
    if cfg.get(config.CLUSTERING_UPDATES_STRATEGY) == config.ALLOW_UPDATE_STRATEGY:
        return
    timeline = Timeline.load(storage)
    busy = clustering_file_groups(storage, timeline)
    if not busy:
        return
    touched = sorted(
        {(s.partition_path or "", s.file_id) for s in stats} & busy,
    )
    if touched:
        pending = [i.instant_time for i in pending_clustering(storage, timeline)]
        rollback_instant(
            storage, Instant(instant_time, action, State.INFLIGHT), timeline.max_instant_time()
        )
        raise ClusteringUpdateError(
            f"Write {instant_time} on {storage.base_path} updates file groups under pending "
            f"clustering {', '.join(pending)}: {[f'{p}/{f}' for p, f in touched[:5]]} "
            f"({config.CLUSTERING_UPDATES_STRATEGY.key} rejects it; run the clustering first, "
            f"or set it to {config.ALLOW_UPDATE_STRATEGY})"
        )
