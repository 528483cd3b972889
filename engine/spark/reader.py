"""Spark executor of a read :class:`~engine.read.plan.QueryPlan`: a DataFrame over the exact files.

* Slices read as plain Parquet (copy-on-write, read-optimized, and merge-on-read slices without
  log files) go through Spark's own Parquet reader over the exact list of base files, with the
  query schema given explicitly (no inference, no partition discovery from the paths).
* Merge-on-read slices with log files are merged in Spark tasks, one task per slice:
  ``spark.range(n, numPartitions=n).mapInArrow(...)`` runs :func:`engine.read.arrow.read_file_slice`
  on the executors (pure, picklable inputs), so the merge scales with the cluster.
* Base files written before an int or bigint column became float or double (a widening Spark's
  Parquet reader refuses) are read like merged slices, promoted exactly by the Arrow reader.
* Incremental queries keep rows whose ``_hoodie_commit_time`` lies in ``(begin, end]``.
* A table on S3 that Spark cannot open itself (no Hadoop S3A connector on the classpath, which
  pip cannot install) is read entirely in tasks through the engine's pyarrow filesystem; whether
  Spark can is probed once per session and bucket (:func:`spark_opens`).

Only the public DataFrame API is used, so the same code runs on Spark Connect.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from functools import reduce

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from engine.errors import QueryError
from engine.fs.storage import Storage
from engine.model.cdc_schema import cdc_query_schema
from engine.model.schema import COMMIT_TIME_COLUMN
from engine.read.arrow import plan_schema, read_file_slice
from engine.read.cdc import changes_table, plan_changes, read_split
from engine.read.filter import ReadFilter
from engine.read.plan import QueryPlan
from engine.view.fs_view import FileSlice

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
    promoted = _promoted_slices(plan, native, arrow_schema)
    if native and not spark_opens(spark, plan.table.storage):
        promoted = list(native)
    if promoted:
        merged += promoted
        native = [s for s in native if s not in promoted]
    frames: list[DataFrame] = []
    if native:
        frames.append(_native_frame(spark, plan, native, spark_schema))
    if merged:
        frames.append(_merged_frame(spark, plan, merged, arrow_schema, spark_schema))
    if not frames:
        return spark.createDataFrame([], spark_schema)
    return _filtered(reduce(lambda a, b: a.unionByName(b), frames), plan.query.filters)


_COMPARISONS = {
    "=": lambda c, v: c == v,
    "!=": lambda c, v: c != v,
    "<": lambda c, v: c < v,
    "<=": lambda c, v: c <= v,
    ">": lambda c, v: c > v,
    ">=": lambda c, v: c >= v,
    "IN": lambda c, v: c.isin(list(v)),
    "NOT IN": lambda c, v: ~c.isin(list(v)),
}


def _filtered(df: DataFrame, filters: Sequence[ReadFilter]) -> DataFrame:
    """``df``'s rows matching every filter the plan skipped files by (nulls never match, as
    the Arrow reader's :func:`engine.read.arrow.apply_filters`): skipping only drops whole
    files, the rows of the files kept are filtered here.

    Raises:
        QueryError: a filter names a column the table lacks, or an unknown operator.
    """
    for f in filters:
        if f.field not in df.columns:
            raise QueryError(f"Filter column {f.field!r} is not in the table")
        compare = _COMPARISONS.get(f.op)
        if compare is None:
            raise QueryError(f"Unsupported filter operator {f.op!r}")
        column = F.col(f.field)
        df = df.filter(column.isNotNull() & compare(column, f.value))
    return df


_OPENS: dict[tuple[int, str], bool] = {}


def spark_opens(spark: SparkSession, storage: Storage) -> bool:
    """Whether Spark's own readers open ``storage``'s files: always on a local disk; on an
    object store only when a probe of a missing key under the bucket fails for the missing
    key rather than for the scheme (no filesystem for ``s3a``) or for access."""
    if not storage.is_object_store:
        return True
    bucket_uri = storage.uri("").split("/", 3)
    probe = "/".join(bucket_uri[:3]) + "/.dbt-hudi-probe-" + uuid.uuid4().hex
    key = (id(spark), "/".join(bucket_uri[:3]))
    if key not in _OPENS:
        try:
            _ = spark.read.format("text").load(probe).schema
            _OPENS[key] = True
        except Exception as e:  # any failure but a missing path means Spark cannot read there
            text = str(e)
            _OPENS[key] = "PATH_NOT_FOUND" in text or "Path does not exist" in text
    return _OPENS[key]


def _promoted_slices(
    plan: QueryPlan, slices: Sequence[FileSlice], schema: pa.Schema
) -> list[FileSlice]:
    """Slices whose base file stores an integer where ``schema`` has a float or double: Spark's
    Parquet reader refuses those widenings. One footer per writing instant is read, and only
    when the schema has a floating-point field at all."""
    if not any(_has_floating(f.type) for f in schema):
        return []
    by_instant: dict[str, list[FileSlice]] = {}
    for s in slices:
        by_instant.setdefault(s.base_instant_time, []).append(s)
    out: list[FileSlice] = []
    storage = plan.table.storage
    for group in by_instant.values():
        with storage.open_input(group[0].base_file_path or "") as f:
            stored = pq.read_schema(f)
        if any(
            f.name in stored.names and _int_to_floating(stored.field(f.name).type, f.type)
            for f in schema
        ):
            out.extend(group)
    return out


def _has_floating(dtype: pa.DataType) -> bool:
    if pa.types.is_floating(dtype):
        return True
    return any(_has_floating(child) for child in _children(dtype))


def _int_to_floating(stored: pa.DataType, wanted: pa.DataType) -> bool:
    if pa.types.is_integer(stored) and pa.types.is_floating(wanted):
        return True
    if pa.types.is_struct(stored) and pa.types.is_struct(wanted):
        names = {stored.field(i).name: stored.field(i).type for i in range(stored.num_fields)}
        return any(_int_to_floating(names[f.name], f.type) for f in wanted if f.name in names)
    pairs = zip(_children(stored), _children(wanted), strict=False)
    return not pa.types.is_struct(stored) and any(_int_to_floating(a, b) for a, b in pairs)


def _children(dtype: pa.DataType) -> list[pa.DataType]:
    if pa.types.is_struct(dtype):
        return [dtype.field(i).type for i in range(dtype.num_fields)]
    if pa.types.is_map(dtype):
        return [dtype.key_type, dtype.item_type]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [dtype.value_type]
    return []


def _native_frame(
    spark: SparkSession, plan: QueryPlan, slices: Sequence[FileSlice], schema: StructType
) -> DataFrame:
    storage = plan.table.storage
    paths = [escape_glob(storage.uri(s.base_file_path or "")) for s in slices]
    df = spark.read.schema(schema).parquet(*paths)
    if plan.filters_commit_time and COMMIT_TIME_COLUMN in schema.fieldNames():
        column = F.col(COMMIT_TIME_COLUMN)
        if plan.commit_times is not None:
            df = df.filter(column.isin(sorted(plan.commit_times)))
            return df
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


_MAX_CDC_TASKS = 64


def read_changes(
    spark: SparkSession, base_path: str | Storage, begin: str, end: str | None
) -> DataFrame:
    """The CDC query (:mod:`engine.read.cdc`): planned on the driver, one split per task."""
    plan = plan_changes(
        base_path if isinstance(base_path, Storage) else Storage(base_path), begin, end
    )
    schema = from_arrow_schema(cdc_query_schema())
    splits, mode = plan.splits, plan.mode
    if not splits:
        return spark.createDataFrame([], schema)

    def read_splits(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        storage = plan.storage
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield from changes_table(read_split(storage, splits[index], mode)).to_batches()

    tasks = min(len(splits), _MAX_CDC_TASKS)
    return spark.range(0, len(splits), 1, tasks).mapInArrow(read_splits, schema)
