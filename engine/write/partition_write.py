"""The one-job write of the simple index: one task per touched partition looks its keys up,
plans its file groups and writes them.

A write on Hudi's SIMPLE index needs, per partition, the incoming keys found in the latest base
files before its buckets can be planned. Done as separate Spark jobs (profile and lookup, then
the write: :mod:`engine.spark.profile`, :mod:`engine.spark.jobs`), every write pays several fixed
job costs. When a partition's work fits one task, a single job does it all::

    driver      list the table's latest file slices (sizes, log versions) once
    map stage   read the batch once: record keys, partition paths; a null or empty key, or a
                null ordering value where the write combines, fails the stage (no task has
                written anything yet, and the requested instant is deleted)
    shuffle     every partition of the table on its own task (new partitions by hash)
    task        per partition: look its keys up in its latest base files (footer key ranges
                prune them, :meth:`engine.write.index.KeyIndex.find_keys`), plan its buckets as
                the driver plans them for the two-job write (copy-on-write:
                :func:`engine.write.bucketing.plan_buckets`; merge-on-read:
                :func:`engine.write.merge_on_read.plan_merge_on_read_buckets`), write the
                buckets one after the other, return the write stats

Semantics are those of the two-job write: a key stored in two file groups of a partition is
updated in both; deletes reach stored keys only; inserts of a partition fill its small files
then new file groups, spread by key (here: by rank of the sorted distinct keys, so each new
file holds a key range). The driver keeps the timeline: the conflict check and the commit
follow the job.

On a global index (GLOBAL_SIMPLE, GLOBAL_BLOOM) a key is unique in the whole table. A task
cannot write another partition's file groups, so the one-job write holds only for a batch that
moves no key: each task looks the keys it did not find in its partition up in the other
partitions' latest base files whose footer key range (read once by the driver) meets them (on
GLOBAL_BLOOM, whose bloom filter passes them too), and raises :class:`KeyMovedError` when one
is stored there; each task returns its partitions' distinct keys, and the driver raises it for
a key arriving in two partitions. The attempt is then rolled back (like any failed write) and
the write runs again as the two-job write, which moves the key or refuses the batch
(:mod:`engine.write.global_index`). Keys past every stored range (new increasing ids) read no
other partition.

Used for upsert, insert and delete on every index that looks keys up (:class:`KeyIndex`: SIMPLE,
BLOOM and their global forms; each task looks its partitions' keys up as the index says) of a
table that has
data and no pending instant (:func:`one_job_plan`); everything else (a new table, CDC, auto keys,
bulk_insert, replace writes, a partition whose latest base files exceed
:data:`TASK_BYTES_FACTOR` times ``hoodie.parquet.max.file.size``, a table with pending
instants to roll back or compact first) takes the two-job write.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.config import HoodieConfig, TableType, WriteOperation
from engine.errors import HudiError, KeyMovedError
from engine.faults import checkpoint
from engine.fs.filenames import TaskInfo, new_file_id, partition_file_path
from engine.fs.properties import write_partition_metadata
from engine.fs.storage import Storage
from engine.io.parquet import read_record_key_range
from engine.model.keygen import KeyGenSpec
from engine.model.merge import INSERT_COLUMN
from engine.model.schema import RECORD_KEY_COLUMN
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from engine.write import merge_on_read
from engine.write.append import AppendSlice, LogWriteConfig
from engine.write.bucketing import BucketPlan, SizedBaseFile, plan_buckets
from engine.write.cdc import cdc_logging_mode
from engine.write.handles import WriteContext
from engine.write.index import KeyIndex, SimpleIndex
from engine.write.listing import TableSlices, latest_base_files, latest_table_slices
from engine.write.plan import JobProfile, WriteJob, average_record_size
from engine.write.routing import ByPartition, HandleChoice, UnitWriter, run_handle

__all__ = [
    "MAX_PARTITION_TASKS",
    "TASK_BYTES_FACTOR",
    "PartitionTargets",
    "one_job_plan",
    "one_job_profile",
    "write_by_partition",
]

#: a partition whose latest base files hold more than this many times max.file.size is written
#: by the two-job write, one task per file group (its files are then rewritten in parallel)
TASK_BYTES_FACTOR = 2
#: bucket numbers of one task: task partition * this + the bucket's number in its partition
TASK_BUCKETS = 10_000
#: at most this many write tasks (a table with more partitions shares tasks between them)
MAX_PARTITION_TASKS = 64
_READ_THREADS = 4  # base files a task or the driver reads side by side


@dataclass(frozen=True)
class _Sizing:
    """How inserts are sized into files (picklable)."""

    avg_record_size: int
    max_file_size: int
    rule: merge_on_read.SmallFileRule  # small_file_limit is the copy-on-write rule's too
    pack_small_files: bool


@dataclass(frozen=True)
class PartitionTargets(UnitWriter):
    """What the write's tasks need to look up, plan and write any partition (picklable): the
    task side of :class:`~engine.write.routing.ByPartition`, whose unit is a partition.

    Attributes:
        base_files: partition -> (partition, file_id) -> latest base file with its size.
        slices: partition -> (partition, file_id) -> latest slice (merge-on-read appends).
        merge_on_read: Updates of groups that are not small-file rewrites become log blocks.
        existing_only: Deletes: only records whose key is stored are written.
        sizing: Record size and file sizes of the inserts.
        log_config: Log block and file sizing (merge-on-read).
        completed: The completed instants the listing was made from.
        index: The index keys are looked up with, for the write's operation (inserts: no
            lookup, :class:`engine.write.index.NoLookupIndex`). A global one
            looks a key not stored in its own partition up in every other one; found there,
            the task raises :class:`KeyMovedError`.
        key_ranges: Global index: the footer key range of every latest base file (relative
            path -> (min, max), ``None`` when the footer has none), read once by the driver.
    """

    base_files: Mapping[str, Mapping[tuple[str, str], SizedBaseFile]]
    slices: Mapping[str, Mapping[tuple[str, str], AppendSlice]]
    merge_on_read: bool
    existing_only: bool
    sizing: _Sizing
    log_config: LogWriteConfig
    completed: frozenset[str] = field(default_factory=frozenset)
    index: KeyIndex = field(default_factory=SimpleIndex)
    key_ranges: Mapping[str, tuple[str, str] | None] = field(default_factory=dict)
    routed = False  # the route column only places a partition on its task
    task_numbers = TASK_BUCKETS

    @property
    def returns_keys(self) -> bool:
        """Global index: the driver checks no key arrives in two partitions."""
        return self.global_index

    @property
    def global_index(self) -> bool:
        """Keys are looked up in every partition (a global index, on a write that looks keys
        up)."""
        return self.looks_up_keys and self.index.is_global

    @property
    def looks_up_keys(self) -> bool:
        """Upserts and deletes look keys up; inserts do not."""
        return self.index.looks_up

    @property
    def partitions(self) -> list[str]:
        """Every partition of the table when it was listed."""
        return sorted(self.base_files.keys() | self.slices.keys())

    def prefetch(self, storage: Storage, keys: pa.Array) -> None:
        """Look the batch's distinct ``keys`` up once before the tasks ask
        (:meth:`engine.write.index.KeyIndex.prefetch`)."""
        self.index.prefetch(storage, keys)

    def largest_partition_bytes(self) -> int:
        return max(
            (sum(b.size_bytes for b in files.values()) for files in self.base_files.values()),
            default=0,
        )

    def write_unit(
        self,
        partition: str,
        route: int,
        records: pa.Table,
        first_number: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> tuple[list[HoodieWriteStat], int]:
        """Look up, plan and write one partition's records (inside a task); the write stats
        and how many bucket numbers from ``first_number`` on the partition used."""
        storage = Storage(ctx.base_path, ctx.s3)
        tagged = self._tag(storage, partition, records)
        plan, appends = self._plan(partition, tagged)
        if not plan.buckets:
            return [], 0
        write_partition_metadata(storage, partition, ctx.instant_time)
        parts = tagged.by_file_group(plan, partition)
        handles = HandleChoice(appends, self.log_config)
        stats: list[HoodieWriteStat] = []
        for bucket in sorted(plan.buckets.values(), key=lambda b: b.number):
            rows = parts.get(bucket.file_id)
            if rows is None or not rows.num_rows:
                continue
            numbered = replace(bucket, number=first_number + bucket.number)
            stats += run_handle(handles(numbered), rows, ctx, task)
        return stats, len(plan.buckets)

    def _tag(self, storage: Storage, partition: str, records: pa.Table) -> _Tagged:
        """Which file groups store the partition's keys; the records that are inserts."""
        keys = records.column(RECORD_KEY_COLUMN).combine_chunks()
        distinct = pc.unique(keys)
        base_files = self.base_files.get(partition, {})
        matches: dict[str, pa.Array] = {}
        if self.looks_up_keys and base_files and len(distinct):
            found = self.index.find_keys(storage, base_files, distinct)
            matches = {file_id: hits for (_, file_id), hits in found.items()}
        updates = {
            file_id: records.filter(pc.is_in(keys, value_set=hits))
            for file_id, hits in matches.items()
        }
        stored = pc.unique(pa.concat_arrays(list(matches.values()))) if matches else None
        if self.global_index:  # set for the writes that look keys up
            elsewhere = (
                distinct
                if stored is None
                else distinct.filter(pc.invert(pc.is_in(distinct, stored)))
            )
            self._refuse_moved_keys(storage, partition, elsewhere)
        if self.existing_only:
            return _Tagged(updates, records.slice(0, 0), 0, matches)
        inserts = records if stored is None else records.filter(pc.invert(pc.is_in(keys, stored)))
        # upserts count distinct new keys (they are combined); inserts count records
        count = len(distinct) - (len(stored) if stored is not None else 0)
        return _Tagged(updates, inserts, count if self.looks_up_keys else inserts.num_rows, matches)

    def _refuse_moved_keys(self, storage: Storage, partition: str, keys: pa.Array) -> None:
        """Global index: raise :class:`KeyMovedError` when one of ``keys`` (not stored in
        ``partition``) is stored in another partition's latest base file; files are pruned by
        their footer key range first, so keys past every stored range read nothing."""
        others = {
            group: base
            for other, files in self.base_files.items()
            if other != partition
            for group, base in files.items()
        }
        found = self.index.find_keys(storage, others, keys, key_ranges=self.key_ranges)
        if found:
            group, hits = min(found.items(), key=lambda item: item[0])
            rel = partition_file_path(group[0], others[group].base_file)
            raise KeyMovedError(
                f"record key {hits[0].as_py()!r} arrives in partition {partition!r} "
                f"and is stored in {rel!r}"
            )

    def _plan(self, partition: str, tagged: _Tagged) -> tuple[BucketPlan, dict[str, AppendSlice]]:
        """The partition's buckets, and the slices of those that take log blocks."""
        s = self.sizing
        update_counts = {(partition, f): len(found) for f, found in tagged.matches.items()}
        insert_counts = {partition: tagged.insert_count} if tagged.insert_count else {}
        base_files = self.base_files.get(partition, {})
        if not self.merge_on_read:
            plan = plan_buckets(
                update_counts=update_counts,
                insert_counts=insert_counts,
                latest_base_files=base_files,
                avg_record_size=s.avg_record_size,
                max_file_size=s.max_file_size,
                small_file_limit=s.rule.small_file_limit,
                pack_small_files=s.pack_small_files,
                new_file_id=new_file_id,
            )
            return plan, {}
        slices = self.slices.get(partition, {})
        plan, rewritten = merge_on_read.plan_merge_on_read_buckets(
            update_counts=update_counts,
            insert_counts=insert_counts,
            table_slices=TableSlices(dict(base_files), dict(slices)),
            avg_record_size=s.avg_record_size,
            max_file_size=s.max_file_size,
            rule=s.rule,
            pack_small_files=s.pack_small_files,
        )
        appends = {
            b.file_id: slices[(partition, b.file_id)]
            for b in plan.buckets.values()
            if (partition, b.file_id) in slices and b.file_id not in rewritten
        }
        return plan, appends


