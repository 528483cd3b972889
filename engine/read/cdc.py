"""The CDC query: the changes a table's writes made in ``(begin, end]``, as Hudi's CDC relation
returns them (``op``, ``ts_ms``, ``before``, ``after``; the images as JSON objects).

Planned on the driver the way Hudi's ``HoodieCDCExtractor`` does it: every completed commit,
deltacommit and replacecommit in the range whose operation changes data (not a compaction),
and, per write stat, where its changes are::

    AS_IS             the stat lists .cdc files (cdcStats): their records, completed by the
                      logging mode: OP_KEY_ONLY takes the before image from the file group's
                      previous base file and the after image from the new one, DATA_BEFORE
                      the after image from the new one, DATA_BEFORE_AFTER needs nothing
    BASE_FILE_INSERT  no .cdc file, every written row an insert: the base file's rows are 'i'
    BASE_FILE_DELETE  a delete that emptied the file group: the previous base file's rows are 'd'
    LOG_FILE          (merge-on-read) a deltacommit's log file: its records against the file
                      slice before it (engine.read.cdc_log)
    REPLACE_COMMIT    a file group a replacecommit replaced: its last slice's rows are 'd'
                      (on merge-on-read the slice's base file merged with its log files)

Compactions are not data changes and are skipped: their changes were already read from the log
files they compact.

The range is one of instant (requested) times on table version 6 and of completion times on
versions 8 and 9, as every incremental query there (``engine.read.plan``); ``ts_ms`` is the
instant time of the write either way, as Hudi's writers log it.

Images read from .cdc records carry the data columns; images read from base files carry the meta
columns too (as Hudi's relation returns them). A table created without CDC fails the query, as
Hudi's does.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from engine import config
from engine.errors import QueryError
from engine.fs.filenames import (
    is_base_file,
    parse_base_file_name,
    partition_file_path,
)
from engine.fs.properties import METAFOLDER, read_properties
from engine.fs.s3 import S3Settings
from engine.fs.storage import Storage
from engine.io.logfile import HoodieLogBlockType, decode_cdc_data_block, read_log_blocks
from engine.io.parquet import read_base_file
from engine.model.cdc_schema import (
    CDC_AFTER,
    CDC_BEFORE,
    CDC_COLUMNS,
    CDC_OP,
    CDC_RECORD_KEY,
    CdcOperation,
    SupplementalLoggingMode,
    cdc_query_schema,
)
from engine.model.schema import RECORD_KEY_COLUMN
from engine.read.cdc_log import (
    Change,
    MergeOnReadSlices,
    SliceContext,
    before_slice_of_log,
    log_file_changes,
    log_path,
    replaced_slice_changes,
)
from engine.read.time_travel import require_begin_not_restored
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.instant import Action, Instant
from engine.timeline.lsm_history import read_history
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSlice

__all__ = ["CdcSplit", "plan_changes", "read_changes", "read_split"]

_DATA_CHANGE_OPERATIONS = frozenset(
    {
        "INSERT",
        "UPSERT",
        "BULK_INSERT",
        "DELETE",
        "INSERT_OVERWRITE",
        "INSERT_OVERWRITE_TABLE",
        "DELETE_PARTITION",
        "UPSERT_PREPPED",
        "INSERT_PREPPED",
        "BULK_INSERT_PREPPED",
        "DELETE_PREPPED",
    }
)
_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)


@dataclass(frozen=True)
class CdcSplit:
    """The changes of one file group in one instant, and where to read them (picklable).

    Attributes:
        instant_time: the write (``ts_ms``).
        case: AS_IS, BASE_FILE_INSERT, BASE_FILE_DELETE or REPLACE_COMMIT.
        cdc_files: the .cdc files (AS_IS).
        base_file: the base file the instant wrote (AS_IS, BASE_FILE_INSERT).
        before_file: the group's base file before the instant (AS_IS with OP_KEY_ONLY,
            BASE_FILE_DELETE, REPLACE_COMMIT).
        log_file: the log file the instant appended (LOG_FILE).
        before_slice: the file slice before the instant (LOG_FILE; REPLACE_COMMIT on
            merge-on-read).
        slice_context: how to merge ``before_slice`` (merge-on-read).
    """

    instant_time: str
    case: str
    cdc_files: tuple[str, ...] = ()
    base_file: str | None = None
    before_file: str | None = None
    log_file: str | None = None
    before_slice: FileSlice | None = None
    slice_context: SliceContext | None = None


@dataclass(frozen=True)
class CdcPlan:
    """A CDC query's splits, in instant order, and the table's logging mode."""

    base_path: str
    mode: SupplementalLoggingMode
    splits: tuple[CdcSplit, ...] = field(default_factory=tuple)
    s3: S3Settings | None = None  # how tasks reach a table on S3

    @property
    def storage(self) -> Storage:
        return Storage(self.base_path, self.s3)


def _require_cdc(storage: Storage) -> SupplementalLoggingMode:
    props = read_properties(storage)
    enabled = (props.get(config.TABLE_CDC_ENABLED.key) or "false").strip().lower() == "true"
    if not enabled:
        raise QueryError(
            f"CDC query ({config.QUERY_INCREMENTAL_FORMAT.key}=cdc) on the table at "
            f"{storage.base_path}, which has {config.TABLE_CDC_ENABLED.key}=false: it kept no "
            "change log; read it with the latest_state incremental query instead"
        )
    raw = props.get(config.CDC_SUPPLEMENTAL_LOGGING_MODE.key)
    mode = (
        config.CDC_SUPPLEMENTAL_LOGGING_MODE.parse(raw)
        if raw
        else (config.CDC_SUPPLEMENTAL_LOGGING_MODE.default)
    )
    return SupplementalLoggingMode(mode)


def _require_active(storage: Storage, timeline: Timeline, begin: str) -> None:
    """The range must start inside the active timeline: archived commits (and the files the
    cleaner removed with them) cannot be read back, and a stream short of them would be wrong."""
    if timeline.layout.version >= 2:
        _require_unarchived(storage, timeline, begin)
        return
    first = timeline.first_commit_time()
    if first is None or begin >= first:
        return
    folder = (
        f"{METAFOLDER}/{read_properties(storage).get(config.ARCHIVELOG_FOLDER.key) or 'archived'}"
    )
    if any(e.name.startswith(".commits_.archive") for e in storage.list_dir(folder)):
        raise QueryError(
            f"CDC query from {begin} on the table at {storage.base_path}: commits before "
            f"{first} were archived, so the changes since {begin} can no longer be read; "
            f"start at {first} or later (or read the snapshot)"
        )


def _require_unarchived(storage: Storage, timeline: Timeline, begin: str) -> None:
    """Layout 2: no commit of the LSM history may have completed after ``begin``."""
    history = read_history(storage, timeline.layout.table_format.history_dir)
    late = [
        a.instant
        for a in history
        if a.instant.action in _ACTIONS and (a.instant.completion_time or "") > begin
    ]
    if late:
        raise QueryError(
            f"CDC query from {begin} on the table at {storage.base_path}: commit "
            f"{late[-1].instant_time} (completed {late[-1].completion_time}) was archived, so "
            f"the changes since {begin} can no longer be read; start at "
            f"{max(str(i.completion_time) for i in late)} or later (or read the snapshot)"
        )


def _in_range(timeline: Timeline, begin: str, end: str | None) -> list[Instant]:
    """The completed writes of ``(begin, end]``: by instant (requested) time on table version 6,
    by completion time on versions 8 and 9 (layout 2), as Hudi 1.x ranges incremental queries."""
    if timeline.layout.version >= 2:
        return [i for i in timeline.completed_in(begin, end) if i.action in _ACTIONS]
    return [
        i
        for i in timeline.completed(_ACTIONS)
        if begin < i.instant_time and (end is None or i.instant_time <= end)
    ]


class _BaseFiles:
    """Base files of file groups by instant, listed once per partition."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._listed: dict[str, dict[tuple[str, str], str]] = {}

    def _partition(self, partition: str) -> dict[tuple[str, str], str]:
        if partition not in self._listed:
            found: dict[tuple[str, str], str] = {}
            for entry in self.storage.list_dir(partition):
                if not entry.is_dir and is_base_file(entry.name):
                    name = parse_base_file_name(entry.name)
                    found[(name.file_id, name.instant_time)] = entry.name
            self._listed[partition] = found
        return self._listed[partition]

    def at(self, partition: str, file_id: str, instant_time: str) -> str:
        name = self._partition(partition).get((file_id, instant_time))
        if name is None:
            raise QueryError(
                f"CDC query: the base file of file group {file_id} in partition "
                f"{partition!r} at instant {instant_time} is gone (cleaned?); the change "
                "stream before it can no longer be read"
            )
        return partition_file_path(partition, name)

    def latest_before(self, partition: str, file_id: str, instant_time: str) -> str | None:
        times = [t for (f, t) in self._partition(partition) if f == file_id and t < instant_time]
        return self.at(partition, file_id, max(times)) if times else None


