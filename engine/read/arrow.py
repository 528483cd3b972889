"""The pure-Arrow reader: executes a :class:`~engine.read.plan.QueryPlan` with pyarrow, no Spark.

Used by the CLI, by tools and tests, and, one file slice at a time, inside the Spark tasks of
merge-on-read queries (:func:`read_file_slice` is picklable-input, pure and deterministic).

Per file slice::

    base file (pyarrow.parquet)  ⊕  log records (engine.read.log_scanner)  ->  merged rows
    merged rows  -> conform to the query schema -> keep (begin, end] commit times (incremental)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.errors import QueryError
from engine.fs.s3 import is_s3_uri, resolve_s3_settings
from engine.fs.storage import Storage
from engine.model.merge import MergeSpec
from engine.model.promote import promote_table
from engine.model.schema import (
    COMMIT_TIME_COLUMN,
    META_COLUMNS,
    OPERATION_COLUMN,
    RECORD_KEY_COLUMN,
    add_meta_fields,
    avro_to_arrow_schema,
    with_operation_column,
)
from engine.read.cdc import read_changes
from engine.read.filter import ReadFilter
from engine.read.log_scanner import merge_slice_rows, slice_log_records
from engine.read.plan import QueryPlan, parse_read_query, plan_query
from engine.view.fs_view import FileSlice

__all__ = [
    "apply_filters",
    "conform",
    "plan_schema",
    "read_file_slice",
    "read_plan",
    "read_table",
]


def read_table(
    path: str, options: Mapping[str, Any] | None = None, filters: Iterable[ReadFilter] = ()
) -> pa.Table:
    """Read the Hudi table at ``path`` into an Arrow table (meta columns included).

    Args:
        path: the table's base path.
        options: Hudi read keys, as for :func:`engine.read.plan.read_hudi`; for a table on S3
            also its ``fs.s3a.*``/``hoodie.aws.*`` settings (:mod:`engine.fs.s3`).
        filters: row filters; those on partition columns also prune partitions.
    """
    query = parse_read_query(options, filters)
    storage = Storage(path, resolve_s3_settings(options) if is_s3_uri(path) else None)
    if query.is_cdc:
        return read_changes(storage, str(query.begin), query.end)
    plan = plan_query(storage, query)
    return apply_filters(read_plan(plan), plan.query.filters)


def read_plan(plan: QueryPlan) -> pa.Table:
    """Every row of the plan, slice after slice, in the plan's schema."""
    schema = plan_schema(plan)
    tables = [read_file_slice(plan, s, schema) for s in plan.file_slices]
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables)


def plan_schema(plan: QueryPlan) -> pa.Schema:
    """The Arrow schema of the query result: the table's schema as of the query
    (``plan.avro_schema``), each column typed as the newest base file stores it when that file
    was written with the same type (the exact Parquet types Spark wrote), else as the schema
    says (a column added or widened since, read from older files by promotion).
    """
    newest: tuple[str, str] | None = None
    for s in plan.file_slices:
        if s.base_file and (newest is None or s.base_instant_time > newest[0]):
            newest = (s.base_instant_time, s.base_file_path or "")
    footer = _footer_schema(plan, newest[1]) if newest is not None else None
    if not plan.avro_schema:
        return footer if footer is not None else pa.schema([])
    with_meta = plan.table.populate_meta_fields
    target = avro_to_arrow_schema(
        add_meta_fields(plan.avro_schema) if with_meta else plan.avro_schema
    )
    if footer is None:
        return target
    stored, logical = footer
    if with_meta and OPERATION_COLUMN in stored.names:
        # Hudi's readers learn the operation field from the data files, not the commit schema
        target = with_operation_column(target)
    fields = [
        stored.field(f.name)
        if f.name in stored.names and f.name in logical and logical[f.name].equals(f.type)
        else f
        for f in target
    ]
    return pa.schema(fields)


