"""Hudi log files: framing of log blocks and the content of each block type (log format 1).

A log file (``.{file_id}_{base_instant_time}.log.{version}_{write_token}``) is a concatenation of
log blocks, with no file header or trailer. All integers are big-endian (Java DataOutputStream)::

    offset    size  field
    0         6     magic "#HUDI#" (23 48 55 44 49 23)
    6         8     int64 block_length: bytes after this field, up to and incl. the reverse pointer
    14        4     int32 log format version (1)
    18        4     int32 block type (HoodieLogBlockType ordinal)
    22        H     header: int32 count ; count x (int32 key ordinal ; int32 n ; n bytes UTF-8)
    22+H      8     int64 content_length
    30+H      C     content
    30+H+C    F     footer, same encoding as the header (always 00 00 00 00)
    end-8     8     int64 reverse pointer = bytes of the block before it (= block_length + 6)

    block_length = 4 + 4 + H + 8 + C + F + 8

Block types and their content::

    0 COMMAND_BLOCK        empty; header COMMAND_BLOCK_TYPE "0" (rollback) + TARGET_INSTANT_TIME
    1 DELETE_BLOCK         int32 version (3) ; int32 n ; n bytes Avro HoodieDeleteRecordList
    2 CORRUPT_BLOCK        never written; what a reader makes of a damaged region
    3 AVRO_DATA_BLOCK      int32 version (3) ; int32 count ; count x (int32 n ; Avro datum)
    4 HFILE_DATA_BLOCK     an HFile (metadata table only; not decoded here)
    5 PARQUET_DATA_BLOCK   a complete Parquet file (written like a base file: same codec,
                           dictionary choice, footer); header INSTANT_TIME + SCHEMA
    6 CDC_DATA_BLOCK       like AVRO_DATA_BLOCK, in .cdc log files only

Version features (log format version in each block; block content version in the content)::

    log format 0   no type/header/footer/lengths (legacy; read-only, never written)
    log format 1   everything above
    content 3      Avro data/delete payloads; delete list in Avro (v<=2 used Java/Kryo)

Corruption is detected as Java's HoodieLogFileReader does it: the reverse pointer at
``start + 6 + block_length - 8`` must equal ``block_length + 6`` and the block must be followed
by EOF or the magic; otherwise the region up to the next magic is a CORRUPT_BLOCK and reading
resumes there. So a torn append damages only the last block.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from engine.config import PARQUET_COMPRESSION_CODEC
from engine.errors import LogFormatError
from engine.io.avro import encode_length_prefixed
from engine.io.avro_decode import decode_length_prefixed
from engine.io.delete_block import (
    DeleteRecord,
    decode_delete_record_list,
    encode_delete_record_list,
    wrapper_for_field,
)
from engine.io.parquet import encode_parquet_file
from engine.model.schema import parse_avro_schema, schema_json

__all__ = [
    "MAGIC",
    "CommandBlockType",
    "HeaderMetadataType",
    "HoodieLogBlockType",
    "LogBlock",
    "decode_avro_data_block",
    "decode_cdc_data_block",
    "decode_command_block",
    "decode_delete_block",
    "decode_parquet_data_block",
    "encode_avro_data_block",
    "encode_block",
    "encode_command_block",
    "encode_delete_block",
    "encode_parquet_data_block",
    "read_log_blocks",
]

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
BLOCK_CONTENT_VERSION = 3

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class HoodieLogBlockType(IntEnum):
    """Block type ordinals (``HoodieLogBlock.HoodieLogBlockType``)."""

    COMMAND_BLOCK = 0
    DELETE_BLOCK = 1
    CORRUPT_BLOCK = 2
    AVRO_DATA_BLOCK = 3
    HFILE_DATA_BLOCK = 4
    PARQUET_DATA_BLOCK = 5
    CDC_DATA_BLOCK = 6


class HeaderMetadataType(IntEnum):
    """Header key ordinals (append-only Java enum; table version 6 writers use 0-3)."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class CommandBlockType(IntEnum):
    """Command block kinds; the value is written as a decimal string in the header."""

    ROLLBACK_BLOCK = 0


@dataclass(frozen=True, slots=True)
class LogBlock:
    """One block of a log file as stored.

    Attributes:
        block_type: The block's type; CORRUPT_BLOCK for a damaged region (content = its bytes).
        header: Header entries in file order.
        content: The content bytes (undecoded).
        offset: Position of the block's magic in the file.
        size: Bytes the block occupies, magic and reverse pointer included.
        footer: Footer entries (empty in every known writer).
        log_format_version: The block's log format version.
    """

    block_type: HoodieLogBlockType
    header: dict[HeaderMetadataType, str]
    content: bytes
    offset: int
    size: int
    footer: dict[int, str] = field(default_factory=dict)
    log_format_version: int = LOG_FORMAT_VERSION

    @property
    def instant_time(self) -> str | None:
        """The instant that wrote the block (header INSTANT_TIME)."""
        return self.header.get(HeaderMetadataType.INSTANT_TIME)

    @property
    def is_corrupt(self) -> bool:
        return self.block_type is HoodieLogBlockType.CORRUPT_BLOCK


