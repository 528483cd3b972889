"""The latest file slices of a table's partitions: the one listing every write path reads.

An index lookup needs each live file group's latest base file (its key column and footer); the
bucket planners need its size; a merge-on-read write also needs the slice an append would go to
(its log files and next log version). All of them come from one listing of the touched
partitions (:class:`engine.view.fs_view.FileSystemView`, the latest visible slice of every live file
group), so they can never disagree about which file is a file group's latest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.fs.storage import Storage
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSlice, FileSystemView
from engine.write.append import AppendSlice
from engine.write.bucketing import SizedBaseFile

__all__ = ["TableSlices", "latest_base_files", "latest_table_slices", "sized_base_file"]


@dataclass(frozen=True)
class TableSlices:
    """The latest file slices of the listed partitions, in the two shapes a write needs.

    Attributes:
        base_files: (partition, file_id) -> latest base file with its size (index, sizing).
        slices: (partition, file_id) -> the slice an append would write to.
    """

    base_files: dict[tuple[str, str], SizedBaseFile]
    slices: dict[tuple[str, str], AppendSlice]

    def has_logs(self, key: tuple[str, str]) -> bool:
        file_slice = self.slices.get(key)
        return bool(file_slice and file_slice.log_files)


def latest_table_slices(
    storage: Storage, timeline: Timeline, partition_paths: Iterable[str] | None
) -> TableSlices:
    """List the partitions (``None``: every partition of the table) once: latest slices, base
    file sizes, next log versions."""
    partitions = None if partition_paths is None else sorted(set(partition_paths))
    if partitions == [] or timeline.last_completed() is None:
        return TableSlices({}, {})
    view = FileSystemView(storage, timeline, partition_paths=partitions)
    groups = {(g.partition_path, g.file_id): g for g in view.file_groups()}
    base_files: dict[tuple[str, str], SizedBaseFile] = {}
    slices: dict[tuple[str, str], AppendSlice] = {}
    for file_slice in view.latest_file_slices():
        key = (file_slice.partition_path, file_slice.file_id)
        # every log file of the slice on storage counts, visible or not: versions never repeat
        versions = [
            log.version for log in groups[key].log_files.get(file_slice.base_instant_time, ())
        ]
        slices[key] = AppendSlice(
            partition_path=file_slice.partition_path,
            file_id=file_slice.file_id,
            base_instant_time=file_slice.base_instant_time,
            base_file=file_slice.base_file,
            log_files=file_slice.log_files,
            next_log_version=max(versions, default=0) + 1,
            log_bytes=sum(max(0, view.file_size(p)) for p in file_slice.log_file_paths),
        )
        base = sized_base_file(view, file_slice)
        if base is not None:
            base_files[key] = base
    return TableSlices(base_files, slices)


def latest_base_files(
    timeline: Timeline, partition_paths: Iterable[str] | None
) -> dict[tuple[str, str], SizedBaseFile]:
    """Latest base file of every live file group in ``partition_paths`` (``None``: every
    partition of the table), from the same listing as :func:`latest_table_slices`.

    Returns:
        (partition_path, file_id) -> the base file with its size.
    """
    return latest_table_slices(timeline.storage, timeline, partition_paths).base_files


def sized_base_file(view: FileSystemView, file_slice: FileSlice) -> SizedBaseFile | None:
    """The slice's base file with its listed size, ``None`` for a slice without one."""
    rel = file_slice.base_file_path
    if rel is None or file_slice.base_file is None:
        return None
    return SizedBaseFile(
        file_id=file_slice.file_id,
        base_file=file_slice.base_file,
        instant_time=file_slice.base_instant_time,
        size_bytes=view.file_size(rel),
    )
