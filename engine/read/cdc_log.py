"""The CDC query on merge-on-read file groups: the changes of a deltacommit's log file, and the
rows of a replaced file slice.

A deltacommit appends updates and deletes to log files and writes no ``.cdc`` file for them
(Hudi writes those only with a base file), so their changes are inferred on read, as Hudi's
``HoodieCDCExtractor`` (case LOG_FILE) and its Spark CDC reader do::

    before state   the file slice the log file was appended to, as the deltacommit's write stat
                   names it (baseFile, logFiles without the log file itself), merged as a
                   snapshot read merges it
    log records    the log file's records, one per key (the log scanner's fold)
    op             delete record, key in the before state   'd'  before: the stored row
                   delete record, key absent                nothing (it deleted nothing)
                   data record, key absent                  'i'  after: the record
                   data record, key present                 'u'  before: the stored row, after:
                                                            the payload's merge of the two;
                                                            nothing when the payload keeps the
                                                            stored row as it was

A replacecommit on a merge-on-read table deletes the replaced file group's latest file slice:
its merged rows (base ⊕ logs) are 'd'. Images carry every column of the slice's rows, meta
columns included, as Hudi's reader returns them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from engine import config
from engine.config import TableType
from engine.errors import QueryError
from engine.fs.filenames import parse_log_file_name, partition_file_path
from engine.fs.storage import Storage
from engine.io.parquet import read_base_file, table_arrow_schema
from engine.model.cdc_schema import CdcOperation
from engine.model.merge import MergeSpec, combine_with_stored
from engine.model.promote import promote_table
from engine.model.schema import RECORD_KEY_COLUMN
from engine.read.log_scanner import merge_slice_rows, slice_log_records
from engine.read.plan import load_table_info
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSlice, FileSystemView, Visibility

__all__ = [
    "Change",
    "MergeOnReadSlices",
    "SliceContext",
    "before_slice_of_log",
    "log_file_changes",
    "log_path",
    "replaced_slice_changes",
    "slice_context",
]

Row = dict[str, Any]
Change = tuple[str, Row | None, Row | None]  # op, before image, after image


@dataclass(frozen=True)
class SliceContext:
    """What merging a file slice needs, shipped with the splits to the tasks (picklable).

    Attributes:
        merge: payload class and ordering field of the table.
        orders_deletes: table version 8+: a log delete's ordering value counts.
        visibility: the committed instants (log blocks of others are skipped).
        avro_schema: the table's latest Avro schema (without meta fields), for log-only slices.
    """

    merge: MergeSpec
    orders_deletes: bool
    visibility: Visibility
    avro_schema: str | None


def slice_context(storage: Storage, timeline: Timeline) -> SliceContext:
    """The merge rules and the committed instants of the table, read once on the driver."""
    table = load_table_info(storage)
    return SliceContext(
        merge=MergeSpec(table.payload_class, table.ordering_field),
        orders_deletes=table.orders_deletes,
        visibility=Visibility.of(timeline),
        avro_schema=timeline.latest_schema()
        or table.properties.get(config.CREATE_SCHEMA.key)
        or None,
    )


def before_slice_of_log(partition: str, stat: HoodieWriteStat) -> FileSlice:
    """The file slice a log file was appended to, before it: the write stat's base file and
    log files (``HoodieCommitMetadata.getFileSliceForFileGroupFromDeltaCommit``), the log file
    itself left out."""
    current = str(stat.path).rsplit("/", 1)[-1]
    logs = sorted(
        (name for name in stat.log_files or () if name != current),
        key=lambda name: parse_log_file_name(name).sort_key(),
    )
    return FileSlice(partition, stat.file_id, stat.prev_commit, stat.base_file or None, tuple(logs))


def _slice_schema(ctx: SliceContext, base: pa.Table | None, where: str) -> pa.Schema:
    """The base file's columns as it stores them, then the columns the table gained since (a
    later log record carries them; the stored rows read them as null)."""
    latest = table_arrow_schema(ctx.avro_schema) if ctx.avro_schema else None
    if base is None:
        if latest is None:
            raise QueryError(f"CDC query: no table schema to read the log files of {where}")
        return latest
    if latest is None:
        return base.schema
    stored = set(base.schema.names)
    return pa.schema([*base.schema, *(f for f in latest if f.name not in stored)])


def _read_base(storage: Storage, file_slice: FileSlice) -> pa.Table | None:
    path = file_slice.base_file_path
    if path is None:
        return None
    if not storage.exists(path):
        raise QueryError(
            f"CDC query: the base file {path} of file group {file_slice.file_id} is gone "
            "(cleaned?); the change stream before it can no longer be read"
        )
    return read_base_file(storage, path)


def _log_records(
    storage: Storage, log_paths: list[str], schema: pa.Schema, ctx: SliceContext
) -> pa.Table | None:
    """The log files' records, one per key, as the snapshot reader merges them."""
    for path in log_paths:
        if not storage.exists(path):
            raise QueryError(
                f"CDC query: the log file {path} is gone (cleaned?); the change stream "
                "through it can no longer be read"
            )
    return slice_log_records(
        storage,
        log_paths,
        visibility=ctx.visibility,
        schema=schema,
        spec=ctx.merge,
        orders_deletes=ctx.orders_deletes,
    )