# ---------------------------------------------------------------------------------------------
# framing


def _metadata_bytes(entries: Mapping[HeaderMetadataType, str] | Mapping[int, str]) -> bytes:
    out = [_I32.pack(len(entries))]
    for key, value in entries.items():
        data = value.encode("utf-8")
        out.append(_I32.pack(int(key)) + _I32.pack(len(data)) + data)
    return b"".join(out)


def encode_block(
    block_type: HoodieLogBlockType,
    header: Mapping[HeaderMetadataType, str],
    content: bytes,
    footer: Mapping[int, str] | None = None,
) -> bytes:
    """Frame one log block (header entries written in the mapping's order).

    Args:
        block_type: Type ordinal to write; never CORRUPT_BLOCK.
        header: Header entries; Java requires INSTANT_TIME on every block.
        content: Encoded content (see the ``encode_*_block`` helpers).
        footer: Footer entries; none exist in Hudi, kept for exact re-encoding.

    Raises:
        LogFormatError: ``block_type`` is CORRUPT_BLOCK or INSTANT_TIME is missing.
    """
    if block_type is HoodieLogBlockType.CORRUPT_BLOCK:
        raise LogFormatError("a CORRUPT_BLOCK is never written")
    if HeaderMetadataType.INSTANT_TIME not in header:
        raise LogFormatError(f"log block {block_type.name} has no INSTANT_TIME header")
    body = b"".join(
        (
            _I32.pack(LOG_FORMAT_VERSION),
            _I32.pack(int(block_type)),
            _metadata_bytes(header),
            _I64.pack(len(content)),
            content,
            _metadata_bytes(footer or {}),
        )
    )
    head = MAGIC + _I64.pack(len(body) + _I64.size) + body
    return head + _I64.pack(len(head))


def _read_metadata(data: memoryview, pos: int, end: int) -> tuple[dict[int, str], int]:
    if pos + 4 > end:
        raise LogFormatError("metadata count runs past the block")
    (count,) = _I32.unpack_from(data, pos)
    pos += 4
    if count < 0:
        raise LogFormatError(f"negative metadata count {count}")
    entries: dict[int, str] = {}
    for _ in range(count):
        if pos + 8 > end:
            raise LogFormatError("metadata entry runs past the block")
        key, length = struct.unpack_from(">ii", data, pos)
        pos += 8
        if length < 0 or pos + length > end:
            raise LogFormatError(f"metadata value of key {key} runs past the block")
        entries[key] = bytes(data[pos : pos + length]).decode("utf-8")
        pos += length
    return entries, pos


def _is_intact(data: memoryview, start: int, block_length: int) -> bool:
    """Java's check: reverse pointer matches and EOF or the magic follows the block."""
    end = start + 6 + 8 + block_length
    if block_length < 8 or end > len(data):
        return False
    (reverse,) = _I64.unpack_from(data, end - 8)
    if reverse - len(MAGIC) != block_length:
        return False
    remaining = len(data) - end
    # Java reads 6 bytes for the next magic; fewer than 6 left counts as EOF
    return remaining < len(MAGIC) or data[end : end + len(MAGIC)] == MAGIC


def _parse_block(data: memoryview, start: int, block_length: int) -> LogBlock:
    end = start + 14 + block_length
    pos = start + 14
    version, type_ordinal = struct.unpack_from(">ii", data, pos)
    pos += 8
    if version != LOG_FORMAT_VERSION:
        raise LogFormatError(f"log format version {version} is not supported")
    try:
        block_type = HoodieLogBlockType(type_ordinal)
    except ValueError:
        raise LogFormatError(f"unknown log block type {type_ordinal}") from None
    raw_header, pos = _read_metadata(data, pos, end - 8)
    header: dict[HeaderMetadataType, str] = {}
    for key, value in raw_header.items():
        try:
            header[HeaderMetadataType(key)] = value
        except ValueError:
            raise LogFormatError(f"unknown log block header key {key}") from None
    (content_length,) = _I64.unpack_from(data, pos)
    pos += 8
    if content_length < 0 or pos + content_length > end - 8:
        raise LogFormatError(f"content length {content_length} runs past the block")
    content = bytes(data[pos : pos + content_length])
    footer, pos = _read_metadata(data, pos + content_length, end - 8)
    if pos != end - 8:
        raise LogFormatError(f"{end - 8 - pos} unexplained bytes before the reverse pointer")
    return LogBlock(block_type, header, content, start, end - start, footer, version)


