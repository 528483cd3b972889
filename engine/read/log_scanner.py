"""Log records of a file slice: the merged view of its log blocks, as Hudi's scanner builds it.

Blocks are visited in slice order (log files by base instant, version, write token; blocks in file
order), following ``AbstractHoodieLogRecordReader`` / ``HoodieMergedLogRecordScanner``::

    block instant > query instant            skipped, as Hudi 1.x does (0.14/0.15 stop there:
                                               a writer's eager rollback appends its command
                                               block, under a later instant, before the data
                                               of the write that ran it)
    CORRUPT_BLOCK (torn or damaged region)   skipped
    data/delete block of an instant that     skipped (inflight, failed or rolled back; or outside
      is not committed, or outside (b, e]      an incremental query's range)
    COMMAND_BLOCK rollback(target)           drops every queued block whose instant == target
    AVRO_DATA / PARQUET_DATA / DELETE        queued, then decoded in order

Records of one key then fold left in arrival order. Under commit-time ordering (merge mode
``COMMIT_TIME_ORDERING``, its version 6 analogue ``OverwriteWithLatestAvroPayload`` and the
payloads that keep its semantics, or no ordering field) the latest record wins, data or delete,
whatever its ordering value: Hudi 1.x's ``BufferedRecordMergerFactory.CommitTimeRecordMerger``
(``deltaMerge`` keeps the new record or delete; with partial update mode IGNORE_DEFAULTS its
null fields keep the key's earlier values since its last delete), as hudi-rs 0.5.0 reads. Under
event-time ordering::

    data  after data    the payload's precombine (greater ordering value wins, ties: later)
    data  after delete  the data record (a delete has an empty payload: natural order)
    delete after any    the delete, unless its ordering value is not Integer 0, has the same
                        type as the current record's, and is smaller: then the delete is dropped

Event-time keys without delete records go through :func:`engine.model.merge.precombine`, the one
home of payload rules; keys with delete records are folded here because a delete is not associative
with the precombine (a record after a delete wins whatever its ordering value).

The result is one row per record key, data rows and delete rows (flag column
``engine.model.merge.DELETE_RECORD_COLUMN``), ready for
:func:`engine.model.merge.combine_with_stored`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import LogFormatError
from engine.fs.storage import Storage
from engine.io.delete_block import DeleteRecord
from engine.io.logfile import (
    HoodieLogBlockType,
    LogBlock,
    decode_avro_data_block,
    decode_command_block,
    decode_delete_block,
    decode_parquet_data_block,
    read_log_blocks,
)
from engine.model.merge import (
    ARRIVAL_COLUMN,
    DELETE_RECORD_COLUMN,
    MergeSpec,
    combine_with_stored,
    latest_arrival,
    precombine,
)
from engine.model.promote import promote_table
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.view.fs_view import Visibility

__all__ = [
    "LogScanResult",
    "collect_log_blocks",
    "combine_log_records",
    "merge_slice_rows",
    "scan_log_records",
    "slice_log_records",
    "unorder_log_deletes",
]

_DATA_BLOCK_TYPES = frozenset(
    (
        HoodieLogBlockType.AVRO_DATA_BLOCK,
        HoodieLogBlockType.PARQUET_DATA_BLOCK,
        HoodieLogBlockType.DELETE_BLOCK,
    )
)
# Java wrapper class of each ordering field Arrow type family (ReflectionUtils.isSameClass)
_INT_WRAPPER = "IntWrapper"


@dataclass(frozen=True)
class LogScanResult:
    """Merged log records of a slice and what the scan saw.

    Attributes:
        records: one row per record key (data or delete), ``None`` when no record survived.
        total_blocks: intact blocks read.
        corrupt_blocks: damaged regions skipped.
        rollback_blocks: rollback command blocks applied.
        skipped_blocks: data/delete blocks of uncommitted or out-of-range instants.
    """

    records: pa.Table | None
    total_blocks: int = 0
    corrupt_blocks: int = 0
    rollback_blocks: int = 0
    skipped_blocks: int = 0


@dataclass
class _Counts:
    total: int = 0
    corrupt: int = 0
    rollbacks: int = 0
    skipped: int = 0


def collect_log_blocks(
    storage: Storage,
    log_paths: Sequence[str],
    visibility: Visibility,
    begin: str | None = None,
    counts: _Counts | None = None,
    instants: frozenset[str] | None = None,
) -> list[LogBlock]:
    """The data and delete blocks to decode, in order, after visibility and rollbacks.

    Args:
        storage: the table's storage.
        log_paths: log files of the slice (relative paths), in Hudi's log file order.
        visibility: committed instants and the query instant.
        begin: exclusive lower bound of an incremental query's instant range.
        instants: (layout 2 incremental) only blocks of these instants are in range.
    """
    counts = counts if counts is not None else _Counts()
    max_instant = visibility.max_instant
    queue: list[LogBlock] = []
    for path in log_paths:
        for block in read_log_blocks(storage.read_bytes(path), include_corrupt=True):
            if block.is_corrupt:
                counts.corrupt += 1
                continue
            counts.total += 1
            instant = block.instant_time
            if instant is None:
                raise LogFormatError(f"Log block at offset {block.offset} of {path} has no instant")
            if max_instant is None or instant > max_instant:
                counts.skipped += 1  # newer than the query: skipped, as Hudi 1.x does
                continue
            if block.block_type is HoodieLogBlockType.COMMAND_BLOCK:
                target = decode_command_block(block)
                counts.rollbacks += 1
                queue = [b for b in queue if b.instant_time != target]
                continue
            if block.block_type not in _DATA_BLOCK_TYPES:
                raise LogFormatError(
                    f"Unsupported log block {block.block_type.name} at offset {block.offset} "
                    f"of {path}"
                )
            in_range = (
                (begin is None or instant > begin) if instants is None else (instant in instants)
            )
            if not visibility.is_committed(instant) or not in_range:
                counts.skipped += 1
                continue
            queue.append(block)
    return queue


def _delete_rows(
    block: LogBlock, schema: pa.Schema, ordering_field: str | None
) -> dict[str, list[Any]]:
    """Delete records of a block as columns: key, partition path, ordering value."""
    records = decode_delete_block(block)
    ordering_type = (
        schema.field(ordering_field).type
        if ordering_field is not None and ordering_field in schema.names
        else None
    )
    keys, partitions, orderings = [], [], []
    for rec in records:
        keys.append(rec.record_key)
        partitions.append(rec.partition_path)
        orderings.append(_delete_ordering(rec, ordering_type))
    return {
        RECORD_KEY_COLUMN: keys,
        PARTITION_PATH_COLUMN: partitions,
        "__ordering": orderings,
    }


def _same_java_class(value: Any, wrapper: str | None, dtype: pa.DataType) -> bool:
    """Whether a delete's ordering value has the Java class the ordering field's values have."""
    if wrapper is not None:
        if pa.types.is_int64(dtype):
            return wrapper == "LongWrapper"
        if pa.types.is_integer(dtype):
            return wrapper == _INT_WRAPPER
        if pa.types.is_float32(dtype):
            return wrapper == "FloatWrapper"
        if pa.types.is_floating(dtype):
            return wrapper == "DoubleWrapper"
        if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
            return wrapper == "StringWrapper"
        if pa.types.is_boolean(dtype):
            return wrapper == "BooleanWrapper"
        if pa.types.is_date(dtype):
            return wrapper == "DateWrapper"
        if pa.types.is_timestamp(dtype):
            return wrapper == "TimestampMicrosWrapper"
        if pa.types.is_decimal(dtype):
            return wrapper == "DecimalWrapper"
        return False
    if isinstance(value, bool):
        return bool(pa.types.is_boolean(dtype))
    if isinstance(value, int):
        return bool(pa.types.is_integer(dtype))
    if isinstance(value, float):
        return bool(pa.types.is_floating(dtype))
    if isinstance(value, str):
        return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype))
    return False


def _delete_ordering(rec: DeleteRecord, dtype: pa.DataType | None) -> Any:
    """The delete's ordering value where Java compares it, else ``None`` ("natural order").

    Java keeps the current record only when the delete's value is not Integer 0 and has the
    same class as the record's; every other delete wins. ``None`` makes the delete win.
    """
    if rec.is_natural_order or dtype is None:
        return None
    if not _same_java_class(rec.ordering_value, rec.ordering_wrapper, dtype):
        return None
    return rec.ordering_value


def _data_table(
    block: LogBlock, schema: pa.Schema, reader_schema: str | None, conform: Any
) -> pa.Table:
    if block.block_type is HoodieLogBlockType.AVRO_DATA_BLOCK:
        table = decode_avro_data_block(block, reader_schema)
    else:
        table = decode_parquet_data_block(block)
    return conform(table, schema)


def slice_log_records(
    storage: Storage,
    log_paths: Sequence[str],
    *,
    visibility: Visibility,
    schema: pa.Schema,
    spec: MergeSpec,
    orders_deletes: bool,
    begin: str | None = None,
    instants: frozenset[str] | None = None,
) -> pa.Table | None:
    """A file slice's log records, one per key, as every merge of a slice reads them (the
    snapshot reader, compaction, the CDC query): :func:`scan_log_records`, blocks promoted to
    ``schema``; below table version 8 (``orders_deletes`` false) a log delete's ordering value
    does not count (:func:`unorder_log_deletes`). ``None``: no record."""
    scan = scan_log_records(
        storage,
        log_paths,
        visibility=visibility,
        schema=schema,
        spec=spec,
        conform=promote_table,
        begin=begin,
        instants=instants,
    )
    if scan.records is None or orders_deletes:
        return scan.records
    return unorder_log_deletes(scan.records, spec.ordering_field)


def merge_slice_rows(
    stored: pa.Table, log: pa.Table | None, spec: MergeSpec, schema: pa.Schema
) -> pa.Table:
    """Base rows ⊕ log records of one file slice (the one place a slice is merged): the
    ``stored`` base rows (in ``schema``) combined with the slice's :func:`slice_log_records`
    by :func:`engine.model.merge.combine_with_stored` under the table's payload class."""
    if log is None:
        return stored
    result = combine_with_stored(stored, log, spec)
    changed = result.changed.select(schema.names)
    if not result.unchanged.num_rows:
        return changed
    return pa.concat_tables([result.unchanged.select(schema.names), changed])


