"""The metadata table's ``record_index`` partition: where each record key of the table lives.

Each value is a ``HoodieMetadataRecord`` of type 5 whose ``recordIndexMetadata``
(``HoodieRecordIndexInfo``) names the key's partition and file group: with ``fileIdEncoding`` 0
the file id is the UUID of ``fileIdHighBits``/``fileIdLowBits`` followed by ``-<fileIndex>``
(no suffix when ``fileIndex`` is -1) and ``fileId`` is ``""``; with 1 the high/low bits and the
index are -1 and ``fileId`` is the file id as it is. ``instantTime`` is the writing instant in
epoch milliseconds, the instant read in the timeline's time zone (``parseDateFromInstantTime``).
``position`` is null. The datum's own ``key`` is empty (the HFile row is the key) and its meta
columns null, except ``_hoodie_file_name``, which a compaction stamps on the base file it writes.

A key lives in file group ``mapRecordKeyToFileGroupIndex``: the 31-polynomial hash of its UTF-16
code units as an int32, ``abs(abs(h) % n)`` for ``n`` file groups (``record-index-000N-0``).
Records merge by key, the latest wins (``preCombine`` keeps the newer mapping); a DELETE_BLOCK
key removes the mapping.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import threading
import uuid
from collections.abc import Collection, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from typing import Any

import fastavro

from engine.errors import HFileFormatError, HudiError
from engine.fs.storage import Storage
from engine.io.hfile import HFile, RandomAccessFile, lookup_hfile, read_varint, varint
from engine.io.java_hashmap import java_string_hash
from engine.metadata.payload import MetadataRecordType, parsed_schema
from engine.metadata.record_index_layout import record_index_file_id
from engine.metadata.slices import (
    ValidInstants,
    latest_slices,
    open_metadata_table,
    slice_content,
    slice_log_content,
)
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSlice

__all__ = [
    "RECORD_INDEX_PARTITION",
    "FileIdEncoding",
    "RecordIndexRecord",
    "RecordLocation",
    "decode_record_index_record",
    "decode_record_location",
    "encode_record_index_record",
    "instant_time_millis",
    "locate",
    "located",
    "read_record_index",
    "record_index_file_group",
    "stamp_file_name",
]

RECORD_INDEX_PARTITION = "record_index"
_MISSING_FILE_INDEX = -1
_FILE_NAME = "_hoodie_file_name"
_UNSIGNED_64 = 2**64 - 1

_LOOKUP_THREADS = 4  # record index file groups one lookup reads side by side


class FileIdEncoding(IntEnum):
    """``HoodieRecordIndexInfo.fileIdEncoding`` (Hudi's ``_hoodie.writes.fileid.encoding``)."""

    UUID = 0
    RAW = 1


@dataclass(frozen=True, slots=True)
class RecordLocation:
    """Where the record index says a key lives."""

    partition_path: str
    file_id: str
    instant_time_ms: int


@dataclass(frozen=True, slots=True)
class RecordIndexRecord:
    """One ``record_index`` record: a key, where it lives, and how the location is stored.

    Attributes:
        key: The record key (the HFile row).
        location: The key's partition, file id and instant (epoch milliseconds).
        encoding: How the file id is stored (UUID pieces or the raw string).
        meta: Meta columns as stored (``_hoodie_file_name`` of a compacted base file), so a
            decoded record encodes to the stored bytes.
    """

    key: str
    location: RecordLocation
    encoding: FileIdEncoding = FileIdEncoding.UUID
    meta: Mapping[str, Any] = field(default_factory=dict)


def record_index_file_group(record_key: str, num_file_groups: int) -> int:
    """``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex``: the file group of a key."""
    h = java_string_hash(record_key)
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return abs(abs(signed) % num_file_groups)


def instant_time_millis(instant_time: str, zone: dt.tzinfo = dt.UTC) -> int:
    """The ``instantTime`` Hudi stores for an instant: ``parseDateFromInstantTime`` in epoch
    milliseconds. A second-granularity instant reads as its second's ``999`` ms; a longer one
    (the metadata table's suffixed instants) as its first 17 digits. ``zone`` is the timeline's
    (``hoodie.table.timeline.timezone``: UTC, or the writer's local zone).

    Raises:
        HudiError: The instant is not a date (an initialization instant such as
            ``00000000000000``), as Hudi refuses it.
    """
    digits = instant_time + "999" if len(instant_time) == 14 else instant_time[:17]
    try:
        if len(digits) != 17 or not digits.isdigit():
            raise ValueError("not 17 digits")
        naive = dt.datetime.strptime(digits + "000", "%Y%m%d%H%M%S%f")
    except ValueError as e:
        raise HudiError(
            f"instant time {instant_time!r} is no date ({e}): no record index location can name it"
        ) from None
    return int(naive.replace(tzinfo=zone).timestamp() * 1000 + 0.5)


def _uuid_pieces(file_id: str) -> tuple[int, int, int]:
    """(high bits, low bits, file index) of a UUID file id, as signed Java longs/int.

    Raises:
        HudiError: The file id is no lower-case UUID (optionally ``-<index>``): Java would
            accept some such ids and store another spelling of them.
    """
    index: int | None = _MISSING_FILE_INDEX
    head = file_id
    if len(file_id) != 36:
        head, _, suffix = file_id.rpartition("-")
        canonical = suffix.isascii() and suffix.isdigit() and str(int(suffix)) == suffix
        index = int(suffix) if canonical else None
    try:
        value = uuid.UUID(head)
    except ValueError:
        value = None
    if value is None or str(value) != head or index is None or index >= 2**31:
        raise HudiError(
            f"file id {file_id!r} is not a UUID file id (<uuid>-<index>): the record index "
            f"stores it with fileIdEncoding {int(FileIdEncoding.RAW)} only"
        )
    high, low = value.int >> 64, value.int & _UNSIGNED_64
    return _signed64(high), _signed64(low), index


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _index_info(location: RecordLocation, encoding: FileIdEncoding) -> dict[str, Any]:
    """``HoodieRecordIndexInfo`` as ``createRecordIndexUpdate`` fills it."""
    if encoding is FileIdEncoding.UUID:
        high, low, index = _uuid_pieces(location.file_id)
        file_id = ""
    else:
        high, low, index, file_id = -1, -1, -1, location.file_id
    return {
        "partitionName": location.partition_path,
        "fileIdHighBits": high,
        "fileIdLowBits": low,
        "fileIndex": index,
        "fileId": file_id,
        "instantTime": location.instant_time_ms,
        "fileIdEncoding": int(encoding),
        "position": None,
    }


@lru_cache(maxsize=8)
def _index_info_fields(schema: str) -> frozenset[str]:
    """The ``HoodieRecordIndexInfo`` fields of a writer schema (older ones lack some)."""
    for f in json.loads(schema)["fields"]:
        if f["name"] == "recordIndexMetadata":
            branch = next(t for t in f["type"] if isinstance(t, dict))
            return frozenset(g["name"] for g in branch["fields"])
    return frozenset()


@lru_cache(maxsize=8)
def _record_fields(schema: str) -> tuple[str, ...]:
    """The ``HoodieMetadataRecord`` fields of a writer schema (parsed once: a commit encodes a
    record per key it writes)."""
    return tuple(f["name"] for f in json.loads(schema)["fields"])


def encode_record_index_record(record: RecordIndexRecord, schema: str) -> bytes:
    """The Avro datum Hudi stores for ``record`` (the HFile value under row ``record.key``).

    Raises:
        HudiError: The file id cannot be stored with the record's encoding, or the schema has
            no field for a raw file id.
    """
    if record.encoding is FileIdEncoding.RAW and not {"fileId", "fileIdEncoding"} <= (
        _index_info_fields(schema)
    ):
        raise HudiError(
            f"the metadata record schema has no fileId/fileIdEncoding: file id "
            f"{record.location.file_id!r} of key {record.key!r} cannot be stored raw"
        )
    datum: dict[str, Any] = dict.fromkeys(_record_fields(schema))
    datum.update({"key": ""}, **record.meta)
    datum["type"] = int(MetadataRecordType.RECORD_INDEX)
    datum["recordIndexMetadata"] = _index_info(record.location, record.encoding)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed_schema(schema), datum)
    return out.getvalue()