def _merged_rows(
    storage: Storage, file_slice: FileSlice, ctx: SliceContext
) -> tuple[pa.Table, pa.Schema]:
    """The rows of a file slice (base ⊕ logs) and their schema."""
    base = _read_base(storage, file_slice)
    schema = _slice_schema(ctx, base, f"{file_slice.partition_path}/{file_slice.file_id}")
    stored = promote_table(base, schema) if base is not None else schema.empty_table()
    log = _log_records(storage, file_slice.log_file_paths, schema, ctx)
    return merge_slice_rows(stored, log, ctx.merge, schema), schema


def log_file_changes(
    storage: Storage, log_file: str, before: FileSlice, ctx: SliceContext
) -> list[Change]:
    """The changes one log file made to the file slice ``before`` it (see the module notes)."""
    stored, schema = _merged_rows(storage, before, ctx)
    log = _log_records(storage, [log_file], schema, ctx)
    if log is None:
        return []
    result = combine_with_stored(stored, log, ctx.merge)
    before_rows = {str(r[RECORD_KEY_COLUMN]): r for r in stored.to_pylist()}
    kept = {str(k) for k in result.unchanged.column(RECORD_KEY_COLUMN).to_pylist()}
    changes: list[Change] = []
    written: set[str] = set()
    for row in result.changed.select(schema.names).to_pylist():
        key = str(row[RECORD_KEY_COLUMN])
        written.add(key)
        old = before_rows.get(key)
        if old is None:
            changes.append((CdcOperation.INSERT.value, None, row))
        elif old != row:
            changes.append((CdcOperation.UPDATE.value, old, row))
    for key, old in before_rows.items():
        if key not in kept and key not in written:
            changes.append((CdcOperation.DELETE.value, old, None))
    return changes


def replaced_slice_changes(
    storage: Storage, file_slice: FileSlice, ctx: SliceContext
) -> list[Change]:
    """A replaced file group's last slice, every row deleted."""
    rows, _ = _merged_rows(storage, file_slice, ctx)
    return [(CdcOperation.DELETE.value, row, None) for row in rows.to_pylist()]


class MergeOnReadSlices:
    """A merge-on-read table's slice context, and the latest file slices of its replaced file
    groups from one listing per partition (the driver side of a CDC query)."""

    def __init__(self, storage: Storage, timeline: Timeline, context: SliceContext) -> None:
        self.storage = storage
        self.timeline = timeline
        self.context = context
        self._views: dict[str, FileSystemView] = {}

    @classmethod
    def of(cls, storage: Storage, timeline: Timeline) -> MergeOnReadSlices | None:
        """``None`` for a copy-on-write table (its slices are base files)."""
        table = load_table_info(storage)
        if table.table_type != TableType.MERGE_ON_READ:
            return None
        return cls(storage, timeline, slice_context(storage, timeline))

    def latest_before(self, partition: str, file_id: str, instant_time: str) -> FileSlice | None:
        """The group's committed slice with the greatest base instant before ``instant_time``."""
        if partition not in self._views:
            self._views[partition] = FileSystemView(
                self.storage, self.timeline, partition_paths=[partition]
            )
        visibility = self.context.visibility
        for group in self._views[partition].file_groups():
            if group.file_id == file_id:
                times = [
                    t
                    for t in group.base_instants()
                    if t < instant_time and visibility.is_committed(t)
                ]
                return group.slice_at(max(times)) if times else None
        return None


def log_path(partition: str, stat: HoodieWriteStat) -> str:
    """The log file a delta write stat reports (relative to the base path)."""
    name = str(stat.path).rsplit("/", 1)[-1]
    return partition_file_path(partition, name)
