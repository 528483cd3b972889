"""The data table's partitions and files, read from the metadata table's ``files`` partition.

Hudi's readers list a table through its metadata table when ``hoodie.table.metadata.partitions``
names ``files`` (``HoodieTableConfig.isMetadataTableAvailable``; hudi-rs 0.5 for table versions
8+). Reading it, as ``HoodieBackedTableMetadata`` does:

1. The metadata table is a merge-on-read table at ``.hoodie/metadata`` with its own timeline.
   Its ``files`` partition holds one file group (``files-0000-0``): the latest slice whose base
   instant is completed on the metadata timeline (a compaction, or the initialization
   deltacommit ``00000000000000000``), and that slice's log files (by completion time on layout 2).
2. Log blocks count only if their instant completed on the metadata timeline **and** is valid on
   the data timeline: an instant of any action completed there (commits, cleans, rollbacks,
   indexing) or older than its active timeline, or one of the metadata table's own
   initialization instants (``00000000000000000`` + a partition index). A metadata
   deltacommit of a data write that never completed is thereby ignored. A rollback command
   block drops the blocks of the instant it targets.
3. The records are merged (:func:`engine.metadata.payload.merge_file_slice`); the partitions are
   the ``__all_partitions__`` record's live entries, each partition's files its record's.

The listing is then resolved against the data timeline like a storage listing (file system view:
uncommitted or replaced files never show). Reading costs one directory listing of
``.hoodie/metadata/files`` and the metadata timeline, whatever the number of partitions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from engine import config
from engine.errors import FileNameError, HudiError
from engine.fs.completion_slicing import slice_logs_by_completion
from engine.fs.filenames import LogFileName, parse_base_file_name, parse_log_file_name
from engine.fs.storage import Storage
from engine.io.hfile import read_hfile
from engine.io.logfile import (
    HoodieLogBlockType,
    LogBlock,
    decode_command_block,
    decode_delete_block,
    read_log_blocks,
)
from engine.metadata.payload import (
    ALL_PARTITIONS_KEY,
    NON_PARTITIONED_KEY,
    FilesRecord,
    decode_files_record,
    merge_file_slice,
)
from engine.timeline.timeline import Timeline

__all__ = [
    "FILES_PARTITION",
    "METADATA_TABLE_PATH",
    "FilesListing",
    "has_files_index",
    "read_files_partition",
]

METADATA_TABLE_PATH = ".hoodie/metadata"
FILES_PARTITION = "files"
# the metadata table's initialization instants: SOLO_COMMIT_TIMESTAMP + a 3-digit partition index
_INIT_INSTANT_PREFIX = "00000000000000"


@dataclass(frozen=True, slots=True)
class FilesListing:
    """What the ``files`` partition lists: partition path -> file name -> size in bytes."""

    partitions: dict[str, dict[str, int]]


def has_files_index(properties: Mapping[str, str]) -> bool:
    """The data table's properties announce a ready ``files`` partition."""
    listed = properties.get(config.METADATA_PARTITIONS.key, "")
    return FILES_PARTITION in {p.strip() for p in listed.split(",")}


@dataclass(frozen=True, slots=True)
class _Slice:
    base_file: str | None
    log_files: tuple[str, ...]


def _latest_slice(storage: Storage, timeline: Timeline) -> _Slice:
    """The latest committed slice of the files partition's one file group."""
    bases: dict[str, str] = {}
    logs: list[LogFileName] = []
    file_ids: set[str] = set()
    for entry in storage.list_dir(FILES_PARTITION):
        try:
            if entry.name.startswith(".") and ".log." in entry.name:
                logs.append(parse_log_file_name(entry.name))
                file_ids.add(logs[-1].file_id)
            elif entry.name.endswith(".hfile"):
                base = parse_base_file_name(entry.name)
                file_ids.add(base.file_id)
                if timeline.is_completed(base.instant_time):
                    bases[base.instant_time] = entry.name
        except FileNameError:
            continue
    if len(file_ids) > 1:  # Hudi keeps the files partition in one file group
        raise HudiError(
            f"the files partition of the metadata table at {storage.uri()} holds "
            f"{len(file_ids)} file groups ({', '.join(sorted(file_ids))}), not one"
        )
    completed = timeline.completion_times()
    if timeline.layout.version >= 2:  # a log is named by its delta commit: keep completed ones
        logs = [log for log in logs if log.base_instant_time in completed]
    if not bases and not logs:
        raise HudiError(f"the metadata table at {storage.uri()} has no committed files partition")
    if timeline.layout.version >= 2:
        sliced = slice_logs_by_completion(bases, logs, completed)
    else:
        sliced = {}
        for log in sorted(logs, key=lambda g: (g.base_instant_time, g.version, g.write_token)):
            sliced.setdefault(log.base_instant_time, []).append(log)
    latest = max([*bases, *sliced])
    return _Slice(bases.get(latest), tuple(log.name for log in sliced.get(latest, [])))


