"""Completing a write: reconcile files with the write stats, then write the completed instant.

Order (the completed instant file is the commit point, so it is written last)::

    1. delete data files named by markers but absent from the write stats (retried tasks)
    2. the metadata table's deltacommit <instant>, when the table keeps one
       (:mod:`engine.metadata.sync`)
    3. <instant>.commit  = HoodieCommitMetadata JSON (write stats, schema, operation type)
    4. remove .hoodie/.temp/<instant>
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.config import WriteOperation
from engine.faults import checkpoint
from engine.fs.storage import Storage
from engine.metadata.sync import record_commit
from engine.timeline.commit_metadata import (
    HoodieCommitMetadata,
    HoodieWriteStat,
    build_commit_metadata,
)
from engine.timeline.instant import Action
from engine.timeline.markers import delete_markers, remove_unreported_files
from engine.timeline.timeline import complete

__all__ = ["commit_write"]


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
