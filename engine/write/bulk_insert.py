"""bulk_insert the way Hudi's default sort mode (``NONE``) writes it: no shuffle, no sort.

Every task writes the records it reads, as Spark's own partitioned Parquet write does: a new
file group per partition path among its records, rolled over to another one when a file holds
the rows ``hoodie.parquet.max.file.size`` allows at the average record size. Names follow
Hudi's bulk insert: one file id prefix (a UUID) per task and ``<prefix>-<n>`` per file group,
write token ``<task partition>-<stage>-<attempt>``, seqnos ``<instant>_<task partition>_<row>``
counted per file.

Nothing is planned per file group on the driver, so nothing is routed: the records stream
through the task, are cut per partition path a chunk at a time, stamped with their meta
columns and buffered per file group until a row group is worth writing; a task holds at most
about ``_BUFFER_BYTES`` of rows, not its input. Writes that combine duplicate keys
(``hoodie.combine.before.insert``) need a key's records in one task and take the routed path.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.config import HoodieConfig, WriteOperation
from engine.faults import checkpoint
from engine.fs.filenames import (
    TaskInfo,
    new_file_id,
)
from engine.fs.properties import write_partition_metadata
from engine.fs.storage import Storage
from engine.io.parquet import ROW_GROUP_ROWS, BaseFileWriter
from engine.model.keygen import KeyGenSpec, generate_partition_paths, generate_record_keys
from engine.model.merge import INTERNAL_COLUMNS
from engine.model.meta_fields import stamp_commit
from engine.model.schema import (
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
)
from engine.services.new_files import NewBaseFile
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action
from engine.write.grouping import groups_in_arrival_order
from engine.write.handles import WriteContext, prepare_incoming
from engine.write.operation_field import stamp_operations
from engine.write.plan import WriteJob
from engine.write.routing import UnitWriter, Unrouted
from engine.write.write_status import encode_stats

__all__ = ["BulkInsertTask", "streams_bulk_insert", "write_bulk_insert", "write_task_records"]

# rows a task gathers from its input before cutting them per partition path (bigger chunks,
# fewer per-chunk steps; Spark hands mapInArrow 10,000-row batches)
_CHUNK_ROWS = 131_072
# rows a task holds across its open file groups before it writes the biggest buffer out
_BUFFER_BYTES = 128 * 1024 * 1024


def streams_bulk_insert(cfg: HoodieConfig, operation: WriteOperation) -> bool:
    """Whether the write is a bulk_insert that needs no routing: it does not combine keys
    (``hoodie.combine.before.insert``) and its sort mode is ``NONE`` (the other modes route
    records to sorted file groups)."""
    return (
        operation == WriteOperation.BULK_INSERT
        and cfg.get(config.BULKINSERT_SORT_MODE) == "NONE"
        and cfg.get(config.COMBINE_BEFORE_INSERT) is not True
    )


def write_bulk_insert(job: WriteJob, action: Action, record_size: int) -> list[HoodieWriteStat]:
    """Write a requested bulk_insert's records: ``<t>.<action>.inflight``, the partition
    metafiles of the partitions the batch holds, then one job whose tasks write new file
    groups from the records they read.

    Args:
        job: The requested write.
        action: ``commit`` or ``deltacommit``.
        record_size: Bytes per record new files are sized with (as the routed path sizes them).
    """
    located = job.locate()  # no index lookup: every record is an insert
    job.start_inflight(action, None)
    for partition in sorted(set(job.touched_partitions)):
        write_partition_metadata(job.storage, partition, job.instant_time)
    rows_per_file = max(1, job.cfg.get(config.PARQUET_MAX_FILE_SIZE) // max(1, record_size))
    ctx = job.write_context()
    return job.data_runner.write_routed(located, Unrouted(rows_per_file), ctx, job.batch.spec)


@dataclass(frozen=True)
class BulkInsertTask(UnitWriter):
    """The task side of :class:`~engine.write.routing.Unrouted`: the records a task reads
    are its one unit, streamed through :func:`write_task_records` (a task holds a few row
    groups, never its whole input).

    Attributes:
        rows_per_file: Rows after which a file group is closed and another one opened.
        keygen: When given, the records carry no record key and partition path: the task
            generates them (see :func:`write_task_records`).
    """

    rows_per_file: int
    keygen: KeyGenSpec | None = None

    def write_task(
        self,
        batches: Iterable[pa.RecordBatch],
        task_partition: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> Iterator[pa.RecordBatch]:
        stats = write_task_records(
            batches,
            ctx,
            task,
            partition_id=task_partition,
            rows_per_file=self.rows_per_file,
            keygen=self.keygen,
        )
        if stats:
            yield encode_stats(stats)


@dataclass
class _FileGroup:
    """A new file group being written by this task: its rows not yet written, its writer."""

    new: NewBaseFile
    rows: int = 0  # rows stamped so far (written or buffered)
    pending: list[pa.Table] = field(default_factory=list)
    pending_bytes: int = 0
    writer: BaseFileWriter | None = None


class _TaskWriter:
    """The file groups one task writes (see the module notes)."""

    def __init__(
        self, ctx: WriteContext, task: TaskInfo, partition_id: int, rows_per_file: int
    ) -> None:
        self.ctx = ctx
        self.storage = Storage(ctx.base_path, ctx.s3)
        self.partition_id = partition_id
        self.rows_per_file = rows_per_file
        self.task = task
        self.prefix = str(uuid.uuid4())
        self.opened = 0
        self.open: dict[str, _FileGroup] = {}
        self.stats: list[HoodieWriteStat] = []
        self.dictionary: bool | list[str] | None = None  # chosen from the task's first rows

    def add(self, chunk: pa.Table) -> None:
        """Stamp and buffer a chunk of records, cut per partition path."""
        for partition, _, rows in groups_in_arrival_order(chunk, PARTITION_PATH_COLUMN):
            rows = self._inserts(rows)
            while rows.num_rows:
                group = self.open.get(partition) or self._new_group(partition)
                take = min(rows.num_rows, self.rows_per_file - group.rows)
                self._buffer(group, rows.slice(0, take))
                rows = rows.slice(take)
                if group.rows >= self.rows_per_file:
                    self._close(group)
        while sum(g.pending_bytes for g in self.open.values()) > _BUFFER_BYTES:
            self._flush(max(self.open.values(), key=lambda g: g.pending_bytes))

    def finish(self) -> list[HoodieWriteStat]:
        for group in list(self.open.values()):
            self._close(group)
        return self.stats

    def _inserts(self, rows: pa.Table) -> pa.Table:
        """The records as inserts aligned to the table schema (delete records dropped)."""
        incoming, is_delete = prepare_incoming(rows, self.ctx)
        if pc.any(is_delete).as_py():
            incoming = incoming.filter(pc.invert(is_delete))
        return incoming.drop_columns([c for c in INTERNAL_COLUMNS if c in incoming.column_names])

    def _new_group(self, partition: str) -> _FileGroup:
        file_id = new_file_id(self.opened, prefix=self.prefix)
        self.opened += 1
        new = NewBaseFile.named(
            partition, file_id, self.partition_id, self.task, self.ctx.instant_time
        )
        group = _FileGroup(new)
        self.open[partition] = group
        return group

    def _buffer(self, group: _FileGroup, rows: pa.Table) -> None:
        rows = stamp_commit(rows, self.ctx.instant_time, self.partition_id, group.rows)
        rows = stamp_operations(group.new.stamp(rows), pa.array([], pa.string()))
        group.pending.append(rows)
        group.pending_bytes += rows.nbytes
        group.rows += rows.num_rows
        if sum(t.num_rows for t in group.pending) >= ROW_GROUP_ROWS:
            self._flush(group)

    def _flush(self, group: _FileGroup) -> None:
        """Write a file group's buffered rows (opening its file at the first rows)."""
        if not group.pending:
            return
        rows = pa.concat_tables(group.pending)
        group.pending, group.pending_bytes = [], 0
        if group.writer is None:
            checkpoint("task.before_file")
            group.new.mark(self.storage, self.ctx.instant_time, "CREATE")
            group.writer = BaseFileWriter(
                self.storage,
                group.new.rel_path,
                rows,
                avro_schema_with_meta=self.ctx.avro_schema_with_meta,
                bloom=self.ctx.bloom,
                compression=self.ctx.compression,
                dictionary=self.dictionary,
            )
            self.dictionary = group.writer.dictionary  # the task's files share the choice
        try:
            group.writer.write(rows)
        except BaseException:
            group.writer.abort()
            raise

    def _close(self, group: _FileGroup) -> None:
        self._flush(group)
        del self.open[group.new.partition_path]
        if group.writer is None:
            return
        checkpoint("file.mid_write")
        size = group.writer.close()
        checkpoint("task.after_file")
        self.stats.append(
            group.new.stat(
                prev_commit="null",
                size=size,
                created=True,
                num_writes=group.rows,
                num_inserts=group.rows,
            )
        )