def plan_changes(storage: Storage, begin: str, end: str | None) -> CdcPlan:
    """The splits of a CDC query over ``(begin, end]`` (``end``: the latest commit)."""
    mode = _require_cdc(storage)
    timeline = Timeline.load(storage)
    _require_active(storage, timeline, begin)
    require_begin_not_restored(timeline, begin)
    files = _BaseFiles(storage)
    mor = MergeOnReadSlices.of(storage, timeline)
    splits: list[CdcSplit] = []
    for instant in _in_range(timeline, begin, end):
        metadata = timeline.read_commit_metadata(instant)
        if metadata.operation_type not in _DATA_CHANGE_OPERATIONS:
            continue
        splits.extend(_instant_splits(instant, metadata, mode, files, mor))
    return CdcPlan(storage.base_path, mode, tuple(splits), storage.s3)


def _instant_splits(
    instant: Instant,
    metadata: HoodieCommitMetadata,
    mode: SupplementalLoggingMode,
    files: _BaseFiles,
    mor: MergeOnReadSlices | None = None,
) -> list[CdcSplit]:
    out: list[CdcSplit] = []
    for partition, stats in sorted(metadata.partition_to_write_stats.items()):
        for stat in sorted(stats, key=lambda s: s.file_id):
            if mor is not None and stat.is_delta and not stat.cdc_stats:
                out.append(_log_file_split(instant, partition, stat, mor))
                continue
            out.append(_stat_split(instant, partition, stat, metadata.operation_type, mode, files))
    for partition, file_id in sorted(metadata.replaced_file_ids()):
        if mor is not None:
            last = mor.latest_before(partition, file_id, instant.instant_time)
            if last is not None:
                out.append(
                    CdcSplit(
                        instant.instant_time,
                        "REPLACE_COMMIT",
                        before_slice=last,
                        slice_context=mor.context,
                    )
                )
            continue
        before = files.latest_before(partition, file_id, instant.instant_time)
        if before is not None:
            out.append(CdcSplit(instant.instant_time, "REPLACE_COMMIT", before_file=before))
    return out


