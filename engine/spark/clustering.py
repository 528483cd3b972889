"""The Spark side of a clustering: one job, one task per input group.

::

    groups (driver) ──createDataFrame──► groupBy(group index).applyInArrow(cluster_group)
      ──► the write stats (JSON) of the group's new base files ──collect──► driver completes
      the replacecommit
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import SparkSession

from engine.fs.filenames import TaskInfo
from engine.services.clustering import ClusteringContext, cluster_group
from engine.services.clustering_plan import ClusteringGroup
from engine.spark.jobs import run_job
from engine.timeline.commit_metadata import HoodieWriteStat

__all__ = ["run_groups"]


def run_groups(
    spark: SparkSession, groups: Sequence[ClusteringGroup], ctx: ClusteringContext
) -> list[HoodieWriteStat]:
    """Cluster every group on Spark (one job) and return the write stats."""
    if not groups:
        return []
    by_index = dict(enumerate(groups))
    frame = spark.createDataFrame([(k,) for k in by_index], "group_index int")

    def task(key: tuple[Any, ...], table: pa.Table) -> pa.Table:
        number = key[0].as_py() if hasattr(key[0], "as_py") else int(key[0])
        context = TaskContext.get()
        info = TaskInfo(
            stage_id=context.stageId() if context else 0,
            task_attempt_id=context.taskAttemptId() if context else 0,
        )
        stats = cluster_group(by_index[number], ctx, info, number)
        return pa.table({"stat": [json.dumps(s.to_dict()) for s in stats]})

    result = frame.groupBy("group_index").applyInArrow(task, "stat string")
    rows = run_job(result.collect)
    return [HoodieWriteStat.from_dict(json.loads(r["stat"])) for r in rows]