def scan_log_records(
    storage: Storage,
    log_paths: Sequence[str],
    *,
    visibility: Visibility,
    schema: pa.Schema,
    spec: MergeSpec,
    conform: Any,
    reader_schema: str | None = None,
    begin: str | None = None,
    instants: frozenset[str] | None = None,
) -> LogScanResult:
    """Read a slice's log files into one record per key.

    Args:
        storage: the table's storage.
        log_paths: the slice's log files (relative paths) in Hudi's order.
        visibility: committed instants and the query instant.
        schema: Arrow schema of the result's data columns (the query schema).
        spec: payload class and ordering field.
        conform: ``(table, schema) -> table`` aligning decoded blocks with ``schema``.
        reader_schema: Avro schema (with meta fields) that Avro data blocks resolve to.
        begin: exclusive lower bound of an incremental query's range.
        instants: (layout 2 incremental) the instants whose blocks are in range.

    Raises:
        LogFormatError: an intact block cannot be decoded.
    """
    counts = _Counts()
    blocks = collect_log_blocks(storage, log_paths, visibility, begin, counts, instants)
    parts: list[pa.Table] = []
    for block in blocks:
        if block.block_type is HoodieLogBlockType.DELETE_BLOCK:
            deletes = _delete_table(block, schema, spec.ordering_field)
            if deletes is not None:
                parts.append(deletes)
        else:
            table = _data_table(block, schema, reader_schema, conform)
            if table.num_rows:
                flags = pa.array(np.zeros(table.num_rows, dtype=bool))
                parts.append(table.append_column(DELETE_RECORD_COLUMN, flags))
    stats = {
        "total_blocks": counts.total,
        "corrupt_blocks": counts.corrupt,
        "rollback_blocks": counts.rollbacks,
        "skipped_blocks": counts.skipped,
    }
    if not parts:
        return LogScanResult(None, **stats)
    records = pa.concat_tables(parts)
    records = records.append_column(
        ARRIVAL_COLUMN, pa.array(np.arange(records.num_rows, dtype=np.int64))
    )
    return LogScanResult(combine_log_records(records, spec), **stats)


