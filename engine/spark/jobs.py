"""The Spark side of a write: key generation, routing, file writes.

Every function the executors run is a closure over frozen, picklable values (key generator spec,
bucket plan, write context); no SparkSession travels. Two Spark jobs per write::

    input ──keygen──► keyed (+ _hoodie_record_key, _hoodie_partition_path)
    1. keyed ──► profile + index lookup per partition            (engine.spark.profile)
    2. keyed ⟕ keys found ──route──repartition(bucket slot)──mapInArrow(write_task)──►
       write stats

:func:`write_task` is the one task of every write job (this routed one, the bucket index's,
the one-job write's and bulk_insert's): the routing units it received, each written by its
handle (:meth:`engine.write.routing.UnitWriter.write_task`).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pyarrow as pa
from pyspark import StorageLevel, TaskContext
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from engine.errors import (
    HudiError,
    KeyMovedError,
    NullOrderingValueError,
    RecordKeyError,
    SchemaError,
)
from engine.faults import checkpoint
from engine.fs.filenames import TaskInfo
from engine.model.keygen import (
    DEFAULT_PARTITION_PATH,
    EMPTY_RECORDKEY_PLACEHOLDER,
    NULL_RECORDKEY_PLACEHOLDER,
    KeyGenSpec,
    generate_partition_paths,
    generate_record_keys,
    is_single_key,
)
from engine.model.merge import ARRIVAL_COLUMN, DELETE_RECORD_COLUMN, INSERT_COLUMN
from engine.model.row_checks import BAD_KEY_COLUMN, CHECK_COLUMNS, NULL_ORDERING_COLUMN
from engine.model.schema import (
    HOODIE_META_COLUMNS,
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
)
from engine.spark.explain import explain_text
from engine.spark.partitioning import slot_values
from engine.spark.schema import spark_struct_of, with_string_fields
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.write.bucketing import BucketPlan
from engine.write.grouping import groups_in_arrival_order
from engine.write.handles import WriteContext
from engine.write.routing import (
    ROUTE_COLUMN,
    BucketedWrite,
    ByFileGroup,
    TaskWriter,
    UnitWriter,
    check_routed,
)
from engine.write.write_status import RESULT_SCHEMA, decode_stats, encode_stats

__all__ = [
    "FILE_ID_COLUMN",
    "RESULT_TYPE",
    "add_record_keys",
    "current_task",
    "run_job",
    "run_write_tasks",
    "write_buckets",
    "write_buckets_locally",
    "write_task",
    "write_units_locally",
]

FILE_ID_COLUMN = "__file_id"
_TARGET_COLUMN = "__target_file_id"
_HASH_BUCKETS = 1_000_000
_CASE_ROUTE_LIMIT = 64
_MAX_WRITE_PARTITIONS = 2_000
_ROW_BITS = 33  # monotonically_increasing_id: row number within the partition
# the text of an engine error raised in a task (or by Spark's raise_error, which appends the
# SQL state to the line)
_TASK_ERROR = re.compile(
    r"(RecordKeyError|NullOrderingValueError|SchemaError|KeyMovedError|HudiError): (.+?)"
    r"(?: SQLSTATE: [0-9A-Z]{5})?$",
    re.MULTILINE,
)
_ERRORS: dict[str, type[HudiError]] = {
    "RecordKeyError": RecordKeyError,
    "NullOrderingValueError": NullOrderingValueError,
    "SchemaError": SchemaError,
    "KeyMovedError": KeyMovedError,
    "HudiError": HudiError,
}

#: the Spark type of a write task's rows (:mod:`engine.write.write_status`)
RESULT_TYPE = spark_struct_of(RESULT_SCHEMA)
# a task's record batches mapped to others (mapInArrow's function)
BatchMap = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]

T = TypeVar("T")
R = TypeVar("R")


def current_task() -> TaskInfo:
    """The Spark task attempt running this code (write tokens name it)."""
    context = TaskContext.get()
    return TaskInfo(
        stage_id=context.stageId() if context else 0,
        task_attempt_id=context.taskAttemptId() if context else 0,
    )


def in_threads(pool: ThreadPoolExecutor, work: Callable[[T], R], items: list[T]) -> list[R]:
    """``work`` over ``items`` in ``pool``'s threads, each in a copy of the caller's context
    (a warm-up's :func:`engine.faults.passed_by` holds in the threads it writes with)."""
    futures = [pool.submit(contextvars.copy_context().run, work, item) for item in items]
    return [f.result() for f in futures]


Item = TypeVar("Item")


def run_task_per_item(
    spark: SparkSession,
    items: Sequence[Item],
    work: Callable[[Item, TaskInfo, int], Sequence[HoodieWriteStat]],
) -> list[HoodieWriteStat]:
    """One Spark job with one task per item (a compaction's file slice, a clustering's group):
    ``work`` runs on an executor with the task's identity (its files' write tokens) and the
    item's index, and the write stats of the files it wrote come back to the driver, which
    alone completes the instant."""
    if not items:
        return []
    by_index = dict(enumerate(items))
    frame = spark.createDataFrame([(k,) for k in by_index], "item_index int")

    def task(key: tuple[Any, ...], table: pa.Table) -> pa.Table:
        number = key[0].as_py() if hasattr(key[0], "as_py") else int(key[0])
        context = TaskContext.get()
        info = TaskInfo(
            stage_id=context.stageId() if context else 0,
            task_attempt_id=context.taskAttemptId() if context else 0,
        )
        stats = work(by_index[number], info, number)
        return pa.Table.from_batches([encode_stats(stats)])

    result = frame.groupBy("item_index").applyInArrow(task, RESULT_TYPE)
    return decode_stats(run_job(result.collect))


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
    generator and the field types allow it (same text as :mod:`engine.model.keygen`); else None."""
    if spec.kind == "timestamp" or spec.url_encode:
        return None
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    for name in (*spec.record_key_fields, *spec.partition_fields):
        if types.get(name) not in _EXPRESSION_KEY_TYPES:
            return None

    text, missing = _text, _missing
    fields = spec.record_key_fields
    if is_single_key(spec):
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
    return key, _path_expression(spec), bad


def _text(name: str) -> Column:
    return F.col(f"`{name}`").cast("string")


def _missing(name: str) -> Column:
    return _text(name).isNull() | (_text(name) == F.lit(""))


def _path_expression(spec: KeyGenSpec) -> Column:
    """The partition path as a Spark expression (plain fields, no timestamp or url-encoding)."""
    if not spec.is_partitioned:
        return F.lit("")
    segments = []
    for name in spec.partition_fields:
        value = F.when(_missing(name), F.lit(DEFAULT_PARTITION_PATH)).otherwise(_text(name))
        segments.append(F.concat(F.lit(f"{name}="), value) if spec.hive_style else value)
    return segments[0] if len(segments) == 1 else F.concat_ws("/", *segments)


def _expression_paths(df: DataFrame, spec: KeyGenSpec) -> bool:
    """Whether the partition path can be a Spark expression for ``df``."""
    if spec.kind == "timestamp" or spec.url_encode:
        return False
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    return all(types.get(name) in _EXPRESSION_KEY_TYPES for name in spec.partition_fields)


def _auto_keyed(df: DataFrame, spec: KeyGenSpec) -> DataFrame:
    """``df`` with auto-generated record keys (:mod:`engine.model.auto_keys`): the Spark
    partition id and the row index in it, read off the arrival id (monotonically increasing:
    partition id in the upper 31 bits, row number in the lower 33), as ``_<partition>_<row>``;
    the instant time is put in front when the records are located. Persisted: a retried task
    or a later job sees the same keys."""
    arrival = F.col(ARRIVAL_COLUMN)
    suffix = F.concat(
        F.lit("_"),
        F.shiftright(arrival, _ROW_BITS).cast("string"),
        F.lit("_"),
        arrival.bitwiseAND(F.lit((1 << _ROW_BITS) - 1)).cast("string"),
    )
    if _expression_paths(df, spec):
        path = _path_expression(spec)
        keyed = df.select("*", suffix.alias(RECORD_KEY_COLUMN), path.alias(PARTITION_PATH_COLUMN))
    else:
        out_struct = with_string_fields(df.schema, (PARTITION_PATH_COLUMN,))

        def paths(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                yield pa.RecordBatch.from_arrays(
                    [*batch.columns, generate_partition_paths(batch, spec)],
                    names=[*batch.schema.names, PARTITION_PATH_COLUMN],
                )

        with_paths = df.mapInArrow(paths, out_struct)
        keyed = with_paths.select(
            *[F.col(f"`{c}`") for c in df.columns],
            suffix.alias(RECORD_KEY_COLUMN),
            F.col(PARTITION_PATH_COLUMN),
        )
    keyed = keyed.withColumn(BAD_KEY_COLUMN, F.lit(False))
    return keyed.persist(StorageLevel.MEMORY_AND_DISK)


# plan nodes a re-evaluation of the batch repeats cheaply and identically (scans of files,
# catalog tables, local rows or an existing cache, with projections and filters), as the
# optimized logical plan prints them
CHEAP_PLAN_NODES = frozenset(
    {
        "Project",
        "Filter",
        "Union",
        "Relation",
        "HiveTableRelation",
        "RelationV2",
        "LocalRelation",
        "Range",
        "InMemoryRelation",
    }
)
# expressions whose value differs between two evaluations of the same plan
_NONDETERMINISTIC = re.compile(
    r"\b(rand|randn|random|uuid|shuffle|monotonically_increasing_id|spark_partition_id"
    r"|input_file_name|input_file_block_start|input_file_block_length|rand_str|try_reflect"
    r"|reflect|java_method)\(",
    re.IGNORECASE,
)
_PLAN_LINE = re.compile(r"^(?P<indent>[\s:|+-]*)(?P<node>[A-Za-z][A-Za-z0-9]*)")


def optimized_plan(df: DataFrame) -> str:
    """The optimized logical plan of ``df`` as Spark prints it (``DataFrame.explain``, public
    API: the same on a classic session and on Spark Connect; a temporary view would not do, as
    dropping it uncaches a cached batch)."""
    text = explain_text(df, "extended")
    start = text.find("== Optimized Logical Plan ==")
    end = text.find("== Physical Plan ==")
    if start < 0:
        return text
    return text[start + len("== Optimized Logical Plan ==") : end if end > start else None]


def plan_nodes(plan: str) -> list[tuple[str, str]]:
    """(node name, line) of every node of a printed logical plan; a cached relation's own plan
    is not descended into (re-reading a cache is cheap whatever produced it)."""
    nodes: list[tuple[str, str]] = []
    skip_below: int | None = None
    for line in plan.strip().splitlines():
        match = _PLAN_LINE.match(line)
        if match is None:
            continue
        depth = len(match.group("indent"))
        if skip_below is not None and depth > skip_below:
            continue
        skip_below = None
        nodes.append((match.group("node"), line))
        if match.group("node") == "InMemoryRelation":
            skip_below = depth
    return nodes


def _evaluate_once(df: DataFrame) -> bool:
    """Whether the write must persist the batch instead of evaluating it in every job: its
    plan is not deterministic (rand(), uuid(), UDFs) or does more than scan and filter
    (joins, aggregations, windows, UDFs: a dbt model's query runs once)."""
    try:
        nodes = plan_nodes(optimized_plan(df))
    except Exception:  # no plan at hand: evaluate once
        return True
    return any(
        name not in CHEAP_PLAN_NODES or "UDF" in line or _NONDETERMINISTIC.search(line)
        for name, line in nodes
    )


def add_record_keys(
    df: DataFrame, spec: KeyGenSpec, *, delete_records: bool, null_ordering: str | None = None
) -> DataFrame:
    """``df`` (meta columns dropped) plus record key, partition path and arrival order.

    Simple, complex and non-partitioned keys of string/integral/boolean/date fields are Spark
    expressions; other key generators run :mod:`engine.model.keygen` in ``mapInArrow``. A
    ``__bad_key`` column flags null/empty keys for :func:`engine.spark.profile.profile_batch`,
    and ``__null_ordering`` null values of the ``null_ordering`` field (writes that combine).

    Each Spark job of the write reads the batch again when that is a cheap scan giving the same
    rows every time; any other batch (a non-deterministic or costly plan, or ``mapInArrow`` key
    generation) is persisted on first use, so the model's query runs once and the index lookup
    and the write see the same records. The caller unpersists it.
    """
    meta = [c for c in df.columns if c in HOODIE_META_COLUMNS]
    source = df.drop(*meta) if meta else df
    extra = [F.monotonically_increasing_id().alias(ARRIVAL_COLUMN)]
    if delete_records:
        extra.append(F.lit(True).alias(DELETE_RECORD_COLUMN))
    if null_ordering is not None:  # checked by the profile job, dropped before files are written
        extra.append(F.col(f"`{null_ordering}`").isNull().alias(NULL_ORDERING_COLUMN))
    if spec.auto_keys:
        return _auto_keyed(source.select("*", *extra), spec)
    expressions = _expression_keys(source, spec)
    if expressions is not None:
        key, path, bad = expressions
        keyed = source.select(  # one projection: each one Spark analyses costs ~15 ms
            "*",
            *extra,
            key.alias(RECORD_KEY_COLUMN),
            path.alias(PARTITION_PATH_COLUMN),
            bad.alias(BAD_KEY_COLUMN),
        )
        # the batch as given: the arrival ids added here are not deterministic themselves
        return keyed.persist(StorageLevel.MEMORY_AND_DISK) if _evaluate_once(source) else keyed
    df = source.select("*", *extra)
    out_struct = with_string_fields(df.schema, (RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN))

    def keygen(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys = generate_record_keys(batch, spec)
            paths = generate_partition_paths(batch, spec)
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, keys, paths],
                names=[*batch.schema.names, RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN],
            )

    keyed = df.mapInArrow(keygen, out_struct).withColumn(BAD_KEY_COLUMN, F.lit(False))
    return keyed.persist(StorageLevel.MEMORY_AND_DISK)


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


def _with_slots(routed: DataFrame, slots: Mapping[str, int]) -> DataFrame:
    """Replace the target file id by the bucket's shuffle slot (an int, see
    :mod:`engine.spark.partitioning`)."""
    if len(slots) <= _CASE_ROUTE_LIMIT:
        pairs = [F.lit(x) for file_id, slot in slots.items() for x in (file_id, slot)]
        return routed.withColumn(ROUTE_COLUMN, F.create_map(*pairs)[F.col(_TARGET_COLUMN)])
    spark = routed.sparkSession
    table = spark.createDataFrame(list(slots.items()), f"__sfid string, {ROUTE_COLUMN} int")
    joined = routed.join(F.broadcast(table), routed[_TARGET_COLUMN] == F.col("__sfid"), "left")
    return joined.drop("__sfid")


def write_buckets(
    tagged: DataFrame, routing: ByFileGroup, ctx: WriteContext
) -> list[HoodieWriteStat]:
    """Write every file group of the plan, each in its own task (routing ``ByFileGroup``).

    Every bucket gets a slot value that hash-partitions onto its own shuffle partition, so a
    plain ``repartition`` hands each task its file group's records (no sort, no group-by);
    past ``_MAX_WRITE_PARTITIONS`` buckets a task writes several, one by one.
    """
    if not routing.plan.buckets:
        return []
    checkpoint("write.before_files")
    routed, slot_of, partitions = _routed(tagged, routing.plan)
    shuffled = routed.repartition(partitions, ROUTE_COLUMN)
    return decode_stats(run_write_tasks(shuffled, routing.units(slot_of), ctx))


def write_buckets_locally(
    tagged: DataFrame, routing: ByFileGroup, ctx: WriteContext, threads: int
) -> list[HoodieWriteStat]:
    """:func:`write_buckets` in this process (:mod:`engine.spark.local_runner`): the records
    routed by the same Spark expressions and read once over Arrow, then each file group
    written as its task writes it, ``threads`` at a time (no shuffle, no Python worker)."""
    if not routing.plan.buckets:
        return []
    checkpoint("write.before_files")
    routed, slot_of, _ = _routed(tagged, routing.plan)
    table = routed.toArrow()
    check_routed(table, ctx)
    return write_units_locally(routing.units(slot_of), table, ROUTE_COLUMN, ctx, threads)


def write_units_locally(
    writer: UnitWriter | BucketedWrite,
    table: pa.Table,
    route_column: str,
    ctx: WriteContext,
    threads: int,
) -> list[HoodieWriteStat]:
    """Each (partition, route) unit of ``table`` written in this process as a write task
    writes it (``writer.write_unit``; the unit's place in arrival order is its number and its
    task attempt), ``threads`` at a time: the driver-side write of a local master."""
    groups = list(groups_in_arrival_order(table, PARTITION_PATH_COLUMN, route_column))

    def write(numbered: tuple[int, tuple[str, int, pa.Table]]) -> list[HoodieWriteStat]:
        number, (partition, route, rows) = numbered
        task = TaskInfo(stage_id=0, task_attempt_id=number)
        return writer.write_unit(partition, route, rows, number, ctx, task)[0]

    if not groups:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(groups)))) as pool:
        results = in_threads(pool, write, list(enumerate(groups)))
    return [stat for stats in results for stat in stats]


