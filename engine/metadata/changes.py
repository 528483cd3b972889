"""What one data-table instant changed in the table's file listing.

Hudi turns every completed data instant into metadata table records
(``HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords`` and its clean / rollback
siblings); the instant's metadata says which files it added, with their sizes, and which it
deleted:

====================  =============================================================
commit, deltacommit,  every write stat's file with its size; a ``DELETE_PARTITION``
replacecommit,        replacecommit also marks its partitions deleted (the files the
compaction            other replacecommits replace stay listed: readers drop replaced
                      file groups through the data timeline, as for a storage listing)
clean                 the deleted files; a partition the clean removed whole is deleted
rollback, restore     the deleted files (a restore: those of every rollback it ran)
====================  =============================================================

A :class:`FilesChange` is that delta, keyed by partition path (``""`` for a non-partitioned
table); the producers of :mod:`engine.metadata.partitions` turn it into records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.timeline.commit_metadata import HoodieCommitMetadata

__all__ = ["FilesChange", "of_clean", "of_commit", "of_rollbacks"]

_DELETE_PARTITION = "DELETE_PARTITION"


@dataclass
class FilesChange:
    """Files added (name -> size) and deleted (names) by partition, and partitions deleted."""

    added: dict[str, dict[str, int]] = field(default_factory=dict)
    deleted: dict[str, set[str]] = field(default_factory=dict)
    deleted_partitions: set[str] = field(default_factory=set)

    def add(self, partition: str, name: str, size: int) -> None:
        files = self.added.setdefault(partition, {})
        files[name] = max(size, files.get(name, 0))

    def delete(self, partition: str, name: str) -> None:
        self.deleted.setdefault(partition, set()).add(name)

    @property
    def partitions(self) -> set[str]:
        """Every partition the change touches (deleted partitions included)."""
        return set(self.added) | set(self.deleted) | self.deleted_partitions

    @property
    def is_empty(self) -> bool:
        return not self.partitions


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def of_commit(metadata: HoodieCommitMetadata) -> FilesChange:
    """The files a write, a compaction or a replacecommit added (and the partitions a
    ``delete_partition`` removed)."""
    change = FilesChange()
    for partition, stats in metadata.partition_to_write_stats.items():
        change.added.setdefault(partition, {})  # a partition with no file still is one
        for stat in stats:
            if stat.path:
                change.add(partition, _name(stat.path), stat.file_size_in_bytes)
            for path, size in (stat.cdc_stats or {}).items():  # the .cdc log files beside it
                change.add(partition, _name(path), size)
    if metadata.operation_type == _DELETE_PARTITION:
        change.deleted_partitions |= {p for p, _ in metadata.replaced_file_ids()}
    return change


def of_clean(metadata: Mapping[str, Any]) -> FilesChange:
    """The files a clean deleted (``HoodieCleanMetadata``)."""
    change = FilesChange()
    for partition, info in (metadata.get("partitionMetadata") or {}).items():
        for name in info.get("successDeleteFiles") or ():
            change.delete(partition, _name(name))
        if info.get("isPartitionDeleted"):
            change.deleted_partitions.add(partition)
    return change


def of_rollbacks(rollbacks: Iterable[Mapping[str, Any]]) -> FilesChange:
    """The files rollbacks deleted (``HoodieRollbackMetadata`` records), and the log files
    their rollback command blocks went to."""
    change = FilesChange()
    for rollback in rollbacks:
        for partition, info in (rollback.get("partitionMetadata") or {}).items():
            for name in info.get("successDeleteFiles") or ():
                change.delete(partition, _name(name))
            for name, size in (info.get("rollbackLogFiles") or {}).items():
                change.add(partition, _name(name), int(size))
    return change
