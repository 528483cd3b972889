"""The Spark side of a clustering: one job, one task per input group.

::

    groups (driver) ──createDataFrame──► groupBy(item index).applyInArrow(cluster_group)
      ──► the write stats (JSON) of the group's new base files ──collect──► driver completes
      the replacecommit
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from engine.services.clustering import ClusteringContext, cluster_group
from engine.services.clustering_plan import ClusteringGroup
from engine.spark.jobs import run_task_per_item
from engine.timeline.commit_metadata import HoodieWriteStat

__all__ = ["run_groups"]


def run_groups(
    spark: SparkSession, groups: Sequence[ClusteringGroup], ctx: ClusteringContext
) -> list[HoodieWriteStat]:
    """Cluster every group on Spark (one job) and return the write stats."""
    if not groups:
        return []
    return run_task_per_item(
        spark, groups, lambda group, info, number: cluster_group(group, ctx, info, number)
    )
