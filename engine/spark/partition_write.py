"""The one Spark job of a simple-index write whose partitions each fit one task
(:mod:`engine.write.partition_write`).

::

    keyed ──select: shuffle slot of the record's partition; a null or empty key, or a null
      ordering value where the write combines, raises in the map stage (Spark's raise_error)──►
      repartition(tasks, slot) ──mapInArrow: each partition it received, one after the other──►
      write stats (global index: and each partition's distinct keys)

The map stage runs in the JVM when the keys are Spark expressions (no Python round trip of the
batch) and finishes before any write task starts, so a bad key fails the job before a file is
written; the batch is read once, by the map stage. Every partition the table had when it was
listed gets its own shuffle slot (:mod:`engine.spark.partitioning`), so a batch touching two
partitions runs two write tasks side by side; a new partition is placed by hash. On the global
index each partition's distinct keys come back too (one Arrow IPC cell each), and a key in two
partitions is a :class:`KeyMovedError` (the write runs again as the two-job write, which
refuses the batch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from engine.errors import KeyMovedError, NullOrderingValueError, RecordKeyError
from engine.model.keygen import KeyGenSpec, invalid_record_key_message
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.spark.jobs import BAD_KEY_COLUMN, NULL_ORDERING_COLUMN, current_task, run_job
from engine.spark.partitioning import slot_values
from engine.spark.schema import spark_struct_of
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.write.global_index import cross_partition_duplicate
from engine.write.handles import WriteContext
from engine.write.partition_write import MAX_PARTITION_TASKS, TASK_BUCKETS
from engine.write.runner import PartitionedWrite

__all__ = ["write_partitions"]

_SLOT_COLUMN = "__partition_slot"


def write_partitions(
    keyed: DataFrame, targets: PartitionedWrite, ctx: WriteContext, spec: KeyGenSpec
) -> list[HoodieWriteStat]:
    """Check the keys, bring each partition to one task, and write (see the module notes)."""
    # the job reads the batch once: a cached copy (key_records caches a costly batch for the
    # jobs of the two-job write) would only cost a job of its own to build
    keyed = keyed.unpersist()
    known = targets.partitions
    conf = keyed.sparkSession.conf
    shuffle = int(conf.get("spark.sql.shuffle.partitions") or 1)
    # adaptive execution coalesces the shuffle's empty partitions away: a task per touched
    # partition (an empty task still costs a Python worker round); without it, few tasks
    adaptive = all(
        str(conf.get(key, "true")).lower() == "true"
        for key in ("spark.sql.adaptive.enabled", "spark.sql.adaptive.coalescePartitions.enabled")
    )
    tasks = shuffle if adaptive else max(1, min(len(known), shuffle, MAX_PARTITION_TASKS))
    slot = _checked_slot(keyed, known, tasks, spec)
    routed = keyed.select(*[c for c in keyed.columns if c not in _FLAGS], slot.alias(_SLOT_COLUMN))
    shuffled = (
        routed.repartition(_SLOT_COLUMN) if adaptive else routed.repartition(tasks, _SLOT_COLUMN)
    )
    result = shuffled.mapInArrow(_write_task(targets, ctx), spark_struct_of(_RESULT_SCHEMA))
    rows = run_job(result.collect)
    if targets.global_index:  # a key new in two partitions was written to both
        duplicate = cross_partition_duplicate(_returned_keys(rows))
        if duplicate is not None:  # the two-job write refuses the batch before writing
            key, first, second = duplicate
            raise KeyMovedError(
                f"record key {key!r} arrives in partitions {first!r} and {second!r}"
            )
    return [HoodieWriteStat.from_wire(r[_STAT]) for r in rows if r[_STAT] is not None]


_STAT = "stat"
# the job's rows: a write stat, or (global index) a distinct incoming key of a partition
_KEYS = "keys"
_RESULT_SCHEMA = pa.schema([(_STAT, pa.string()), (_KEYS, pa.binary())])
_KEYS_SCHEMA = pa.schema([(RECORD_KEY_COLUMN, pa.string()), (PARTITION_PATH_COLUMN, pa.string())])


_FLAGS = (BAD_KEY_COLUMN, NULL_ORDERING_COLUMN)


def _checked_slot(keyed: DataFrame, known: list[str], tasks: int, spec: KeyGenSpec) -> Column:
    """The shuffle slot of every record; raises in the map stage on a bad key or a null
    ordering value (the error text is what :func:`engine.spark.jobs.run_job` re-raises)."""
    path = F.col(PARTITION_PATH_COLUMN)
    slots = slot_values(len(known), tasks)
    if not known:
        slot: Column = F.hash(path)
    elif len(known) == 1:
        slot = F.when(path == F.lit(known[0]), F.lit(slots[0])).otherwise(F.hash(path))
    else:
        pairs = [F.lit(x) for p, s in zip(known, slots, strict=True) for x in (p, s)]
        slot = F.coalesce(F.create_map(*pairs)[path], F.hash(path))
    bad = F.raise_error(F.lit(f"{RecordKeyError.__name__}: {invalid_record_key_message(spec)}"))
    checked = F.when(F.col(BAD_KEY_COLUMN), bad)
    if NULL_ORDERING_COLUMN in keyed.columns:
        message = F.concat(
            F.lit(f"{NullOrderingValueError.__name__}: Ordering value is null for record key '"),
            F.col(RECORD_KEY_COLUMN),
            F.lit("' (partition '"),
            path,
            F.lit("')"),
        )
        checked = checked.when(F.col(NULL_ORDERING_COLUMN), F.raise_error(message))
    return checked.otherwise(slot).cast("int")


def _write_task(
    targets: PartitionedWrite, ctx: WriteContext
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The write stage's task: every partition it received, one after the other."""

    def write_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = list(batches)
        if not received:
            return
        table = pa.Table.from_batches(received).drop_columns([_SLOT_COLUMN])
        context = TaskContext.get()
        first = (context.partitionId() if context else 0) * TASK_BUCKETS
        task = current_task()
        partitions = sorted(pc.unique(table[PARTITION_PATH_COLUMN]).to_pylist())
        stats: list[HoodieWriteStat] = []
        for partition in partitions:
            rows = (
                table
                if len(partitions) == 1
                else table.filter(pc.equal(table[PARTITION_PATH_COLUMN], partition))
            )
            written, numbers = targets.write(rows, partition, first, ctx, task)
            first += numbers
            stats += written
            if targets.global_index:
                yield _key_rows(rows, partition)
        stat_rows = [s.to_wire() for s in stats]
        yield pa.RecordBatch.from_pydict(
            {
                _STAT: stat_rows,
                _KEYS: [None] * len(stat_rows),
            },
            schema=_RESULT_SCHEMA,
        )

    return write_task


def _key_rows(rows: pa.Table, partition: str) -> pa.RecordBatch:
    """The distinct incoming keys of one partition, as one Arrow IPC cell (the driver checks that
    no key arrives in two partitions: :func:`engine.write.global_index.cross_partition_duplicate`;
    one binary cell crosses the JVM as it is, where a row per key would be converted twice)."""
    keys = pc.unique(rows.column(RECORD_KEY_COLUMN).combine_chunks()).cast(pa.string())
    table = pa.table(
        [keys, pa.repeat(pa.scalar(partition, pa.string()), len(keys))], schema=_KEYS_SCHEMA
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, _KEYS_SCHEMA) as writer:
        writer.write_table(table)
    return pa.RecordBatch.from_pydict(
        {_STAT: [None], _KEYS: [sink.getvalue().to_pybytes()]}, schema=_RESULT_SCHEMA
    )


def _returned_keys(rows: list[Any]) -> pa.Table:
    """Every partition's distinct keys the write tasks returned, as one table."""
    tables = [pa.ipc.open_stream(r[_KEYS]).read_all() for r in rows if r[_KEYS] is not None]
    return pa.concat_tables(tables) if tables else _KEYS_SCHEMA.empty_table()
