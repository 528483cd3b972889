"""How a write's records reach its handles: the routing of its one job, the unit a task writes,
the handle each file group gets, and the one task every write job runs.

Every write job hands each record to a *routing unit* that one task writes; the jobs differ
only in how the records get there (the runner's side, :meth:`engine.write.runner.Runner.
write_routed`), never in what a task does with them::

    routing       routing unit (what a task writes)          how records reach the task
    ByFileGroup   a file group of the driver's bucket plan    tagged by the profile job, then
                                                              shuffled by file group
    ByPartition   a partition: its task looks its keys up,    shuffled by partition (a bad row
                  plans its file groups and writes them       fails the map stage)
    ByBucket      a (partition, bucket) of the bucket index   hashed and checked in the map
                                                              stage, shuffled by bucket
    Unrouted      the records the task reads (bulk_insert)    no shuffle

A task runs :meth:`UnitWriter.write_task`: its records split into units (by partition path,
then :data:`ROUTE_COLUMN`), each written in turn, the write stats returned in the one coding
of :mod:`engine.write.write_status`. A file group is written by the handle
:func:`choose_handle` picks (:mod:`engine.write.handles`), run by :func:`run_handle`::

    a slice that takes log blocks (merge-on-read)   AppendHandle
    an existing base file                           MergeHandle
    a new file group                                CreateHandle
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa

from engine.errors import HudiError
from engine.faults import checkpoint
from engine.fs.filenames import TaskInfo
from engine.fs.storage import Storage
from engine.model.schema import PARTITION_PATH_COLUMN
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.write.append import AppendHandle, AppendSlice, LogWriteConfig
from engine.write.bucketing import Bucket, BucketPlan, BucketSpec
from engine.write.grouping import groups_in_arrival_order
from engine.write.handles import WriteContext, WriteHandle, base_file_handle
from engine.write.write_status import encode_keys, encode_stats

__all__ = [
    "ROUTE_COLUMN",
    "BucketedWrite",
    "ByBucket",
    "ByFileGroup",
    "ByPartition",
    "FileGroupUnits",
    "HandleChoice",
    "HandleFactory",
    "PartitionedWrite",
    "Routing",
    "TaskWriter",
    "UnitWriter",
    "Unrouted",
    "check_routed",
    "choose_handle",
    "run_handle",
]

#: the column a job shuffles its records by: a file group's slot (ByFileGroup), a bucket
#: (ByBucket), a partition's slot (ByPartition); with the partition path it names the unit
ROUTE_COLUMN = "__route"

# the handle a task writes a planned bucket with
HandleFactory = Callable[[Bucket], WriteHandle]


def choose_handle(
    bucket: Bucket,
    append_slice: AppendSlice | None = None,
    log_config: LogWriteConfig | None = None,
) -> WriteHandle:
    """The handle of ``bucket``: an append to ``append_slice`` when one is given (with its
    ``log_config``), else a merge into the bucket's base file, else a create."""
    if append_slice is not None:
        return AppendHandle(append_slice, bucket.number, log_config or LogWriteConfig())
    return base_file_handle(bucket)


def run_handle(
    handle: WriteHandle, records: pa.Table, ctx: WriteContext, task: TaskInfo
) -> list[HoodieWriteStat]:
    """Run one file group's handle inside a task (the fault points around every file)."""
    checkpoint("task.before_file")
    stats = handle.write(records, ctx, task)
    checkpoint("task.after_file")
    return stats


@dataclass(frozen=True)
class HandleChoice:
    """The handles of a write's planned buckets (picklable; called inside tasks): buckets of
    ``append_slices`` (file id -> the slice, merge-on-read groups that are not small-file
    rewrites) append, every other one writes a base file."""

    append_slices: Mapping[str, AppendSlice] = field(default_factory=dict)
    log_config: LogWriteConfig = field(default_factory=LogWriteConfig)

    def __call__(self, bucket: Bucket) -> WriteHandle:
        return choose_handle(bucket, self.append_slices.get(bucket.file_id), self.log_config)


