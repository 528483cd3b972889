"""The metadata table's ``column_stats`` partition: per file and column, a value range.

Each value is a ``HoodieMetadataRecord`` of type 3 whose ``ColumnStatsMetadata``
(``HoodieMetadataColumnStats``) holds, for one column of one data file: ``minValue``/``maxValue``
in Avro wrapper records (``IntWrapper``, ``StringWrapper``, ``BytesWrapper``, ...), ``valueCount``
(rows, nulls included), ``nullCount``, ``totalSize``/``totalUncompressedSize`` (the column
chunks' bytes), ``isDeleted`` (a tombstone: the file is gone), ``isTightBound`` and, from Hudi
1.1 (index version V2), ``valueType``: a ``ValueType`` ordinal and its extra (``"p,s"`` of a
decimal). V2 stores values by their physical type: a date as ``IntWrapper`` days, a timestamp
as ``LongWrapper`` micros, a decimal as ``BytesWrapper`` of the unscaled big-endian two's
complement integer (``BigInteger.toByteArray``), each with its ``valueType`` ordinal.

The row key (``HoodieMetadataPayload.getColumnStatsIndexKey``) is
``base64(ColumnIndexID) + base64(PartitionIndexID) + base64(FileIndexID)``: XXH64 (seed
``0xdabadaba`` as a Java int widened to long) of the column name and of the partition path
(``"."`` for a non-partitioned table), 8 bytes big-endian each, then the MD5 of the file name.
A key lives in file group ``mapRecordKeyToFileGroupIndex`` of ``col-stats-000N-0`` (the record
index's hash, :func:`engine.metadata.record_index.record_index_file_group`); Hudi 1.x keeps 2.

Records of one key merge as ``HoodieMetadataPayload`` merges them (``mergeColumnStatsRecords``):
a tombstone on either side yields the newer record, as does a newer tight bound; otherwise the
range widens and the counts add up.

Which files: Hudi 1.x indexes base files from their Parquet footers and, for merge-on-read, log
files too (``getLogFileColumnRangeMetadata``: the log's records read unmerged, sizes 0); a log
of delete blocks only gets ranges of ``valueType`` NULL. Which columns: the list in
``hoodie.metadata.index.column.stats.column.list``, else the first
``hoodie.metadata.index.column.stats.max.columns.to.index`` (32) columns of a supported type;
with meta fields always ``_hoodie_commit_time``, ``_hoodie_partition_path`` and
``_hoodie_record_key`` first (``getColumnsToIndex``).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow.parquet as pq
import xxhash

from engine import config
from engine.errors import HudiError
from engine.fs.filenames import is_base_file
from engine.fs.storage import Storage
from engine.io.hfile import HFile
from engine.metadata.payload import MetadataRecordType, parsed_schema
from engine.metadata.record_index import record_index_file_group
from engine.metadata.slices import ValidInstants, latest_slices, open_metadata_table, slice_content
from engine.timeline.timeline import Timeline

__all__ = [
    "COLUMN_STATS_PARTITION",
    "META_COLUMNS_ALWAYS_INDEXED",
    "ColumnStats",
    "column_stats_cells",
    "column_stats_key",
    "column_stats_tombstone_cells",
    "columns_to_index",
    "configured_columns",
    "decode_column_stats",
    "encode_column_stats",
    "merge_column_stats",
    "parquet_column_stats",
    "read_column_stats",
]

COLUMN_STATS_PARTITION = "column_stats"
META_COLUMNS_ALWAYS_INDEXED = (
    "_hoodie_commit_time",
    "_hoodie_partition_path",
    "_hoodie_record_key",
)
_META_COLUMNS = frozenset(
    {*META_COLUMNS_ALWAYS_INDEXED, "_hoodie_commit_seqno", "_hoodie_file_name", "_hoodie_operation"}
)
_NON_PARTITIONED_ID = "."
# a Java int widened to a long before hashing, as the unsigned 64 bits XXH64 takes
_HASH_SEED = (0xDABADABA - (1 << 32)) & ((1 << 64) - 1)
_WRAPPER_NS = "org.apache.hudi.avro.model."
# Hudi 1.1's ValueType ordinals (the corpus shows NULL, BOOLEAN, LONG, STRING, DECIMAL, DATE and
# TIMESTAMP_MICROS; the others follow the enum's order)
_VALUE_TYPE = {
    "NULL": 1,
    "BOOLEAN": 2,
    "INT": 3,
    "LONG": 4,
    "FLOAT": 5,
    "DOUBLE": 6,
    "STRING": 7,
    "BYTES": 8,
    "DECIMAL": 10,
    "DATE": 12,
    "TIMESTAMP_MILLIS": 15,
    "TIMESTAMP_MICROS": 16,
}
_NULL = (_VALUE_TYPE["NULL"], None)
# kinds index version V1 (Hudi 1.1 on table version 8) stores in their logical wrappers
# (DateWrapper, TimestampMicrosWrapper, DecimalWrapper), not as V2's physical values
_V2_ONLY = frozenset({"DECIMAL", "DATE", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS"})
# a wrapped value as stored: (wrapper record name without namespace, value)
StatValue = tuple[str, Any]


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """One ``HoodieMetadataColumnStats`` record.

    Attributes:
        file_name: The data file (base or log file name, no folder).
        column_name: The column.
        min_value / max_value: ``(wrapper, value)``, e.g. ``("StringWrapper", "a")``; None when
            the column holds no non-null value (or its type has no range).
        value_type: ``(ordinal, additional info)`` of ``HoodieValueTypeInfo``; None before V2.
        meta: The datum's other fields as stored (meta columns, the empty ``key``), so an
            encoded record is the stored one.
    """

    file_name: str
    column_name: str
    min_value: StatValue | None
    max_value: StatValue | None
    value_count: int | None
    null_count: int | None
    total_size: int | None
    total_uncompressed_size: int | None
    is_deleted: bool = False
    is_tight_bound: bool = False
    value_type: tuple[int, str | None] | None = None
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def all_null(self) -> bool:
        """Every row of the file holds null in this column (then no comparison matches)."""
        return self.value_count is not None and self.value_count == self.null_count


# ---- keys ---------------------------------------------------------------------------------------


def _id64(text: str) -> str:
    # XXH64 as lz4-java's ``XXHash64`` computes it (``HashID``), unsigned
    digest = xxhash.xxh64_intdigest(text.encode(), _HASH_SEED)
    return base64.b64encode(struct.pack(">Q", digest)).decode()


def column_stats_key(column: str, partition_path: str, file_name: str) -> str:
    """The row key of a file's column stats (``ColumnIndexID`` + ``PartitionIndexID`` +
    ``FileIndexID``, base64 each)."""
    partition = partition_path or _NON_PARTITIONED_ID
    file_id = base64.b64encode(hashlib.md5(file_name.encode()).digest()).decode()
    return _id64(column) + _id64(partition) + file_id


# ---- records ------------------------------------------------------------------------------------


def _unwrap(value: Any) -> StatValue | None:
    if value is None:
        return None
    name, record = value
    return (str(name).removeprefix(_WRAPPER_NS), record["value"])


def decode_column_stats(value: bytes, schema: str) -> ColumnStats:
    """The column stats a ``column_stats`` value holds.

    Raises:
        HudiError: The datum is not a column stats record.
    """
    reader = io.BytesIO(value)
    datum = fastavro.schemaless_reader(reader, parsed_schema(schema), None, return_record_name=True)
    assert isinstance(datum, dict)
    stats = datum.get("ColumnStatsMetadata")
    if datum.get("type") != MetadataRecordType.COLUMN_STATS or stats is None:
        raise HudiError(f"metadata record of type {datum.get('type')} is not a column stats one")
    stats = stats[1]
    value_type = stats.get("valueType")
    vt = value_type[1] if value_type is not None else None
    meta = {k: v for k, v in datum.items() if k not in ("type", "ColumnStatsMetadata")}
    return ColumnStats(
        file_name=stats["fileName"],
        column_name=stats["columnName"],
        min_value=_unwrap(stats["minValue"]),
        max_value=_unwrap(stats["maxValue"]),
        value_count=stats["valueCount"],
        null_count=stats["nullCount"],
        total_size=stats["totalSize"],
        total_uncompressed_size=stats["totalUncompressedSize"],
        is_deleted=stats["isDeleted"],
        is_tight_bound=stats["isTightBound"],
        value_type=(vt["typeOrdinal"], vt["additionalInfo"]) if vt is not None else None,
        meta=meta,
    )


def _wrap(value: StatValue | None) -> Any:
    return None if value is None else (_WRAPPER_NS + value[0], {"value": value[1]})


def encode_column_stats(stats: ColumnStats, schema: str) -> bytes:
    """The Avro datum Hudi stores for ``stats``: every other payload field null, the ``key``
    field empty unless ``stats.meta`` says otherwise."""
    datum: dict[str, Any] = dict.fromkeys(f["name"] for f in json.loads(schema)["fields"])
    datum.update({"key": ""}, **stats.meta)
    datum["type"] = int(MetadataRecordType.COLUMN_STATS)
    vt = stats.value_type
    datum["ColumnStatsMetadata"] = {
        "fileName": stats.file_name,
        "columnName": stats.column_name,
        "minValue": _wrap(stats.min_value),
        "maxValue": _wrap(stats.max_value),
        "valueCount": stats.value_count,
        "nullCount": stats.null_count,
        "totalSize": stats.total_size,
        "totalUncompressedSize": stats.total_uncompressed_size,
        "isDeleted": stats.is_deleted,
        "isTightBound": stats.is_tight_bound,
        "valueType": None if vt is None else {"typeOrdinal": vt[0], "additionalInfo": vt[1]},
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed_schema(schema), datum)
    return out.getvalue()


def _sum(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def _bound(a: StatValue | None, b: StatValue | None, pick: Any) -> StatValue | None:
    if a is None or b is None:
        return a or b
    return a if pick(a[1], b[1]) == a[1] else b


def merge_column_stats(older: ColumnStats, newer: ColumnStats) -> ColumnStats:
    """Two records of one key (``mergeColumnStatsRecords``): a tombstone on either side, or a
    newer tight bound, replaces; otherwise the range widens and the counts add up."""
    if older.is_deleted or newer.is_deleted or newer.is_tight_bound:
        return newer
    return dataclasses.replace(
        newer,
        min_value=_bound(older.min_value, newer.min_value, min),
        max_value=_bound(older.max_value, newer.max_value, max),
        value_count=_sum(older.value_count, newer.value_count),
        null_count=_sum(older.null_count, newer.null_count),
        total_size=_sum(older.total_size, newer.total_size),
        total_uncompressed_size=_sum(older.total_uncompressed_size, newer.total_uncompressed_size),
    )


def _hfile_stats(hfile: HFile, prefixes: tuple[bytes, ...]) -> Iterator[tuple[str, ColumnStats]]:
    schema = hfile.file_info["schema"].decode()
    for key, value in hfile.entries:
        if key.startswith(prefixes):
            yield key.decode(), decode_column_stats(value, schema)


def read_column_stats(
    storage: Storage,
    data_timeline: Timeline,
    opened: tuple[Storage, Timeline] | None = None,
    columns: Iterable[str] | None = None,
) -> dict[str, dict[str, ColumnStats]] | None:
    """File name -> column -> stats, as the ``column_stats`` partition holds them (merged, no
    tombstones); None without a metadata table.

    Log blocks count as in the ``files`` partition (:mod:`engine.metadata.slices`): only those
    of instants completed on both timelines, so stats of an uncommitted write never show.
    ``opened`` is the metadata table as :func:`open_metadata_table` opened it, if the caller has;
    ``columns`` limits the records decoded to those columns' (keys start with the column's id).

    Raises:
        HudiError: No committed ``column_stats`` partition, or a file of it does not decode.
    """
    opened = opened or open_metadata_table(storage)
    if opened is None:
        return None
    mdt, timeline = opened
    valid = ValidInstants.of(timeline, data_timeline)
    prefixes = tuple(_id64(c).encode() for c in columns) if columns is not None else (b"",)
    merged: dict[str, ColumnStats | None] = {}
    for metadata_slice in latest_slices(mdt, timeline, COLUMN_STATS_PARTITION):
        base, content = slice_content(mdt, metadata_slice, valid)
        for item in [base, *content] if base else content:
            if isinstance(item, HFile):
                for key, stats in _hfile_stats(item, prefixes):
                    before = merged.get(key)
                    merged[key] = stats if before is None else merge_column_stats(before, stats)
            else:
                merged.update(dict.fromkeys(item))
    out: dict[str, dict[str, ColumnStats]] = {}
    for kept in merged.values():
        if kept is not None and not kept.is_deleted:
            out.setdefault(kept.file_name, {})[kept.column_name] = kept
    return out


# ---- computing them for a base file -------------------------------------------------------------


def _avro_branch(field_type: Any) -> Any:
    if isinstance(field_type, list):
        branches = [b for b in field_type if b != "null"]
        return branches[0] if len(branches) == 1 else None
    return field_type


def _supported(field_type: Any) -> bool:
    """``isColumnTypeSupported`` (Avro records): not a record, array, map or enum, and a
    decimal that fits ``DecimalWrapper`` (precision + 15 - scale <= 30, scale <= 15)."""
    branch = _avro_branch(field_type)
    if branch is None:
        return False
    if isinstance(branch, dict):
        if branch.get("logicalType") == "decimal":
            precision, scale = int(branch["precision"]), int(branch.get("scale", 0))
            return precision + (15 - scale) <= 30 and scale <= 15
        return branch.get("type") not in ("record", "array", "map", "enum")
    return branch not in ("record", "array", "map", "enum")


def columns_to_index(
    avro_schema: str,
    column_list: tuple[str, ...] = config.COLUMN_STATS_COLUMN_LIST.default,
    max_columns: int = config.COLUMN_STATS_MAX_COLUMNS.default,
    *,
    meta_fields: bool = True,
) -> list[str]:
    """The columns Hudi 1.x indexes (``getColumnsToIndex``), in its order.

    Args:
        avro_schema: The table schema without meta fields.
        column_list: ``hoodie.metadata.index.column.stats.column.list``: when given, its columns
            of a supported type, as listed.
        max_columns: ``hoodie.metadata.index.column.stats.max.columns.to.index``: without a
            list, the first this many data columns of a supported type.
        meta_fields: The table populates meta fields: the three always indexed come first.
    """
    fields = {f["name"]: f["type"] for f in json.loads(avro_schema)["fields"]}
    if column_list:
        names = [n for n in column_list if n not in META_COLUMNS_ALWAYS_INDEXED]
    else:
        names = [n for n in fields if n not in _META_COLUMNS]
    chosen = [n for n in names if n in fields and _supported(fields[n])]
    if not column_list:
        chosen = chosen[:max_columns]
    return [*META_COLUMNS_ALWAYS_INDEXED, *chosen] if meta_fields else chosen


def configured_columns(
    options: config.HoodieConfig, avro_schema: str, *, meta_fields: bool = True
) -> list[str]:
    """:func:`columns_to_index` as a write's options set it (column list, max columns)."""
    return columns_to_index(
        avro_schema,
        options.get(config.COLUMN_STATS_COLUMN_LIST),
        options.get(config.COLUMN_STATS_MAX_COLUMNS),
        meta_fields=meta_fields,
    )


