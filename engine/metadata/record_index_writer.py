"""The cells a metadata table writer writes to the ``record_index`` partition.

Pure functions: they take keys and locations and return, per file group, the HFile pairs
(row key, ``HoodieMetadataRecord`` datum) sorted as an HFile needs them, and the keys to delete.
The metadata table writer turns them into base HFiles (initialization) or log files of one
HFILE_DATA_BLOCK then one DELETE_BLOCK (a commit), as Hudi does:

- **Initialization** (``RecordIndexer`` / ``initializeFromFilesystem``): one update record per key
  of the latest base files (copy-on-write) or merged file slices, stamped with the instant of
  the base file (slice) holding it, in the file group the key hashes to among
  :func:`~engine.metadata.record_index_layout.record_index_file_group_count` groups.
- **A commit** (``convertMetadataToRecordIndexRecords`` then ``reduceByKeys``): an update
  record at the commit's instant for each inserted key and each key that moved file group
  (a partition path update), a delete for each deleted key; a key both deleted and written
  keeps the update only (the delete from its old partition is dropped), two different writes
  of one key are an error. Keys updated in place get no cell. A delete is Hudi's
  ``EmptyHoodieRecordPayload``: a DELETE_BLOCK entry of the key with partition path
  ``record_index`` and the natural ordering value (``IntWrapper(0)``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.errors import HudiError
from engine.io.delete_block import DeleteRecord
from engine.metadata.record_index import (
    RECORD_INDEX_PARTITION,
    FileIdEncoding,
    RecordIndexRecord,
    RecordLocation,
    encode_record_index_record,
    instant_time_millis,
    record_index_file_group,
)
from engine.metadata.record_index_layout import record_index_file_id

__all__ = [
    "FileGroupCells",
    "KeyLocation",
    "commit_cells",
    "delete_records",
    "initialization_cells",
]

HFilePair = tuple[bytes, bytes]


@dataclass(frozen=True, slots=True)
class KeyLocation:
    """A record key of the data table and the file slice holding it."""

    record_key: str
    partition_path: str
    file_id: str
    instant_time: str


@dataclass(frozen=True, slots=True)
class FileGroupCells:
    """What one write puts in one ``record_index`` file group.

    Attributes:
        file_id: The file group (``record-index-0003-0``).
        upserts: HFile pairs sorted by row key (the base file, or the HFILE_DATA_BLOCK).
        deletes: Keys to delete, sorted (the DELETE_BLOCK after the data block).
    """

    file_id: str
    upserts: tuple[HFilePair, ...]
    deletes: tuple[str, ...] = ()

    def delete_records(self) -> list[DeleteRecord]:
        """The DELETE_BLOCK entries of :attr:`deletes`."""
        return delete_records(self.deletes)


def delete_records(keys: Iterable[str]) -> list[DeleteRecord]:
    """``createRecordIndexDelete`` as a DELETE_BLOCK stores it: the key, partition path
    ``record_index``, natural order (``IntWrapper(0)``)."""
    return [DeleteRecord(key, RECORD_INDEX_PARTITION) for key in keys]


def _sorted_pairs(records: Iterable[RecordIndexRecord], schema: str) -> tuple[HFilePair, ...]:
    """HFile rows compare as bytes (``HoodieHBaseKVComparator``): UTF-8 order.

    A value does not hold its key (the datum's ``key`` is empty): the keys of one location
    share their bytes, encoded once."""
    encoded: dict[tuple[RecordLocation, FileIdEncoding], bytes] = {}
    pairs = []
    for record in records:
        if record.meta:
            value = encode_record_index_record(record, schema)
        else:
            shared = (record.location, record.encoding)
            if shared not in encoded:
                encoded[shared] = encode_record_index_record(record, schema)
            value = encoded[shared]
        pairs.append((record.key.encode(), value))
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


def initialization_cells(
    keys: Iterable[KeyLocation],
    num_file_groups: int,
    schema: str,
    *,
    zone: dt.tzinfo = dt.UTC,
    encoding: FileIdEncoding = FileIdEncoding.UUID,
) -> list[FileGroupCells]:
    """The base file content of every file group of a new ``record_index`` partition (empty
    groups included: each file group exists from initialization on), by file group.

    Args:
        keys: Every live key of the table with the latest file slice holding it.
        num_file_groups: From :func:`~engine.metadata.record_index_layout.
            record_index_file_group_count` over the number of keys.
        schema: The ``HoodieMetadataRecord`` writer schema.
        zone: The data timeline's time zone (instant times to epoch milliseconds).
        encoding: How file ids are stored (UUID pieces, Hudi's default, or raw strings).

    Raises:
        HudiError: A key is held twice (the record index is global: a key lives in one file
            group), an instant is no date, or a file id cannot be stored with ``encoding``.
    """
    seen: dict[str, KeyLocation] = {}
    groups: list[list[RecordIndexRecord]] = [[] for _ in range(num_file_groups)]
    for item in keys:
        before = seen.setdefault(item.record_key, item)
        if before is not item:
            raise HudiError(
                f"record key {item.record_key!r} is held by {before.partition_path!r}/"
                f"{before.file_id} and {item.partition_path!r}/{item.file_id}: the record "
                "index maps a key to one file group"
            )
        millis = instant_time_millis(item.instant_time, zone)
        location = RecordLocation(item.partition_path, item.file_id, millis)
        group = record_index_file_group(item.record_key, num_file_groups)
        groups[group].append(RecordIndexRecord(item.record_key, location, encoding))
    return [
        FileGroupCells(record_index_file_id(i), _sorted_pairs(records, schema))
        for i, records in enumerate(groups)
    ]


def _written_keys(
    inserted: Mapping[str, tuple[str, str]], moved: Mapping[str, tuple[str, str]]
) -> dict[str, tuple[str, str]]:
    """Inserted and moved keys, refusing a key written to two places (``reduceByKeys``)."""
    written = dict(inserted)
    for key, location in moved.items():
        if written.setdefault(key, location) != location:
            raise HudiError(
                f"record key {key!r} is written to {written[key]} and to {location} by one "
                "commit: the record index takes one location per key"
            )
    return written


def commit_cells(
    instant_time: str,
    num_file_groups: int,
    schema: str,
    *,
    inserted: Mapping[str, tuple[str, str]],
    moved: Mapping[str, tuple[str, str]],
    deleted: Iterable[str],
    zone: dt.tzinfo = dt.UTC,
    encoding: FileIdEncoding = FileIdEncoding.UUID,
) -> list[FileGroupCells]:
    """The ``record_index`` cells of one data commit, for the file groups it touches only.

    Args:
        instant_time: The data commit's instant (the metadata deltacommit's too).
        num_file_groups: The partition's file group count (fixed at initialization).
        schema: The ``HoodieMetadataRecord`` writer schema.
        inserted: New keys -> (partition path, file id) they were written to.
        moved: Stored keys now in another file group -> (partition path, file id): a key whose
            partition path changed under ``hoodie.record.index.update.partition.path``.
        deleted: Keys the commit deleted (a moved key's delete from its old place may be
            listed: the write wins).
        zone: The data timeline's time zone.
        encoding: How file ids are stored.

    Raises:
        HudiError: A key written to two locations, an instant that is no date, or a file id
            that cannot be stored with ``encoding``.
    """
    written = _written_keys(inserted, moved)
    millis = instant_time_millis(instant_time, zone)
    upserts: dict[int, list[RecordIndexRecord]] = {}
    removed: dict[int, set[str]] = {}
    for key, (partition_path, file_id) in written.items():
        record = RecordIndexRecord(key, RecordLocation(partition_path, file_id, millis), encoding)
        upserts.setdefault(record_index_file_group(key, num_file_groups), []).append(record)
    for key in deleted:
        if key not in written:
            removed.setdefault(record_index_file_group(key, num_file_groups), set()).add(key)
    return [
        FileGroupCells(
            record_index_file_id(group),
            _sorted_pairs(upserts.get(group, ()), schema),
            tuple(sorted(removed.get(group, ()), key=str.encode)),
        )
        for group in sorted({*upserts, *removed})
    ]
