"""Completing a write: reconcile files with the write stats, then write the completed instant.

Order (the completed instant file is the commit point, so it is written last)::

    1. delete data files named by markers but absent from the write stats (retried tasks)
    2. the metadata table's deltacommit <instant>, when the table keeps one
       (:mod:`engine.metadata.sync`)
    3. <instant>.commit  = HoodieCommitMetadata JSON (write stats, schema, operation type)
    4. remove .hoodie/.temp/<instant>
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engine.config import WriteOperation
from engine.faults import checkpoint
from engine.fs.storage import Storage
from engine.metadata.sync import record_commit
from engine.timeline.commit_metadata import SCHEMA_KEY, HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.instant import Action
from engine.timeline.timeline import complete
from engine.write.markers import delete_markers, list_marked_files

__all__ = ["build_commit_metadata", "commit_write", "operation_type", "remove_unreported_files"]


def operation_type(operation: WriteOperation | None) -> str:
    """The ``WriteOperationType`` name commit metadata carries; a table service's commit
    (compaction) names no write operation: ``UNKNOWN``."""
    return "UNKNOWN" if operation is None else WriteOperation(operation).type_name


def remove_unreported_files(
    storage: Storage, instant_time: str, stats: Iterable[HoodieWriteStat]
) -> list[str]:
    """Delete files a failed or duplicate task attempt wrote; returns what was deleted."""
    reported = {p for s in stats for p in s.written_paths}
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
    operation: WriteOperation | None,
    replaced: dict[str, list[str]] | None = None,
    extra: Mapping[str, str] | None = None,
) -> HoodieCommitMetadata:
    by_partition: dict[str, list[HoodieWriteStat]] = {}
    for stat in sorted(stats, key=lambda s: (s.partition_path or "", s.file_id)):
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    return HoodieCommitMetadata(
        partition_to_write_stats=by_partition,
        compacted=False,
        extra_metadata={**(extra or {}), SCHEMA_KEY: schema},
        operation_type=operation_type(operation),
        partition_to_replace_file_ids=replaced,
    )


def commit_write(
    storage: Storage,
    instant_time: str,
    action: Action,
    stats: list[HoodieWriteStat],
    *,
    schema: str,
    operation: WriteOperation | None,
    replaced: dict[str, list[str]] | None = None,
    extra: Mapping[str, str] | None = None,
) -> HoodieCommitMetadata:
    """Finish an inflight write instant; after this readers see its files.

    ``replaced`` (replacecommits only) maps partitions to the file ids the write replaces;
    ``extra`` goes to the commit's extraMetadata (beside the schema).
    """
    remove_unreported_files(storage, instant_time, stats)
    metadata = build_commit_metadata(
        stats, schema=schema, operation=operation, replaced=replaced, extra=extra
    )
    record_commit(storage, instant_time, metadata)  # the metadata table first, as Hudi
    complete(storage, instant_time, action, metadata.to_json())
    checkpoint("commit.after_complete")
    delete_markers(storage, instant_time)
    return metadata
