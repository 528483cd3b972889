"""Read queries: options and planning on the driver (``engine.read_hudi`` runs the plans).

Query types and the keys Hudi's Spark datasource reads::

    hoodie.datasource.query.type          snapshot (default) | read_optimized | incremental
    as.of.instant                         time travel: the table as of this instant
    hoodie.datasource.read.begin.instanttime   incremental start, exclusive
    hoodie.datasource.read.end.instanttime     incremental end, inclusive (default: latest)

Planning is pure (no Spark): the file system view picks the file slices, filters on partition
columns prune partitions (:mod:`engine.read.filter`), and the resulting :class:`QueryPlan` drives
both executors, the Arrow reader (``engine.read.arrow``) and the Spark reader
(``engine.spark.reader``).

A table of version 8 or 9 whose ``hoodie.table.metadata.partitions`` names ``files`` is listed
through its metadata table (:mod:`engine.metadata.files_index`), as Hudi's readers and hudi-rs
do: one listing of the ``files`` partition instead of one per data partition (incremental
queries list only the partitions their commits name, and keep doing so). Version 6 tables keep
the storage listing, as hudi-rs does: the corpus holds no metadata table Hudi 0.x wrote (HBase's
HFile writer) to check our reader against.

When the table's metadata table also has ``column_stats`` ready, a snapshot, read-optimized or
time-travel query with filters drops the slices the stats prove hold no matching row
(:mod:`engine.read.data_skipping`; ``hoodie.enable.data.skipping``, on by default as in Hudi
1.x). A read's ``hoodie.metadata.enable=false`` lists storage and skips nothing.

Incremental queries read the latest slice (as of the end instant) of every file group written by
a commit in ``(begin, end]`` and keep rows whose ``_hoodie_commit_time`` lies in that range, as
Java's incremental relations do; log blocks outside the range are skipped.

On table versions 8 and 9 (timeline layout 2) the range is one of **completion** times, as in
Hudi 1.x (``IncrementalQueryAnalyzer`` with the Spark relation's open-closed range): the commits
that *completed* in ``(begin, end]`` are selected, and rows and log blocks are kept when their
instant (requested) time is one of those commits'. A commit requested before ``begin`` that
completed after it is therefore in the range, and one requested inside the range that completed
after ``end`` is not. hudi-rs 0.5.0 ranges on completion time as well (probed on the corpus:
a window between a commit's requested and completion times returns that commit). Time travel
(``as.of.instant``) still addresses requested instant times. Both reach into the archived LSM
timeline (``engine.timeline.lsm_history``) when the table has one; hudi-rs 0.5.0 does not read
it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from engine import config
from engine.config import TableType
from engine.errors import QueryError, SchemaError, TableNotFoundError
from engine.fs.properties import read_properties
from engine.fs.s3 import S3Settings
from engine.fs.storage import Storage
from engine.fs.table_version import (
    effective_payload_class,
    ordering_field,
    partition_fields,
    require_readable_base_format,
    table_format,
)
from engine.metadata.column_stats import COLUMN_STATS_PARTITION, read_column_stats
from engine.metadata.files_index import has_files_index, read_files_partition
from engine.metadata.slices import open_metadata_table
from engine.model.schema import add_meta_fields, avro_to_arrow_schema
from engine.read.data_skipping import skip_file_slices
from engine.read.filter import ReadFilter, partition_pruner
from engine.read.time_travel import (
    require_begin_not_restored,
    require_not_restored,
    require_retained_files,
)
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSlice, FileSystemView, Visibility

__all__ = [
    "QueryPlan",
    "ReadQuery",
    "TableInfo",
    "normalize_instant_time",
    "parse_read_query",
    "plan_query",
    "skip_by_column_stats",
]

QueryType = Literal["snapshot", "read_optimized", "incremental"]


T = TypeVar("T")


@dataclass(frozen=True)
class ReadQuery:
    """What to read: the query type, its instants and filters (for pruning and rows)."""

    query_type: QueryType = "snapshot"
    as_of: str | None = None
    begin: str | None = None
    end: str | None = None
    filters: tuple[ReadFilter, ...] = ()
    # incremental: latest_state (the rows as they are) or cdc (the change stream)
    incremental_format: str = "latest_state"
    # hoodie.metadata.enable: list through a ready metadata table (False: list storage)
    use_metadata_table: bool = True
    # hoodie.enable.data.skipping: skip slices by the column_stats partition
    data_skipping: bool = True

    @property
    def is_cdc(self) -> bool:
        """An incremental query of the change stream (:mod:`engine.read.cdc`)."""
        return self.query_type == "incremental" and self.incremental_format == "cdc"


@dataclass(frozen=True)
class TableInfo:
    """The table properties a reader needs; small and picklable for Spark tasks."""

    base_path: str
    table_name: str
    table_type: TableType
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    ordering_field: str | None
    payload_class: str
    keygen_class: str | None
    hive_style: bool
    url_encode: bool
    populate_meta_fields: bool
    properties: Mapping[str, str] = field(default_factory=dict)
    s3: S3Settings | None = None  # how tasks reach a table on S3

    @property
    def is_mor(self) -> bool:
        return self.table_type == TableType.MERGE_ON_READ

    @property
    def lists_through_metadata_table(self) -> bool:
        """Partitions and files come from the metadata table's ``files`` partition: it is ready
        (named in ``hoodie.table.metadata.partitions``) and the table version is 8 or later."""
        return _prop(self.properties, config.TABLE_VERSION) >= 8 and has_files_index(
            self.properties
        )

    @property
    def has_column_stats(self) -> bool:
        """The metadata table's ``column_stats`` partition is ready (table version 8 or later,
        named in ``hoodie.table.metadata.partitions``), as is ``files`` to validate it."""
        listed = _prop(self.properties, config.METADATA_PARTITIONS)
        return self.lists_through_metadata_table and COLUMN_STATS_PARTITION in listed

    @property
    def orders_deletes(self) -> bool:
        """Hudi 1.x (table version 8+) compares a log delete's ordering value with the base row
        under event-time ordering; 0.x Spark readers let every log delete win."""
        return _prop(self.properties, config.TABLE_VERSION) >= 8

    @property
    def storage(self) -> Storage:
        return Storage(self.base_path, self.s3)


@dataclass(frozen=True)
class QueryPlan:
    """The exact work of one query.

    Attributes:
        table: the table's properties.
        query: the query as asked.
        file_slices: slices to read, one task each on Spark.
        visibility: instants the reader sees; log blocks of other instants are skipped.
        begin: exclusive lower bound of instants (incremental), else ``None``.
        merge_logs: merge log files onto base files (MOR snapshot and incremental).
        avro_schema: the table's latest Avro schema (without meta fields), if any commit has one.
    """

    table: TableInfo
    query: ReadQuery
    file_slices: tuple[FileSlice, ...]
    visibility: Visibility
    begin: str | None
    merge_logs: bool
    avro_schema: str | None
    # layout 2 incremental: the requested times of the commits completed in the range
    commit_times: frozenset[str] | None = None
    # slices the column_stats partition proved hold no matching row (data skipping)
    skipped_slices: int = 0

    @property
    def files_read(self) -> int:
        """The data files the plan reads: base files, and log files where logs are merged."""
        logs = sum(len(s.log_files) for s in self.file_slices) if self.merge_logs else 0
        return sum(1 for s in self.file_slices if s.base_file) + logs

    @property
    def end(self) -> str | None:
        return self.visibility.max_instant

    @property
    def filters_commit_time(self) -> bool:
        return self.query.query_type == "incremental"


# ---- options ------------------------------------------------------------------------------------

_DATE_FORMATS = (
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d",
)


def normalize_instant_time(value: str, *, key: str = "instant") -> str:
    """An instant time as 17 digits (``yyyyMMddHHmmssSSS``) so it compares as a string.

    Accepts 17 digits, 14 digits (seconds; ``000`` appended, as hudi-rs parses them), ``0``
    (before everything), and ``yyyy-MM-dd[ HH:mm:ss[.SSS]]`` in UTC.

    Raises:
        QueryError: the value is none of these; the message names ``key`` and the value.
    """
    text = str(value).strip()
    if text.isdigit():
        if len(text) == 14:
            return text + "000"
        if len(text) == 17 or int(text) == 0:
            return text
    for fmt in _DATE_FORMATS:
        try:
            moment = dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
        return moment.strftime("%Y%m%d%H%M%S%f")[:17]
    raise QueryError(
        f"Invalid {key} {value!r}: expected yyyyMMddHHmmss[SSS] or yyyy-MM-dd[ HH:mm:ss[.SSS]]"
    )


def parse_read_query(
    options: Mapping[str, Any] | None, filters: Iterable[ReadFilter] = ()
) -> ReadQuery:
    """Build a :class:`ReadQuery` from Hudi's read keys.

    Raises:
        ConfigError: an unknown ``hoodie.*`` key or a malformed value.
        QueryError: an incremental query without a begin instant, or a bad instant time.
    """
    raw = dict(options or {})
    as_of = raw.pop(config.AS_OF_INSTANT, None)
    cfg = config.parse_options(raw)
    query_type = cfg.get(config.QUERY_TYPE)
    begin = cfg.get(config.READ_BEGIN_INSTANTTIME)
    end = cfg.get(config.READ_END_INSTANTTIME)
    if query_type == "incremental":
        if begin is None:
            raise QueryError(
                f"Incremental query needs {config.READ_BEGIN_INSTANTTIME.key!r} (exclusive start)"
            )
        begin = normalize_instant_time(begin, key=config.READ_BEGIN_INSTANTTIME.key)
        if end is not None:
            end = normalize_instant_time(end, key=config.READ_END_INSTANTTIME.key)
    return ReadQuery(
        query_type=query_type,  # type: ignore[arg-type]
        as_of=normalize_instant_time(as_of, key=config.AS_OF_INSTANT) if as_of else None,
        begin=begin,
        end=end,
        filters=tuple(filters),
        incremental_format=cfg.get(config.QUERY_INCREMENTAL_FORMAT),
        # unset (or true) on a read: list through the metadata table, as Hudi 1.x readers do
        use_metadata_table=cfg.get(config.METADATA_ENABLE) is not False,
        data_skipping=cfg.get(config.ENABLE_DATA_SKIPPING),
    )


# ---- table ------------------------------------------------------------------------------------


def _prop(props: Mapping[str, str], option: config.ConfigOption[T]) -> T:
    for key in (option.key, *option.aliases):
        if key in props and props[key] != "":
            return option.parse(props[key])
    return option.default


def load_table_info(storage: Storage) -> TableInfo:
    """Read ``hoodie.properties`` into a :class:`TableInfo` (table versions 6, 8 and 9).

    Raises:
        TableNotFoundError: no table at the base path.
        QueryError: the table version, timeline layout, base file format or merge mode is not
            one this reader handles.
    """
    props = read_properties(storage)
    table_format(props, where=storage.base_path)
    require_readable_base_format(props, where=storage.base_path)
    name = _prop(props, config.TABLE_NAME)
    if not name:
        raise TableNotFoundError(f"{config.TABLE_NAME.key} missing in {storage.base_path}")
    keygen = _prop(props, config.KEYGENERATOR_CLASS)
    keygen_type = _prop(props, config.KEYGENERATOR_TYPE_TABLE)
    if keygen is None and keygen_type:
        keygen = config.KEYGEN_TYPES[keygen_type]
    record_key_fields = _prop(props, config.RECORDKEY_FIELDS)
    table_type = _prop(props, config.TABLE_TYPE)
    return TableInfo(
        base_path=storage.base_path,
        table_name=name,
        table_type=table_type,
        record_key_fields=record_key_fields or (),
        partition_fields=partition_fields(props),
        ordering_field=ordering_field(props),
        payload_class=_payload_class(props, table_type),
        keygen_class=keygen,
        hive_style=bool(_prop(props, config.HIVE_STYLE_PARTITIONING)),
        url_encode=bool(_prop(props, config.URL_ENCODE_PARTITIONING)),
        populate_meta_fields=bool(_prop(props, config.POPULATE_META_FIELDS)),
        properties=dict(props),
        s3=storage.s3,
    )


def _payload_class(props: Mapping[str, str], table_type: TableType) -> str:
    """Merge semantics; a custom merger only matters where records are merged (MOR)."""
    if table_type != TableType.MERGE_ON_READ and _prop(props, config.RECORD_MERGE_MODE) == "CUSTOM":
        return _prop(props, config.PAYLOAD_CLASS)
    return effective_payload_class(props)


# ---- planning -----------------------------------------------------------------------------------


def plan_query(
    base_path: str | Storage, query: ReadQuery | None = None, *, timeline: Timeline | None = None
) -> QueryPlan:
    """Plan ``query`` on the table at ``base_path``: which slices, which instants.

    ``timeline`` resolves the plan against a timeline other than the stored one: the staged
    timeline of a pre-commit audit (:mod:`engine.write.precommit`), in which the write's
    inflight instant reads as completed (such a query lists storage, never the metadata table).

    Raises:
        TableNotFoundError: no table at ``base_path``.
        QueryError: unsupported table or malformed query.
    """
    query = query or ReadQuery()
    storage = base_path if isinstance(base_path, Storage) else Storage(base_path)
    table = load_table_info(storage)
    timeline = timeline if timeline is not None else Timeline.load(storage)
    if query.as_of is not None or query.query_type == "incremental":
        timeline = timeline.with_history()
    avro_schema = timeline.latest_schema() or _prop(table.properties, config.CREATE_SCHEMA)
    pruner = partition_pruner(table, query.filters, avro_schema)
    # the schema as of the query's last instant: time travel before a change reads the old one
    as_of = query.end if query.query_type == "incremental" else query.as_of
    if as_of is not None:
        avro_schema = timeline.until(as_of).latest_schema() or avro_schema

    if query.query_type == "incremental":
        return _plan_incremental(storage, table, timeline, query, pruner, avro_schema)

    if query.as_of is not None:
        require_not_restored(timeline, query.as_of)
        require_retained_files(storage, timeline, query.as_of)
    visibility = Visibility.of(timeline, query.as_of)
    # Hudi's readers list through the metadata table when its files partition is ready; on
    # table versions 8+ only, as hudi-rs: no table of Hudi 0.x (HBase-written HFiles) checks it
    listing = None
    mdt = None  # the metadata table, opened once for its files and column_stats partitions
    if table.lists_through_metadata_table and query.use_metadata_table:
        mdt = open_metadata_table(storage)
        files = read_files_partition(storage, timeline, mdt)
        listing = files.partitions if files is not None else None
    view = FileSystemView(storage, timeline, partition_filter=pruner, listing=listing)
    read_optimized = query.query_type == "read_optimized"
    if read_optimized:
        slices = view.latest_base_files(visibility=visibility)
    else:
        slices = view.latest_file_slices(visibility=visibility)
    merge_logs = table.is_mor and not read_optimized
    kept = _skip_data(mdt, table, timeline, query, avro_schema, slices, merge_logs)
    return QueryPlan(
        table=table,
        query=query,
        file_slices=tuple(kept),
        visibility=visibility,
        begin=None,
        merge_logs=merge_logs,
        avro_schema=avro_schema,
        skipped_slices=len(slices) - len(kept),
    )


def skip_by_column_stats(
    plan: QueryPlan, filters: Sequence[ReadFilter], slices: Sequence[FileSlice]
) -> list[FileSlice]:
    """``slices`` of ``plan`` left once the ``column_stats`` partition has skipped those no row
    of which can match ``filters``: for readers that learn filters after planning (the filters
    Spark pushes to the ``hudi`` data source). Costs the listings of the data and metadata
    timelines again, so callers with no filter on a non-partition column skip the call."""
    query = replace(plan.query, filters=tuple(filters))
    table = plan.table
    if query.query_type == "incremental" or not table.has_column_stats:
        return list(slices)
    timeline = Timeline.load(table.storage)
    timeline = timeline.with_history() if query.as_of is not None else timeline
    mdt = open_metadata_table(table.storage) if query.use_metadata_table else None
    return _skip_data(mdt, table, timeline, query, plan.avro_schema, list(slices), plan.merge_logs)


def _skip_data(
    mdt: tuple[Storage, Timeline] | None,
    table: TableInfo,
    timeline: Timeline,
    query: ReadQuery,
    avro_schema: str | None,
    slices: list[FileSlice],
    merge_logs: bool,
) -> list[FileSlice]:
    """The slices left once the ``column_stats`` partition has skipped those no row of which
    can match the filters (:mod:`engine.read.data_skipping`); all of them when the table has no
    ready column stats (or no metadata table ``mdt``), the read turns skipping off, or has no
    filter."""
    wanted = query.filters and query.data_skipping and mdt is not None
    if not wanted or not table.has_column_stats or not avro_schema or not slices:
        return slices
    try:
        with_meta = add_meta_fields(avro_schema) if table.populate_meta_fields else avro_schema
        schema = avro_to_arrow_schema(with_meta)
    except SchemaError:
        return slices  # the row reader says why; nothing to skip by
    stats = read_column_stats(table.storage, timeline, mdt, {f.field for f in query.filters})
    if stats is None:
        return slices
    return skip_file_slices(slices, query.filters, stats, schema, with_logs=merge_logs)


def _plan_incremental(
    storage: Storage,
    table: TableInfo,
    timeline: Timeline,
    query: ReadQuery,
    pruner: Any,
    avro_schema: str | None,
) -> QueryPlan:
    begin = query.begin or "0"
    require_begin_not_restored(timeline, begin)
    commit_times: frozenset[str] | None = None
    if timeline.layout.version >= 2:
        # the commits completed in (begin, end]; rows and log blocks of exactly those commits
        in_range = timeline.completed_in(begin, query.end)
        commit_times = frozenset(i.instant_time for i in in_range)
        end = max(commit_times, default=None)
    else:
        last = timeline.last_completed()
        end = query.end or (last.instant_time if last else None)
        in_range = [
            i
            for i in timeline.commits_timeline()
            if begin < i.instant_time and i.instant_time <= (end or "")
        ]
    visibility = Visibility.of(timeline, end)
    touched: set[tuple[str, str]] = set()
    for instant in in_range:
        touched |= timeline.read_commit_metadata(instant).file_ids_written()
    if query.end is not None and end is not None:
        require_retained_files(
            storage, timeline, end, query="An incremental query ending at", file_groups=touched
        )
    slices: list[FileSlice] = []
    if touched:
        view = FileSystemView(
            storage,
            timeline,
            partition_paths={p for p, _ in touched},
            partition_filter=pruner,
        )
        slices = view.latest_file_slices(visibility=visibility, file_groups=touched)
    return QueryPlan(
        table=table,
        query=query,
        file_slices=tuple(slices),
        visibility=visibility,
        begin=begin,
        merge_logs=table.is_mor,
        avro_schema=avro_schema,
        commit_times=commit_times,
    )
