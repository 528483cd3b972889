"""Direct write markers: one empty file per data file a write creates.

::

    .hoodie/.temp/{instant_time}/{partition_path}/{data_file_name}.marker.{IO_TYPE}
    IO_TYPE = CREATE (new base file) | MERGE (rewritten base file) | APPEND (log file)

A task creates the marker before it creates the data file, so the markers name every file an
instant may have left behind: the driver deletes files that are marked but missing from the
collected write stats (retried or speculative tasks) before it commits, and a rollback deletes
every marked file of a failed instant. The marker directory is removed after the commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage
from engine.timeline.commit_metadata import HoodieWriteStat

__all__ = [
    "create_marker",
    "delete_markers",
    "list_marked_files",
    "marker_dir",
    "remove_unreported_files",
]

IOType = Literal["CREATE", "MERGE", "APPEND"]
_SUFFIX = ".marker."


def marker_dir(instant_time: str) -> str:
    """Marker directory of an instant, relative to the base path."""
    return f"{METAFOLDER}/.temp/{instant_time}"


def create_marker(
    storage: Storage, instant_time: str, partition_path: str, file_name: str, io_type: IOType
) -> None:
    """Record that ``file_name`` in ``partition_path`` is about to be written."""
    parent = (
        f"{marker_dir(instant_time)}/{partition_path}"
        if partition_path
        else marker_dir(instant_time)
    )
    storage.write_bytes(f"{parent}/{file_name}{_SUFFIX}{io_type}", b"", overwrite=True)


def list_marked_files(storage: Storage, instant_time: str) -> list[str]:
    """Data files (paths relative to the base path) named by the instant's markers."""
    root = marker_dir(instant_time)
    out: list[str] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        for entry in storage.list_dir(f"{root}/{rel}" if rel else root):
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir:
                pending.append(child)
            elif _SUFFIX in entry.name:
                out.append(child[: child.rindex(_SUFFIX)])
    return sorted(out)


def delete_markers(storage: Storage, instant_time: str) -> None:
    storage.delete_dir(marker_dir(instant_time))


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
