"""The one Spark job of a bucket-index write (:mod:`engine.write.bucket_index`).

::

    keyed ──mapInArrow: bucket of every record (a null or empty key, or a null ordering value
      where the write combines, fails the map stage)──►
      repartition(partition path, bucket) ──mapInArrow: one (partition, bucket) at a time──►
      write stats

The shuffle's map stage finishes before any write task starts, so a bad key fails the job
before a file is written; the batch is evaluated once (by the map stage).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from engine.errors import NullOrderingValueError, RecordKeyError
from engine.faults import checkpoint
from engine.model.keygen import KeyGenSpec, invalid_record_key_message
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.spark.jobs import BAD_KEY_COLUMN, NULL_ORDERING_COLUMN, current_task, run_job
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.write.bucket_index import BucketTargets, bucket_ids
from engine.write.handles import WriteContext

__all__ = ["write_bucketed"]

_BUCKET_COLUMN = "__bucket"
_TASK_BUCKETS = 1_000  # seqno/write-token numbers: task partition * this + group ordinal


def write_bucketed(
    keyed: DataFrame, targets: BucketTargets, ctx: WriteContext, spec: KeyGenSpec
) -> list[HoodieWriteStat]:
    """Route every record to its bucket and write the buckets (see the module notes)."""
    bucket_spec = targets.spec
    bad_key = invalid_record_key_message(spec)

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if pc.any(batch.column(BAD_KEY_COLUMN)).as_py():
                raise RecordKeyError(bad_key)
            _refuse_null_ordering(batch)
            buckets = bucket_ids(
                batch.column(RECORD_KEY_COLUMN), bucket_spec.hash_fields, bucket_spec.num_buckets
            )
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, buckets], names=[*batch.schema.names, _BUCKET_COLUMN]
            )

    struct = T.StructType([*keyed.schema.fields, T.StructField(_BUCKET_COLUMN, T.IntegerType())])
    routed = keyed.mapInArrow(assign, struct).drop(BAD_KEY_COLUMN, NULL_ORDERING_COLUMN)
    # no partition count: the session's shuffle partitions, which adaptive execution coalesces
    # (a (partition, bucket) is never split), so a batch touching few buckets runs few tasks
    shuffled = routed.repartition(PARTITION_PATH_COLUMN, _BUCKET_COLUMN)
    rows = run_job(shuffled.mapInArrow(_write_task(targets, ctx), "stat string").collect)
    return [HoodieWriteStat.from_dict(json.loads(r["stat"])) for r in rows]


def _refuse_null_ordering(batch: pa.RecordBatch) -> None:
    """A record flagged ``__null_ordering`` (writes that combine) fails the map stage."""
    if NULL_ORDERING_COLUMN not in batch.schema.names:
        return
    flagged = batch.filter(batch.column(NULL_ORDERING_COLUMN))
    if flagged.num_rows:
        key = flagged.column(RECORD_KEY_COLUMN)[0].as_py()
        partition = flagged.column(PARTITION_PATH_COLUMN)[0].as_py()
        raise NullOrderingValueError(
            f"Ordering value is null for record key {key!r} (partition {partition!r})"
        )


def _write_task(
    targets: BucketTargets, ctx: WriteContext
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The write stage's task: every (partition, bucket) it received, one after the other."""

    def write_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = list(batches)
        if not received:
            return
        table = pa.Table.from_batches(received)
        context = TaskContext.get()
        partition_id = context.partitionId() if context else 0
        task = current_task()
        groups = table.select([PARTITION_PATH_COLUMN, _BUCKET_COLUMN]).group_by(
            [PARTITION_PATH_COLUMN, _BUCKET_COLUMN]
        )
        pairs = sorted(
            groups.aggregate([]).to_pylist(),
            key=lambda r: (r[PARTITION_PATH_COLUMN], r[_BUCKET_COLUMN]),
        )
        stats: list[HoodieWriteStat] = []
        for k, pair in enumerate(pairs):
            partition, bucket = pair[PARTITION_PATH_COLUMN], pair[_BUCKET_COLUMN]
            rows = (
                table
                if len(pairs) == 1
                else table.filter(
                    pc.and_(
                        pc.equal(table[PARTITION_PATH_COLUMN], partition),
                        pc.equal(table[_BUCKET_COLUMN], bucket),
                    )
                )
            )
            checkpoint("task.before_file")
            stats += targets.write(
                rows.drop_columns([_BUCKET_COLUMN]),
                partition,
                bucket,
                partition_id * _TASK_BUCKETS + k,
                ctx,
                task,
            )
            checkpoint("task.after_file")
        yield pa.RecordBatch.from_pydict({"stat": [json.dumps(s.to_dict()) for s in stats]})

    return write_task
