"""Write handles: what one task does for one file group of a write, as Hudi's handles do.

One family, one interface (:class:`WriteHandle`: records in, write stats with the keys they
wrote out), run inside Spark tasks over Arrow tables (nothing here touches Spark or the
timeline)::

    CreateHandle   a new file group: the records as its first base file
    MergeHandle    copy-on-write: the group's base file and the records -> its new base file
    AppendHandle   merge-on-read: the records as log blocks on the group's latest file slice
                   (:mod:`engine.write.append`)

Every job of a write runs them (:func:`engine.write.routing.choose_handle` picks one per file
group). Every new base file (theirs, bulk_insert's streaming task writer's, a compaction's and
a clustering's) takes the same steps: :class:`engine.services.new_files.NewBaseFile`.

Given the incoming records routed to a bucket, the create and merge handles:

1. precombine them (payload rules of :mod:`engine.model.merge`);
2. create handle (new file group): write them as a new base file;
   merge handle (existing file group): read the current base file, combine stored rows with
   the batch, write the union as the group's new base file;
3. stamp the meta columns of every written record (untouched rows keep their commit time and
   seqno, only ``_hoodie_file_name`` follows the new file);
4. return the :class:`~engine.timeline.commit_metadata.HoodieWriteStat` of the file.

Sequence numbers are ``{instant_time}_{bucket_number}_{record_index}`` (Hudi uses the Spark
partition, which is the bucket there). File names carry the write token
``{bucket_number}-{stage_id}-{task_attempt_id}``, so a retried task writes another file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from engine.config import PARQUET_COMPRESSION_CODEC, WriteOperation
from engine.errors import HudiError
from engine.fs.filenames import (
    TaskInfo,
    partition_file_path,
)
from engine.fs.s3 import S3Settings
from engine.fs.storage import Storage
from engine.io.bloom_filter import BloomFilter, BloomFilterSpec, decode_footer_filter
from engine.io.parquet import align_to_schema, read_base_file_with_footer
from engine.metadata.data_keys import key_changes
from engine.model.cdc_schema import SupplementalLoggingMode
from engine.model.merge import (
    INTERNAL_COLUMNS,
    CombineResult,
    MergeSpec,
    combine_with_stored,
    delete_mask,
    precombine,
)
from engine.model.meta_fields import stamp_commit
from engine.model.schema import (
    RECORD_KEY_COLUMN,
)
from engine.services.new_files import NewBaseFile
from engine.timeline.commit_metadata import HoodieWriteStat, WrittenKeys
from engine.write.bucketing import Bucket
from engine.write.cdc import changes_of_merge, needs_cdc_file, write_cdc_file
from engine.write.operation_field import stamp_operations

__all__ = [
    "CreateHandle",
    "MergeHandle",
    "WriteContext",
    "WriteHandle",
    "base_file_handle",
    "prepare_incoming",
]


@dataclass(frozen=True, slots=True)
class WriteContext:
    """Frozen snapshot of what every task of one write needs (picklable)."""

    base_path: str
    instant_time: str
    operation: WriteOperation  # upsert | insert | bulk_insert | delete
    arrow_schema: pa.Schema  # base file schema, meta columns first
    avro_schema_with_meta: str
    merge_spec: MergeSpec
    combine: bool
    bloom: BloomFilterSpec  # the bloom filter every base file of the write carries
    compression: str = PARQUET_COMPRESSION_CODEC.default
    # timeline layout 2: a log file is named by the delta commit writing it, never appended to
    logs_named_by_instant: bool = False
    # CDC tables: the supplemental logging mode of the .cdc files merges write (None: no CDC)
    cdc_mode: SupplementalLoggingMode | None = None
    s3: S3Settings | None = None  # how tasks reach a table on S3
    # the table keeps a record index: each stat carries the keys its file wrote and deleted
    record_index: bool = False


def prepare_incoming(records: pa.Table, ctx: WriteContext) -> tuple[pa.Table, pa.ChunkedArray]:
    """The batch routed to one file group, ready to merge: precombined (when the write
    combines), aligned to the table schema, and its delete mask.

    Deletes by key carry no ordering value: they remove the stored row whatever its order
    (Java writes them to logs with IntWrapper(0), "natural order").
    """
    if ctx.combine:
        records = precombine(records, ctx.merge_spec)
    incoming = align_to_schema(records, ctx.arrow_schema, keep=INTERNAL_COLUMNS)
    ordering = ctx.merge_spec.ordering_field
    if ctx.operation == WriteOperation.DELETE and ordering in incoming.column_names:
        idx = incoming.schema.get_field_index(str(ordering))
        field = incoming.schema.field(idx)
        incoming = incoming.set_column(idx, field, pa.nulls(incoming.num_rows, field.type))
    return incoming, delete_mask(incoming)


class WriteHandle(Protocol):
    """What a task runs for one file group of a write: the records routed to the group in,
    the write stats of the files it wrote out (each with the keys its file wrote and deleted
    when the table keeps a record index, :attr:`HoodieWriteStat.written_keys`)."""

    def write(self, records: pa.Table, ctx: WriteContext, task: TaskInfo) -> list[HoodieWriteStat]:
        """Write ``records`` (data columns, ``_hoodie_record_key``, ``_hoodie_partition_path``
        and optional internal columns) into the group; the stats of the files written."""
        ...


@dataclass(frozen=True, slots=True)
class CreateHandle:
    """Hudi's ``HoodieCreateHandle``: a new file group's first base file, from the records
    routed to it (combined among themselves as the write's payload rules say)."""

    bucket: Bucket

    def write(self, records: pa.Table, ctx: WriteContext, task: TaskInfo) -> list[HoodieWriteStat]:
        stored = ctx.arrow_schema.empty_table()
        return [_write_base_file(self.bucket, stored, {}, records, ctx, task)]


@dataclass(frozen=True, slots=True)
class MergeHandle:
    """Hudi's ``HoodieMergeHandle`` (copy-on-write): the group's current base file read, its
    rows combined with the records routed to it, the union written as the group's new base
    file (untouched rows keep their commit time and seqno); on a CDC table, the ``.cdc`` file
    of the changes too."""

    bucket: Bucket

    def write(self, records: pa.Table, ctx: WriteContext, task: TaskInfo) -> list[HoodieWriteStat]:
        storage = Storage(ctx.base_path, ctx.s3)
        rel_old = partition_file_path(self.bucket.partition_path, str(self.bucket.base_file))
        stored, footer = read_base_file_with_footer(storage, rel_old)
        stored = align_to_schema(stored, ctx.arrow_schema)
        return [_write_base_file(self.bucket, stored, footer, records, ctx, task, rel_old)]


def base_file_handle(bucket: Bucket) -> CreateHandle | MergeHandle:
    """The handle writing ``bucket`` as a base file: a merge into its base file, if it has one."""
    return MergeHandle(bucket) if bucket.base_file is not None else CreateHandle(bucket)


def _write_base_file(
    bucket: Bucket,
    stored: pa.Table,
    footer: dict[bytes, bytes],
    records: pa.Table,
    ctx: WriteContext,
    task: TaskInfo,
    rel_old: str = "",
) -> HoodieWriteStat:
    """The new base file of one file group: ``records`` combined with the ``stored`` rows of
    its base file (none for a create), and its write stat."""
    started = time.monotonic()
    storage = Storage(ctx.base_path, ctx.s3)
    merged = _merge_records(stored, records, ctx)
    changed = align_to_schema(merged.changed, ctx.arrow_schema)
    if ctx.operation == WriteOperation.BULK_INSERT:
        changed = changed.sort_by(RECORD_KEY_COLUMN)
    new = NewBaseFile.named(
        bucket.partition_path, bucket.file_id, bucket.number, task, ctx.instant_time, started
    )
    changed = stamp_commit(changed, ctx.instant_time, bucket.number)
    changed = stamp_operations(changed, stored.column(RECORD_KEY_COLUMN))
    out = new.stamp(merged.merged_rows(changed))
    bloom_so_far = (
        _stored_filter(ctx.bloom, footer, stored.num_rows, rel_old)
        if footer and merged.keeps_stored_rows
        else None
    )
    created = bucket.base_file is None
    size = new.write(
        storage,
        out,
        instant_time=ctx.instant_time,
        io_type="CREATE" if created else "MERGE",
        avro_schema_with_meta=ctx.avro_schema_with_meta,
        bloom=ctx.bloom,
        compression=ctx.compression,
        bloom_so_far=bloom_so_far,
    )
    cdc_stats = _log_changes(storage, ctx, bucket, stored, merged, changed, out, new.write_token)
    stat = new.stat(
        prev_commit=bucket.prev_commit,
        size=size,
        created=created,
        num_writes=out.num_rows,
        num_deletes=merged.num_deletes,
        num_update_writes=merged.num_updates,
        num_inserts=merged.num_inserts,
    )
    return replace(stat, cdc_stats=cdc_stats or None, written_keys=_keys(ctx, out, stored))


def _keys(ctx: WriteContext, out: pa.Table, stored: pa.Table) -> WrittenKeys | None:
    """On a table with a record index, the keys the new base file ``out`` added to its file
    group and dropped from it, against the ``stored`` rows of the base file it replaces (both
    in memory: nothing is read back); else None."""
    if not ctx.record_index:
        return None
    new = out.column(RECORD_KEY_COLUMN).combine_chunks()
    old = stored.column(RECORD_KEY_COLUMN).combine_chunks()
    added, dropped = key_changes(new, old)
    return WrittenKeys(tuple(added), tuple(dropped))


def _stored_filter(
    spec: BloomFilterSpec, footer: dict[bytes, bytes], num_rows: int, where: str
) -> BloomFilter | None:
    """The stored file's bloom filter, to go on filling for a rewrite that keeps every stored
    row in its place; ``None`` (the new file's filter is built from all its keys) when the
    footer has none, an unreadable one, or one the write's options do not build."""
    try:
        previous = decode_footer_filter(footer, where)
    except HudiError:
        return None
    return None if previous is None else spec.continued(previous, num_rows)


def _log_changes(
    storage: Storage,
    ctx: WriteContext,
    bucket: Bucket,
    stored: pa.Table,
    merged: CombineResult,
    changed: pa.Table,
    out: pa.Table,
    write_token: str,
) -> dict[str, int] | None:
    """CDC tables: the ``.cdc`` file of a merge (:mod:`engine.write.cdc`), as ``cdcStats``."""
    if ctx.cdc_mode is None or bucket.base_file is None:
        return None
    if not needs_cdc_file(
        ctx.operation,
        num_writes=out.num_rows,
        num_inserts=merged.num_inserts,
        num_updates=merged.num_updates,
        num_deletes=merged.num_deletes,
    ):
        return None
    changes = changes_of_merge(
        stored, merged.unchanged, changed, appended=WriteOperation(ctx.operation).is_insert
    )
    rel, size = write_cdc_file(
        storage,
        changes=changes,
        mode=ctx.cdc_mode,
        table_schema=ctx.avro_schema_with_meta,
        partition_path=bucket.partition_path,
        file_id=bucket.file_id,
        instant_time=ctx.instant_time,
        write_token=write_token,
    )
    return {rel: size}


def _merge_records(stored: pa.Table, records: pa.Table, ctx: WriteContext) -> CombineResult:
    """The incoming records against the file group's stored rows (payload rules); the
    changed rows without the internal columns."""
    incoming, is_delete = prepare_incoming(records, ctx)
    if WriteOperation(ctx.operation).is_insert:
        # no index: records are appended; delete records have nothing to remove
        result = CombineResult.appended(stored, incoming.filter(pc.invert(is_delete)))
    else:
        result = combine_with_stored(stored, incoming, ctx.merge_spec)
    changed = result.changed
    changed = changed.drop_columns([c for c in INTERNAL_COLUMNS if c in changed.column_names])
    return replace(result, changed=changed)