@dataclass(frozen=True)
class _Tagged:
    """One partition's records split by the lookup."""

    updates: dict[str, pa.Table]  # file_id -> records whose key the file group stores
    inserts: pa.Table
    insert_count: int  # what the bucketing sizes the inserts by
    matches: dict[str, pa.Array]  # file_id -> the incoming keys it stores

    def by_file_group(self, plan: BucketPlan, partition: str) -> dict[str, pa.Table]:
        """Records per file group: its updates, and the inserts the plan gives it (each
        distinct insert key by its rank in key order, so a key's duplicates stay together)."""
        parts: dict[str, list[pa.Table]] = {
            f: [_flag_inserts(t, False)] for f, t in self.updates.items()
        }
        if self.inserts.num_rows and partition in plan.insert_ranges:
            bounds, file_ids = plan.insert_ranges[partition]
            keys = self.inserts.column(RECORD_KEY_COLUMN).combine_chunks()
            ordered = pc.unique(keys).sort()
            rank = pc.index_in(keys, value_set=ordered).to_numpy(zero_copy_only=False)
            slot = np.searchsorted(np.asarray(bounds), rank / len(ordered), side="right")
            slot = np.minimum(slot, len(file_ids) - 1)
            for k, file_id in enumerate(file_ids):
                chosen = self.inserts.filter(pa.array(slot == k))
                if chosen.num_rows:
                    parts.setdefault(file_id, []).append(_flag_inserts(chosen, True))
        return {f: pa.concat_tables(t) if len(t) > 1 else t[0] for f, t in parts.items()}


