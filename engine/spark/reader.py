"""Spark executor of a read :class:`~engine.read.plan.QueryPlan`: a DataFrame over the exact files.

* Slices read as plain Parquet (copy-on-write, read-optimized, and merge-on-read slices without
  log files) go through Spark's own Parquet reader over the exact list of base files, with the
  query schema given explicitly (no inference, no partition discovery from the paths).
* Merge-on-read slices with log files are merged in Spark tasks, one task per slice:
  ``spark.range(n, numPartitions=n).mapInArrow(...)`` runs :func:`engine.read.arrow.read_file_slice`
  on the executors (pure, picklable inputs), so the merge scales with the cluster.
* Incremental queries keep rows whose ``_hoodie_commit_time`` lies in ``(begin, end]``.

Only the public DataFrame API is used, so the same code runs on Spark Connect.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import reduce

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from engine.fs.view import FileSlice
from engine.model.schema import COMMIT_TIME_COLUMN
from engine.read.arrow import plan_schema, read_file_slice
from engine.read.plan import QueryPlan

__all__ = ["escape_glob", "plan_spark_schema", "read_plan"]


def plan_spark_schema(plan: QueryPlan, arrow_schema: pa.Schema | None = None) -> StructType:
    """The Spark schema of the query result (from the plan's Arrow schema)."""
    return from_arrow_schema(arrow_schema if arrow_schema is not None else plan_schema(plan))


_GLOB_CHARS = frozenset("\\*?[]{}")


def escape_glob(path: str) -> str:
    """``path`` with Hadoop glob characters escaped: Spark expands the paths it is given, and a
    partition value may contain ``[``, ``{`` or ``*``."""
    return "".join("\\" + ch if ch in _GLOB_CHARS else ch for ch in path)


def read_plan(spark: SparkSession, plan: QueryPlan) -> DataFrame:
    """The rows of ``plan`` as a DataFrame (meta columns included when the table has them)."""
    arrow_schema = plan_schema(plan)
    spark_schema = plan_spark_schema(plan, arrow_schema)
    merged = [s for s in plan.file_slices if plan.merge_logs and s.has_logs]
    native = [s for s in plan.file_slices if s.base_file and not (plan.merge_logs and s.has_logs)]
    frames: list[DataFrame] = []
    if native:
        frames.append(_native_frame(spark, plan, native, spark_schema))
    if merged:
        frames.append(_merged_frame(spark, plan, merged, arrow_schema, spark_schema))
    if not frames:
        return spark.createDataFrame([], spark_schema)
    return reduce(lambda a, b: a.unionByName(b), frames)


def _native_frame(
    spark: SparkSession, plan: QueryPlan, slices: Sequence[FileSlice], schema: StructType
) -> DataFrame:
    storage = plan.table.storage
    paths = [escape_glob(storage.uri(s.base_file_path or "")) for s in slices]
    df = spark.read.schema(schema).parquet(*paths)
    if plan.filters_commit_time and COMMIT_TIME_COLUMN in schema.fieldNames():
        column = F.col(COMMIT_TIME_COLUMN)
        condition = column > F.lit(plan.begin or "")
        if plan.end is not None:
            condition = condition & (column <= F.lit(plan.end))
        df = df.filter(condition)
    return df


def _merged_frame(
    spark: SparkSession,
    plan: QueryPlan,
    slices: Sequence[FileSlice],
    arrow_schema: pa.Schema,
    spark_schema: StructType,
) -> DataFrame:
    todo = tuple(slices)

    def merge_slices(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                table = read_file_slice(plan, todo[index], arrow_schema)
                yield from table.to_batches()

    ids = spark.range(0, len(todo), 1, numPartitions=len(todo))
    return ids.mapInArrow(merge_slices, spark_schema)
