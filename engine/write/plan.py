"""Driver-side planning of a copy-on-write write: what the table holds where the batch lands.

The driver reads only metadata here (directory listings, footers, commit metadata); the data work
is planned for Spark tasks: which latest base files the index must scan, the average record size
that sizes new files, and the buckets (file groups) the records are routed to.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.bucketing import SmallFile
from engine.fs_view import FileSystemView
from engine.timeline import Timeline

__all__ = ["average_record_size", "latest_base_files"]


def latest_base_files(
    timeline: Timeline, partition_paths: Iterable[str]
) -> dict[tuple[str, str], SmallFile]:
    """Latest committed base file of every live file group in ``partition_paths``.

    Returns:
        (partition_path, file_id) -> the base file with its size.
    """
    partitions = sorted(set(partition_paths))
    if not partitions or timeline.last_completed() is None:
        return {}
    storage = timeline.storage
    view = FileSystemView(storage, timeline, partition_paths=partitions)
    sizes: dict[str, int] = {}
    for partition in view.partition_paths:
        for entry in storage.list_dir(partition):
            sizes[f"{partition}/{entry.name}" if partition else entry.name] = entry.size
    out: dict[tuple[str, str], SmallFile] = {}
    for file_slice in view.latest_base_files():
        rel = file_slice.base_file_path
        if rel is None or file_slice.base_file is None:
            continue
        out[(file_slice.partition_path, file_slice.file_id)] = SmallFile(
            file_id=file_slice.file_id,
            base_file=file_slice.base_file,
            instant_time=file_slice.base_instant_time,
            size_bytes=sizes.get(rel, 0),
        )
    return out


def average_record_size(timeline: Timeline, default: int) -> int:
    """Bytes per record written by the latest commit that wrote records, else ``default``.

    Hudi sizes new files from past commits so file sizes converge on ``max.file.size`` whatever
    the compression achieves.
    """
    for instant in reversed(timeline.commits_timeline()):
        stats = timeline.read_commit_metadata(instant).write_stats()
        records = sum(s.num_writes for s in stats)
        written = sum(s.total_write_bytes for s in stats)
        if records > 0 and written > 0:
            return max(1, written // records)
    return default
