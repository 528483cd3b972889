"""The metadata table's partitions as file slices, and the log content a reader may use.

The metadata table (``.hoodie/metadata``) is a merge-on-read table with its own timeline. Each of
its partitions (``files``, ``record_index``, ...) holds file groups of HFile base files and log
files of HFILE_DATA_BLOCKs and DELETE_BLOCKs. A reader (``HoodieBackedTableMetadata``) takes each
file group's latest slice whose base instant completed on the metadata timeline (a compaction, or
an initialization deltacommit ``00000000000000000`` + a partition index), with that slice's log
files (by completion time on timeline layout 2), and uses a log block only when its instant
completed on the metadata timeline **and** is valid on the data timeline
(``getValidInstantTimestamps``): an instant of any action completed there (commits, cleans,
rollbacks, indexing), one older than its active timeline, or an initialization instant. A
metadata deltacommit of a data write that never completed is thereby ignored; a rollback command
block drops the blocks of the instant it targets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from engine.errors import FileNameError, HudiError
from engine.fs.filenames import LogFileName, parse_base_file_name, parse_log_file_name
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
from engine.view.completion_slicing import slice_logs_by_completion

__all__ = [
    "METADATA_TABLE_PATH",
    "MetadataSlice",
    "ValidInstants",
    "latest_slices",
    "open_metadata_table",
    "slice_content",
    "slice_hfile_bytes",
]

METADATA_TABLE_PATH = ".hoodie/metadata"
# the metadata table's initialization instants: SOLO_COMMIT_TIMESTAMP + a 3-digit partition index
_INIT_INSTANT_PREFIX = "00000000000000"


@dataclass(frozen=True, slots=True)
class MetadataSlice:
    """The latest committed slice of one file group of a metadata table partition."""

    partition: str
    file_id: str
    base_file: str | None
    log_files: tuple[str, ...]


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


def _group_files(
    mdt: Storage, timeline: Timeline, partition: str
) -> dict[str, tuple[dict[str, str], list[LogFileName]]]:
    """file id -> (committed base files by instant, log files) of a partition."""
    groups: dict[str, tuple[dict[str, str], list[LogFileName]]] = {}
    for entry in mdt.list_dir(partition):
        try:
            if entry.name.startswith(".") and ".log." in entry.name:
                log = parse_log_file_name(entry.name)
                groups.setdefault(log.file_id, ({}, []))[1].append(log)
            elif entry.name.endswith(".hfile"):
                base = parse_base_file_name(entry.name)
                bases = groups.setdefault(base.file_id, ({}, []))[0]
                if timeline.is_completed(base.instant_time):
                    bases[base.instant_time] = entry.name
        except FileNameError:
            continue
    return groups


def latest_slices(mdt: Storage, timeline: Timeline, partition: str) -> list[MetadataSlice]:
    """The latest committed slice of every file group of ``partition``, by file id.

    Raises:
        HudiError: The partition holds no committed file.
    """
    completed = timeline.completion_times()
    out: list[MetadataSlice] = []
    for file_id, (bases, logs) in sorted(_group_files(mdt, timeline, partition).items()):
        if timeline.layout.version >= 2:  # a log is named by its delta commit: completed ones
            logs = [log for log in logs if log.base_instant_time in completed]
            sliced = slice_logs_by_completion(bases, logs, completed)
        else:
            sliced = {}
            for log in sorted(logs, key=lambda g: (g.base_instant_time, g.version, g.write_token)):
                sliced.setdefault(log.base_instant_time, []).append(log)
        keys = [*bases, *sliced]
        if keys:
            latest = max(keys)
            names = tuple(log.name for log in sliced.get(latest, []))
            out.append(MetadataSlice(partition, file_id, bases.get(latest), names))
    if not out:
        raise HudiError(f"the metadata table at {mdt.uri()} has no committed {partition} partition")
    return out


def slice_content(
    mdt: Storage, metadata_slice: MetadataSlice, valid: ValidInstants
) -> tuple[HFile | None, list[HFile | list[str]]]:
    """The slice's base HFile and its valid log content, oldest first: an HFILE_DATA_BLOCK's
    HFile, or the keys a DELETE_BLOCK deletes."""
    base, content = slice_hfile_bytes(mdt, metadata_slice, valid)
    decoded = [item if isinstance(item, list) else read_hfile(item) for item in content]
    return (read_hfile(base) if base is not None else None), decoded


def slice_hfile_bytes(
    mdt: Storage, metadata_slice: MetadataSlice, valid: ValidInstants
) -> tuple[bytes | None, list[bytes | list[str]]]:
    """:func:`slice_content` with each HFile left undecoded, for a reader that looks a few
    keys up in it (:func:`engine.io.hfile.lookup_hfile`) instead of decoding it whole."""
    folder = metadata_slice.partition
    base = metadata_slice.base_file
    base_bytes = mdt.read_bytes(f"{folder}/{base}") if base else None
    blocks: list[LogBlock] = []
    for name in metadata_slice.log_files:
        for block in read_log_blocks(mdt.read_bytes(f"{folder}/{name}")):
            if block.block_type is HoodieLogBlockType.COMMAND_BLOCK:
                target = decode_command_block(block)
                blocks = [b for b in blocks if b.instant_time != target]
            elif block.instant_time in valid:
                blocks.append(block)
    return base_bytes, list(_content(blocks))


def _content(blocks: list[LogBlock]) -> Iterator[bytes | list[str]]:
    for block in blocks:
        if block.block_type is HoodieLogBlockType.HFILE_DATA_BLOCK:
            yield block.content
        elif block.block_type is HoodieLogBlockType.DELETE_BLOCK:
            yield [record.record_key for record in decode_delete_block(block)]