def _flag_inserts(records: pa.Table, inserts: bool) -> pa.Table:
    """``records`` with :data:`~engine.model.merge.INSERT_COLUMN` set to ``inserts`` (an
    append counts its inserts by it)."""
    return records.append_column(INSERT_COLUMN, pa.repeat(pa.scalar(inserts), records.num_rows))


# ---- the driver's side ----------------------------------------------------------------------


def _eligible(
    cfg: HoodieConfig, operation: WriteOperation, spec: KeyGenSpec, timeline: Timeline | None
) -> bool:
    """Whether the write's semantics allow the one-job write (see the module notes)."""
    return (
        timeline is not None
        and operation in (WriteOperation.UPSERT, WriteOperation.INSERT, WriteOperation.DELETE)
        and cdc_logging_mode(cfg) is None
        and not spec.auto_keys
        and timeline.last_completed() is not None
        and not timeline.pending()
    )


def one_job_plan(
    storage: Storage,
    cfg: HoodieConfig,
    index: KeyIndex,
    operation: WriteOperation,
    table_type: TableType,
    spec: KeyGenSpec,
    timeline: Timeline | None,
) -> PartitionTargets | None:
    """The targets of a one-job write, or ``None`` when the write takes the two-job path
    (asked by the pipeline for an index that does not tag in its own write job,
    :func:`engine.write.pipeline.one_job_targets`)."""
    if not _eligible(cfg, operation, spec, timeline) or timeline is None:
        return None
    targets = plan_partition_targets(storage, timeline, cfg, index, operation, table_type)
    limit = TASK_BYTES_FACTOR * cfg.get(config.PARQUET_MAX_FILE_SIZE)
    return targets if targets.largest_partition_bytes() <= limit else None


