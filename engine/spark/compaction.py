"""The Spark side of a compaction: one task call per compaction operation (file slice).

::

    operations (driver) ──createDataFrame──► groupBy(item index).applyInArrow(compact_file_slice)
      ──► one HoodieWriteStat (JSON) per new base file ──collect──► driver completes <C>.commit
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from engine.services.compaction import CompactionContext, CompactionOperation, compact_file_slice
from engine.spark.jobs import run_task_per_item
from engine.timeline.commit_metadata import HoodieWriteStat

__all__ = ["run_operations"]


def run_operations(
    spark: SparkSession, operations: Sequence[CompactionOperation], ctx: CompactionContext
) -> list[HoodieWriteStat]:
    """Compact every operation on Spark and return the write stats."""
    if not operations:
        return []
    return run_task_per_item(
        spark, operations, lambda op, info, number: [compact_file_slice(op, ctx, info, number)]
    )
