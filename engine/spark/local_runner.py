"""The driver-side write: a small batch on a local master written in the driver process.

On a ``local[*]`` master the driver and the executors share one machine, and a Spark job of a
small batch costs more in fixed overheads than in work: a shuffle, and a round trip of the
records through a Python worker (serialised out of the JVM, into the worker, and the write
stats back). :class:`LocalRunner` does the one-job write (:mod:`engine.write.partition_write`)
of such a batch in the driver instead::

    keyed ──toArrow (the batch read once, keys computed by the same Spark expressions)──►
      driver: bad keys and null ordering values refused (nothing written yet)
        ──► global index: a key arriving in two partitions refused (KeyMovedError)
        ──► per partition, in threads: PartitionTargets.write (the very function a Spark task
            runs: look up, plan, write the file groups) ──► write stats

The other write jobs of such a batch run here too, each by its task's function: the bucket
index's, a bulk_insert's, and the two-job write's write job (its records routed by the same
Spark expressions, each file group written by its handle); so does the two-job write's profile
when it looks nothing up. Everything else (key generation, an index lookup's profile job,
compaction, reads) and every batch over ``hoodie.write.local.max.bytes`` (Spark's own size
estimate of the keyed batch) go to :class:`SparkRunner` unchanged. :func:`runner_for` picks
the runner for a session: this one only on a classic session with a ``local`` master; a cluster
and Spark Connect keep the distributed path.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from engine import config
from engine.config import HoodieConfig
from engine.errors import KeyMovedError
from engine.faults import checkpoint
from engine.fs.filenames import TaskInfo
from engine.fs.storage import Storage
from engine.model.keygen import KeyGenSpec
from engine.model.row_checks import BAD_KEY_COLUMN, NULL_ORDERING_COLUMN, checked_rows
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.spark.bucket_write import write_bucketed_locally
from engine.spark.bulk_write import task_records
from engine.spark.explain import explain_text
from engine.spark.jobs import in_threads, write_buckets_locally
from engine.spark.profile import BatchProfile, LocatedRecords
from engine.spark.runner import SparkRunner, tagged_records
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.write.bulk_insert import write_task_records
from engine.write.global_index import cross_partition_duplicate
from engine.write.handles import WriteContext
from engine.write.index import IndexSource, PartitionKeyRange
from engine.write.partition_write import TASK_BUCKETS
from engine.write.routing import ByBucket, ByFileGroup, PartitionedWrite, Routing, Unrouted

__all__ = [
    "LocalRunner",
    "estimated_bytes",
    "profile_inserts_locally",
    "runner_for",
    "write_partitions_locally",
]

# the root node's size estimate in ``explain(mode="cost")``: "Statistics(sizeInBytes=16.6 MiB"
_SIZE = re.compile(r"sizeInBytes=([0-9.E+]+)\s*([KMGTPE]i)?B")
_LOCAL_MASTER = re.compile(r"local(?:\[(\*|[0-9]+)(?:,[0-9]+)?\])?")
LONG_MAX = 2**63 - 1  # Spark's spark.sql.defaultSizeInBytes: the estimate of an unknown size
_UNITS = {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def runner_for(spark: SparkSession | None) -> SparkRunner:
    """The runner of a table's data work on ``spark`` (the active session when ``None``): on a
    classic session with a local master, one whose writes may run in the driver (each write
    decides by its options, :meth:`LocalRunner.for_write`); else Spark's distributed path. No
    session is started here (a table opened for its timeline only needs none)."""
    session = spark or SparkSession.getActiveSession()
    if session is None or not is_local_master(session):
        return SparkRunner(spark)
    return LocalRunner(spark, config.WRITE_LOCAL_MAX_BYTES.default)


def is_local_master(spark: SparkSession) -> bool:
    """Whether ``spark`` is a classic session whose executors run in the driver's JVM (a
    Spark Connect client does not own its server's machine, whatever the server's master)."""
    return local_cores(spark) is not None


def local_cores(spark: SparkSession) -> int | None:
    """The cores of a local master's executor (``local`` 1, ``local[N]`` and ``local[N,F]``
    N, ``local[*]`` the machine's), read from the public ``spark.master`` setting; ``None`` for
    any other master and for a Spark Connect client."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return None
    match = _LOCAL_MASTER.fullmatch(str(spark.conf.get("spark.master", "")).strip())
    if match is None:
        return None
    cores = match.group(1)
    if cores is None:
        return 1
    return os.cpu_count() or 1 if cores == "*" else max(1, int(cores))


def estimated_bytes(df: DataFrame) -> int | None:
    """Spark's optimizer estimate of ``df``'s size (the root of its cost plan, public API);
    ``None`` when the plan carries none."""
    match = _SIZE.search(explain_text(df, "cost"))
    if match is None:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2)])


