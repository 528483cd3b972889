"""Completing a write: reconcile files with the write stats, then write the completed instant.

Order (the completed instant file is the commit point, so it is written last)::

    1. delete data files named by markers but absent from the write stats (retried tasks)
    2. <instant>.commit  = HoodieCommitMetadata JSON (write stats, schema, operation type)
    3. remove .hoodie/.temp/<instant>
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.commit_metadata import SCHEMA_KEY, HoodieCommitMetadata, HoodieWriteStat
from engine.faults import checkpoint
from engine.instant import Action
from engine.storage import Storage
from engine.timeline import complete
from engine.write.markers import delete_markers, list_marked_files

__all__ = ["OPERATION_TYPES", "build_commit_metadata", "commit_write", "remove_unreported_files"]

# WriteOperationType enum names, as commit metadata carries them
OPERATION_TYPES = {
    "upsert": "UPSERT",
    "insert": "INSERT",
    "bulk_insert": "BULK_INSERT",
    "delete": "DELETE",
    "insert_overwrite": "INSERT_OVERWRITE",
    "insert_overwrite_table": "INSERT_OVERWRITE_TABLE",
    "delete_partition": "DELETE_PARTITION",
}


def remove_unreported_files(
    storage: Storage, instant_time: str, stats: Iterable[HoodieWriteStat]
) -> list[str]:
    """Delete files a failed or duplicate task attempt wrote; returns what was deleted."""
    reported = {s.path for s in stats}
    removed = []
    for rel in list_marked_files(storage, instant_time):
        if rel not in reported and storage.exists(rel):
            storage.delete(rel)
            removed.append(rel)
    return removed


def build_commit_metadata(
    stats: Iterable[HoodieWriteStat],
    *,
    schema: str,
    operation: str,
    replaced: dict[str, list[str]] | None = None,
) -> HoodieCommitMetadata:
    by_partition: dict[str, list[HoodieWriteStat]] = {}
    for stat in sorted(stats, key=lambda s: (s.partition_path or "", s.file_id)):
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    return HoodieCommitMetadata(
        partition_to_write_stats=by_partition,
        compacted=False,
        extra_metadata={SCHEMA_KEY: schema},
        operation_type=OPERATION_TYPES.get(operation, "UNKNOWN"),
        partition_to_replace_file_ids=replaced,
    )


def commit_write(
    storage: Storage,
    instant_time: str,
    action: Action,
    stats: list[HoodieWriteStat],
    *,
    schema: str,
    operation: str,
    replaced: dict[str, list[str]] | None = None,
) -> HoodieCommitMetadata:
    """Finish an inflight write instant; after this readers see its files.

    ``replaced`` (replacecommits only) maps partitions to the file ids the write replaces.
    """
    remove_unreported_files(storage, instant_time, stats)
    metadata = build_commit_metadata(stats, schema=schema, operation=operation, replaced=replaced)
    complete(storage, instant_time, action, metadata.to_json())
    checkpoint("commit.after_complete")
    delete_markers(storage, instant_time)
    return metadata
