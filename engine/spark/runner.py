"""SparkRunner: the engine's runner (:mod:`engine.write.runner`) on a Spark session.

Every data job of the engine goes through here: key generation and the batch profile
(:mod:`engine.spark.jobs`, :mod:`engine.spark.profile`), the write job (one method, the
routing choosing how records are shuffled to :func:`engine.spark.jobs.write_task`), compaction
(:mod:`engine.spark.compaction`), clustering (:mod:`engine.spark.clustering`) and reads
(:mod:`engine.spark.reader`). Only the public DataFrame API is used, so a classic session and
Spark Connect behave alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from engine.fs.storage import Storage
from engine.model.keygen import KeyGenSpec
from engine.read.plan import QueryPlan
from engine.services.clustering import ClusteringContext
from engine.services.clustering_plan import ClusteringGroup
from engine.services.compaction import CompactionContext, CompactionOperation
from engine.spark import (
    bucket_write,
    bulk_write,
    clustering,
    compaction,
    evolution,
    insert_profile,
    jobs,
    partition_write,
    precommit,
    profile,
    reader,
)
from engine.spark.schema import data_arrow_schema
from engine.spark.session import get_spark
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.write.handles import WriteContext
from engine.write.index import IndexSource
from engine.write.precommit import CheckFailure, SqlCheck
from engine.write.routing import ByBucket, ByFileGroup, Routing, Unrouted
from engine.write.runner import IncomingBatch, LocatedRecords

__all__ = ["SparkBatch", "SparkRunner", "tagged_records"]


@dataclass(frozen=True)
class SparkBatch:
    """The DataFrame given to a write."""

    df: DataFrame

    @property
    def columns(self) -> list[str]:
        return list(self.df.columns)

    @property
    def arrow_schema(self) -> pa.Schema:
        return data_arrow_schema(self.df.schema)


class SparkRunner:
    """Runs the engine's data work on ``spark`` (the active session when ``None``)."""

    def __init__(self, spark: SparkSession | None = None) -> None:
        self._spark = spark

    @property
    def spark(self) -> SparkSession:
        return self._spark or get_spark()

    def incoming(self, data: DataFrame) -> SparkBatch:
        return SparkBatch(data)

    def key_records(
        self,
        batch: IncomingBatch,
        spec: KeyGenSpec,
        *,
        delete_records: bool,
        null_ordering: str | None = None,
    ) -> DataFrame:
        df = cast(SparkBatch, batch).df
        return jobs.add_record_keys(
            df, spec, delete_records=delete_records, null_ordering=null_ordering
        )

    def locate(
        self, keyed: DataFrame, spec: KeyGenSpec, source: IndexSource | None
    ) -> profile.BatchProfile:
        if source is None:  # nothing to look up: Spark's own aggregation profiles the batch
            return insert_profile.profile_inserts(keyed, spec)
        return profile.profile_batch(keyed, spec, source)

    def write_routed(
        self, records: Any, routing: Routing, ctx: WriteContext, spec: KeyGenSpec
    ) -> list[HoodieWriteStat]:
        if isinstance(routing, ByFileGroup):
            return jobs.write_buckets(tagged_records(records), routing, ctx)
        if isinstance(routing, Unrouted):
            return bulk_write.write_unrouted(
                tagged_records(records), ctx, routing.rows_per_file, spec
            )
        if isinstance(routing, ByBucket):
            return bucket_write.write_bucketed(records, routing.targets, ctx, spec)
        return partition_write.write_partitions(records, routing.targets, ctx, spec)

    def release(self, keyed: DataFrame) -> None:
        keyed.unpersist()

    def check_values(self, records: Any, writer: pa.Schema, columns: list[str]) -> None:
        df = records.df if isinstance(records, SparkBatch) else records
        evolution.check_values(df, writer, columns)

    def compact(
        self, operations: Sequence[CompactionOperation], ctx: CompactionContext
    ) -> list[HoodieWriteStat]:
        return compaction.run_operations(self.spark, operations, ctx)

    def cluster(
        self, groups: Sequence[ClusteringGroup], ctx: ClusteringContext
    ) -> list[HoodieWriteStat]:
        return clustering.run_groups(self.spark, groups, ctx)

    def read(self, plan: QueryPlan) -> DataFrame:
        return reader.read_plan(self.spark, plan)

    def read_changes(self, base_path: str | Storage, begin: str, end: str | None) -> DataFrame:
        return reader.read_changes(self.spark, base_path, begin, end)

    def validate(
        self, before: QueryPlan | None, after: QueryPlan, checks: Sequence[SqlCheck]
    ) -> list[CheckFailure]:
        after_df = self.read(after)
        before_df = self.read(before) if before is not None else None
        return precommit.run_checks(self.spark, before_df, after_df, checks)


def tagged_records(located: LocatedRecords) -> DataFrame:
    """The data frame of records :meth:`BatchProfile.locate` tagged."""
    return cast(profile.LocatedRecords, located).tagged
