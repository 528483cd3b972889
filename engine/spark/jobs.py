"""The Spark side of a copy-on-write write: key generation, index join, routing, file writes.

Every function the executors run is a closure over frozen, picklable values (key generator spec,
bucket plan, write context); no SparkSession travels. Data flow::

    input ──mapInArrow(keygen)──► keyed (+ _hoodie_record_key, _hoodie_partition_path)   persisted
    keyed ──groupBy(partition)──► per-partition count / min / max key        (driver: touched
                                                                              partitions, pruning)
    keyed ⟕ keys of candidate base files on (key, partition) ──► tagged (+ __file_id)  persisted
    tagged ──groupBy(partition, __file_id).count──► workload profile          (driver: buckets)
    tagged ⟕ broadcast insert ranges ──groupBy(target file id).applyInArrow(handle)──► write stats
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import pyarrow as pa
from pyspark import StorageLevel, TaskContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from engine.bucketing import Bucket, BucketPlan, SmallFile
from engine.commit_metadata import HoodieWriteStat
from engine.errors import HudiError, RecordKeyError, SchemaError
from engine.faults import checkpoint
from engine.index import IndexCandidate, PartitionKeyRange, plan_index_lookup
from engine.keygen import (
    DEFAULT_PARTITION_PATH,
    EMPTY_RECORDKEY_PLACEHOLDER,
    NULL_RECORDKEY_PLACEHOLDER,
    KeyGenSpec,
    generate_partition_paths,
    generate_record_keys,
    invalid_record_key_message,
)
from engine.merge import ARRIVAL_COLUMN, DELETE_RECORD_COLUMN
from engine.schema import (
    FILE_NAME_COLUMN,
    META_COLUMNS,
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
)
from engine.spark.schema import with_string_fields
from engine.storage import Storage
from engine.write.handles import TaskInfo, WriteContext, write_file_group

__all__ = [
    "FILE_ID_COLUMN",
    "add_record_keys",
    "partition_key_ranges",
    "run_job",
    "tag_locations",
    "workload_counts",
    "write_buckets",
]

FILE_ID_COLUMN = "__file_id"
_TARGET_COLUMN = "__target_file_id"
_BAD_KEY_COLUMN = "__bad_key"
_HASH_BUCKETS = 1_000_000
_CASE_ROUTE_LIMIT = 64
_BROADCAST_KEYS = 2_000_000
_MAX_WRITE_PARTITIONS = 2_000
# the index reads three meta columns; a fixed schema spares Spark a footer-inference job
_INDEX_SCHEMA = (
    f"{RECORD_KEY_COLUMN} string, {PARTITION_PATH_COLUMN} string, {FILE_NAME_COLUMN} string"
)
_TASK_ERROR = re.compile(r"(RecordKeyError|SchemaError|HudiError): (.+)")
_ERRORS: dict[str, type[HudiError]] = {
    "RecordKeyError": RecordKeyError,
    "SchemaError": SchemaError,
    "HudiError": HudiError,
}

T = TypeVar("T")
# task-side writer of one bucket: (records, bucket, write context, task) -> stat(s)
GroupWriter = Callable[
    [pa.Table, Bucket, WriteContext, TaskInfo], HoodieWriteStat | list[HoodieWriteStat]
]


def run_job(action: Callable[[], T]) -> T:
    """Run a Spark action; an engine error raised inside a task is re-raised as itself."""
    try:
        return action()
    except HudiError:
        raise
    except Exception as e:
        match = _TASK_ERROR.search(str(e))
        if match is None:
            raise
        raise _ERRORS[match.group(1)](match.group(2).strip()) from e


# Spark renders these types as text exactly as the Arrow key generator does
_EXPRESSION_KEY_TYPES = (
    "string",
    "int",
    "bigint",
    "smallint",
    "tinyint",
    "boolean",
    "date",
)


def _expression_keys(df: DataFrame, spec: KeyGenSpec) -> tuple[Column, Column, Column] | None:
    """Record key, partition path and "bad key" flag as Spark expressions, when the key
    generator and the field types allow it (same text as :mod:`engine.keygen`); else None."""
    if spec.kind == "timestamp" or spec.url_encode:
        return None
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    for name in (*spec.record_key_fields, *spec.partition_fields):
        if types.get(name) not in _EXPRESSION_KEY_TYPES:
            return None

    def text(name: str) -> Column:
        return F.col(f"`{name}`").cast("string")

    def missing(name: str) -> Column:
        return text(name).isNull() | (text(name) == F.lit(""))

    fields = spec.record_key_fields
    if len(fields) == 1 and spec.kind in ("simple", "non_partitioned"):
        key = text(fields[0])
        bad = missing(fields[0])
    else:
        parts = [
            F.concat(
                F.lit(f"{name}:"),
                F.when(text(name).isNull(), F.lit(NULL_RECORDKEY_PLACEHOLDER))
                .when(text(name) == F.lit(""), F.lit(EMPTY_RECORDKEY_PLACEHOLDER))
                .otherwise(text(name)),
            )
            for name in fields
        ]
        key = F.concat_ws(",", *parts)
        bad = missing(fields[0])
        for name in fields[1:]:
            bad = bad & missing(name)
    if spec.is_partitioned:
        segments = []
        for name in spec.partition_fields:
            value = F.when(missing(name), F.lit(DEFAULT_PARTITION_PATH)).otherwise(text(name))
            segments.append(F.concat(F.lit(f"{name}="), value) if spec.hive_style else value)
        path = segments[0] if len(segments) == 1 else F.concat_ws("/", *segments)
    else:
        path = F.lit("")
    return key, path, bad


def add_record_keys(df: DataFrame, spec: KeyGenSpec, *, delete_records: bool) -> DataFrame:
    """``df`` (meta columns dropped) plus record key, partition path and arrival order.

    Simple, complex and non-partitioned keys of string/integral/boolean/date fields are Spark
    expressions (the batch is then re-read by each job, as Spark's own writers do); other key
    generators run :mod:`engine.keygen` in ``mapInArrow`` and the result is persisted. A
    ``__bad_key`` column flags null/empty keys for :func:`partition_key_ranges`.
    """
    df = df.drop(*[c for c in df.columns if c in META_COLUMNS])
    df = df.withColumn(ARRIVAL_COLUMN, F.monotonically_increasing_id())
    if delete_records:
        df = df.withColumn(DELETE_RECORD_COLUMN, F.lit(True))
    expressions = _expression_keys(df, spec)
    if expressions is not None:
        key, path, bad = expressions
        return (
            df.withColumn(RECORD_KEY_COLUMN, key)
            .withColumn(PARTITION_PATH_COLUMN, path)
            .withColumn(_BAD_KEY_COLUMN, bad)
        )
    out_struct = with_string_fields(df.schema, (RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN))

    def keygen(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys = generate_record_keys(batch, spec)
            paths = generate_partition_paths(batch, spec)
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, keys, paths],
                names=[*batch.schema.names, RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN],
            )

    keyed = df.mapInArrow(keygen, out_struct).withColumn(_BAD_KEY_COLUMN, F.lit(False))
    return keyed.persist(StorageLevel.MEMORY_AND_DISK)


def partition_key_ranges(keyed: DataFrame, spec: KeyGenSpec) -> list[PartitionKeyRange]:
    """Count and key range of the incoming records per partition (one small collect).

    Raises:
        RecordKeyError: some record key is null or empty (nothing has been written yet).
    """
    rows = run_job(
        lambda: (
            keyed.groupBy(PARTITION_PATH_COLUMN)
            .agg(
                F.count(F.lit(1)).alias("n"),
                F.min(RECORD_KEY_COLUMN).alias("lo"),
                F.max(RECORD_KEY_COLUMN).alias("hi"),
                F.max(F.col(_BAD_KEY_COLUMN).cast("int")).alias("bad"),
            )
            .collect()
        )
    )
    if any(r["bad"] for r in rows):
        raise RecordKeyError(invalid_record_key_message(spec))
    return [
        PartitionKeyRange(r[PARTITION_PATH_COLUMN], int(r["n"]), r["lo"], r["hi"]) for r in rows
    ]


def _file_id_of(name: Column) -> Column:
    return F.substring_index(name, "_", 1)


def locate_records(
    keyed: DataFrame,
    storage: Storage,
    latest: Mapping[tuple[str, str], SmallFile],
    ranges: list[PartitionKeyRange],
    *,
    use_index: bool,
) -> DataFrame:
    """Tag the batch with the file group holding each key: the index lookup of upserts and
    deletes over the latest base files of the touched partitions; without the index (inserts),
    every record gets a null ``__file_id``."""
    candidates = plan_index_lookup(storage, latest, ranges) if use_index else []
    return tag_locations(keyed, candidates, storage, incoming_count=sum(r.count for r in ranges))


def tag_locations(
    keyed: DataFrame,
    candidates: list[IndexCandidate],
    storage: Storage,
    *,
    incoming_count: int | None = None,
) -> DataFrame:
    """Join the batch's keys against the candidate base files: ``__file_id`` of stored keys.

    Non-global simple index: a key matches only within its partition path. Records without a
    match (inserts) get a null ``__file_id``. A batch of at most ``_BROADCAST_KEYS`` records is
    broadcast to the scan of the stored keys (a semi-join: the table's keys are never shuffled
    nor collected), and the few matches are broadcast back onto the batch; larger batches use
    a shuffle join.
    """
    if not candidates:
        return keyed.withColumn(FILE_ID_COLUMN, F.lit(None).cast("string"))
    spark = keyed.sparkSession
    paths = [storage.uri(c.rel_path) for c in candidates]
    stored = (
        spark.read.schema(_INDEX_SCHEMA)
        .parquet(*paths)
        .select(
            F.col(RECORD_KEY_COLUMN).alias("__k"),
            F.col(PARTITION_PATH_COLUMN).alias("__p"),
            _file_id_of(F.col(FILE_NAME_COLUMN)).alias(FILE_ID_COLUMN),
        )
    )
    if incoming_count is not None and incoming_count <= _BROADCAST_KEYS:
        batch_keys = keyed.select(
            F.col(RECORD_KEY_COLUMN).alias("__k"), F.col(PARTITION_PATH_COLUMN).alias("__p")
        )
        stored = stored.join(F.broadcast(batch_keys), ["__k", "__p"], "left_semi")
        stored = F.broadcast(stored.dropDuplicates(["__k", "__p"]))
    else:
        stored = stored.dropDuplicates(["__k", "__p"])
    cond = (keyed[RECORD_KEY_COLUMN] == stored["__k"]) & (
        keyed[PARTITION_PATH_COLUMN] == stored["__p"]
    )
    tagged = keyed.join(stored, cond, "left").drop("__k", "__p")
    # persisted: the workload profile and the write both read it; the caller unpersists
    return tagged.persist(StorageLevel.MEMORY_AND_DISK)


def workload_counts(
    tagged: DataFrame,
) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """(partition, file_id) -> tagged updates, and partition -> inserts."""
    rows = run_job(lambda: tagged.groupBy(PARTITION_PATH_COLUMN, FILE_ID_COLUMN).count().collect())
    updates: dict[tuple[str, str], int] = {}
    inserts: dict[str, int] = {}
    for r in rows:
        partition, file_id, n = r[PARTITION_PATH_COLUMN], r[FILE_ID_COLUMN], int(r["count"])
        if file_id is None:
            inserts[partition] = inserts.get(partition, 0) + n
        else:
            updates[(partition, file_id)] = n
    return updates, inserts


def _route(tagged: DataFrame, plan: BucketPlan) -> DataFrame:
    """Add the target file group of every record (updates keep theirs; inserts by key hash).

    Few insert buckets become one CASE expression; many go through a broadcast range join.
    """
    rows = plan.insert_rows()
    if not rows:
        return tagged.withColumn(_TARGET_COLUMN, F.col(FILE_ID_COLUMN))
    frac = F.pmod(F.xxhash64(RECORD_KEY_COLUMN), F.lit(_HASH_BUCKETS)) / _HASH_BUCKETS
    if len(rows) <= _CASE_ROUTE_LIMIT:
        conditions = [
            (
                (F.col(PARTITION_PATH_COLUMN) == F.lit(partition))
                & (frac >= lower)
                & (frac < upper),
                file_id,
            )
            for partition, lower, upper, file_id in rows
        ]
        target = F.when(conditions[0][0], F.lit(conditions[0][1]))
        for cond, file_id in conditions[1:]:
            target = target.when(cond, F.lit(file_id))
        return tagged.withColumn(_TARGET_COLUMN, F.coalesce(F.col(FILE_ID_COLUMN), target))
    spark = tagged.sparkSession
    ranges = spark.createDataFrame(rows, "__rp string, __lo double, __hi double, __fid string")
    with_frac = tagged.withColumn("__frac", frac)
    cond = (
        F.col(FILE_ID_COLUMN).isNull()
        & (with_frac[PARTITION_PATH_COLUMN] == F.col("__rp"))
        & (F.col("__frac") >= F.col("__lo"))
        & (F.col("__frac") < F.col("__hi"))
    )
    joined = with_frac.join(F.broadcast(ranges), cond, "left")
    return joined.withColumn(
        _TARGET_COLUMN, F.coalesce(F.col(FILE_ID_COLUMN), F.col("__fid"))
    ).drop("__rp", "__lo", "__hi", "__fid", "__frac")


def write_buckets(
    tagged: DataFrame,
    plan: BucketPlan,
    ctx: WriteContext,
    *,
    write_group: GroupWriter = write_file_group,
) -> list[HoodieWriteStat]:
    """Write one new base file per bucket, one group (task call) per file group.

    ``write_group`` is the task-side handle of a bucket (merge-on-read writes pass one that
    appends log files, and may return several stats for one bucket).
    """
    if not plan.buckets:
        return []
    checkpoint("write.before_files")
    routed = _route(tagged, plan).drop(FILE_ID_COLUMN, _BAD_KEY_COLUMN)
    buckets = dict(plan.buckets)

    def handle(key: tuple[Any, ...], table: pa.Table) -> pa.Table:
        file_id = key[0].as_py() if hasattr(key[0], "as_py") else key[0]
        bucket = buckets[file_id]
        context = TaskContext.get()
        task = TaskInfo(
            stage_id=context.stageId() if context else 0,
            task_attempt_id=context.taskAttemptId() if context else 0,
        )
        records = table.drop_columns([_TARGET_COLUMN])
        checkpoint("task.before_file")
        written = write_group(records, bucket, ctx, task)
        checkpoint("task.after_file")
        stats = written if isinstance(written, list) else [written]
        return pa.table({"stat": [json.dumps(s.to_dict()) for s in stats]})

    # one shuffle partition per bucket (explicit counts are not coalesced by adaptive
    # execution), so file groups are written in parallel
    partitions = max(1, min(len(buckets), _MAX_WRITE_PARTITIONS))
    result = (
        routed.repartition(partitions, _TARGET_COLUMN)
        .groupBy(_TARGET_COLUMN)
        .applyInArrow(handle, "stat string")
    )
    rows = run_job(result.collect)
    return [HoodieWriteStat.from_dict(json.loads(r["stat"])) for r in rows]
