"""The runner: the one interface through which the driver-side engine has data work done.

The driver plans (timeline, file system view, buckets, compaction plans, query plans) in pure
Python; a runner executes the plans over the records. :class:`engine.spark.runner.SparkRunner`
is the implementation (one Spark task per file group); nothing outside ``engine/spark/`` knows
that Spark does the work, so the same write and compaction code runs unchanged on any runner::

    write       runner.key_records, then the job the index's answer picks
                (:mod:`engine.write.pipeline`), with runner.check_values (the values a schema
                change rests on) before it; every job is runner.write_routed, one task
                (:class:`~engine.write.routing.UnitWriter`) over the routing the job chose:
      routed      runner.locate (profile + index lookup) ──► BatchProfile.locate (records
                  tagged with file groups) ──► write_routed(ByFileGroup)
      unrouted    runner.locate (profile) ──► write_routed(Unrouted) (bulk_insert, no shuffle)
      by bucket   write_routed(ByBucket) (one job: hash, route, write)
      by partition  write_routed(ByPartition) (one job: one task per partition looks up,
                  plans and writes its file groups)
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
    from engine.fs.storage import Storage
    from engine.model.keygen import KeyGenSpec
    from engine.read.plan import QueryPlan
    from engine.services.clustering import ClusteringContext
    from engine.services.clustering_plan import ClusteringGroup
    from engine.services.compaction import CompactionContext, CompactionOperation
    from engine.timeline.commit_metadata import HoodieWriteStat
    from engine.write.handles import WriteContext
    from engine.write.index import IndexSource, PartitionKeyRange
    from engine.write.precommit import CheckFailure, SqlCheck
    from engine.write.routing import Routing

__all__ = [
    "BatchProfile",
    "IncomingBatch",
    "LocatedRecords",
    "Runner",
    "runner_for_write",
]


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

    def write_routed(
        self, records: Any, routing: Routing, ctx: WriteContext, spec: KeyGenSpec
    ) -> list[HoodieWriteStat]:
        """Write the batch in one job routed as ``routing`` says (:mod:`engine.write.routing`):
        each task runs :meth:`~engine.write.routing.UnitWriter.write_task` over the routing
        units it receives; the tasks' write stats.

        Args:
            records: :meth:`BatchProfile.locate`'s located records (``ByFileGroup``,
                ``Unrouted``), else :meth:`key_records`'s keyed batch, whose rows the job's
                map stage checks (``ByPartition``, ``ByBucket``).
            routing: How records reach the tasks, and what a task writes them with.
            ctx: The tasks' snapshot of the write.
            spec: The key generator (the refusal of a bad key names its fields).

        Raises:
            RecordKeyError: a record key is null or empty (no file has been written).
            NullOrderingValueError: an ordering value :meth:`key_records` checks is null
                (no file has been written).
            KeyMovedError: one-job write on a global index: a key is stored in, or arrives
                in, another partition (files may have been written: the caller rolls the
                attempt back).
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