@dataclass(frozen=True, slots=True)
class _ValidInstants:
    """The instants whose metadata log blocks count (``getValidInstantTimestamps``)."""

    metadata_completed: frozenset[str]
    data_completed: frozenset[str]
    data_active_start: str | None
    data_known: frozenset[str]

    @classmethod
    def of(cls, metadata: Timeline, data: Timeline) -> _ValidInstants:
        return cls(
            frozenset(i.instant_time for i in metadata.instants if i.is_completed),
            frozenset(i.instant_time for i in data.instants if i.is_completed),
            min((i.instant_time for i in data.instants), default=None),
            frozenset(i.instant_time for i in data.instants),
        )

    def __contains__(self, instant_time: object) -> bool:
        if not isinstance(instant_time, str) or instant_time not in self.metadata_completed:
            return False
        if instant_time.startswith(_INIT_INSTANT_PREFIX) or instant_time in self.data_completed:
            return True
        # older than the data table's active timeline: archived, hence completed
        start = self.data_active_start
        return start is not None and instant_time < start and instant_time not in self.data_known


def _records(data: bytes) -> list[FilesRecord]:
    hfile = read_hfile(data)
    schema = hfile.file_info["schema"].decode()
    return [decode_files_record(key, value, schema) for key, value in hfile.entries]


def _log_records(
    storage: Storage, names: tuple[str, ...], valid: _ValidInstants
) -> Iterator[FilesRecord | str]:
    """The valid log blocks' records, oldest first; a deleted key as a ``str``."""
    blocks: list[LogBlock] = []
    for name in names:
        for block in read_log_blocks(storage.read_bytes(f"{FILES_PARTITION}/{name}")):
            if block.block_type is HoodieLogBlockType.COMMAND_BLOCK:
                target = decode_command_block(block)
                blocks = [b for b in blocks if b.instant_time != target]
            elif block.instant_time in valid:
                blocks.append(block)
    for block in blocks:
        if block.block_type is HoodieLogBlockType.HFILE_DATA_BLOCK:
            yield from _records(block.content)
        elif block.block_type is HoodieLogBlockType.DELETE_BLOCK:
            yield from (record.record_key for record in decode_delete_block(block))


def read_files_partition(storage: Storage, data_timeline: Timeline) -> FilesListing | None:
    """The data table's partitions and files as its metadata table lists them.

    Args:
        storage: The data table's storage.
        data_timeline: The data table's active timeline (what validates log blocks).

    Returns:
        The listing; None when there is no metadata table at ``.hoodie/metadata`` (Hudi's
        readers then list storage: ``HoodieBackedTableMetadata`` finds it uninitialized).

    Raises:
        HudiError: The metadata table has no committed files partition, holds more than one
            file group in it, or a file of it does not decode (named in the error).
    """
    mdt = storage.child(METADATA_TABLE_PATH)
    if not mdt.exists(".hoodie/hoodie.properties"):
        return None
    timeline = Timeline.load(mdt)
    latest = _latest_slice(mdt, timeline)
    base: list[FilesRecord] = []
    if latest.base_file:
        base = _records(mdt.read_bytes(f"{FILES_PARTITION}/{latest.base_file}"))
    valid = _ValidInstants.of(timeline, data_timeline)
    merged = merge_file_slice(base, _log_records(mdt, latest.log_files, valid))
    partitions = merged.get(ALL_PARTITIONS_KEY)
    out: dict[str, dict[str, int]] = {}
    for name in sorted(partitions.listed if partitions else {}):
        record = merged.get(name)
        path = "" if name == NON_PARTITIONED_KEY else name
        out[path] = dict(sorted(record.listed.items())) if record else {}
    return FilesListing(out)