def write_task_records(
    batches: Iterable[pa.RecordBatch],
    ctx: WriteContext,
    task: TaskInfo,
    *,
    partition_id: int,
    rows_per_file: int,
    keygen: KeyGenSpec | None = None,
) -> list[HoodieWriteStat]:
    """Write the records one task reads as new file groups; their write stats.

    Args:
        batches: The task's records (data columns, record key and partition path unless
            ``keygen`` is given, optional internal columns), in arrival order.
        ctx: Write snapshot.
        task: The task attempt (write token).
        partition_id: The task's partition (write token, seqnos).
        rows_per_file: Rows after which a file group is closed and another one opened.
        keygen: When given, the batches carry no record key and partition path: they are
            generated here from the records' fields.
    """
    writer = _TaskWriter(ctx, task, partition_id, rows_per_file)
    for chunk in _chunks(batches):
        if keygen is not None:
            chunk = chunk.append_column(RECORD_KEY_COLUMN, generate_record_keys(chunk, keygen))
            paths = generate_partition_paths(chunk, keygen)
            chunk = chunk.append_column(PARTITION_PATH_COLUMN, paths)
        writer.add(chunk)
    return writer.finish()


def _chunks(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.Table]:
    """The batches gathered into tables of about ``_CHUNK_ROWS`` rows."""
    gathered: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        gathered.append(batch)
        rows += batch.num_rows
        if rows >= _CHUNK_ROWS:
            yield pa.Table.from_batches(gathered)
            gathered, rows = [], 0
    if gathered:
        yield pa.Table.from_batches(gathered)