class UnitWriter:
    """The task side of a write job (picklable): how one routing unit's records are written.

    Attributes:
        routed: A unit is (partition path, :data:`ROUTE_COLUMN`); else the partition path
            (the route column, if any, only placed the records).
        task_numbers: Bucket numbers (write tokens, seqnos) a task owns: task partition *
            this onwards.
    """

    routed: bool = True
    task_numbers: int = 0

    @property
    def returns_keys(self) -> bool:
        """Each unit's distinct keys go back to the driver with the stats."""
        return False

    def write_unit(
        self,
        partition: str,
        route: int,
        records: pa.Table,
        number: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> tuple[list[HoodieWriteStat], int]:
        """Write one unit's records; the write stats and how many bucket numbers from
        ``number`` on it used."""
        raise NotImplementedError

    def write_task(
        self,
        batches: Iterable[pa.RecordBatch],
        task_partition: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> Iterator[pa.RecordBatch]:
        """The one write task: the records it received split into units, each written in
        turn (sorted by partition path, then route; a unit's records in arrival order); the
        rows the task returns (:mod:`engine.write.write_status`)."""
        received = list(batches)
        if not received:
            return
        table = pa.Table.from_batches(received)
        if self.routed:
            check_routed(table, ctx)
        if not self.routed and ROUTE_COLUMN in table.column_names:
            table = table.drop_columns([ROUTE_COLUMN])
        by = ROUTE_COLUMN if self.routed else None
        number = task_partition * self.task_numbers
        stats: list[HoodieWriteStat] = []
        for partition, route, rows in groups_in_arrival_order(table, PARTITION_PATH_COLUMN, by):
            written, used = self.write_unit(partition, route, rows, number, ctx, task)
            number += used
            stats += written
            if self.returns_keys:  # the driver checks no key arrives in two partitions
                yield encode_keys(rows, partition)
        yield encode_stats(stats)


@dataclass(frozen=True)
class FileGroupUnits(UnitWriter):
    """The task side of :class:`ByFileGroup`: the route is a file group's slot.

    Attributes:
        buckets: slot -> the planned bucket its records go to.
        handles: The handle of each bucket.
    """

    buckets: Mapping[int, Bucket]
    handles: HandleFactory = base_file_handle

    def write_unit(
        self,
        partition: str,
        route: int,
        records: pa.Table,
        number: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> tuple[list[HoodieWriteStat], int]:
        bucket = self.buckets[route]
        return run_handle(self.handles(bucket), records, ctx, task), 1


def check_routed(table: pa.Table, ctx: WriteContext) -> None:
    """Refuse records the routing sent to no file group (a profile that missed them): the write
    fails before its unit is written, whichever process writes it."""
    if table.column(ROUTE_COLUMN).null_count:
        raise HudiError(
            f"Instant {ctx.instant_time}: records were routed to no file group "
            "(the workload profile missed them); nothing of this write is committed"
        )


class TaskWriter(Protocol):
    """What a write job's tasks run (:meth:`UnitWriter.write_task`)."""

    def write_task(
        self,
        batches: Iterable[pa.RecordBatch],
        task_partition: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> Iterator[pa.RecordBatch]:
        """The rows the task returns for the records it received."""
        ...


class PartitionedWrite(TaskWriter, Protocol):
    """The task side of a one-job write (:class:`engine.write.partition_write.
    PartitionTargets`), as the runner needs it."""

    @property
    def partitions(self) -> list[str]:
        """Every partition of the table when it was listed (each gets its own slot)."""
        ...

    @property
    def global_index(self) -> bool:
        """A key not stored in its own partition is looked up in every other one."""
        ...

    @property
    def looks_up_keys(self) -> bool:
        """The write looks its keys up (upserts, deletes)."""
        ...

    def prefetch(self, storage: Storage, keys: pa.Array) -> None:
        """Look the whole batch's distinct ``keys`` up before the tasks (in this process) ask
        for their parts; a no-op for an index that gains nothing from it."""
        ...

    def write_unit(
        self,
        partition: str,
        route: int,
        records: pa.Table,
        number: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> tuple[list[HoodieWriteStat], int]: ...


class BucketedWrite(TaskWriter, Protocol):
    """The task side of a bucket-index write (:class:`engine.write.bucket_index.
    BucketTargets`), as the runner needs it."""

    @property
    def spec(self) -> BucketSpec:
        """The buckets a record key hashes to."""
        ...

    def write_unit(
        self,
        partition: str,
        route: int,
        records: pa.Table,
        number: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> tuple[list[HoodieWriteStat], int]: ...


@dataclass(frozen=True)
class ByFileGroup:
    """Route each record to the file group the driver planned for it (``ROUTED``): updates
    to the group storing their key, inserts by key hash over the plan's insert ranges."""

    plan: BucketPlan
    handles: HandleFactory = base_file_handle

    def units(self, slot_of: Mapping[str, int]) -> FileGroupUnits:
        """The task side, given each file group's shuffle slot."""
        buckets = {slot_of[f]: bucket for f, bucket in self.plan.buckets.items()}
        return FileGroupUnits(buckets, self.handles)


@dataclass(frozen=True)
class ByPartition:
    """Route each partition's records to one task, which looks them up, plans and writes
    (``BY_PARTITION``, :mod:`engine.write.partition_write`)."""

    targets: PartitionedWrite


@dataclass(frozen=True)
class ByBucket:
    """Route each record to the bucket its key hashes to (``BY_BUCKET``,
    :mod:`engine.write.bucket_index`)."""

    targets: BucketedWrite


@dataclass(frozen=True)
class Unrouted:
    """No routing: each task writes the records it reads into new file groups of at most
    ``rows_per_file`` rows (``UNROUTED``, :mod:`engine.write.bulk_insert`)."""

    rows_per_file: int


Routing = ByFileGroup | ByPartition | ByBucket | Unrouted