def _log_file_split(
    instant: Instant, partition: str, stat: HoodieWriteStat, mor: MergeOnReadSlices
) -> CdcSplit:
    """LOG_FILE: a deltacommit's log file, read against the slice its write stat names."""
    if instant.action != Action.DELTA_COMMIT:
        raise QueryError(
            f"CDC query: instant {instant.instant_time} ({instant.action}) reports the log file "
            f"{stat.path}; only deltacommits append log files"
        )
    return CdcSplit(
        instant.instant_time,
        "LOG_FILE",
        log_file=log_path(partition, stat),
        before_slice=before_slice_of_log(partition, stat),
        slice_context=mor.context,
    )


def _stat_split(
    instant: Instant,
    partition: str,
    stat: HoodieWriteStat,
    operation: str,
    mode: SupplementalLoggingMode,
    files: _BaseFiles,
) -> CdcSplit:
    t = instant.instant_time
    if stat.path is None or stat.is_delta:
        raise QueryError(
            f"CDC query: instant {t} reports the log file {stat.path} of file group "
            f"{stat.file_id} with .cdc files (or on a copy-on-write table): not a write whose "
            "changes can be read"
        )
    has_previous = stat.prev_commit not in ("null", "None", "")
    if stat.cdc_stats:
        before = None
        if mode is SupplementalLoggingMode.OP_KEY_ONLY and has_previous:
            before = files.at(partition, stat.file_id, stat.prev_commit)
        return CdcSplit(t, "AS_IS", tuple(sorted(stat.cdc_stats)), stat.path, before)
    if operation == "DELETE" and stat.num_writes == 0 and stat.num_deletes != 0:
        before = files.at(partition, stat.file_id, stat.prev_commit)
        return CdcSplit(t, "BASE_FILE_DELETE", before_file=before)
    if (
        stat.num_update_writes == 0
        and stat.num_deletes == 0
        and stat.num_writes == stat.num_inserts
    ):
        return CdcSplit(t, "BASE_FILE_INSERT", base_file=stat.path)
    raise QueryError(
        f"CDC query: instant {t} rewrote {stat.path} with updates or deletes but listed no .cdc "
        "file for it (cdcStats): its changes cannot be read"
    )


