"""The ``record_index`` partition as the metadata writer keeps it (Hudi's record level index).

- **Initialization**: every live key of the committed table's latest file slices, mapped to its
  partition, file group and the slice's base instant, in
  :func:`~engine.metadata.record_index_layout.record_index_file_group_count` file groups
  (``record-index-000N-0``), fixed from then on.
- **A data instant** (Hudi's ``convertMetadataToRecordIndexRecords``): for each base file it
  wrote, the keys not in the base file it replaced are inserted (or moved in), the keys it no
  longer holds deleted; a log file's DELETE_BLOCK keys are deleted, and its data block keys the
  index does not place in that file group are inserted. A key deleted from one file group and
  written to another keeps the write. Compactions change no location and write nothing; a
  replacecommit deletes the keys of the file groups it replaces (unless it writes them again).
- **Compaction**: the slice merged by key, the latest record winning and a deleted key dropped,
  each record stamped with the base file it now lives in.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

import pyarrow as pa

from engine import config
from engine.config import HoodieConfig
from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from engine.io.hfile import HFile
from engine.metadata.data_keys import (
    base_file_key_array,
    key_changes,
    log_file_keys,
    previous_base_file,
    slice_keys,
)
from engine.metadata.partitions import Cell, GroupCells, MetadataInit, MetadataUpdate
from engine.metadata.record_index import (
    RECORD_INDEX_PARTITION,
    RecordIndexRecord,
    decode_record_index_record,
    encode_record_index_record,
    located,
    stamp_file_name,
)
from engine.metadata.record_index_layout import record_index_file_group_count
from engine.metadata.record_index_writer import KeyLocation, commit_cells, initialization_cells
from engine.metadata.slices import METADATA_TABLE_PATH, latest_slices
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSystemView

__all__ = ["RecordIndexPartition", "record_index_wanted"]

Location = tuple[str, str]  # (partition path, file id)


def record_index_wanted(cfg: HoodieConfig, listed: Iterable[str]) -> bool:
    """``hoodie.metadata.record.index.enable`` when set, or ``hoodie.index.type=RECORD_INDEX``;
    unset, a table keeps the record index it has."""
    if cfg.get(config.INDEX_TYPE).in_metadata_table:
        return True
    enabled = cfg.get(config.RECORD_INDEX_ENABLE)
    return enabled if enabled is not None else RECORD_INDEX_PARTITION in set(listed)


def _timeline_zone(props: Mapping[str, str]) -> dt.tzinfo:
    """The zone instant times are read in (``hoodie.table.timeline.timezone``)."""
    if props.get(config.TIMELINE_TIMEZONE.key, config.TIMELINE_TIMEZONE.default) == "UTC":
        return dt.UTC
    local = dt.datetime.now().astimezone().tzinfo
    assert local is not None
    return local


def _live_keys(storage: Storage, timeline: Timeline) -> Iterable[KeyLocation]:
    for file_slice in FileSystemView(storage, timeline).latest_file_slices():
        keys = slice_keys(storage, file_slice.base_file_path, file_slice.log_file_paths)
        for key in keys.live:
            yield KeyLocation(
                key, file_slice.partition_path, file_slice.file_id, file_slice.base_instant_time
            )


class _Changes:
    """The keys one commit wrote (with where) and deleted."""

    def __init__(self) -> None:
        self.written: dict[str, Location] = {}
        self.deleted: set[str] = set()
        self.appended: dict[str, Location] = {}  # log data block keys, maybe updates in place

    def base_file(self, storage: Storage, stat: HoodieWriteStat) -> None:
        partition = stat.partition_path or ""
        added, dropped = _base_file_changes(storage, stat)
        for key in added:
            self.written[key] = (partition, stat.file_id)
        self.deleted.update(dropped)

    def log_file(self, storage: Storage, stat: HoodieWriteStat) -> None:
        assert stat.path is not None
        if stat.written_keys is not None:
            written, deleted = stat.written_keys.written, stat.written_keys.deleted
        else:
            keys = log_file_keys(storage, stat.path)
            written, deleted = tuple(keys.written), tuple(keys.deleted)
        for key in written:
            self.appended[key] = (stat.partition_path or "", stat.file_id)
        self.deleted.update(deleted)


def _base_file_changes(
    storage: Storage, stat: HoodieWriteStat
) -> tuple[Iterable[str], Iterable[str]]:
    """The keys a written base file added to its file group and dropped from it: as its handle
    reported them (:class:`~engine.timeline.commit_metadata.WrittenKeys`), else read from the
    file and the base file it replaced (a stat from a Spark task, or a table service's)."""
    if stat.written_keys is not None:
        return stat.written_keys.written, stat.written_keys.deleted
    assert stat.path is not None
    partition = stat.partition_path or ""
    new = base_file_key_array(storage, stat.path)
    old = pa.array([], pa.string())
    if stat.prev_commit not in ("null", "", None):
        previous = previous_base_file(storage, partition, stat.file_id, stat.prev_commit)
        old = base_file_key_array(storage, previous) if previous else old
    return key_changes(new, old)


def _commit_changes(storage: Storage, commit: HoodieCommitMetadata) -> _Changes:
    changes = _Changes()
    for stat in commit.write_stats():
        if stat.path is None:
            continue
        if stat.is_delta:
            changes.log_file(storage, stat)
        else:
            changes.base_file(storage, stat)
    replaced = commit.replaced_file_ids()
    if replaced:
        view = FileSystemView(storage, Timeline.load(storage))
        for file_slice in view.latest_file_slices(file_groups=replaced):
            keys = slice_keys(storage, file_slice.base_file_path, file_slice.log_file_paths)
            changes.deleted |= keys.live
    if changes.appended:
        stored = located(storage, changes.appended) or {}
        for key, where in changes.appended.items():
            found = stored.get(key)
            if found is None or (found.partition_path, found.file_id) != where:
                changes.written[key] = where
    return changes


class RecordIndexPartition:
    """The ``record_index`` partition (see the module notes)."""

    name = RECORD_INDEX_PARTITION

    def enabled(self, cfg: HoodieConfig, listed: Iterable[str]) -> bool:
        return record_index_wanted(cfg, listed)

    def initial_groups(self, init: MetadataInit, schema: str) -> dict[str, list[Cell]]:
        keys = list(_live_keys(init.storage, init.timeline))
        count = record_index_file_group_count(len(keys), init.cfg)
        zone = _timeline_zone(init.props)
        cells = initialization_cells(keys, count, schema, zone=zone)
        return {group.file_id: list(group.upserts) for group in cells}

    def update_groups(self, update: MetadataUpdate, schema: str) -> dict[str, GroupCells]:
        commit = update.commit
        if commit is None or commit.operation_type in ("COMPACT", "LOG_COMPACT"):
            return {}
        changes = _commit_changes(update.storage, commit)
        mdt = update.storage.child(METADATA_TABLE_PATH)
        count = len(latest_slices(mdt, Timeline.load(mdt), RECORD_INDEX_PARTITION))
        zone = _timeline_zone(read_properties(update.storage))
        groups = commit_cells(
            update.instant_time, count, schema, inserted=changes.written, moved={},
            deleted=changes.deleted, zone=zone,
        )  # fmt: skip
        return {g.file_id: GroupCells(list(g.upserts), g.deletes) for g in groups}

    def compacted_cells(
        self, base: HFile | None, logs: list[HFile | list[str]], schema: str, file_name: str
    ) -> list[Cell]:
        """The slice merged by key, each record stamped with ``file_name``: the stored bytes
        with the stamp put in when the record was written with ``schema``
        (:func:`~engine.metadata.record_index.stamp_file_name`: a compaction rewrites every
        mapping of the table, so none is decoded), else decoded and encoded again."""
        merged: dict[bytes, tuple[bytes, str]] = {}
        for item in [base, *logs] if base else logs:
            if isinstance(item, HFile):
                stored = item.file_info["schema"].decode()
                merged.update((key, (value, stored)) for key, value in item.entries)
            else:
                for deleted in item:
                    merged.pop(deleted.encode(), None)
        return [
            (key, _stamped(key, value, stored, schema, file_name))
            for key, (value, stored) in sorted(merged.items())
        ]


def _stamped(key: bytes, value: bytes, stored: str, schema: str, file_name: str) -> bytes:
    """One compacted record: ``value`` (written with ``stored``) stamped with ``file_name``."""
    if stored == schema:
        stamped = stamp_file_name(value, schema, file_name)
        if stamped is not None:
            return stamped
    r = decode_record_index_record(key, value, stored)
    meta = {**r.meta, "_hoodie_file_name": file_name}
    return encode_record_index_record(
        RecordIndexRecord(r.key, r.location, r.encoding, meta), schema
    )
