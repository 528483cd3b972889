"""The runner: the one interface through which the driver-side engine has data work done.

The driver plans (timeline, file system view, buckets, compaction plans, query plans) in pure
Python; a runner executes the plans over the records. :class:`engine.spark.runner.SparkRunner`
is the implementation (one Spark task per file group); nothing outside ``engine/spark/`` knows
that Spark does the work, so the same write and compaction code runs unchanged on any runner::

    write       runner.key_records, then the job the index's answer picks
                (:mod:`engine.write.pipeline`), with runner.check_values (the values a schema
                change rests on) before it:
      routed      runner.locate (profile + index lookup) ──► BatchProfile.locate (records
                  tagged with file groups) ──► runner.write_buckets
      unrouted    runner.locate (profile) ──► runner.write_unrouted (bulk_insert, no shuffle)
      by bucket   runner.write_bucketed (one job: hash, route, write)
      by partition  runner.write_partitions (one job: one task per partition looks up, plans
                  and writes its file groups)
    compaction  runner.compact (one task per file slice)
    clustering  runner.cluster (one job, one task per input group)
    read        runner.read (a query plan as the runner's data frame)
    audit       runner.validate (Hudi's SQL pre-commit checks on the staged snapshot)

A runner's record handles (``incoming``, ``keyed``, ``tagged``) are opaque to the engine: it only
hands them back to the runner that made them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

    from engine.config import HoodieConfig
    from engine.fs.filenames import TaskInfo
    from engine.fs.storage import Storage
    from engine.model.keygen import KeyGenSpec
    from engine.read.plan import QueryPlan
    from engine.services.clustering import ClusteringContext
    from engine.services.clustering_plan import ClusteringGroup
    from engine.services.compaction import CompactionContext, CompactionOperation
    from engine.timeline.commit_metadata import HoodieWriteStat
    from engine.write.bucketing import Bucket, BucketPlan, BucketSpec
    from engine.write.handles import WriteContext, WriteHandle
    from engine.write.index import IndexSource, PartitionKeyRange
    from engine.write.precommit import CheckFailure, SqlCheck

__all__ = [
    "BatchProfile",
    "BucketedWrite",
    "HandleFactory",
    "IncomingBatch",
    "LocatedRecords",
    "PartitionedWrite",
    "Runner",
    "runner_for_write",
]

# the handle a task writes a planned bucket with (engine.write.routing.HandleChoice)
HandleFactory = Callable[["Bucket"], "WriteHandle"]


class IncomingBatch(Protocol):
    """The records a write was given, before any key is generated."""

    @property
    def columns(self) -> list[str]:
        """Column names of the data (meta columns excluded)."""
        ...

    @property
    def arrow_schema(self) -> pa.Schema:
        """The data's schema as Arrow types (the commit schema is derived from it)."""
        ...


class LocatedRecords(Protocol):
    """The batch tagged with its file groups, and the workload profile buckets are planned from."""

    @property
    def update_counts(self) -> dict[tuple[str, str], int]:
        """(partition, file_id) -> stored keys of the file group the batch updates."""
        ...

    @property
    def insert_counts(self) -> dict[str, int]:
        """partition -> incoming keys not in the table."""
        ...


class BatchProfile(Protocol):
    """What the first job of a write learned: key ranges per partition and the keys found."""

    @property
    def ranges(self) -> list[PartitionKeyRange]:
        """Records, distinct keys and key range per touched partition."""
        ...

    def locate(
        self, keyed: Any, *, existing_only: bool = False, key_prefix: str = ""
    ) -> LocatedRecords:
        """``keyed`` tagged with the file group of each stored key (deletes: stored keys only);
        ``key_prefix`` goes in front of every record key (auto-generated keys)."""
        ...

    def release(self) -> None:
        """Drop what the profile holds (after the write job)."""
        ...


