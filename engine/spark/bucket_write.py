"""The one Spark job of a bucket-index write (:mod:`engine.write.bucket_index`).

::

    keyed ──mapInArrow: bucket of every record (a null or empty key, or a null ordering value
      where the write combines, fails the map stage)──►
      repartition(partition path, bucket) ──mapInArrow(the write task, engine.spark.jobs):
      one (partition, bucket) at a time──► write stats

The shuffle's map stage finishes before any write task starts, so a bad key fails the job
before a file is written; the batch is evaluated once (by the map stage). Adaptive execution
runs that map stage as a job of its own: a write is two jobs, three stages (one skipped).

A batch Spark reads as one partition (a small dbt incremental batch, one file) needs no
shuffle: one task receives every record, computes every bucket (so a bad key still fails
before a file is written) and writes the buckets one after the other: one job, one stage, one
task, and no rows converted to Spark's and back.

The batch is not cached for the write (the key generation persists a costly batch for writes
that look keys up and then write): nothing reads it but this job, which evaluates it once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from engine.model.keygen import KeyGenSpec
from engine.model.row_checks import CHECK_COLUMNS, checked_rows, without_checks
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.spark.jobs import (
    CHEAP_PLAN_NODES,
    optimized_plan,
    plan_nodes,
    run_write_tasks,
    write_units_locally,
)
from engine.spark.session import is_connect
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.write.bucket_index import bucket_ids
from engine.write.bucketing import BucketSpec
from engine.write.handles import WriteContext
from engine.write.routing import ROUTE_COLUMN, BucketedWrite
from engine.write.write_status import decode_stats

__all__ = ["write_bucketed", "write_bucketed_locally"]

_BUCKET_COLUMN = ROUTE_COLUMN  # the bucket of a record is its route
# logical plan nodes that add no exchange (a plan of these alone is planned without running):
# the cheap scans and projections, less a cache (whose own plan may shuffle), plus the key
# generation and local rows
_NO_EXCHANGE_NODES = (CHEAP_PLAN_NODES - {"InMemoryRelation"}) | {"LogicalRDD", "MapInArrow"}
_COALESCE = re.compile(r"^[\s:|+-]*Repartition \d+, false\b")


def write_bucketed(
    keyed: DataFrame, targets: BucketedWrite, ctx: WriteContext, spec: KeyGenSpec
) -> list[HoodieWriteStat]:
    """Route every record to its bucket and write the buckets (see the module notes)."""
    bucket_spec = targets.spec

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _assigned(batches, bucket_spec, spec)

    # the write is the batch's only job: a cache would only cost a job of its own (adaptive
    # execution materialises it first) and memory
    keyed.unpersist()
    if _one_partition(keyed):

        def assign_checked(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            # the task takes every batch (checked) before writing
            return (without_checks(b) for b in assign(batches))

        return decode_stats(run_write_tasks(keyed, targets, ctx, before=assign_checked))
    struct = T.StructType([*keyed.schema.fields, T.StructField(_BUCKET_COLUMN, T.IntegerType())])
    routed = keyed.mapInArrow(assign, struct).drop(*CHECK_COLUMNS)
    # no partition count: the session's shuffle partitions, which adaptive execution
    # coalesces (a (partition, bucket) is never split): few buckets, few tasks
    shuffled = routed.repartition(PARTITION_PATH_COLUMN, _BUCKET_COLUMN)
    return decode_stats(run_write_tasks(shuffled, targets, ctx))


def _assigned(
    batches: Iterable[pa.RecordBatch], bucket_spec: BucketSpec, spec: KeyGenSpec
) -> Iterator[pa.RecordBatch]:
    """Each batch with its records' buckets, its check flags kept for the next stage to drop;
    a refused record (:mod:`engine.model.row_checks`) raises: the map stage fails before any
    file is written."""
    for batch in batches:
        checked_rows(batch, spec)
        buckets = bucket_ids(
            batch.column(RECORD_KEY_COLUMN), bucket_spec.hash_fields, bucket_spec.num_buckets
        )
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, buckets], names=[*batch.schema.names, _BUCKET_COLUMN]
        )


def write_bucketed_locally(
    records: pa.Table,
    targets: BucketedWrite,
    ctx: WriteContext,
    spec: KeyGenSpec,
    threads: int,
) -> list[HoodieWriteStat]:
    """The bucket-index write of ``records`` (keyed, with their check flags) in this process
    (:mod:`engine.spark.local_runner`): every record's bucket and the same checks as the map
    stage, before any file is written; then each (partition, bucket) written as a write task
    writes it, ``threads`` at a time."""
    assigned = [without_checks(b) for b in _assigned(records.to_batches(), targets.spec, spec)]
    if not assigned:
        return []
    table = pa.Table.from_batches(assigned)
    return write_units_locally(targets, table, _BUCKET_COLUMN, ctx, threads)


def _one_partition(keyed: DataFrame) -> bool:
    """Whether Spark reads the batch as one partition. Asked only of a batch whose plan has no
    exchange (scans, projections, filters, unions, the key generation, ``coalesce``), where
    counting partitions plans and runs nothing; over Spark Connect the count is not reachable
    and the shuffle is kept."""
    if is_connect():
        return False
    for name, line in plan_nodes(optimized_plan(keyed)):
        if name not in _NO_EXCHANGE_NODES and not _COALESCE.search(line):
            return False
    return bool(keyed.rdd.getNumPartitions() == 1)