@lru_cache(maxsize=8)
def _file_name_field(schema: str) -> int | None:
    """The position of ``_hoodie_file_name`` when it and every field before it are nullable
    strings and ``key`` (string) and ``type`` (int) follow it, as in the schemas Hudi 1.x
    writes; None for a schema of another shape."""
    fields = json.loads(schema)["fields"]
    names = [f["name"] for f in fields]
    if _FILE_NAME not in names:
        return None
    at = names.index(_FILE_NAME)
    nullable_strings = all(f["type"] == ["null", "string"] for f in fields[: at + 1])
    return at if nullable_strings and names[at + 1 : at + 3] == ["key", "type"] else None


def _zigzag(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the Avro int/long at ``pos``."""
    value, pos = read_varint(data, pos)
    return (value >> 1) ^ -(value & 1), pos


def _skip_nullable_string(data: bytes, pos: int) -> int:
    if data[pos] == 0:  # the null branch: one byte, as most meta columns are
        return pos + 1
    branch, pos = _zigzag(data, pos)
    if branch == 1:
        length, pos = _zigzag(data, pos)
        pos += length
    return pos


def stamp_file_name(value: bytes, schema: str, file_name: str) -> bytes | None:
    """``value`` (a ``record_index`` datum of ``schema``) with ``_hoodie_file_name`` set to
    ``file_name`` and every other byte kept, as a compaction stamps the records of the base
    file it writes; None when ``schema`` is not of the shape this reads
    (:func:`_file_name_field`): the caller then decodes and encodes the record.

    Raises:
        HudiError: The datum is not a record index record (or does not parse).
    """
    at = _file_name_field(schema)
    if at is None:
        return None
    try:
        pos = 0
        for _ in range(at):
            pos = _skip_nullable_string(value, pos)
        start, pos = pos, _skip_nullable_string(value, pos)
        key_length, after = (0, pos + 1) if value[pos] == 0 else _zigzag(value, pos)
        kind, _ = _zigzag(value, after + key_length)
    except (HFileFormatError, IndexError) as e:
        raise HudiError(f"a record index datum does not parse: {e}") from None
    if kind != MetadataRecordType.RECORD_INDEX:
        raise HudiError(f"metadata record of type {kind} is not a record index one")
    return value[:start] + _file_name_bytes(file_name) + value[pos:]


@lru_cache(maxsize=4)
def _file_name_bytes(file_name: str) -> bytes:
    """``_hoodie_file_name`` set to ``file_name``: the string branch of its union."""
    name = file_name.encode()
    return b"\x02" + varint(len(name) << 1) + name


def decode_record_index_record(key: bytes, value: bytes, schema: str) -> RecordIndexRecord:
    """The record stored under HFile row ``key``.

    Raises:
        HudiError: The datum is not a record index record.
    """
    datum = fastavro.schemaless_reader(io.BytesIO(value), parsed_schema(schema), None)
    assert isinstance(datum, dict)
    info = datum.get("recordIndexMetadata")
    if datum.get("type") != MetadataRecordType.RECORD_INDEX or not isinstance(info, dict):
        raise HudiError(f"metadata record of type {datum.get('type')} is not a record index one")
    encoding = FileIdEncoding(info.get("fileIdEncoding", 0))
    if encoding is FileIdEncoding.RAW:
        file_id = str(info["fileId"])
    else:
        high, low = info["fileIdHighBits"] & _UNSIGNED_64, info["fileIdLowBits"] & _UNSIGNED_64
        file_id = str(uuid.UUID(int=high << 64 | low))
        if info["fileIndex"] != _MISSING_FILE_INDEX:
            file_id += f"-{info['fileIndex']}"
    location = RecordLocation(str(info["partitionName"]), file_id, int(info["instantTime"]))
    meta = {k: v for k, v in datum.items() if k.startswith("_hoodie_") and v is not None}
    return RecordIndexRecord(key.decode(), location, encoding, meta)


def decode_record_location(value: bytes, schema: str) -> RecordLocation:
    """The location a ``record_index`` value holds.

    Raises:
        HudiError: The datum is not a record index record.
    """
    return decode_record_index_record(b"", value, schema).location


def _locations(
    hfile: HFile, wanted: Collection[str] | None
) -> Iterator[tuple[str, RecordLocation]]:
    schema = hfile.file_info["schema"].decode()
    for raw_key, value in hfile.entries:
        key = raw_key.decode()
        if wanted is None or key in wanted:
            yield key, decode_record_location(value, schema)


def _merged_slice(
    mdt: Storage, metadata_slice: FileSlice, valid: ValidInstants,
    wanted: Collection[str] | None,
) -> dict[str, RecordLocation]:  # fmt: skip
    """The slice's mappings (of ``wanted`` keys only, unless None): base file, then each valid
    log block in order, a later record replacing an earlier one and a deleted key dropped."""
    if wanted is not None:
        return _merged_wanted(mdt, metadata_slice, valid, wanted)
    base, content = slice_content(mdt, metadata_slice, valid)
    merged = dict(_locations(base, None)) if base else {}
    for item in content:
        if isinstance(item, HFile):
            merged.update(_locations(item, None))
        else:
            for key in item:
                merged.pop(key, None)
    return merged


def _merged_wanted(
    mdt: Storage, metadata_slice: FileSlice, valid: ValidInstants, wanted: Collection[str]
) -> dict[str, RecordLocation]:
    """:func:`_merged_slice` of a few keys: each HFile is searched through its block index
    (:func:`~engine.io.hfile.lookup_hfile`), so only the blocks that may hold them are read and
    only their records decoded: the cost follows the keys, not the slice."""
    rows = [key.encode() for key in wanted]
    base, content = slice_log_content(mdt, metadata_slice, valid)
    merged: dict[str, RecordLocation] = {}
    if base is not None:
        with mdt.open_input(base) as source:
            _merge_found(merged, source, rows)
    for item in content:
        if isinstance(item, list):
            for key in item:
                merged.pop(key, None)
        else:
            _merge_found(merged, item, rows)
    return merged


def _merge_found(
    merged: dict[str, RecordLocation], hfile: bytes | RandomAccessFile, rows: list[bytes]
) -> None:
    found, info = lookup_hfile(hfile, rows)
    schema = info["schema"].decode()
    for row, value in found.items():
        merged[row.decode()] = _cached_location(value, schema)


@lru_cache(maxsize=4096)
def _cached_location(value: bytes, schema: str) -> RecordLocation:
    """:func:`decode_record_location`, decoded once per distinct value: a value holds only the
    key's partition, file group and instant (its ``key`` is empty, its meta columns null), so
    the keys of one file group written by one instant share the same bytes."""
    return decode_record_location(value, schema)


def read_record_index(
    storage: Storage, data_timeline: Timeline
) -> dict[str, RecordLocation] | None:
    """Every key's location as the record index holds it (None without a metadata table).

    Raises:
        HudiError: No committed ``record_index`` partition, or a file of it does not decode.
    """
    opened = open_metadata_table(storage)
    if opened is None:
        return None
    mdt, timeline = opened
    valid = ValidInstants.of(timeline, data_timeline)
    out: dict[str, RecordLocation] = {}
    for metadata_slice in latest_slices(mdt, timeline, RECORD_INDEX_PARTITION):
        out.update(_merged_slice(mdt, metadata_slice, valid, None))
    return dict(sorted(out.items()))


def _numbered_slices(slices: list[FileSlice], mdt: Storage) -> list[FileSlice]:
    """The slices in file group order, checked to be ``record-index-0000-0`` .. ``n-1``: a key's
    file group is found by its number, so a missing or foreign one would misplace keys."""
    expected = [record_index_file_id(i) for i in range(len(slices))]
    if [s.file_id for s in slices] != expected:
        found = ", ".join(s.file_id for s in slices)
        raise HudiError(
            f"the record_index partition at {mdt.uri()} has file groups {found}, "
            f"not record-index-0000-0 .. {expected[-1]}"
        )
    return slices


def locate(
    storage: Storage,
    data_timeline: Timeline,
    keys: Iterable[str],
    metadata_table: tuple[Storage, Timeline] | None = None,
) -> dict[str, RecordLocation] | None:
    """Where the record index says each of ``keys`` lives: the lookup of Hudi's
    ``RECORD_INDEX`` (``readRecordIndexLocationsWithKeys``).

    Contract for the writer and the index: only the file groups the keys hash to are read (base
    HFile, then the log blocks valid on both timelines, oldest first; a later record wins, a
    DELETE_BLOCK removes the key). A key absent from the result is not in the table. The result
    is as of the last completed data instant of ``data_timeline``: call it before the writing
    instant's metadata blocks exist, or with a timeline on which that instant is not completed.
    None when the table has no metadata table. ``metadata_table`` is the metadata table and its
    timeline when the caller has opened them already (else they are opened here).

    Raises:
        HudiError: No committed ``record_index`` partition, its file groups are not numbered
            0..n-1, or a file of it does not decode.
    """
    opened = metadata_table or open_metadata_table(storage)
    if opened is None:
        return None
    mdt, timeline = opened
    slices = _numbered_slices(latest_slices(mdt, timeline, RECORD_INDEX_PARTITION), mdt)
    by_group: dict[int, set[str]] = {}
    for key in keys:
        by_group.setdefault(record_index_file_group(key, len(slices)), set()).add(key)
    valid = ValidInstants.of(timeline, data_timeline)
    out: dict[str, RecordLocation] = {}

    def group_lookup(item: tuple[int, set[str]]) -> dict[str, RecordLocation]:
        return _merged_slice(mdt, slices[item[0]], valid, item[1])

    # file groups side by side: their blocks' decompression and decoding leave the GIL
    with ThreadPoolExecutor(max_workers=min(_LOOKUP_THREADS, max(1, len(by_group)))) as pool:
        for found in pool.map(group_lookup, sorted(by_group.items())):
            out.update(found)
    return dict(sorted(out.items()))


@dataclass
class _Answers:
    """The record index answers of this process for one table state: the keys asked so far and
    the locations found among them (None: the table has no metadata table)."""

    state: tuple[str, frozenset[str], frozenset[str] | None]
    asked: set[str] = field(default_factory=set)
    found: dict[str, RecordLocation] | None = field(default_factory=dict)


_ANSWERS: _Answers | None = None
_ANSWERS_LOCK = threading.Lock()


def _completed(timeline: Timeline) -> frozenset[str]:
    return frozenset(i.instant_time for i in timeline.instants if i.is_completed)


def located(storage: Storage, keys: Iterable[str]) -> dict[str, RecordLocation] | None:
    """:func:`locate` as of the table's completed instants, asked only for the keys this process
    has not asked about since they last changed: a write looks its whole batch up once
    (:meth:`engine.write.index.RecordIndex.prefetch`), then each of its tasks asks for its
    partition's keys (from threads of this process), and its metadata commit for the keys its
    log blocks update. The answer depends on the completed data instants only: metadata blocks
    of other instants are not valid (:class:`~engine.metadata.slices.ValidInstants`); the
    metadata table's own completed instants are part of the state all the same, so a record
    index rebuilt, rolled back or removed in between is read again."""
    global _ANSWERS
    timeline = Timeline.load(storage)
    opened = open_metadata_table(storage)
    state = (storage.base_path, _completed(timeline), _completed(opened[1]) if opened else None)
    wanted = list(keys)
    with _ANSWERS_LOCK:
        if _ANSWERS is None or _ANSWERS.state != state:
            _ANSWERS = _Answers(state)
        answers = _ANSWERS
        missing = [k for k in wanted if k not in answers.asked]
    if missing:
        found = locate(storage, timeline, missing, opened)
        with _ANSWERS_LOCK:
            answers.asked.update(missing)
            if found is None or answers.found is None:
                answers.found = None
            else:
                answers.found.update(found)
    stored = answers.found
    return None if stored is None else {k: stored[k] for k in wanted if k in stored}