class BucketedWrite(Protocol):
    """What the tasks of a bucket-index write run (picklable):
    :class:`engine.write.bucket_index.BucketTargets`. Declared as the runner needs it, so the
    interface stays below the write jobs that call it."""

    @property
    def spec(self) -> BucketSpec:
        """The buckets a task hashes each record key to."""
        ...

    def write(
        self,
        records: pa.Table,
        partition_path: str,
        bucket: int,
        number: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> list[HoodieWriteStat]:
        """Write one bucket's records (inside a task); its write stats."""
        ...


class PartitionedWrite(Protocol):
    """What the tasks of a one-job write run, one partition each (picklable):
    :class:`engine.write.partition_write.PartitionTargets`."""

    @property
    def partitions(self) -> list[str]:
        """Every partition of the table when it was listed."""
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

    def write(
        self,
        records: pa.Table,
        partition: str,
        first_number: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> tuple[list[HoodieWriteStat], int]:
        """Look up, plan and write one partition's records (inside a task); the write stats
        and how many bucket numbers from ``first_number`` on the partition used."""
        ...


class Runner(Protocol):
    """Executes the data work the driver planned."""

    def incoming(self, data: Any) -> IncomingBatch:
        """Wrap the records given to a write (no job runs)."""
        ...

    def key_records(
        self,
        batch: IncomingBatch,
        spec: KeyGenSpec,
        *,
        delete_records: bool,
        null_ordering: str | None = None,
    ) -> Any:
        """The batch with record key and partition path; release with :meth:`release`.
        With ``null_ordering``, :meth:`locate` refuses a record whose value of that field is
        null."""
        ...

    def locate(self, keyed: Any, spec: KeyGenSpec, source: IndexSource | None) -> BatchProfile:
        """Profile the batch per partition and look its keys up in ``source``.

        Raises:
            RecordKeyError: a record key is null or empty (nothing has been written).
            NullOrderingValueError: an ordering value :meth:`key_records` checks is null.
        """
        ...

    def write_buckets(
        self,
        located: LocatedRecords,
        plan: BucketPlan,
        ctx: WriteContext,
        *,
        handles: HandleFactory | None = None,
    ) -> list[HoodieWriteStat]:
        """Write every bucket of ``plan`` in its own task, with the handle ``handles`` gives it
        (default: a base file, :func:`engine.write.handles.base_file_handle`); the tasks'
        write stats."""
        ...

    def write_unrouted(
        self, located: LocatedRecords, ctx: WriteContext, rows_per_file: int, spec: KeyGenSpec
    ) -> list[HoodieWriteStat]:
        """bulk_insert: every task writes the records it reads into new file groups, at most
        ``rows_per_file`` rows each (:mod:`engine.write.bulk_insert`); no shuffle."""
        ...

    def write_bucketed(
        self, keyed: Any, targets: BucketedWrite, ctx: WriteContext, spec: KeyGenSpec
    ) -> list[HoodieWriteStat]:
        """Bucket-index write: route every record of ``keyed`` to its (partition, bucket) and
        write each bucket in one job (a null or empty key fails it before a file is written).

        Raises:
            RecordKeyError: a record key is null or empty (no file has been written).
        """
        ...

    def write_partitions(
        self, keyed: Any, targets: PartitionedWrite, ctx: WriteContext, spec: KeyGenSpec
    ) -> list[HoodieWriteStat]:
        """One-job simple-index write: each partition of ``keyed`` on one task, which looks
        its keys up, plans its buckets and writes them (a null or empty key, or a null
        ordering value the write checks, fails the job before a file is written).

        Raises:
            RecordKeyError: a record key is null or empty (no file has been written).
            NullOrderingValueError: an ordering value :meth:`key_records` checks is null.
            KeyMovedError: global index: a key is stored in, or arrives in, another partition
                (files may have been written: the caller rolls the attempt back).
        """
        ...

    def release(self, keyed: Any) -> None:
        """Drop what :meth:`key_records` holds."""
        ...

    def check_values(self, records: Any, writer: pa.Schema, columns: list[str]) -> None:
        """Fail if a value of ``columns`` of ``records`` (an incoming batch, or a frame
        :meth:`read` returned) does not become its ``writer`` type exactly.

        Raises:
            SchemaEvolutionError: naming the column, both types and the value.
        """
        ...

    def compact(
        self, operations: Sequence[CompactionOperation], ctx: CompactionContext
    ) -> list[HoodieWriteStat]:
        """Compact every operation (one task per file slice); the write stats."""
        ...

    def cluster(
        self, groups: Sequence[ClusteringGroup], ctx: ClusteringContext
    ) -> list[HoodieWriteStat]:
        """Rewrite every clustering group (one job, one task per group); the write stats."""
        ...

    def read_changes(self, base_path: str | Storage, begin: str, end: str | None) -> Any:
        """The CDC query over ``(begin, end]`` (:mod:`engine.read.cdc`) as a data frame."""
        ...

    def read(self, plan: QueryPlan) -> Any:
        """The rows of a query plan as the runner's data frame."""
        ...

    def validate(
        self, before: QueryPlan | None, after: QueryPlan, checks: Sequence[SqlCheck]
    ) -> list[CheckFailure]:
        """Run Hudi's SQL pre-commit checks (:mod:`engine.write.precommit`) with
        ``<TABLE_NAME>`` standing for the rows of ``before`` (none: an empty table) and
        ``after``, visible to this runner only; the checks that failed."""
        ...


def runner_for_write(runner: Runner | None, cfg: HoodieConfig) -> Runner | None:
    """The runner a write with the options ``cfg`` runs on: ``runner.for_write(cfg)`` when the
    runner offers it (its choice of where the data work runs depends on the write's options,
    e.g. :class:`engine.spark.local_runner.LocalRunner`), else ``runner`` itself. Optional, so
    every runner without it works unchanged."""
    for_write: Callable[[HoodieConfig], Runner] | None = getattr(runner, "for_write", None)
    return for_write(cfg) if for_write is not None else runner
