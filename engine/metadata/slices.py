"""The metadata table's own reading rules: where it is, which log blocks count, and a slice's
content.

The metadata table (``.hoodie/metadata``) is a merge-on-read table with its own timeline. Each of
its partitions (``files``, ``record_index``, ...) holds file groups of HFile base files and log
files of HFILE_DATA_BLOCKs and DELETE_BLOCKs. Its file slices come from the same
:class:`engine.view.fs_view.FileSystemView` as the data table's (Hudi's metadata reader builds a
``HoodieTableFileSystemView`` over the metadata timeline and takes
``getLatestMergedFileSlicesBeforeOrOn`` its latest completed or pending-compaction instant): each
file group's latest slice whose base instant committed on the metadata timeline (a compaction,
or an initialization deltacommit ``00000000000000000`` + a partition index), a pending
compaction's slice merged onto the previous one, with that slice's log files (by completion
time on timeline layout 2, of completed delta commits only). A reader uses a log block only when
its instant completed on the metadata timeline **and** is valid on the data timeline
(``getValidInstantTimestamps``): an instant of any action completed there (commits, cleans,
rollbacks, indexing), one older than its active timeline, or an initialization instant. A
metadata deltacommit of a data write that never completed is thereby ignored; a rollback command
block drops the blocks of the instant it targets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from engine.errors import HudiError
from engine.fs.storage import Storage
from engine.io.hfile import HFile, read_hfile
from engine.io.logfile import (
    HoodieLogBlockType,
    LogBlock,
    decode_command_block,
    decode_delete_block,
    read_log_blocks,
)
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSlice, FileSystemView

__all__ = [
    "METADATA_TABLE_PATH",
    "ValidInstants",
    "latest_slices",
    "open_metadata_table",
    "slice_content",
    "slice_log_content",
]

METADATA_TABLE_PATH = ".hoodie/metadata"
# the metadata table's initialization instants: SOLO_COMMIT_TIMESTAMP + a 3-digit partition index
_INIT_INSTANT_PREFIX = "00000000000000"


@dataclass(frozen=True, slots=True)
class ValidInstants:
    """The instants whose metadata log blocks count (``getValidInstantTimestamps``)."""

    metadata_completed: frozenset[str]
    data_completed: frozenset[str]
    data_active_start: str | None
    data_known: frozenset[str]

    @classmethod
    def of(cls, metadata: Timeline, data: Timeline) -> ValidInstants:
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


def open_metadata_table(storage: Storage) -> tuple[Storage, Timeline] | None:
    """The metadata table's storage and timeline; None when the table has none (Hudi's
    readers then find it uninitialized and list storage)."""
    mdt = storage.child(METADATA_TABLE_PATH)
    if not mdt.exists(".hoodie/hoodie.properties"):
        return None
    return mdt, Timeline.load(mdt)


def latest_slices(mdt: Storage, timeline: Timeline, partition: str) -> list[FileSlice]:
    """The latest committed slice of every file group of ``partition``, by file id.

    Raises:
        HudiError: The partition holds no committed file.
    """
    view = FileSystemView(mdt, timeline, partition_paths=[partition])
    out = view.latest_file_slices()  # as of the snapshot query instant, as a data table
    if not out:
        raise HudiError(f"the metadata table at {mdt.uri()} has no committed {partition} partition")
    return out


def slice_content(
    mdt: Storage, metadata_slice: FileSlice, valid: ValidInstants
) -> tuple[HFile | None, list[HFile | list[str]]]:
    """The slice's base HFile and its valid log content, oldest first: an HFILE_DATA_BLOCK's
    HFile, or the keys a DELETE_BLOCK deletes."""
    base, content = slice_log_content(mdt, metadata_slice, valid)
    decoded = [item if isinstance(item, list) else read_hfile(item) for item in content]
    return (read_hfile(mdt.read_bytes(base)) if base is not None else None), decoded


def slice_log_content(
    mdt: Storage, metadata_slice: FileSlice, valid: ValidInstants
) -> tuple[str | None, list[bytes | list[str]]]:
    """:func:`slice_content` with the base file's path in place of its HFile and each log
    block's HFile left undecoded: a reader that looks a few keys up
    (:func:`engine.io.hfile.lookup_hfile`) reads of the base file only the blocks that may hold
    them, and of each log block's HFile only those it decompresses."""
    base = metadata_slice.base_file_path or None
    blocks: list[LogBlock] = []
    for path in metadata_slice.log_file_paths:
        for block in read_log_blocks(mdt.read_bytes(path)):
            if block.block_type is HoodieLogBlockType.COMMAND_BLOCK:
                target = decode_command_block(block)
                blocks = [b for b in blocks if b.instant_time != target]
            elif block.instant_time in valid:
                blocks.append(block)
    return base, list(_content(blocks))


def _content(blocks: list[LogBlock]) -> Iterator[bytes | list[str]]:
    for block in blocks:
        if block.block_type is HoodieLogBlockType.HFILE_DATA_BLOCK:
            yield block.content
        elif block.block_type is HoodieLogBlockType.DELETE_BLOCK:
            yield [record.record_key for record in decode_delete_block(block)]
