"""Append handle: what one task does for one file slice of a merge-on-read write.

Updates and deletes of keys a file group already holds are not merged into its base file; they
are appended to the file slice as log blocks (Hudi's ``HoodieAppendHandle``), and so are inserts
routed to the group when the index finds keys in log files (:mod:`engine.write.merge_on_read`;
counted in ``numInserts``, the updates in ``numUpdateWrites``), object-store style:
every append writes a NEW log file version of the slice, never re-opens an existing one::

    .{file_id}_{base_instant_time}.log.{version}_{write_token}      version = max existing + 1
      data block       records with meta columns (commit time, seqno, key, partition, file_id)
      data block       ... one per ~hoodie.logfile.data.block.max.size of estimated bytes
      DELETE_BLOCK     one, after the data blocks: deleted keys with their ordering values

A data block is an AVRO_DATA_BLOCK (type 3), the default of ``hoodie.logfile.data.block.format``
as in Hudi, or a PARQUET_DATA_BLOCK (type 5: a Parquet file written with the base files' codec
and dictionary choice) when that key is ``parquet`` (smaller and faster to read, not faster to
write at upsert block sizes: the measurement is in :mod:`engine.config`). Both carry the
INSTANT_TIME and SCHEMA (table schema with meta fields) headers and the same records, and both
are sized by the same estimate: the format changes how a block is encoded, never which records
it holds.

Block sizing follows the append handle: every record has a size estimate; the running estimate
starts at the first record's and is refined (``0.8 * old + 0.2 * record``) every 100 buffered
records and whenever the block looks full; a data block is flushed once the buffered count
reaches ``max_block_size / estimate``. After each flush the log file rolls over to the next
version when it has grown past ``hoodie.logfile.max.size`` (the last data block and the delete
block are written together, as Hudi does). Each log file written gets its own
``HoodieDeltaWriteStat``.

Records whose payload is a delete (``_hoodie_is_deleted`` true, or a hard delete of operation
``delete``) become delete records; their ordering value goes into the Java wrapper union (a hard
delete without one is IntWrapper 0, "natural order"), as Hudi's ``DeleteRecord`` does.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.config import LOGFILE_DATA_BLOCK_FORMAT
from engine.faults import checkpoint
from engine.fs.filenames import (
    TaskInfo,
    format_log_file_name,
    make_write_token,
    partition_file_path,
)
from engine.fs.storage import Storage
from engine.io.delete_block import DeleteRecord
from engine.io.logfile import (
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
)
from engine.io.parquet import align_to_schema
from engine.model.merge import INSERT_COLUMN
from engine.model.meta_fields import stamp_commit, stamp_file_name
from engine.model.schema import (
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
)
from engine.timeline.commit_metadata import HoodieWriteStat, WrittenKeys
from engine.timeline.markers import create_marker
from engine.write.handles import WriteContext, prepare_incoming
from engine.write.operation_field import stamp_operations

__all__ = [
    "AppendHandle",
    "AppendSlice",
    "LogWriteConfig",
    "append_to_file_slice",
    "estimate_record_sizes",
    "plan_data_blocks",
]

# HoodieAppendHandle refines its record size estimate every this many buffered records
_ESTIMATE_EVERY = 100
# per-field overhead of the Avro encoding (union branch, length varint)
_FIELD_OVERHEAD = 2


@dataclass(frozen=True, slots=True)
class AppendSlice:
    """The file slice an append writes its log file(s) to.

    Attributes:
        partition_path: Partition of the file group.
        file_id: File group id.
        base_instant_time: Base instant of the slice; the log file names carry it.
        base_file: The slice's base file name, ``None`` for a log-only slice.
        log_files: Log file names the slice already has, in Hudi's log file order.
        next_log_version: First version this append may use (greater than every version of
            the slice found on storage).
        log_bytes: Listed size of ``log_files`` together (sizes a slice as a small file).
    """

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file: str | None = None
    log_files: tuple[str, ...] = ()
    next_log_version: int = 1
    log_bytes: int = 0


@dataclass(frozen=True, slots=True)
class LogWriteConfig:
    """Log sizing and data block encoding of a write (``hoodie.logfile.data.block.max.size``,
    ``hoodie.logfile.max.size``, ``hoodie.logfile.data.block.format``)."""

    data_block_max_size: int = 256 * 1024 * 1024
    log_file_max_size: int = 1024 * 1024 * 1024
    data_block_format: str = LOGFILE_DATA_BLOCK_FORMAT.default

    def encode_data_block(self, rows: pa.Table, ctx: WriteContext) -> bytes:
        """One data block of ``rows`` (meta columns stamped) in the configured encoding."""
        if self.data_block_format == "parquet":
            return encode_parquet_data_block(
                rows, ctx.avro_schema_with_meta, ctx.instant_time, compression=ctx.compression
            )
        return encode_avro_data_block(rows, ctx.avro_schema_with_meta, ctx.instant_time)


def _bit_width(dtype: pa.DataType) -> int:
    try:
        return int(dtype.bit_width)
    except ValueError:  # nested and variable-width types
        return 0


def estimate_record_sizes(table: pa.Table) -> np.ndarray:
    """Estimated encoded bytes of every row, column by column (no encoding done).

    Variable-width values count their length, fixed-width ones their width, nested values
    the average bytes per row of their column; each field adds its Avro framing overhead.
    """
    n = table.num_rows
    sizes = np.zeros(n, dtype=np.int64)
    for column in table.columns:
        dtype = column.type
        if (
            pa.types.is_string(dtype)
            or pa.types.is_large_string(dtype)
            or pa.types.is_binary(dtype)
            or pa.types.is_large_binary(dtype)
        ):
            lengths = pc.fill_null(pc.binary_length(column), 0)
            sizes += np.asarray(lengths.to_numpy(zero_copy_only=False), dtype=np.int64)
        elif pa.types.is_boolean(dtype):
            sizes += 1
        elif _bit_width(dtype):
            sizes += max(1, _bit_width(dtype) // 8)
        elif n:
            sizes += int(column.nbytes // n)
        sizes += _FIELD_OVERHEAD
    return sizes


def plan_data_blocks(sizes: Sequence[int] | np.ndarray, max_block_size: int) -> list[int]:
    """Record counts of the data blocks the append handle flushes, in order.

    Args:
        sizes: Size estimate of each record, in arrival order.
        max_block_size: ``hoodie.logfile.data.block.max.size``.
    """
    n = len(sizes)
    if n == 0:
        return []
    estimates = np.asarray(sizes, dtype=np.int64)
    average = max(1, int(estimates[0]))
    blocks: list[int] = []
    buffered = 0
    i = 0
    while i < n:
        # jump over records where neither a refinement nor a flush can happen
        limit = max_block_size // average
        next_sample = buffered + (-buffered % _ESTIMATE_EVERY)
        stop = min(next_sample, max(limit, buffered))
        if stop > buffered:
            step = min(stop - buffered, n - i)
            buffered += step
            i += step
            continue
        if buffered >= limit or buffered % _ESTIMATE_EVERY == 0:
            average = max(1, int(average * 0.8 + int(estimates[i]) * 0.2))
            limit = max_block_size // average
        if buffered >= limit and buffered > 0:
            blocks.append(buffered)
            buffered = 0
        buffered += 1
        i += 1
    if buffered:
        blocks.append(buffered)
    return blocks


def _delete_records(deletes: pa.Table, ordering_field: str | None) -> list[DeleteRecord]:
    keys = deletes.column(RECORD_KEY_COLUMN).to_pylist()
    partitions = deletes.column(PARTITION_PATH_COLUMN).to_pylist()
    if ordering_field is not None and ordering_field in deletes.column_names:
        column = deletes.column(ordering_field)
        if pa.types.is_timestamp(column.type):
            # Java reads ordering values without logical conversion: epoch micros
            column = column.cast(pa.timestamp("us")).cast(pa.int64())
        orderings = column.to_pylist()
    else:
        orderings = [None] * deletes.num_rows
    return [
        DeleteRecord(str(key), str(partition or ""), ordering)
        for key, partition, ordering in zip(keys, partitions, orderings, strict=True)
    ]


@dataclass
class _LogFileBuffer:
    version: int
    name: str
    parts: list[bytes]
    size: int = 0
    records: int = 0
    inserts: int = 0  # of ``records``: keys the index found in no file group
    deletes: int = 0
    blocks: int = 0
    written_keys: list[pa.Array] = field(default_factory=list)  # of its data blocks
    deleted_keys: list[pa.Array] = field(default_factory=list)  # of its DELETE_BLOCK

    def add(self, block: bytes, *, records: int = 0, inserts: int = 0, deletes: int = 0) -> None:
        self.parts.append(block)
        self.size += len(block)
        self.records += records
        self.inserts += inserts
        self.deletes += deletes
        self.blocks += 1

    def keys(self) -> WrittenKeys:
        """The keys its blocks write and delete (the DELETE_BLOCK, last, wins)."""
        deleted = {k for array in self.deleted_keys for k in array.to_pylist()}
        written = {k for array in self.written_keys for k in array.to_pylist()} - deleted
        return WrittenKeys(tuple(sorted(written)), tuple(sorted(deleted)))


@dataclass(frozen=True, slots=True)
class AppendHandle:
    """Hudi's ``HoodieAppendHandle`` (merge-on-read): the records routed to a file group as log
    blocks on its latest slice (:func:`append_to_file_slice`); one of the write handles
    (:class:`engine.write.handles.WriteHandle`).

    Attributes:
        file_slice: The latest slice of the file group.
        bucket_number: The bucket's number in the write (seqnos, write token).
        log_config: Block and log file sizing.
    """

    file_slice: AppendSlice
    bucket_number: int
    log_config: LogWriteConfig

    def write(self, records: pa.Table, ctx: WriteContext, task: TaskInfo) -> list[HoodieWriteStat]:
        return append_to_file_slice(
            records,
            self.file_slice,
            ctx,
            task,
            bucket_number=self.bucket_number,
            log_config=self.log_config,
        )


def append_to_file_slice(
    records: pa.Table,
    file_slice: AppendSlice,
    ctx: WriteContext,
    task: TaskInfo,
    *,
    bucket_number: int,
    log_config: LogWriteConfig,
) -> list[HoodieWriteStat]:
    """Append the records routed to one file slice as log blocks; one stat per log file.

    Args:
        records: Incoming updates/deletes of keys the file group holds, and on an index
            that finds keys in log files inserts routed to it (data columns, record key,
            partition path and optional internal columns; ``INSERT_COLUMN`` marks inserts).
        file_slice: The latest slice of the file group.
        ctx: Write snapshot (instant, schemas, payload).
        task: Spark task attempt (for the write token).
        bucket_number: The bucket's number in the write (seqnos, write token).
        log_config: Block and log file sizing.
    """
    started = time.monotonic()
    storage = Storage(ctx.base_path, ctx.s3)
    incoming, is_delete = prepare_incoming(records, ctx)
    data = incoming.filter(pc.invert(is_delete))
    deletes = incoming.filter(is_delete)
    inserted = _insert_flags(data)
    data = align_to_schema(data, ctx.arrow_schema)
    data = stamp_commit(data, ctx.instant_time, bucket_number)
    data = stamp_file_name(data, file_slice.file_id)
    data = stamp_operations(data, None)
    if data.num_rows == 0 and deletes.num_rows == 0:
        return []

    write_token = make_write_token(bucket_number, task.stage_id, task.task_attempt_id)
    files = _encode_log_files(data, inserted, deletes, file_slice, ctx, log_config, write_token)
    elapsed = int((time.monotonic() - started) * 1000)
    return _write_log_files(storage, files, file_slice, ctx, elapsed)


def _insert_flags(data: pa.Table) -> np.ndarray:
    """Which records of ``data`` are inserts (:data:`~engine.model.merge.INSERT_COLUMN`; a
    batch without it holds updates only)."""
    if INSERT_COLUMN not in data.column_names:
        return np.zeros(data.num_rows, dtype=bool)
    flags = pc.fill_null(data.column(INSERT_COLUMN), False)
    return np.asarray(flags.to_numpy(zero_copy_only=False), dtype=bool)


def _encode_log_files(
    data: pa.Table,
    inserted: np.ndarray,
    deletes: pa.Table,
    file_slice: AppendSlice,
    ctx: WriteContext,
    log_config: LogWriteConfig,
    write_token: str,
) -> list[_LogFileBuffer]:
    """The log blocks of one append, in log files that roll over past the max log file size:
    data blocks of at most the block size, then one delete block."""
    files: list[_LogFileBuffer] = []

    def current() -> _LogFileBuffer:
        if not files or (files[-1].size > log_config.log_file_max_size and files[-1].blocks):
            if ctx.logs_named_by_instant:  # layout 2: new log files of this delta commit
                log_instant, version = ctx.instant_time, 1 + len(files)
            else:
                log_instant = file_slice.base_instant_time
                version = file_slice.next_log_version + len(files)
            name = format_log_file_name(file_slice.file_id, log_instant, version, write_token)
            files.append(_LogFileBuffer(version, name, []))
        return files[-1]

    block_counts = plan_data_blocks(
        estimate_record_sizes(data), log_config.data_block_max_size
    ) or [0]
    ordering = ctx.merge_spec.ordering_field
    start = 0
    for k, count in enumerate(block_counts):
        target = current()
        if count:
            block = log_config.encode_data_block(data.slice(start, count), ctx)
            inserts = int(inserted[start : start + count].sum())
            target.add(block, records=count, inserts=inserts)
            target.written_keys.append(data.column(RECORD_KEY_COLUMN).slice(start, count))
            start += count
        if k == len(block_counts) - 1 and deletes.num_rows:
            block = encode_delete_block(
                _delete_records(deletes, ordering),
                ctx.instant_time,
                ctx.avro_schema_with_meta,
                ordering_field=ordering,
            )
            target.add(block, deletes=deletes.num_rows)
            target.deleted_keys.append(deletes.column(RECORD_KEY_COLUMN))
    return files


def _write_log_files(
    storage: Storage,
    files: list[_LogFileBuffer],
    file_slice: AppendSlice,
    ctx: WriteContext,
    elapsed_ms: int,
) -> list[HoodieWriteStat]:
    """Write each log file that holds blocks (marker first); one write stat per log file, with
    the keys it wrote and deleted when the table keeps a record index."""
    instant_time = ctx.instant_time
    stats: list[HoodieWriteStat] = []
    known = list(file_slice.log_files)
    for log_file in files:
        if not log_file.blocks:
            continue
        rel = partition_file_path(file_slice.partition_path, log_file.name)
        create_marker(storage, instant_time, file_slice.partition_path, log_file.name, "APPEND")
        checkpoint("task.after_marker")
        storage.write_bytes(rel, b"".join(log_file.parts))
        known.append(log_file.name)
        stats.append(
            HoodieWriteStat.of_file(
                file_id=file_slice.file_id,
                path=rel,
                partition_path=file_slice.partition_path,
                prev_commit=file_slice.base_instant_time,
                size=log_file.size,
                elapsed_ms=elapsed_ms,
                created=False,  # an append reports its time as upsert time
                num_writes=log_file.records,
                num_deletes=log_file.deletes,
                num_update_writes=log_file.records - log_file.inserts,
                num_inserts=log_file.inserts,
                log_version=log_file.version,
                log_offset=0,
                base_file=file_slice.base_file or "",
                log_files=tuple(known),
            )
        )
        if ctx.record_index:
            stats[-1] = replace(stats[-1], written_keys=log_file.keys())
    return stats