# Parquet physical type -> (wrapper, ValueType) when no logical type says otherwise
_PHYSICAL = {
    "BOOLEAN": ("BooleanWrapper", "BOOLEAN"),
    "INT32": ("IntWrapper", "INT"),
    "INT64": ("LongWrapper", "LONG"),
    "FLOAT": ("FloatWrapper", "FLOAT"),
    "DOUBLE": ("DoubleWrapper", "DOUBLE"),
    "BYTE_ARRAY": ("BytesWrapper", "BYTES"),
}


def _java_bytes(unscaled: int) -> bytes:
    """``BigInteger.toByteArray``: the shortest big-endian two's complement bytes."""
    size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(size, "big", signed=True)


def _stat_kind(physical_type: str, logical: str) -> tuple[str, str, str | None] | None:
    """(wrapper, ValueType, extra) Hudi 1.1 (V2) stores a Parquet column's range in; None for
    a type it keeps no range of."""
    if logical.startswith("Decimal("):
        precision, scale = (int(p.split("=")[1]) for p in logical[8:-1].split(", "))
        return "BytesWrapper", "DECIMAL", f"{precision},{scale}"
    if logical == "String":
        return "StringWrapper", "STRING", None
    if logical == "Date":
        return "IntWrapper", "DATE", None
    if logical.startswith("Timestamp("):
        if "isAdjustedToUTC=true" not in logical or "nanoseconds" in logical:
            return None  # Hudi's LOCAL_TIMESTAMP_* and *_NANOS kinds: not written here
        unit = "MILLIS" if "milliseconds" in logical else "MICROS"
        return "LongWrapper", f"TIMESTAMP_{unit}", None
    kind = _PHYSICAL.get(physical_type)
    return None if kind is None else (*kind, None)