def _delete_table(
    block: LogBlock, schema: pa.Schema, ordering_field: str | None
) -> pa.Table | None:
    """A delete block's records as rows of ``schema`` flagged as deletes: key, partition path
    and ordering value set, other columns null; ``None`` when the block deletes nothing."""
    cols = _delete_rows(block, schema, ordering_field)
    n = len(cols[RECORD_KEY_COLUMN])
    if n == 0:
        return None
    arrays = []
    for f in schema:
        if f.name in (RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN):
            arrays.append(pa.array(cols[f.name], pa.string()).cast(f.type))
        elif f.name == ordering_field:
            arrays.append(_ordering_array(cols["__ordering"], f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    table = pa.Table.from_arrays(arrays, schema=schema)
    return table.append_column(DELETE_RECORD_COLUMN, pa.repeat(pa.scalar(True), n))


def _ordering_array(values: list[Any], dtype: pa.DataType) -> pa.Array:
    try:
        return (
            pa.array(values).cast(dtype)
            if any(v is not None for v in values)
            else pa.nulls(len(values), dtype)
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.nulls(len(values), dtype)


def combine_log_records(
    records: pa.Table, spec: MergeSpec, *, key_column: str = RECORD_KEY_COLUMN
) -> pa.Table:
    """Fold log records (arrival order in ``__arrival``) to one row per key, as Java does."""
    if spec.is_commit_time:
        return latest_arrival(records, fills_nulls=spec.fills_nulls, key_column=key_column)
    is_delete = pc.fill_null(records.column(DELETE_RECORD_COLUMN), False)
    if not pc.any(is_delete).as_py():
        return precombine(records, spec, key_column=key_column)
    deleted_keys = pc.unique(pc.filter(records.column(key_column), is_delete))
    touched = pc.is_in(records.column(key_column), value_set=deleted_keys)
    plain = records.filter(pc.invert(touched))
    folded = _fold_with_deletes(records.filter(touched), spec, key_column)
    if plain.num_rows:
        plain = precombine(plain, spec, key_column=key_column)
        return pa.concat_tables([plain, folded])
    return folded


def _fold_with_deletes(records: pa.Table, spec: MergeSpec, key_column: str) -> pa.Table:
    """Left fold per key for keys that have delete records (see the module docstring)."""
    order = pc.sort_indices(records, sort_keys=[(ARRIVAL_COLUMN, "ascending")])
    records = records.take(order)
    keys = records.column(key_column).to_pylist()
    deletes = pc.fill_null(records.column(DELETE_RECORD_COLUMN), False).to_pylist()
    field = spec.ordering_field
    orderings: list[Any] = (
        records.column(field).to_pylist()
        if field is not None and field in records.column_names
        else [None] * records.num_rows
    )
    state: dict[Any, int] = {}
    for i, (key, is_delete) in enumerate(zip(keys, deletes, strict=True)):
        current = state.get(key)
        if current is None:
            state[key] = i
        elif is_delete:
            # a delete whose ordering value is set (same class, not natural order) and smaller
            # than the current record's is obsolete
            cur, new = orderings[current], orderings[i]
            if not (new is not None and cur is not None and cur > new):
                state[key] = i
        elif deletes[current]:
            state[key] = i  # natural order after a delete (empty payload)
        else:
            pair = records.take(pa.array([current, i]))
            winner = precombine(pair, spec, key_column=key_column)
            winner_arrival = winner.column(ARRIVAL_COLUMN)[0].as_py()
            state[key] = (
                i if winner_arrival == records.column(ARRIVAL_COLUMN)[i].as_py() else current
            )
    return records.take(pa.array(sorted(state.values())))


def unorder_log_deletes(log: pa.Table, ordering_field: str | None) -> pa.Table:
    """Log records whose deletes carry no ordering value: on table version 6 a log delete
    removes the stored row whatever its ordering value (Java 0.x's Spark readers)."""
    if ordering_field is None or ordering_field not in log.column_names:
        return log
    is_delete = pc.fill_null(log.column(DELETE_RECORD_COLUMN), False)
    ordering = log.column(ordering_field)
    unordered = pc.if_else(is_delete, pa.nulls(log.num_rows, ordering.type), ordering)
    index = log.schema.get_field_index(ordering_field)
    return log.set_column(index, log.schema.field(ordering_field), unordered)