def plan_partition_targets(
    storage: Storage,
    timeline: Timeline,
    cfg: HoodieConfig,
    index: KeyIndex,
    operation: WriteOperation,
    table_type: TableType,
) -> PartitionTargets:
    """List the table's latest file slices once and size the inserts, as of ``timeline``."""
    mor = table_type == TableType.MERGE_ON_READ
    estimate = cfg.get(config.COPY_ON_WRITE_RECORD_SIZE_ESTIMATE)
    small_file_limit = cfg.get(config.PARQUET_SMALL_FILE_LIMIT)
    base_files: dict[str, dict[tuple[str, str], SizedBaseFile]] = {}
    slices: dict[str, dict[tuple[str, str], AppendSlice]] = {}
    if mor:  # every partition listed once (a partition without file groups counts as new)
        current = latest_table_slices(storage, timeline, None)
        for key, base in current.base_files.items():
            base_files.setdefault(key[0], {})[key] = base
        for key, file_slice in current.slices.items():
            slices.setdefault(key[0], {})[key] = file_slice
        avg = merge_on_read.average_record_size(timeline, estimate, small_file_limit)
    else:
        for key, base in latest_base_files(timeline, None).items():
            base_files.setdefault(key[0], {})[key] = base
        avg = average_record_size(timeline, estimate)
    read_ranges = index.is_global and index.prune_by_ranges
    sizing = _Sizing(
        avg_record_size=avg,
        max_file_size=cfg.get(config.PARQUET_MAX_FILE_SIZE),
        rule=merge_on_read.SmallFileRule.of(cfg),  # no pending compaction (see _eligible)
        pack_small_files=operation.packs_small_files,
    )
    return PartitionTargets(
        base_files,
        slices,
        merge_on_read=mor,
        existing_only=operation == WriteOperation.DELETE,
        sizing=sizing,
        log_config=merge_on_read.log_write_config(cfg),
        completed=_completed(timeline),
        index=index,
        key_ranges=_footer_key_ranges(storage, base_files) if read_ranges else {},
    )