def _stat_value(wrapper: str, value_type: str, raw: Any) -> Any:
    if value_type == "DECIMAL":
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else raw
        return _java_bytes(unscaled)
    if wrapper == "StringWrapper" and isinstance(raw, bytes):
        return raw.decode()
    return raw


def _chunk_range(
    meta: pq.FileMetaData, index: int, kind: tuple[str, str, str | None]
) -> tuple[StatValue | None, StatValue | None, list[int]]:
    """The column's (min, max, [values, nulls, size, uncompressed size]) over row groups."""
    wrapper, value_type, _ = kind
    low: Any = None
    high: Any = None
    counts = [0, 0, 0, 0]
    for group in range(meta.num_row_groups):
        chunk = meta.row_group(group).column(index)
        stats = chunk.statistics
        nulls = stats.null_count if stats is not None and stats.has_null_count else 0
        sizes = (chunk.num_values, nulls, chunk.total_compressed_size)
        counts = [
            a + b for a, b in zip(counts, (*sizes, chunk.total_uncompressed_size), strict=True)
        ]
        if stats is not None and stats.has_min_max:
            lo, hi = stats.min, stats.max
            if low is None or lo < low[0]:
                low = (lo, stats.min_raw)
            if high is None or hi > high[0]:
                high = (hi, stats.max_raw)

    def wrap(bound: Any) -> StatValue | None:
        return None if bound is None else (wrapper, _stat_value(wrapper, value_type, bound[1]))

    return wrap(low), wrap(high), counts


