"""``HoodieMetadataRecord`` payloads of the ``files`` partition, and how Hudi merges them.

Every value in a metadata table HFile (base file or HFILE_DATA_BLOCK) is one Avro binary datum of
``HoodieMetadataRecord`` (``HoodieMetadata.avsc``), written with the schema the HFile's file info
(``schema``) and the log block's SCHEMA header carry. The HFile row is the record key; the datum's
own ``key`` field is written empty. In the ``files`` partition::

    row                     type  filesystemMetadata (map<string, {size: long, isDeleted: bool}>)
    __all_partitions__      1     partition path -> size 0 (isDeleted marks a dropped partition)
    <partition path> / "."  2     file name -> size (isDeleted marks a deleted file)

The map's entries are written in ``java.util.HashMap`` order (Hudi builds them as HashMaps).

Merging (``HoodieMetadataPayload.preCombine`` / ``combineFileSystemMetadata``, Hudi 1.x): log
records of one key are merged oldest first, then the result onto the base file's record. A newer
entry of a name the older map holds replaces it with the larger size, or removes it when the
newer one is a tombstone; a name only one side holds is taken as it is (a tombstone stays, so the
merge with an older base record still removes the file). A key a DELETE_BLOCK names is dropped
until a newer record brings it back. What a reader lists is the entries that are not tombstones.
The merged map's order is a HashMap's built as Hudi 1.1 builds it (see :func:`merge_log_records`):
the corpus's compacted base files hold exactly these merged records, byte for byte.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from typing import Any

import fastavro

from engine.errors import HudiError
from engine.io.java_hashmap import JavaHashMap

__all__ = [
    "ALL_PARTITIONS_KEY",
    "NON_PARTITIONED_KEY",
    "FileInfo",
    "FilesRecord",
    "MetadataRecordType",
    "decode_files_record",
    "encode_files_record",
    "merge_file_slice",
    "merge_log_records",
    "merge_with_base",
    "parsed_schema",
]

ALL_PARTITIONS_KEY = "__all_partitions__"
# the files partition's key of a non-partitioned table's partition ""
NON_PARTITIONED_KEY = "."


class MetadataRecordType(IntEnum):
    """``HoodieMetadataRecord.type``: which payload field a record fills."""

    PARTITION_LIST = 1
    FILE_LIST = 2
    COLUMN_STATS = 3
    BLOOM_FILTER = 4
    RECORD_INDEX = 5
    PARTITION_STATS = 6
    SECONDARY_INDEX = 7


@dataclass(frozen=True, slots=True)
class FileInfo:
    """``HoodieMetadataFileInfo``: a file's size, or a tombstone."""

    size: int
    is_deleted: bool = False


@dataclass(frozen=True, slots=True)
class FilesRecord:
    """One record of the ``files`` partition.

    Attributes:
        key: The record key (the HFile row): ``__all_partitions__`` or a partition path.
        type: PARTITION_LIST or FILE_LIST.
        files: Name (file, or partition for the partition list) -> info, in stored order.
        meta: The datum's other fields as stored (meta columns, the empty ``key``), so an encoded
            record is the stored one.
    """

    key: str
    type: MetadataRecordType
    files: dict[str, FileInfo]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def listed(self) -> dict[str, int]:
        """Name -> size of the entries that are not tombstones."""
        return {name: info.size for name, info in self.files.items() if not info.is_deleted}

    @property
    def partition_path(self) -> str:
        """The data table partition path a FILE_LIST record lists."""
        return "" if self.key == NON_PARTITIONED_KEY else self.key


@lru_cache(maxsize=8)
def parsed_schema(schema: str) -> Any:
    """The parsed ``HoodieMetadataRecord`` writer schema (cached: every HFile carries it)."""
    return fastavro.parse_schema(json.loads(schema))


