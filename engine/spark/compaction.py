"""The Spark side of a compaction: one task call per compaction operation (file slice).

::

    operations (driver) ──createDataFrame──► groupBy(op index).applyInArrow(compact_file_slice)
      ──► one HoodieWriteStat (JSON) per new base file ──collect──► driver completes <C>.commit
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import SparkSession

from engine.fs.filenames import TaskInfo
from engine.services.compaction import CompactionContext, CompactionOperation, compact_file_slice
from engine.spark.jobs import run_job
from engine.timeline.commit_metadata import HoodieWriteStat

__all__ = ["run_operations"]


def run_operations(
    spark: SparkSession, operations: Sequence[CompactionOperation], ctx: CompactionContext
) -> list[HoodieWriteStat]:
    """Compact every operation on Spark and return the write stats."""
    if not operations:
        return []
    ops = dict(enumerate(operations))
    frame = spark.createDataFrame([(k,) for k in ops], "op_index int")

    def task(key: tuple[Any, ...], table: pa.Table) -> pa.Table:
        number = key[0].as_py() if hasattr(key[0], "as_py") else int(key[0])
        context = TaskContext.get()
        info = TaskInfo(
            stage_id=context.stageId() if context else 0,
            task_attempt_id=context.taskAttemptId() if context else 0,
        )
        stat = compact_file_slice(ops[number], ctx, info, number)
        return pa.table({"stat": [json.dumps(stat.to_dict())]})

    result = frame.groupBy("op_index").applyInArrow(task, "stat string")
    rows = run_job(result.collect)
    return [HoodieWriteStat.from_dict(json.loads(r["stat"])) for r in rows]