def parquet_column_stats(
    file_name: str, meta: pq.FileMetaData, columns: Iterable[str], *, value_types: bool = True
) -> list[ColumnStats]:
    """The column stats of a Parquet base file from its footer, as Hudi 1.1 computes them
    (``ParquetUtils.readColumnStatsFromMetadata``): per column, the smallest min and largest
    max of its row groups' statistics (compared as the logical values), rows (nulls included)
    and nulls summed, and the column chunks' compressed and uncompressed sizes summed.

    A column the file lacks, or of a type without a range, gets no record; a column of nulls
    only gets one without min and max.

    ``value_types`` false: index version V1, which Hudi 1.1 writes on table version 8
    (``HoodieIndexVersion``): no ``valueType`` (null, read back as ``ValueType.V1``). Hudi
    refuses to merge ranges of two value types (``HoodieColumnRangeMetadata.merge``: "Value
    types should be the same for merging column ranges"), so a V2 typed record on a version 8
    table fails Hudi's next partition-stats update. Dates, timestamps and decimals, which V1
    stores in logical wrappers, get no record there (a file without a column's stats is never
    skipped on it).
    """
    positions = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    out: list[ColumnStats] = []
    for column in columns:
        index = positions.get(column)
        if index is None:
            continue
        described = meta.schema.column(index)
        kind = _stat_kind(described.physical_type, str(described.logical_type))
        if kind is None or (not value_types and kind[1] in _V2_ONLY):
            continue
        low, high, (values, nulls, size, raw_size) = _chunk_range(meta, index, kind)
        value_type = (_VALUE_TYPE[kind[1]], kind[2]) if value_types else None
        out.append(
            ColumnStats(
                file_name,
                column,
                low,
                high,
                values,
                nulls,
                size,
                raw_size,
                False,
                False,
                value_type,
            )
        )
    return out


