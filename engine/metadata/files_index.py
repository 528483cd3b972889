"""The data table's partitions and files, read from the metadata table's ``files`` partition.

Hudi's readers list a table through its metadata table when ``hoodie.table.metadata.partitions``
names ``files`` (``HoodieTableConfig.isMetadataTableAvailable``; hudi-rs 0.5 for table versions
8+). The ``files`` partition holds one file group (``files-0000-0``); its latest slice and valid
log content (:mod:`engine.metadata.slices`: log blocks of instants completed on both timelines)
are merged (:func:`engine.metadata.payload.merge_file_slice`); the partitions are the
``__all_partitions__`` record's live entries, each partition's files its record's.

The listing is then resolved against the data timeline like a storage listing (file system view:
uncommitted or replaced files never show). Reading costs one directory listing of
``.hoodie/metadata/files`` and the metadata timeline, whatever the number of partitions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from engine import config
from engine.errors import HudiError
from engine.fs.storage import Storage
from engine.io.hfile import HFile
from engine.metadata.payload import (
    ALL_PARTITIONS_KEY,
    NON_PARTITIONED_KEY,
    FilesRecord,
    decode_files_record,
    merge_file_slice,
)
from engine.metadata.slices import (
    METADATA_TABLE_PATH,
    ValidInstants,
    latest_slices,
    open_metadata_table,
    slice_content,
)
from engine.timeline.timeline import Timeline

__all__ = [
    "FILES_PARTITION",
    "METADATA_TABLE_PATH",
    "FilesListing",
    "has_files_index",
    "read_files_partition",
]

FILES_PARTITION = "files"


@dataclass(frozen=True, slots=True)
class FilesListing:
    """What the ``files`` partition lists: partition path -> file name -> size in bytes."""

    partitions: dict[str, dict[str, int]]


def has_files_index(properties: Mapping[str, str]) -> bool:
    """The data table's properties announce a ready ``files`` partition."""
    listed = properties.get(config.METADATA_PARTITIONS.key, "")
    return FILES_PARTITION in {p.strip() for p in listed.split(",")}


def _records(hfile: HFile) -> list[FilesRecord]:
    schema = hfile.file_info["schema"].decode()
    return [decode_files_record(key, value, schema) for key, value in hfile.entries]


def _log_records(content: list[HFile | list[str]]) -> Iterator[FilesRecord | str]:
    """The log records oldest first; a key a DELETE_BLOCK deleted as a ``str``."""
    for item in content:
        if isinstance(item, HFile):
            yield from _records(item)
        else:
            yield from item


def read_files_partition(
    storage: Storage,
    data_timeline: Timeline,
    opened: tuple[Storage, Timeline] | None = None,
) -> FilesListing | None:
    """The data table's partitions and files as its metadata table lists them.

    Args:
        storage: The data table's storage.
        data_timeline: The data table's active timeline (what validates log blocks).
        opened: The metadata table as :func:`open_metadata_table` opened it, when the caller
            reads more of it (its timeline is listed once).

    Returns:
        The listing; None when there is no metadata table at ``.hoodie/metadata`` (Hudi's
        readers then list storage: ``HoodieBackedTableMetadata`` finds it uninitialized).

    Raises:
        HudiError: The metadata table has no committed files partition, holds more than one
            file group in it, or a file of it does not decode (named in the error).
    """
    opened = opened or open_metadata_table(storage)
    if opened is None:
        return None
    mdt, timeline = opened
    slices = latest_slices(mdt, timeline, FILES_PARTITION)
    if len(slices) > 1:  # Hudi keeps the files partition in one file group
        raise HudiError(
            f"the files partition of the metadata table at {mdt.uri()} holds {len(slices)} "
            f"file groups ({', '.join(s.file_id for s in slices)}), not one"
        )
    base, content = slice_content(mdt, slices[0], ValidInstants.of(timeline, data_timeline))
    merged = merge_file_slice(_records(base) if base else [], _log_records(content))
    partitions = merged.get(ALL_PARTITIONS_KEY)
    out: dict[str, dict[str, int]] = {}
    for name in sorted(partitions.listed if partitions else {}):
        record = merged.get(name)
        path = "" if name == NON_PARTITIONED_KEY else name
        out[path] = dict(sorted(record.listed.items())) if record else {}
    return FilesListing(out)