# ---- reading --------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def image_json(row: dict[str, Any] | None) -> str | None:
    """An image as Hudi's CDC relation writes it: a JSON object of the record's fields."""
    if row is None:
        return None
    return json.dumps(_json_value(row), ensure_ascii=False, separators=(",", ":"))


def _rows_by_key(storage: Storage, rel: str | None) -> dict[str, dict[str, Any]]:
    if rel is None:
        return {}
    rows = read_base_file(storage, rel).to_pylist()
    return {str(r[RECORD_KEY_COLUMN]): r for r in rows}


def _cdc_records(storage: Storage, files: Iterable[str]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for rel in files:
        for block in read_log_blocks(storage.read_bytes(rel)):
            if block.block_type is HoodieLogBlockType.CDC_DATA_BLOCK:
                records.extend(decode_cdc_data_block(block).to_pylist())
    return records


def _as_is(
    storage: Storage, split: CdcSplit, mode: SupplementalLoggingMode
) -> list[tuple[str, str, str | None, str | None]]:
    t = split.instant_time
    records = _cdc_records(storage, split.cdc_files)
    if mode is SupplementalLoggingMode.DATA_BEFORE_AFTER:
        return [
            (r[CDC_OP], t, image_json(r[CDC_BEFORE]), image_json(r[CDC_AFTER])) for r in records
        ]
    after = _rows_by_key(storage, split.base_file)
    before = _rows_by_key(storage, split.before_file)
    out = []
    for r in records:
        op, key = r[CDC_OP], str(r[CDC_RECORD_KEY])
        before_image = (
            r[CDC_BEFORE]
            if mode is SupplementalLoggingMode.DATA_BEFORE
            else (before.get(key) if op != CdcOperation.INSERT else None)
        )
        after_image = after.get(key) if op != CdcOperation.DELETE else None
        out.append((op, t, image_json(before_image), image_json(after_image)))
    return out


def read_split(
    storage: Storage, split: CdcSplit, mode: SupplementalLoggingMode
) -> list[tuple[str, str, str | None, str | None]]:
    """The change rows of one split: (op, ts_ms, before, after)."""
    t = split.instant_time
    if split.slice_context is not None and split.before_slice is not None:
        return _json_rows(t, _slice_changes(storage, split, split.before_slice))
    if split.case == "AS_IS":
        return _as_is(storage, split, mode)
    if split.case == "BASE_FILE_INSERT":
        rows = read_base_file(storage, str(split.base_file)).to_pylist()
        return [(CdcOperation.INSERT.value, t, None, image_json(r)) for r in rows]
    rows = read_base_file(storage, str(split.before_file)).to_pylist()
    return [(CdcOperation.DELETE.value, t, image_json(r), None) for r in rows]


def _slice_changes(storage: Storage, split: CdcSplit, before: FileSlice) -> list[Change]:
    """Merge-on-read splits: a log file's changes, or a replaced slice's rows."""
    assert split.slice_context is not None
    if split.case == "LOG_FILE":
        return log_file_changes(storage, str(split.log_file), before, split.slice_context)
    return replaced_slice_changes(storage, before, split.slice_context)


def _json_rows(t: str, changes: list[Change]) -> list[tuple[str, str, str | None, str | None]]:
    return [(op, t, image_json(before), image_json(after)) for op, before, after in changes]


def changes_table(rows: list[tuple[str, str, str | None, str | None]]) -> pa.Table:
    return pa.table(
        {
            name: pa.array([row[i] for row in rows], pa.string())
            for i, name in enumerate(CDC_COLUMNS)
        },
        schema=cdc_query_schema(),
    )


def read_changes(base_path: str | Storage, begin: str, end: str | None) -> pa.Table:
    """The CDC query over ``(begin, end]`` as an Arrow table (pure Arrow, no Spark)."""
    storage = base_path if isinstance(base_path, Storage) else Storage(base_path)
    plan = plan_changes(storage, begin, end)
    rows: list[tuple[str, str, str | None, str | None]] = []
    for split in plan.splits:
        rows.extend(read_split(storage, split, plan.mode))
    return changes_table(rows)
