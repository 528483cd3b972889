"""The metadata table partitions this engine maintains, each with its record producer.

A partition plugs in as one :class:`MetadataPartition`: its name (the folder under
``.hoodie/metadata`` and the entry in ``hoodie.table.metadata.partitions``), whether a write
keeps it, and three producers of HFile cells (row key, Avro ``HoodieMetadataRecord`` datum),
sorted by key, per file group (``files`` has one, ``record_index`` and ``column_stats`` several):

- ``initial_groups``: every file group's initialization base file, from the committed table;
- ``update_groups``: what one data instant adds to the file groups it touches (an
  HFILE_DATA_BLOCK, and a DELETE_BLOCK of keys, in each one's log file of the deltacommit);
- ``compacted_cells``: the records of one compacted base file, from the slice being compacted.

The metadata writer (:mod:`engine.metadata.writer`) owns everything else: timeline, log and base
files, validation against the data timeline. :data:`engine.metadata.maintained.MAINTAINED`
lists the partitions written; any other partition a table's metadata table holds is dropped when
a write takes it over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from engine.config import HoodieConfig
from engine.fs.storage import Storage
from engine.io.hfile import HFile
from engine.io.java_hashmap import JavaHashMap
from engine.metadata.changes import FilesChange
from engine.metadata.files_index import FILES_PARTITION
from engine.metadata.payload import (
    ALL_PARTITIONS_KEY,
    NON_PARTITIONED_KEY,
    FileInfo,
    FilesRecord,
    MetadataRecordType,
    decode_files_record,
    encode_files_record,
    merge_file_slice,
)
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.timeline import Timeline

__all__ = [
    "Cell",
    "FilesPartition",
    "GroupCells",
    "MetadataInit",
    "MetadataPartition",
    "MetadataUpdate",
]

Cell = tuple[bytes, bytes]


@dataclass(frozen=True)
class GroupCells:
    """What one data instant writes to one file group: sorted cells (its HFILE_DATA_BLOCK) and
    the keys it deletes (a DELETE_BLOCK after it)."""

    cells: list[Cell]
    deletes: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetadataInit:
    """The committed data table a partition is initialized from.

    Attributes:
        storage: The data table's storage.
        timeline: Its timeline (no write in flight).
        listing: Its committed files with their sizes.
        cfg: The write's options (layout and columns of the index partitions).
        props: Its ``hoodie.properties``.
    """

    storage: Storage
    timeline: Timeline
    listing: FilesChange
    cfg: HoodieConfig
    props: Mapping[str, str]


@dataclass(frozen=True)
class MetadataUpdate:
    """One data instant, as the producers see it.

    Attributes:
        storage: The data table's storage (producers that read new files open them here).
        instant_time: The data instant (the metadata deltacommit's time).
        change: The files it added and deleted.
        commit: Its commit metadata when it wrote data (None for cleans and rollbacks).
    """

    storage: Storage
    instant_time: str
    change: FilesChange
    commit: HoodieCommitMetadata | None = None


class MetadataPartition(Protocol):
    """A metadata table partition and how its records are produced (see the module notes)."""

    name: str

    def enabled(self, cfg: HoodieConfig, listed: Iterable[str]) -> bool:
        """Whether a write with ``cfg`` keeps the partition (``listed``: those the table has)."""
        ...

    def initial_groups(self, init: MetadataInit, schema: str) -> dict[str, list[Cell]]: ...

    def update_groups(self, update: MetadataUpdate, schema: str) -> dict[str, GroupCells]: ...

    def compacted_cells(
        self, base: HFile | None, logs: list[HFile | list[str]], schema: str, file_name: str
    ) -> list[Cell]: ...


def _record_key(partition: str) -> str:
    return partition or NON_PARTITIONED_KEY


def _files_map(added: dict[str, int], deleted: Iterable[str]) -> dict[str, FileInfo]:
    """``createPartitionFilesRecord``: a new HashMap, the added files put first, then the
    deleted ones as tombstones."""
    files: JavaHashMap[FileInfo] = JavaHashMap()
    for name, size in added.items():
        files.put(name, FileInfo(size))
    for name in sorted(deleted):
        files.put(name, FileInfo(0, is_deleted=True))
    return dict(files.items())


def _partition_list(listed: Iterable[str], deleted: Iterable[str]) -> dict[str, FileInfo]:
    """``createPartitionListRecord``: every partition at size 0, a deleted one a tombstone."""
    partitions: JavaHashMap[FileInfo] = JavaHashMap()
    for name in sorted(listed):
        partitions.put(_record_key(name), FileInfo(0))
    for name in sorted(deleted):
        partitions.put(_record_key(name), FileInfo(0, is_deleted=True))
    return dict(partitions.items())


def _decoded(hfile: HFile) -> list[FilesRecord]:
    """The records of an HFile, decoded with the writer schema its file info carries."""
    schema = hfile.file_info["schema"].decode()
    return [decode_files_record(key, value, schema) for key, value in hfile.entries]


class FilesPartition:
    """The ``files`` partition: ``__all_partitions__`` and one file list per partition."""

    name = FILES_PARTITION
    file_group = "files-0000-0"

    def enabled(self, cfg: HoodieConfig, listed: Iterable[str]) -> bool:
        return True  # the metadata table itself

    def initial_groups(self, init: MetadataInit, schema: str) -> dict[str, list[Cell]]:
        return {self.file_group: self.initial_cells(init.listing, schema)}

    def update_groups(self, update: MetadataUpdate, schema: str) -> dict[str, GroupCells]:
        cells = self.update_cells(update, schema)
        return {self.file_group: GroupCells(cells)} if cells else {}

    def _cells(self, change: FilesChange, schema: str, *, always_list: bool) -> list[Cell]:
        records = []
        listed = set(change.added) - change.deleted_partitions
        if listed or change.deleted_partitions or always_list:
            partitions = _partition_list(listed, change.deleted_partitions)
            records.append(
                FilesRecord(ALL_PARTITIONS_KEY, MetadataRecordType.PARTITION_LIST, partitions)
            )
        for partition in sorted(
            (set(change.added) | set(change.deleted)) - change.deleted_partitions
        ):
            files = _files_map(change.added.get(partition, {}), change.deleted.get(partition, ()))
            key = _record_key(partition)
            records.append(FilesRecord(key, MetadataRecordType.FILE_LIST, files))
        return sorted((r.key.encode(), encode_files_record(r, schema)) for r in records)

    def initial_cells(self, listing: FilesChange, schema: str) -> list[Cell]:
        return self._cells(listing, schema, always_list=True)

    def update_cells(self, update: MetadataUpdate, schema: str) -> list[Cell]:
        return self._cells(update.change, schema, always_list=False)

    def compacted_cells(
        self, base: HFile | None, logs: list[HFile | list[str]], schema: str, file_name: str
    ) -> list[Cell]:
        """The slice merged as Hudi merges it, each record stamped with the base file it now
        lives in (``_hoodie_file_name``, as Hudi's compaction writes it)."""
        base_records = _decoded(base) if base else []
        log_records: list[FilesRecord | str] = []
        for item in logs:
            if isinstance(item, HFile):
                log_records += _decoded(item)
            else:
                log_records += item
        merged = merge_file_slice(base_records, log_records)
        cells = []
        for key, record in merged.items():
            meta = {**record.meta, "_hoodie_file_name": file_name}
            stamped = FilesRecord(record.key, record.type, record.files, meta)
            cells.append((key.encode(), encode_files_record(stamped, schema)))
        return cells
