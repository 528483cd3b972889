"""The Spark side of a bulk_insert: one job, no shuffle (:mod:`engine.write.bulk_insert`).

::

    keyed (+ _hoodie_record_key, _hoodie_partition_path) ──mapInArrow(write_task)──► write stats

Each task of the batch's own partitioning writes what it reads, as ``df.write.parquet`` does;
the records are never routed, sorted or shuffled. The profile job before it checks the keys,
so a null key fails before a file is written.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from engine.faults import checkpoint
from engine.model.keygen import KeyGenSpec
from engine.model.merge import ARRIVAL_COLUMN
from engine.model.row_checks import CHECK_COLUMNS
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.spark.jobs import FILE_ID_COLUMN, run_write_tasks
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.write.bulk_insert import BulkInsertTask
from engine.write.handles import WriteContext
from engine.write.write_status import decode_stats

__all__ = ["task_records", "write_unrouted"]


def write_unrouted(
    tagged: DataFrame, ctx: WriteContext, rows_per_file: int, spec: KeyGenSpec
) -> list[HoodieWriteStat]:
    """Write every task's records into new file groups; the write stats of every file.

    Keys made from the records' fields are made again in the task by the Arrow key generator
    (the same text, checked by the profile job already) rather than carried from the JVM:
    two string columns fewer to convert. Auto-generated keys come from Spark's partitioning
    and travel as they are.
    """
    checkpoint("write.before_files")
    records, keygen = task_records(tagged, spec)
    return decode_stats(run_write_tasks(records, BulkInsertTask(rows_per_file, keygen), ctx))


def task_records(tagged: DataFrame, spec: KeyGenSpec) -> tuple[DataFrame, KeyGenSpec | None]:
    """The columns a bulk_insert task reads, and the key generator it makes keys with (none
    for auto-generated keys, which travel as they are)."""
    # the arrival order only orders duplicates a combining write keeps one of: not needed here
    dropped = [FILE_ID_COLUMN, *CHECK_COLUMNS, ARRIVAL_COLUMN]
    if spec.auto_keys:
        return tagged.drop(*dropped), None
    return tagged.drop(*dropped, RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN), spec