def column_stats_cells(
    files: Iterable[tuple[str, str, pq.FileMetaData]],
    columns: Sequence[str],
    record_schema: str,
    num_file_groups: int = config.COLUMN_STATS_FILE_GROUP_COUNT.default,
    *,
    value_types: bool = True,
) -> dict[int, list[tuple[bytes, bytes]]]:
    """The ``column_stats`` records of new base and log files, as the HFile cells Hudi appends.

    A log file's footer is that of its data records written as one Parquet file (the caller
    makes it): Hudi 1.x indexes each log file a merge-on-read write appends from its records
    read unmerged, with sizes 0, so its sizes are set to 0 here.

    This is pure: it reads nothing and writes nothing. The metadata writer calls it with every
    base file a commit wrote and writes each file group's cells, as they come, as the HFile of
    that file group's HFILE_DATA_BLOCK (``write_hfile`` with the block's schema and creation
    time): for every log block of the corpus's copy-on-write v9 table that gives Hudi's bytes.

    Args:
        files: (partition path, "" when non-partitioned; file name; Parquet footer) of each
            base file and log file.
        columns: The columns to index (:func:`columns_to_index`).
        record_schema: The ``HoodieMetadataRecord`` writer schema the block carries.
        num_file_groups: The partition's file groups (``col-stats-000N-0``); Hudi 1.x's default
            ``hoodie.metadata.index.column.stats.file.group.count`` is 2.
        value_types: Index version V2 (table version 9); false for V1 (version 8), see
            :func:`parquet_column_stats`.

    Returns:
        File group index -> (row key, value) cells sorted by key bytes (an HFile's order); a
        group no record falls in is absent. Values have the empty ``key`` field and null meta
        columns, as in Hudi's log blocks.
    """
    records = (
        (partition_path, stats if is_base_file(file_name) else _sizes_unknown(stats))
        for partition_path, file_name, meta in files
        for stats in parquet_column_stats(file_name, meta, columns, value_types=value_types)
    )
    return _cells(records, record_schema, num_file_groups)


