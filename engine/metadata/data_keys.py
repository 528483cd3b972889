"""The record keys a data file holds, as the record index's producers need them.

Hudi's metadata writer finds a commit's record index changes by reading the files the commit
wrote (``BaseFileRecordParsingUtils``): a new base file's keys against those of the base file it
replaced (new keys are inserted or moved in, missing ones deleted), a log file's data block keys
and DELETE_BLOCK keys. Only the key column is read: ``_hoodie_record_key`` of a base file, the
keys of a log block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from engine.fs.filenames import is_base_file, parse_base_file_name
from engine.fs.storage import Storage
from engine.io.logfile import (
    HoodieLogBlockType,
    decode_avro_data_block,
    decode_delete_block,
    decode_parquet_data_block,
    read_log_blocks,
)
from engine.io.parquet import read_base_file
from engine.model.schema import RECORD_KEY_COLUMN

__all__ = [
    "SliceKeys",
    "base_file_key_array",
    "base_file_keys",
    "key_changes",
    "log_file_keys",
    "previous_base_file",
    "slice_keys",
]


@dataclass
class SliceKeys:
    """Keys a file slice's files write (in data blocks or the base file) and delete."""

    written: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)

    @property
    def live(self) -> set[str]:
        return self.written - self.deleted


def base_file_keys(storage: Storage, rel_path: str) -> set[str]:
    """The record keys of a base file (its key column only)."""
    return set(base_file_key_array(storage, rel_path).to_pylist())


def base_file_key_array(storage: Storage, rel_path: str) -> pa.Array:
    """The record keys of a base file as an Arrow array (its key column only; a key stored
    twice is there twice), for diffs of whole files that stay out of Python objects."""
    table = read_base_file(storage, rel_path, [RECORD_KEY_COLUMN])
    return table.column(RECORD_KEY_COLUMN).combine_chunks()


def key_changes(new: pa.Array, old: pa.Array) -> tuple[list[str], list[str]]:
    """(keys of ``new`` not in ``old``, keys of ``old`` not in ``new``): what a rewritten base
    file added and dropped, found by Arrow's hash lookups so only the changes become Python
    strings (a merge rewrites a whole file for a few keys). A key listed twice in either is
    listed as often in the answer: callers collect the keys in sets."""
    added = new.filter(pc.invert(pc.is_in(new, value_set=old)))
    dropped = old.filter(pc.invert(pc.is_in(old, value_set=new)))
    return added.to_pylist(), dropped.to_pylist()


def log_file_keys(storage: Storage, rel_path: str, into: SliceKeys | None = None) -> SliceKeys:
    """The keys a log file's data blocks write and its DELETE_BLOCKs delete, in block order (a
    later delete removes a written key). Meant for the log files of one commit, which hold no
    rollback command block."""
    keys = into or SliceKeys()
    blocks = list(read_log_blocks(storage.read_bytes(rel_path)))
    for block in blocks:
        if block.block_type is HoodieLogBlockType.AVRO_DATA_BLOCK:
            table = decode_avro_data_block(block)
        elif block.block_type is HoodieLogBlockType.PARQUET_DATA_BLOCK:
            table = decode_parquet_data_block(block)
        elif block.block_type is HoodieLogBlockType.DELETE_BLOCK:
            deleted = {r.record_key for r in decode_delete_block(block)}
            keys.written -= deleted
            keys.deleted |= deleted
            continue
        else:
            continue
        written = set(table.column(RECORD_KEY_COLUMN).to_pylist())
        keys.deleted -= written
        keys.written |= written
    return keys


def slice_keys(storage: Storage, base_file: str | None, log_files: list[str]) -> SliceKeys:
    """The keys of a file slice: its base file's, then each log file's in order."""
    keys = SliceKeys(base_file_keys(storage, base_file) if base_file else set())
    for log in log_files:
        log_file_keys(storage, log, keys)
    return keys


def previous_base_file(
    storage: Storage, partition: str, file_id: str, instant_time: str
) -> str | None:
    """The base file of file group ``file_id`` written at ``instant_time`` (the one a merge
    rewrote: its write stat's ``prevCommit``), as a table-relative path; None when absent."""
    for entry in storage.list_dir(partition):
        if entry.is_dir or not is_base_file(entry.name):
            continue
        name = parse_base_file_name(entry.name)
        if name.file_id == file_id and name.instant_time == instant_time:
            return f"{partition}/{entry.name}" if partition else entry.name
    return None