class LocalRunner(SparkRunner):
    """:class:`SparkRunner` whose one-job write of a batch of at most ``max_bytes`` runs in the
    driver process (see the module notes); ``threads`` partitions are written side by side
    (the local master's cores when ``None``)."""

    def __init__(
        self, spark: SparkSession | None, max_bytes: int, threads: int | None = None
    ) -> None:
        super().__init__(spark)
        self.max_bytes = max_bytes
        self._threads = threads

    def for_write(self, cfg: HoodieConfig) -> SparkRunner:
        """The runner of a write with the options ``cfg``: Spark's tasks when
        ``hoodie.write.local.enabled`` is false, else this one with the write's size bound."""
        if not cfg.get(config.WRITE_LOCAL_ENABLED):
            return SparkRunner(self._spark)
        return LocalRunner(self._spark, cfg.get(config.WRITE_LOCAL_MAX_BYTES), self._threads)

    def fits(self, keyed: DataFrame) -> bool:
        """Whether the keyed batch is small enough for the driver: its estimated size is at
        most ``max_bytes``; a batch Spark cannot size (an estimate of ``Long.MaxValue`` or
        more: rows made in Python, some sources) only when ``max_bytes`` is ``Long.MaxValue``."""
        if self.max_bytes >= LONG_MAX:
            return True
        size = estimated_bytes(keyed)
        return size is not None and size < LONG_MAX and size <= self.max_bytes

    def locate(
        self, keyed: DataFrame, spec: KeyGenSpec, source: IndexSource | None
    ) -> BatchProfile:
        if source is not None or not self.fits(keyed):
            return super().locate(keyed, spec, source)
        columns = [RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN, BAD_KEY_COLUMN]
        if NULL_ORDERING_COLUMN in keyed.columns:
            columns.append(NULL_ORDERING_COLUMN)
        return profile_inserts_locally(keyed.select(*columns).toArrow(), spec)

    def write_routed(
        self, records: Any, routing: Routing, ctx: WriteContext, spec: KeyGenSpec
    ) -> list[HoodieWriteStat]:
        """The write job in this process when its batch fits."""
        if isinstance(routing, ByFileGroup):
            located = cast(LocatedRecords, records)
            if not self.fits(located.batch):
                return super().write_routed(records, routing, ctx, spec)
            return write_buckets_locally(located.tagged, routing, ctx, self._thread_count())
        frame = tagged_records(records) if isinstance(routing, Unrouted) else records
        if not self.fits(frame):
            return super().write_routed(records, routing, ctx, spec)
        if isinstance(routing, Unrouted):
            checkpoint("write.before_files")
            unrouted, keygen = task_records(frame, spec)
            return write_task_records(
                unrouted.toArrow().to_batches(),
                ctx,
                TaskInfo(),
                partition_id=0,
                rows_per_file=routing.rows_per_file,
                keygen=keygen,
            )
        # read once: a cached copy (made for the two-job write's jobs) would cost a job to build
        batch = frame.unpersist().toArrow()
        if isinstance(routing, ByBucket):
            return write_bucketed_locally(batch, routing.targets, ctx, spec, self._thread_count())
        return write_partitions_locally(batch, routing.targets, ctx, spec, self._thread_count())

    def _thread_count(self) -> int:
        return self._threads or local_cores(self.spark) or 1


def profile_inserts_locally(records: pa.Table, spec: KeyGenSpec) -> BatchProfile:
    """The profile of a batch whose keys are not looked up (as
    :func:`engine.spark.insert_profile.profile_inserts` makes it in Spark): records per touched
    partition, after the row checks (:mod:`engine.model.row_checks`)."""
    counts = pc.value_counts(checked_rows(records, spec)[PARTITION_PATH_COLUMN]).to_pylist()
    ranges = [
        PartitionKeyRange(c["values"], int(c["counts"]), "", "")
        for c in sorted(counts, key=lambda c: c["values"])
    ]
    return BatchProfile(ranges, indexed=False)


def write_partitions_locally(
    records: pa.Table,
    targets: PartitionedWrite,
    ctx: WriteContext,
    spec: KeyGenSpec,
    threads: int,
) -> list[HoodieWriteStat]:
    """The one-job write of ``records`` (keyed, with their check flags) in this process: the
    checks a Spark map stage makes, then each partition written as a task writes it, ``threads``
    partitions at a time. Raises as the Spark job does, before any file is written for a bad key,
    a null ordering value, or (global index) a key arriving in two partitions."""
    records = checked_rows(records, spec)
    partitions = sorted(pc.unique(records[PARTITION_PATH_COLUMN]).to_pylist())
    if targets.global_index:
        duplicate = cross_partition_duplicate(records)
        if duplicate is not None:  # the two-job write refuses the batch before writing
            key, first, second = duplicate
            raise KeyMovedError(
                f"record key {key!r} arrives in partitions {first!r} and {second!r}"
            )

    if targets.looks_up_keys and partitions:  # one lookup of the batch, not one per task
        keys = pc.unique(records[RECORD_KEY_COLUMN].combine_chunks())
        targets.prefetch(Storage(ctx.base_path, ctx.s3), keys)

    def write(numbered: tuple[int, str]) -> list[HoodieWriteStat]:
        number, partition = numbered
        rows = records.filter(pc.equal(records[PARTITION_PATH_COLUMN], partition))
        task = TaskInfo(stage_id=0, task_attempt_id=number)
        written, _ = targets.write_unit(partition, 0, rows, number * TASK_BUCKETS, ctx, task)
        return written

    if not partitions:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(partitions)))) as pool:
        results = in_threads(pool, write, list(enumerate(partitions)))
    return [stat for stats in results for stat in stats]