def _footer_key_ranges(
    storage: Storage, base_files: Mapping[str, Mapping[tuple[str, str], SizedBaseFile]]
) -> dict[str, tuple[str, str] | None]:
    """The footer key range of every latest base file (a global write's tasks prune the
    partitions they look a key up in by them), read side by side."""
    paths = [
        partition_file_path(partition, base.base_file)
        for files in base_files.values()
        for (partition, _), base in files.items()
    ]
    with ThreadPoolExecutor(max_workers=min(_READ_THREADS, max(1, len(paths)))) as pool:
        ranges = list(pool.map(lambda rel: read_record_key_range(storage, rel), paths))
    return dict(zip(paths, ranges, strict=True))


def _completed(timeline: Timeline) -> frozenset[str]:
    return frozenset(i.instant_time for i in timeline.completed())


def one_job_profile(targets: PartitionTargets) -> JobProfile:
    """The profile of a one-job write (its tasks look the keys up)."""
    return JobProfile("A one-job write looks its keys up in its write tasks", targets)


def write_by_partition(job: WriteJob, action: Action) -> list[HoodieWriteStat]:
    """The data phase of a one-job write: <t>.<action>.inflight, then the job.

    A null or empty key (or a null ordering value where the write combines) fails the job's map
    stage, before any file is written: the requested instant is then deleted as if it never was.
    """
    batch = job.batch
    profile = batch.profile
    targets = profile.targets if isinstance(profile, JobProfile) else None
    if not isinstance(targets, PartitionTargets):
        raise HudiError(f"Write {job.instant_time} was not prepared for the one-job write")
    if targets.completed != _completed(job.timeline):  # a write completed since the listing
        targets = plan_partition_targets(
            job.storage,
            job.timeline,
            job.cfg,
            targets.index,
            job.operation,
            TableType.MERGE_ON_READ if targets.merge_on_read else TableType.COPY_ON_WRITE,
        )
    with job.checked_inflight(action):
        checkpoint("write.before_files")
        routing = ByPartition(targets)
        return job.data_runner.write_routed(batch.keyed, routing, job.write_context(), batch.spec)