def _routed(tagged: DataFrame, plan: BucketPlan) -> tuple[DataFrame, dict[str, int], int]:
    """The tagged records with each one's shuffle slot (:data:`ROUTE_COLUMN`) and insert flag;
    every file group's slot; the write job's partitions."""
    partitions = max(1, min(len(plan.buckets), _MAX_WRITE_PARTITIONS))
    file_ids = sorted(plan.buckets, key=lambda f: plan.buckets[f].number)
    slot_of = dict(zip(file_ids, slot_values(len(file_ids), partitions), strict=True))
    # an untagged record is an insert (a merge-on-read append counts it in numInserts)
    routed = (
        _with_slots(_route(tagged, plan), slot_of)
        .withColumn(INSERT_COLUMN, F.col(FILE_ID_COLUMN).isNull())
        .drop(FILE_ID_COLUMN, _TARGET_COLUMN, *CHECK_COLUMNS)
    )
    return routed, slot_of, partitions


def write_task(writer: TaskWriter, ctx: WriteContext, before: BatchMap | None = None) -> BatchMap:
    """The one Spark task of every write job: the records the task received (first mapped by
    ``before``, e.g. the bucket index's hashing when a job runs in one stage) written by
    ``writer`` (:meth:`~engine.write.routing.UnitWriter.write_task`), with the task's
    partition (its bucket numbers) and attempt (its write tokens)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        context = TaskContext.get()
        partition = context.partitionId() if context else 0
        records = before(batches) if before is not None else batches
        return writer.write_task(records, partition, ctx, current_task())

    return run


def run_write_tasks(
    frame: DataFrame, writer: TaskWriter, ctx: WriteContext, before: BatchMap | None = None
) -> list[Any]:
    """Run :func:`write_task` over every partition of ``frame`` (the routing done); the rows
    the tasks returned (:mod:`engine.write.write_status`)."""
    return run_job(frame.mapInArrow(write_task(writer, ctx, before), RESULT_TYPE).collect)