def read_log_blocks(
    source: bytes | BinaryIO, *, include_corrupt: bool = False
) -> Iterator[LogBlock]:
    """Iterate the blocks of a log file.

    A damaged region (torn append, garbage) becomes a CORRUPT_BLOCK spanning up to the next
    magic and reading continues there, as Java's reader does; such blocks are only yielded
    with ``include_corrupt``.

    Args:
        source: The whole log file, or a readable binary file object.
        include_corrupt: Also yield CORRUPT_BLOCK entries.

    Raises:
        LogFormatError: An intact block uses an unknown version, type or header key.
    """
    raw = source if isinstance(source, (bytes, bytearray)) else source.read()
    data = memoryview(raw)
    pos = 0
    while pos < len(data):
        if data[pos : pos + len(MAGIC)] != MAGIC:
            next_magic = _find_magic(raw, pos)
            if include_corrupt:
                yield _corrupt(raw, pos, next_magic)
            pos = next_magic
            continue
        block_length = _I64.unpack_from(data, pos + 6)[0] if pos + 14 <= len(data) else -1
        if block_length < 0 or not _is_intact(data, pos, block_length):
            next_magic = _find_magic(raw, pos + len(MAGIC))
            if include_corrupt:
                yield _corrupt(raw, pos, next_magic)
            pos = next_magic
            continue
        yield _parse_block(data, pos, block_length)
        pos += 14 + block_length


def _find_magic(raw: bytes | bytearray, start: int) -> int:
    found = raw.find(MAGIC, start)
    return len(raw) if found < 0 else found


def _corrupt(raw: bytes | bytearray, start: int, end: int) -> LogBlock:
    return LogBlock(HoodieLogBlockType.CORRUPT_BLOCK, {}, bytes(raw[start:end]), start, end - start)


# ---------------------------------------------------------------------------------------------
# content


def _content_version(block: LogBlock, expected: HoodieLogBlockType) -> tuple[int, int]:
    if block.block_type is not expected:
        raise LogFormatError(f"expected a {expected.name}, got {block.block_type.name}")
    if len(block.content) < 8:
        raise LogFormatError(f"{expected.name} at offset {block.offset} has no content header")
    version, second = struct.unpack_from(">ii", block.content, 0)
    if version != BLOCK_CONTENT_VERSION:
        raise LogFormatError(
            f"{expected.name} at offset {block.offset}: content version {version} is not supported"
        )
    return version, second


def _schema_header(block: LogBlock) -> str:
    schema = block.header.get(HeaderMetadataType.SCHEMA)
    if schema is None:
        raise LogFormatError(f"{block.block_type.name} at offset {block.offset} has no SCHEMA")
    return schema


def decode_avro_data_block(
    block: LogBlock, reader_schema: Mapping[str, Any] | str | None = None
) -> pa.Table:
    """Records of an AVRO_DATA_BLOCK, decoded with its SCHEMA header (meta columns included).

    Args:
        block: The block.
        reader_schema: Optional table schema to resolve the records to.
    """
    _, count = _content_version(block, HoodieLogBlockType.AVRO_DATA_BLOCK)
    content = memoryview(block.content)[8:]
    return decode_length_prefixed(content, count, _schema_header(block), reader_schema)


def decode_cdc_data_block(block: LogBlock) -> pa.Table:
    """Records of a CDC_DATA_BLOCK (a ``.cdc`` log file), decoded with its SCHEMA header."""
    _, count = _content_version(block, HoodieLogBlockType.CDC_DATA_BLOCK)
    content = memoryview(block.content)[8:]
    return decode_length_prefixed(content, count, _schema_header(block), None)


def decode_parquet_data_block(block: LogBlock) -> pa.Table:
    """Records of a PARQUET_DATA_BLOCK (its content is a whole Parquet file)."""
    if block.block_type is not HoodieLogBlockType.PARQUET_DATA_BLOCK:
        raise LogFormatError(f"expected a PARQUET_DATA_BLOCK, got {block.block_type.name}")
    return pq.read_table(pa.BufferReader(block.content))


def decode_delete_block(block: LogBlock) -> list[DeleteRecord]:
    """Keys (and ordering values) a DELETE_BLOCK deletes."""
    _, length = _content_version(block, HoodieLogBlockType.DELETE_BLOCK)
    payload = block.content[8 : 8 + length]
    if len(payload) != length:
        raise LogFormatError(f"DELETE_BLOCK at offset {block.offset}: payload is truncated")
    return decode_delete_record_list(payload)