def decode_files_record(key: bytes, value: bytes, schema: str) -> FilesRecord:
    """The ``files`` partition record stored under HFile row ``key``.

    Raises:
        HudiError: The datum is not a partition-list or file-list record.
    """
    datum = fastavro.schemaless_reader(io.BytesIO(value), parsed_schema(schema), None)
    assert isinstance(datum, dict)
    name = key.decode()
    kind = datum.get("type")
    if kind not in (MetadataRecordType.PARTITION_LIST, MetadataRecordType.FILE_LIST):
        raise HudiError(f"metadata record {name!r} has type {kind}, not a files partition record")
    entries = datum.get("filesystemMetadata") or {}
    files = {n: FileInfo(int(i["size"]), bool(i["isDeleted"])) for n, i in entries.items()}
    meta = {k: v for k, v in datum.items() if k not in ("type", "filesystemMetadata")}
    return FilesRecord(name, MetadataRecordType(kind), files, meta)


def encode_files_record(record: FilesRecord, schema: str) -> bytes:
    """The Avro datum Hudi stores for ``record``: the map in ``record.files`` order (a decoded
    or merged record's is already Java's), every other payload field null, the ``key`` field
    empty unless ``record.meta`` says otherwise."""
    datum: dict[str, Any] = dict.fromkeys(f["name"] for f in json.loads(schema)["fields"])
    datum.update({"key": ""}, **record.meta)
    datum["type"] = int(record.type)
    datum["filesystemMetadata"] = {
        name: {"size": info.size, "isDeleted": info.is_deleted}
        for name, info in record.files.items()
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed_schema(schema), datum)
    return out.getvalue()


def _as_java_map(files: Mapping[str, FileInfo]) -> JavaHashMap[FileInfo]:
    """The map Avro decodes a stored record into: ``new HashMap<>(size)`` in stored order."""
    decoded: JavaHashMap[FileInfo] = JavaHashMap(len(files))
    for name, info in files.items():
        decoded.put(name, info)
    return decoded


def _combine(
    first: Mapping[str, FileInfo], then: Mapping[str, FileInfo], *, newer_first: bool
) -> dict[str, FileInfo]:
    """``combineFileSystemMetadata``: ``putAll`` of ``first`` into a new HashMap, then each entry
    of ``then`` merged in. Which of the two is the newer record sets the map's order only; the
    content is Hudi's rule: the newer entry wins, a newer tombstone removes the name, sizes take
    the larger."""
    combined: JavaHashMap[FileInfo] = JavaHashMap()
    combined.put_all(_as_java_map(first).items())
    for name, info in _as_java_map(then).items():
        before = combined.get(name)
        if before is None:
            combined.put(name, info)
        elif (before if newer_first else info).is_deleted:
            combined.remove(name)
        else:
            combined.put(name, FileInfo(max(info.size, before.size)))
    return dict(combined.items())


def merge_log_records(older: FilesRecord, newer: FilesRecord) -> FilesRecord:
    """Two log records of one key. Hudi 1.1 puts the newer record's map first (the order the
    corpus's compacted base files show), then the older one's entries."""
    files = _combine(newer.files, older.files, newer_first=True)
    return FilesRecord(newer.key, newer.type, files, newer.meta)


def merge_with_base(base: FilesRecord, logs: FilesRecord) -> FilesRecord:
    """The base file's record under the merged log record (``combineAndGetUpdateValue``)."""
    files = _combine(base.files, logs.files, newer_first=False)
    return FilesRecord(logs.key, logs.type, files, logs.meta)


def merge_file_slice(
    base: Iterable[FilesRecord], logs: Iterable[FilesRecord | str]
) -> dict[str, FilesRecord]:
    """The records of a file slice as Hudi reads (and compacts) them.

    Args:
        base: The base file's records.
        logs: The log records oldest first (blocks in completion order); a ``str`` is a key a
            DELETE_BLOCK deleted.

    Returns:
        key -> merged record, in key order; deleted keys left out.
    """
    merged: dict[str, FilesRecord | None] = {}
    for record in logs:
        if isinstance(record, str):
            merged[record] = None
            continue
        before = merged.get(record.key)
        merged[record.key] = record if before is None else merge_log_records(before, record)
    out: dict[str, FilesRecord] = {}
    for record in base:
        if record.key not in merged:
            out[record.key] = record
            continue
        logged = merged[record.key]
        if logged is not None:
            out[record.key] = merge_with_base(record, logged)
    for key, logged in merged.items():
        if logged is not None and key not in out:
            out[key] = logged
    return dict(sorted(out.items()))