def _sizes_unknown(stats: ColumnStats) -> ColumnStats:
    """A log file's stats: its records have no column chunks, Hudi records sizes 0."""
    return dataclasses.replace(stats, total_size=0, total_uncompressed_size=0)


def column_stats_tombstone_cells(
    files: Iterable[tuple[str, str]],
    columns: Sequence[str],
    record_schema: str,
    num_file_groups: int = config.COLUMN_STATS_FILE_GROUP_COUNT.default,
) -> dict[int, list[tuple[bytes, bytes]]]:
    """The ``column_stats`` tombstones of removed files (cleaned, or rolled back), as
    :func:`column_stats_cells` gives the records of new ones.

    A tombstone is Hudi 1.1's ``HoodieColumnRangeMetadata.stub`` written with ``isDeleted``:
    no range, every count -1 and ``valueType`` NULL, for each indexed column. A reader drops
    the file's stats on it (:func:`merge_column_stats`).

    Args:
        files: (partition path, file name) of each removed file.
    """
    records = (
        (partition_path, ColumnStats(name, column, None, None, -1, -1, -1, -1, True, False, _NULL))
        for partition_path, name in files
        for column in columns
    )
    return _cells(records, record_schema, num_file_groups)


def _cells(
    records: Iterable[tuple[str, ColumnStats]], record_schema: str, num_file_groups: int
) -> dict[int, list[tuple[bytes, bytes]]]:
    """(partition path, stats) -> file group index -> (key, value) cells in key order."""
    groups: dict[int, list[tuple[bytes, bytes]]] = {}
    for partition_path, stats in records:
        key = column_stats_key(stats.column_name, partition_path, stats.file_name)
        cell = (key.encode(), encode_column_stats(stats, record_schema))
        groups.setdefault(record_index_file_group(key, num_file_groups), []).append(cell)
    return {group: sorted(cells) for group, cells in sorted(groups.items())}