def decode_command_block(block: LogBlock) -> str:
    """Target instant of a rollback COMMAND_BLOCK."""
    if block.block_type is not HoodieLogBlockType.COMMAND_BLOCK:
        raise LogFormatError(f"expected a COMMAND_BLOCK, got {block.block_type.name}")
    kind = block.header.get(HeaderMetadataType.COMMAND_BLOCK_TYPE)
    target = block.header.get(HeaderMetadataType.TARGET_INSTANT_TIME)
    if kind != str(int(CommandBlockType.ROLLBACK_BLOCK)) or target is None:
        raise LogFormatError(
            f"COMMAND_BLOCK at offset {block.offset}: unsupported command {kind!r} "
            f"or no TARGET_INSTANT_TIME"
        )
    return target


def encode_avro_data_block(
    table: pa.Table,
    avro_schema: Mapping[str, Any] | str,
    instant_time: str,
    *,
    block_type: HoodieLogBlockType = HoodieLogBlockType.AVRO_DATA_BLOCK,
) -> bytes:
    """A framed AVRO_DATA_BLOCK (or CDC_DATA_BLOCK, same content) holding every row of ``table``.

    Args:
        table: Rows including the five meta columns, as the schema orders them.
        avro_schema: Writer schema with meta fields (written as the SCHEMA header).
        instant_time: The deltacommit writing the block.
        block_type: AVRO_DATA_BLOCK, or CDC_DATA_BLOCK for a ``.cdc`` log file.
    """
    records = encode_length_prefixed(table, avro_schema)
    content = _I32.pack(BLOCK_CONTENT_VERSION) + _I32.pack(table.num_rows) + records
    header = {
        HeaderMetadataType.INSTANT_TIME: instant_time,
        HeaderMetadataType.SCHEMA: schema_json(avro_schema),
    }
    return encode_block(block_type, header, content)


def encode_parquet_data_block(
    table: pa.Table,
    avro_schema: Mapping[str, Any] | str,
    instant_time: str,
    *,
    compression: str = PARQUET_COMPRESSION_CODEC.default,
) -> bytes:
    """A framed PARQUET_DATA_BLOCK: its content is a Parquet file of every row of ``table``,
    written with the base files' writer settings (:func:`engine.io.parquet.encode_parquet_file`),
    as Hudi writes it with the write config's Parquet settings.

    Args:
        table: Rows including the meta columns, as the schema orders them.
        avro_schema: Writer schema with meta fields (the SCHEMA header and the file's footer).
        instant_time: The deltacommit writing the block.
        compression: Parquet codec (``hoodie.parquet.compression.codec``).
    """
    schema = schema_json(avro_schema)
    content = encode_parquet_file(table, avro_schema_with_meta=schema, compression=compression)
    header = {
        HeaderMetadataType.INSTANT_TIME: instant_time,
        HeaderMetadataType.SCHEMA: schema,
    }
    return encode_block(HoodieLogBlockType.PARQUET_DATA_BLOCK, header, content)


def encode_delete_block(
    records: Sequence[DeleteRecord],
    instant_time: str,
    schema: Mapping[str, Any] | str,
    *,
    ordering_field: str | None = None,
) -> bytes:
    """A framed DELETE_BLOCK for ``records``.

    Args:
        records: Keys to delete; an ordering value is wrapped in the Java wrapper matching the
            ordering field's Avro type (or the record's own wrapper, or its Python type);
            no ordering value is written as IntWrapper(0) ("natural order").
        instant_time: The deltacommit writing the block.
        schema: The table's writer schema (written as the SCHEMA header, as Java does).
        ordering_field: The table's ordering (precombine) field, to choose the wrapper.
    """
    record = parse_avro_schema(schema)
    wrapper = wrapper_for_field(record, ordering_field) if ordering_field else None
    payload = encode_delete_record_list(records, wrapper)
    content = _I32.pack(BLOCK_CONTENT_VERSION) + _I32.pack(len(payload)) + payload
    header = {
        HeaderMetadataType.INSTANT_TIME: instant_time,
        HeaderMetadataType.SCHEMA: schema_json(record),
    }
    return encode_block(HoodieLogBlockType.DELETE_BLOCK, header, content)


def encode_command_block(instant_time: str, target_instant_time: str) -> bytes:
    """A framed rollback COMMAND_BLOCK written by rollback ``instant_time``."""
    header = {
        HeaderMetadataType.INSTANT_TIME: instant_time,
        HeaderMetadataType.COMMAND_BLOCK_TYPE: str(int(CommandBlockType.ROLLBACK_BLOCK)),
        HeaderMetadataType.TARGET_INSTANT_TIME: target_instant_time,
    }
    return encode_block(HoodieLogBlockType.COMMAND_BLOCK, header, b"")
