"""The one Spark job of a simple-index write whose partitions each fit one task
(:mod:`engine.write.partition_write`).

::

    keyed ──select: shuffle slot of the record's partition; a null or empty key, or a null
      ordering value where the write combines, raises in the map stage (Spark's raise_error)──►
      repartition(tasks, slot) ──mapInArrow(the write task, engine.spark.jobs): each partition
      it received, one after the other──► write stats (global index: and each partition's
      distinct keys)

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

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from engine.errors import KeyMovedError, NullOrderingValueError, RecordKeyError
from engine.model.keygen import KeyGenSpec, invalid_record_key_message
from engine.model.row_checks import (
    BAD_KEY_COLUMN,
    CHECK_COLUMNS,
    NULL_ORDERING_COLUMN,
    NULL_ORDERING_PARTS,
    task_error_text,
)
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.spark.jobs import run_write_tasks
from engine.spark.partitioning import slot_values
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.write.global_index import cross_partition_duplicate
from engine.write.handles import WriteContext
from engine.write.partition_write import MAX_PARTITION_TASKS
from engine.write.routing import ROUTE_COLUMN, PartitionedWrite
from engine.write.write_status import decode_keys, decode_stats

__all__ = ["write_partitions"]


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
    kept = [c for c in keyed.columns if c not in CHECK_COLUMNS]
    routed = keyed.select(*kept, slot.alias(ROUTE_COLUMN))
    shuffled = (
        routed.repartition(ROUTE_COLUMN) if adaptive else routed.repartition(tasks, ROUTE_COLUMN)
    )
    rows = run_write_tasks(shuffled, targets, ctx)
    if targets.global_index:  # a key new in two partitions was written to both
        duplicate = cross_partition_duplicate(decode_keys(rows))
        if duplicate is not None:  # the two-job write refuses the batch before writing
            key, first, second = duplicate
            raise KeyMovedError(
                f"record key {key!r} arrives in partitions {first!r} and {second!r}"
            )
    return decode_stats(rows)


def _checked_slot(keyed: DataFrame, known: list[str], tasks: int, spec: KeyGenSpec) -> Column:
    """The shuffle slot of every record; raises in the map stage on a record the row checks
    refuse (:mod:`engine.model.row_checks`: their texts, which :func:`engine.spark.jobs.run_job`
    re-raises as the errors)."""
    path = F.col(PARTITION_PATH_COLUMN)
    slots = slot_values(len(known), tasks)
    if not known:
        slot: Column = F.hash(path)
    elif len(known) == 1:
        slot = F.when(path == F.lit(known[0]), F.lit(slots[0])).otherwise(F.hash(path))
    else:
        pairs = [F.lit(x) for p, s in zip(known, slots, strict=True) for x in (p, s)]
        slot = F.coalesce(F.create_map(*pairs)[path], F.hash(path))
    bad = F.raise_error(F.lit(task_error_text(RecordKeyError(invalid_record_key_message(spec)))))
    checked = F.when(F.col(BAD_KEY_COLUMN), bad)
    if NULL_ORDERING_COLUMN in keyed.columns:
        before_key, before_partition, after = NULL_ORDERING_PARTS
        message = F.concat(  # the text of null_ordering_error, quoting as repr() does
            F.lit(task_error_text(NullOrderingValueError(f"{before_key}'"))),
            F.col(RECORD_KEY_COLUMN),
            F.lit(f"'{before_partition}'"),
            path,
            F.lit(f"'{after}"),
        )
        checked = checked.when(F.col(NULL_ORDERING_COLUMN), F.raise_error(message))
    return checked.otherwise(slot).cast("int")