def _footer_schema(plan: QueryPlan, path: str) -> tuple[pa.Schema, dict[str, pa.DataType]] | None:
    """A base file's Parquet schema and the types its writer schema gave each column."""
    with plan.table.storage.open_input(path) as f:
        parquet_schema = pq.read_schema(f)
    metadata = parquet_schema.metadata or {}
    schema = parquet_schema.remove_metadata()
    if not plan.table.populate_meta_fields:
        # Java and hudi-rs resolve such tables' schema without meta columns, even though
        # Spark writes them (null) into the files
        keep = [i for i, name in enumerate(schema.names) if name not in META_COLUMNS]
        schema = pa.schema([schema.field(i) for i in keep])
    avro = metadata.get(b"parquet.avro.schema")
    if avro is None:
        logical = {f.name: f.type for f in schema}
    else:
        logical = {f.name: f.type for f in avro_to_arrow_schema(avro.decode())}
    return schema, logical


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: reordered, promoted (old files of an evolved
    table, :mod:`engine.model.promote`), missing ones null."""
    return promote_table(table, schema)


def read_base_file(storage: Storage, file_slice: FileSlice) -> pa.Table | None:
    path = file_slice.base_file_path
    if path is None:
        return None
    with storage.open_input(path) as f:
        return pq.read_table(f)


def read_file_slice(
    plan: QueryPlan, file_slice: FileSlice, schema: pa.Schema | None = None
) -> pa.Table:
    """The rows of one file slice: base file merged with its log records when the plan says so.

    Args:
        plan: the query plan (instants, payload, ordering field).
        file_slice: the slice to read.
        schema: the result schema (default: :func:`plan_schema`).
    """
    schema = schema if schema is not None else plan_schema(plan)
    storage = plan.table.storage
    base = read_base_file(storage, file_slice)
    if plan.merge_logs and file_slice.has_logs:
        result = merge_file_slice(plan, file_slice, base, schema)
    else:
        result = conform(base, schema) if base is not None else schema.empty_table()
    if plan.filters_commit_time:
        result = filter_commit_time(result, plan.begin, plan.end, plan.commit_times)
    return result


def filter_commit_time(
    table: pa.Table,
    begin: str | None,
    end: str | None,
    commit_times: frozenset[str] | None = None,
) -> pa.Table:
    """Rows with ``begin < _hoodie_commit_time <= end``, or (layout 2) whose commit time is one
    of ``commit_times``; tables without meta columns pass."""
    if COMMIT_TIME_COLUMN not in table.column_names or table.num_rows == 0:
        return table
    column = table[COMMIT_TIME_COLUMN]
    if commit_times is not None:
        wanted = pa.array(sorted(commit_times), pa.string())
        return table.filter(pc.fill_null(pc.is_in(column, value_set=wanted), False))
    mask = pc.greater(column, pa.scalar(begin or "", pa.string()))
    if end is not None:
        mask = pc.and_(mask, pc.less_equal(column, pa.scalar(end, pa.string())))
    return table.filter(mask)


def _literal(value: Any, dtype: pa.DataType, name: str) -> pa.Scalar:
    try:
        if isinstance(value, str) and not (
            pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
        ):
            return pa.scalar(value, pa.string()).cast(dtype)
        return pa.scalar(value).cast(dtype)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise QueryError(f"Filter value {value!r} does not fit column {name!r} ({dtype})") from e


def apply_filters(table: pa.Table, filters: Sequence[ReadFilter]) -> pa.Table:
    """Keep rows matching every filter (nulls never match).

    Raises:
        QueryError: a filter names a missing column or a value that does not fit its type.
    """
    if not filters or table.num_rows == 0:
        return table
    mask: Any = None
    for f in filters:
        if f.field not in table.column_names:
            raise QueryError(f"Filter column {f.field!r} is not in the table")
        column = table[f.field]
        if f.op in ("IN", "NOT IN"):
            values = pa.array(
                [_literal(v, column.type, f.field).as_py() for v in f.value], column.type
            )
            hit = pc.is_in(column, value_set=values)
            cond = hit if f.op == "IN" else pc.and_(pc.invert(hit), pc.is_valid(column))
        else:
            literal = _literal(f.value, column.type, f.field)
            op = {
                "=": pc.equal,
                "!=": pc.not_equal,
                "<": pc.less,
                "<=": pc.less_equal,
                ">": pc.greater,
                ">=": pc.greater_equal,
            }.get(f.op)
            if op is None:
                raise QueryError(f"Unsupported filter operator {f.op!r}")
            cond = op(column, literal)
        cond = pc.fill_null(cond, False)
        mask = cond if mask is None else pc.and_(mask, cond)
    return table.filter(mask)


def merge_file_slice(
    plan: QueryPlan, file_slice: FileSlice, base: pa.Table | None, schema: pa.Schema
) -> pa.Table:
    """Base rows ⊕ log records of one slice, as Java 0.14's Spark merge-on-read reader does,
    but for commit-time ordering: there the latest log record of a key wins whatever its
    ordering value, as Hudi 1.x and hudi-rs read it (:mod:`engine.read.log_scanner`).

    The log records (one per key, see :mod:`engine.read.log_scanner`) are combined with the base
    rows by :func:`engine.model.merge.combine_with_stored` under the table's payload class. On
    table version 6 a log delete removes the base row whatever its ordering value (Java's Spark
    MOR path; hudi-rs 0.5.0 with an event-time payload keeps a base row whose ordering value is
    greater). On versions 8 and 9 with event-time ordering, Hudi 1.x's file group reader (and
    hudi-rs) compare the delete's ordering value: a greater base row is kept unless the delete
    is in natural order (no ordering value, or Java's Integer 0).

    Raises:
        QueryError: the table keeps no record key column (``populate.meta.fields=false``) and
            the slice has log files: not yet implemented.
    """
    if RECORD_KEY_COLUMN not in schema.names:
        raise QueryError(
            f"Merging log files of {file_slice.partition_path}/{file_slice.file_id} needs the "
            f"{RECORD_KEY_COLUMN} column (tables without meta fields: not yet implemented)"
        )
    spec = MergeSpec(plan.table.payload_class, plan.table.ordering_field)
    log = slice_log_records(
        plan.table.storage,
        file_slice.log_file_paths,
        visibility=plan.visibility,
        schema=schema,
        spec=spec,
        orders_deletes=plan.table.orders_deletes,
        begin=plan.begin,
        instants=plan.commit_times,
    )
    stored = conform(base, schema) if base is not None else schema.empty_table()
    return merge_slice_rows(stored, log, spec, schema)
