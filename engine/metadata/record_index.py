"""The metadata table's ``record_index`` partition: where each record key of the table lives.

Each value is a ``HoodieMetadataRecord`` of type 5 whose ``recordIndexMetadata``
(``HoodieRecordIndexInfo``) names the key's partition and file group: with ``fileIdEncoding`` 0
the file id is the UUID of ``fileIdHighBits``/``fileIdLowBits`` followed by ``-<fileIndex>``
(no suffix when ``fileIndex`` is -1), with 1 it is the ``fileId`` string. ``instantTime`` is the
writing instant in epoch milliseconds (of the writer's time zone).

A key lives in file group ``mapRecordKeyToFileGroupIndex``: the 31-polynomial hash of its UTF-16
code units as an int32, ``abs(abs(h) % n)`` for ``n`` file groups (``record-index-000N-0``).
Records merge by key, the latest wins (``preCombine`` keeps the newer mapping); a DELETE_BLOCK
key removes the mapping.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import fastavro

from engine.errors import HudiError
from engine.fs.storage import Storage
from engine.io.hfile import HFile
from engine.io.java_hashmap import java_string_hash
from engine.metadata.payload import MetadataRecordType, parsed_schema
from engine.metadata.slices import ValidInstants, latest_slices, open_metadata_table, slice_content
from engine.timeline.timeline import Timeline

__all__ = [
    "RECORD_INDEX_PARTITION",
    "RecordLocation",
    "decode_record_location",
    "read_record_index",
    "record_index_file_group",
]

RECORD_INDEX_PARTITION = "record_index"
_MISSING_FILE_INDEX = -1


@dataclass(frozen=True, slots=True)
class RecordLocation:
    """Where the record index says a key lives."""

    partition_path: str
    file_id: str
    instant_time_ms: int


def record_index_file_group(record_key: str, num_file_groups: int) -> int:
    """``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex``: the file group of a key."""
    h = java_string_hash(record_key)
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return abs(abs(signed) % num_file_groups)


def decode_record_location(value: bytes, schema: str) -> RecordLocation:
    """The location a ``record_index`` value holds.

    Raises:
        HudiError: The datum is not a record index record.
    """
    datum = fastavro.schemaless_reader(io.BytesIO(value), parsed_schema(schema), None)
    assert isinstance(datum, dict)
    info = datum.get("recordIndexMetadata")
    if datum.get("type") != MetadataRecordType.RECORD_INDEX or not isinstance(info, dict):
        raise HudiError(f"metadata record of type {datum.get('type')} is not a record index one")
    if info.get("fileIdEncoding") == 1:
        file_id = str(info["fileId"])
    else:
        high, low = info["fileIdHighBits"] & (2**64 - 1), info["fileIdLowBits"] & (2**64 - 1)
        file_id = str(uuid.UUID(int=high << 64 | low))
        if info["fileIndex"] != _MISSING_FILE_INDEX:
            file_id += f"-{info['fileIndex']}"
    return RecordLocation(str(info["partitionName"]), file_id, int(info["instantTime"]))


def _locations(hfile: HFile) -> Iterator[tuple[str, RecordLocation]]:
    schema = hfile.file_info["schema"].decode()
    for key, value in hfile.entries:
        yield key.decode(), decode_record_location(value, schema)


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
        base, content = slice_content(mdt, metadata_slice, valid)
        merged = dict(_locations(base)) if base else {}
        for item in content:
            if isinstance(item, HFile):
                merged.update(_locations(item))
            else:
                for key in item:
                    merged.pop(key, None)
        out.update(merged)
    return dict(sorted(out.items()))
