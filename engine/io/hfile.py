"""HFile (version 3) as Hudi's hudi-io reads it: the metadata table's base files and the content
of its log files' HFILE_DATA_BLOCKs.

An HFile is a sequence of blocks, then a fixed 4096-byte trailer. Every block has a 33-byte
header (all integers big-endian)::

    offset  size  field
    0       8     magic: DATABLK* data, METABLKc meta, IDXROOT2 root index (data and meta
                  index), FILEINF2 file info, IDXLEAF2 / IDXINTE2 multi-level index
    8       4     on-disk size without header (compressed payload + checksum bytes)
    12      4     uncompressed size without header
    16      8     previous block offset (-1 for the first block Hudi writes)
    24      1     checksum type (0 NULL: Hudi writes no checksums, only zeroed room for them)
    25      4     bytes per checksum (16384)
    29      4     on-disk data size with header (33 + compressed payload)

then the payload (compressed as the trailer's codec says: Hudi's writers use GZ) and
``4 * ceil(on_disk_data_size_with_header / 16384)`` checksum bytes. The layout Hudi writes::

    data blocks   key/values sorted by key (a new block once the next pair would pass the
                  block size; equal keys never split); each pair is
                  int32 key length, int32 value length, key, value, MVCC version (1 byte 0),
                  the key being int16 row length, row (Hudi's record key, UTF-8),
                  family length 0, timestamp Long.MAX_VALUE, type 4 (Put)
    meta blocks   one per meta entry (the bloom filter), the value only
    root index    per data block: int64 offset, int32 on-disk size, varint(len + 2),
                  int16 len, first row key
    meta index    per meta block: int64 offset, int32 on-disk size, varint(len), name
    file info     "PBUF", varint length, InfoProto {repeated BytesBytesPair {name, value}}
    trailer       "TRABLK\\"$", varint length, TrailerProto, zero padding, int32 version 3

Looking keys up (:func:`lookup_hfile`) uses the root data index instead: only the data blocks
whose key range holds a wanted key are decompressed, and in them only where pairs start is
found (over the block's bytes at once for Hudi's cells, :func:`_hudi_cell_starts`; else from
the two lengths of each pair); the wanted rows are then matched by hash against the block's
rows cut out as one Arrow array when they are all as long (:func:`_matched_rows`), else found
by binary search. A lookup of a few keys thus costs a few blocks, not the whole file.

Reading walks the blocks between the first data block and the load-on-open section and keeps
the data blocks, so inline index blocks of multi-level indexes (HBase's writer) are skipped
without being needed.
"""

from __future__ import annotations

import struct
import zlib
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import HFileFormatError

__all__ = [
    "BLOCK_HEADER_SIZE",
    "TRAILER_SIZE",
    "BlockInfo",
    "CompressionCodec",
    "HFile",
    "HFileTrailer",
    "InMemoryFile",
    "RandomAccessFile",
    "compress",
    "lookup_hfile",
    "read_hfile",
]

BLOCK_HEADER_SIZE = 33
TRAILER_SIZE = 4096
BYTES_PER_CHECKSUM = 16 * 1024
HFILE_MAJOR_VERSION = 3

DATA_MAGIC = b"DATABLK*"
META_MAGIC = b"METABLKc"
ROOT_INDEX_MAGIC = b"IDXROOT2"
FILE_INFO_MAGIC = b"FILEINF2"
TRAILER_MAGIC = b'TRABLK"$'
PB_MAGIC = b"PBUF"
_LENGTHS = struct.Struct(">ii")
_ROW_LENGTH = struct.Struct(">h")
# a block header: sizes, previous offset, checksum type, bytes per checksum, data size
_HEADER = struct.Struct(">iiqbii")
# the gzip member header Java's GZIPOutputStream writes: no name, mtime 0, OS 0
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"


class CompressionCodec(IntEnum):
    """Block compression, by the id the trailer stores (hudi-io ``CompressionCodec``)."""

    LZO = 0
    GZ = 1
    NONE = 2
    SNAPPY = 3
    LZ4 = 4
    BZIP2 = 5
    ZSTD = 6


@dataclass(frozen=True, slots=True)
class HFileTrailer:
    """The trailer's ``TrailerProto`` fields Hudi writes and reads."""

    file_info_offset: int
    load_on_open_data_offset: int
    uncompressed_data_index_size: int
    data_index_count: int
    meta_index_count: int
    entry_count: int
    num_data_index_levels: int
    first_data_block_offset: int
    last_data_block_offset: int
    comparator_class_name: str
    compression_codec: CompressionCodec
    major_version: int = HFILE_MAJOR_VERSION


@dataclass(frozen=True, slots=True)
class BlockInfo:
    """Where a block sits and what its header says (for inspection and tests)."""

    offset: int
    magic: bytes
    on_disk_size: int
    uncompressed_size: int
    previous_offset: int


@dataclass(frozen=True, slots=True)
class HFile:
    """A decoded HFile.

    Attributes:
        entries: (row key, value) pairs in file order (sorted by key).
        file_info: The file info map, in the order the file stores it.
        meta: Meta blocks by name (Hudi's only one is ``bloomFilter``).
        trailer: The trailer.
        blocks: Every block, in file order.
    """

    entries: tuple[tuple[bytes, bytes], ...]
    file_info: dict[str, bytes]
    meta: dict[str, bytes]
    trailer: HFileTrailer
    blocks: tuple[BlockInfo, ...]

    @property
    def create_time_ms(self) -> int:
        """``hfile.CREATE_TIME_TS``: the writer's wall clock, the one value not set by content."""
        return int.from_bytes(self.file_info.get("hfile.CREATE_TIME_TS", b"\0" * 8), "big")


# ---------------------------------------------------------------------------------------------
# protobuf and compression primitives


def varint(value: int) -> bytes:
    """Protobuf's unsigned varint (negative values as their 64-bit two's complement)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at ``pos``."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise HFileFormatError(f"truncated varint at byte {pos}")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def proto_fields(data: bytes | memoryview) -> list[tuple[int, int | bytes]]:
    """(field number, value) of a protobuf message: varints as ints, length-delimited as bytes."""
    fields: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = read_varint(data, pos)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            value, pos = read_varint(data, pos)
            fields.append((number, value))
        elif wire_type == 2:
            length, pos = read_varint(data, pos)
            fields.append((number, bytes(data[pos : pos + length])))
            pos += length
        else:
            raise HFileFormatError(f"unexpected protobuf wire type {wire_type} (field {number})")
    return fields


def compress(payload: bytes, codec: CompressionCodec) -> bytes:
    """A block payload compressed as hudi-io compresses it.

    GZ is one gzip member as Java's ``GZIPOutputStream`` writes it (airlift's JDK gzip streams):
    a 10-byte header with mtime 0 and OS 0, deflate at zlib's default level, CRC-32 and size.
    """
    if codec is CompressionCodec.NONE:
        return payload
    if codec is CompressionCodec.GZ:
        deflater = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        body = deflater.compress(payload) + deflater.flush()
        tail = struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)
        return _GZIP_HEADER + body + tail
    raise HFileFormatError(f"HFile compression codec {codec.name} is not supported (GZ, NONE)")


def _decompress(data: bytes | memoryview, codec: CompressionCodec, size: int) -> bytes:
    if codec is CompressionCodec.NONE:
        return bytes(data[:size])
    if codec is not CompressionCodec.GZ:
        raise HFileFormatError(f"HFile compression codec {codec.name} is not supported (GZ, NONE)")
    try:
        out = zlib.decompressobj(31).decompress(bytes(data))
    except zlib.error as exc:
        raise HFileFormatError(f"a GZ block does not decompress: {exc}") from exc
    if len(out) != size:
        raise HFileFormatError(f"a GZ block decompresses to {len(out)} bytes, header says {size}")
    return out


# ---------------------------------------------------------------------------------------------
# reading


def _trailer(data: bytes) -> HFileTrailer:
    if len(data) < TRAILER_SIZE:
        raise HFileFormatError(f"{len(data)} bytes are too few for an HFile trailer")
    raw = data[-TRAILER_SIZE:]
    version = struct.unpack(">i", raw[-4:])[0]
    if raw[:8] != TRAILER_MAGIC or version & 0xFFFFFF != HFILE_MAJOR_VERSION:
        raise HFileFormatError(f"no HFile v3 trailer (magic {raw[:8]!r}, version {version:#x})")
    length, pos = read_varint(raw, 8)
    fields = dict(proto_fields(raw[pos : pos + length]))

    def number(field: int, default: int = 0) -> int:
        value = fields.get(field, default)
        return value if isinstance(value, int) else default

    def signed(field: int) -> int:
        value = number(field)
        return value - (1 << 64) if value >= 1 << 63 else value

    comparator = fields.get(11, b"")
    return HFileTrailer(
        file_info_offset=number(1),
        load_on_open_data_offset=number(2),
        uncompressed_data_index_size=number(3),
        data_index_count=number(5),
        meta_index_count=number(6),
        entry_count=number(7),
        num_data_index_levels=number(8, 1),
        first_data_block_offset=signed(9),
        last_data_block_offset=signed(10),
        comparator_class_name=comparator.decode() if isinstance(comparator, bytes) else "",
        compression_codec=CompressionCodec(number(12, CompressionCodec.NONE)),
    )


def _block(data: bytes, offset: int, codec: CompressionCodec) -> tuple[BlockInfo, bytes]:
    """The block at ``offset`` and its uncompressed payload."""
    if offset + BLOCK_HEADER_SIZE > len(data):
        raise HFileFormatError(f"an HFile block at byte {offset} runs past the end of the file")
    magic = data[offset : offset + 8]
    on_disk, uncompressed, previous, _, _, data_with_header = _HEADER.unpack_from(data, offset + 8)
    end = offset + data_with_header
    if data_with_header < BLOCK_HEADER_SIZE or end > len(data):
        raise HFileFormatError(f"the HFile block at byte {offset} ({magic!r}) has a bad size")
    payload = _decompress(memoryview(data)[offset + BLOCK_HEADER_SIZE : end], codec, uncompressed)
    info = BlockInfo(offset, magic, BLOCK_HEADER_SIZE + on_disk, uncompressed, previous)
    return info, payload


def _key_values(payload: bytes, with_mvcc: bool) -> list[tuple[bytes, bytes]]:
    """(row, value) pairs of a data block; the row is the record key of Hudi's HFiles."""
    out: list[tuple[bytes, bytes]] = []
    pos = 0
    while pos < len(payload):
        key_length, value_length = struct.unpack_from(">ii", payload, pos)
        key_start = pos + 8
        row_length = struct.unpack_from(">h", payload, key_start)[0]
        row = payload[key_start + 2 : key_start + 2 + row_length]
        value_start = key_start + key_length
        out.append((row, payload[value_start : value_start + value_length]))
        pos = value_start + value_length
        if with_mvcc:
            pos += _mvcc_length(payload, pos)
    return out


def _root_index(payload: bytes, count: int, row_keys: bool) -> list[tuple[int, int, bytes]]:
    """(offset, on-disk size, key) entries of a root index block.

    The data index stores keys as int16 length + row; the meta index stores bare names."""
    out: list[tuple[int, int, bytes]] = []
    pos = 0
    for _ in range(count):
        offset, size = struct.unpack_from(">qi", payload, pos)
        length, pos = read_varint(payload, pos + 12)
        key = payload[pos : pos + length]
        out.append((offset, size, key[2:] if row_keys else key))
        pos += length
    return out


def _file_info(payload: bytes) -> dict[str, bytes]:
    if payload[:4] != PB_MAGIC:
        raise HFileFormatError(f"the HFile file info block starts {payload[:4]!r}, not PBUF")
    length, pos = read_varint(payload, 4)
    info: dict[str, bytes] = {}
    for _, pair in proto_fields(payload[pos : pos + length]):
        parts = dict(proto_fields(pair)) if isinstance(pair, bytes) else {}
        name, value = parts.get(1, b""), parts.get(2, b"")
        if isinstance(name, bytes) and isinstance(value, bytes):
            info[name.decode()] = value
    return info


def read_hfile(data: bytes) -> HFile:
    """Decode a whole HFile: every key/value, the file info, the meta blocks.

    Raises:
        HFileFormatError: The bytes are not an HFile v3 as Hudi or HBase write it.
    """
    trailer = _trailer(data)
    codec = trailer.compression_codec
    blocks: list[BlockInfo] = []
    section_end = len(data) - TRAILER_SIZE
    root, _ = _block(data, trailer.load_on_open_data_offset, codec)
    meta_root, meta_payload = _block(data, root.offset + root.on_disk_size, codec)
    info_block, info_payload = _block(data, trailer.file_info_offset, codec)
    file_info = _file_info(info_payload)
    with_mvcc = int.from_bytes(file_info.get("KEY_VALUE_VERSION", b"\0\0\0\0"), "big") == 1
    entries: list[tuple[bytes, bytes]] = []
    offset = max(trailer.first_data_block_offset, 0)
    while offset < trailer.load_on_open_data_offset and trailer.entry_count:
        block, payload = _block(data, offset, codec)
        blocks.append(block)
        if block.magic == DATA_MAGIC:
            entries.extend(_key_values(payload, with_mvcc))
        offset += block.on_disk_size
    meta: dict[str, bytes] = {}
    for meta_offset, _, name in _root_index(meta_payload, trailer.meta_index_count, False):
        block, payload = _block(data, meta_offset, codec)
        meta[name.decode()] = payload
        if block not in blocks:
            blocks.append(block)
    if len(entries) != trailer.entry_count or info_block.offset >= section_end:
        raise HFileFormatError(
            f"the HFile holds {len(entries)} entries, its trailer says {trailer.entry_count}"
        )
    blocks.extend((root, meta_root, info_block))
    blocks.sort(key=lambda b: b.offset)
    return HFile(tuple(entries), file_info, meta, trailer, tuple(blocks))


# ---------------------------------------------------------------------------------------------
# looking keys up


def _mvcc_length(payload: bytes, pos: int) -> int:
    """Bytes of the Hadoop vlong at ``pos`` (one for -112..127)."""
    first: int = struct.unpack_from(">b", payload, pos)[0]
    if first >= -112:
        return 1
    return 1 + (-112 - first if first >= -120 else -120 - first)


def _pair_starts(payload: bytes, with_mvcc: bool) -> list[int]:
    """Where each key/value pair of a data block starts; only the pairs' lengths are read
    (the block's rows are not copied: a lookup compares a few of them).

    The cells Hudi writes are found at once over the block's bytes
    (:func:`_hudi_cell_starts`); a block of other cells (HBase's, with a column family) is
    walked pair by pair (:func:`_walked_pair_starts`). Both give the same starts."""
    starts = _hudi_cell_starts(payload, with_mvcc)
    return starts if starts is not None else _walked_pair_starts(payload, with_mvcc)


def _walked_pair_starts(payload: bytes, with_mvcc: bool) -> list[int]:
    """:func:`_pair_starts` one pair after the other: each start is the previous pair's end."""
    starts: list[int] = []
    append, lengths = starts.append, _LENGTHS.unpack_from
    pos, end = 0, len(payload)
    try:
        while pos < end:
            append(pos)
            key_length, value_length = lengths(payload, pos)
            pos += 8 + key_length + value_length
            if with_mvcc:  # one byte, but for -120..-113 (0x80..0x8f), as Hudi writes 0
                pos += 1 if not 0x80 <= payload[pos] < 0x90 else _mvcc_length(payload, pos)
    except (IndexError, struct.error):
        raise HFileFormatError(f"a data block's pair at byte {pos} runs past its end") from None
    if pos != end:
        raise HFileFormatError(f"a data block's pairs run {pos - end} bytes past its end")
    return starts


def _be(data: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """The big-endian unsigned integers of ``width`` bytes at positions ``at`` of ``data``."""
    out = np.zeros(at.size, np.int64)
    for i in range(width):
        out = (out << 8) | data[at + i]
    return out


# what follows the row in the key of every cell Hudi writes: an empty column family, the
# timestamp Long.MAX_VALUE and the type Put
_HUDI_KEY_TAIL = np.frombuffer(b"\x00\x7f\xff\xff\xff\xff\xff\xff\xff\x04", np.uint8)


def _hudi_cell_starts(payload: bytes, with_mvcc: bool) -> list[int] | None:
    """:func:`_pair_starts` of a block of Hudi's cells whose rows are as long as the first
    (record keys of one shape), vectorised over the block's bytes; None for any other block
    (the caller then walks it).

    Such a cell's key is int16 row length, the row, then the fixed :data:`_HUDI_KEY_TAIL`, and
    its int32 key length is the row length + 12. Every place the tail ends a row of that
    length, under those two lengths, is a candidate start, and each candidate's end (the next
    pair's start, past the value and the MVCC vlong) is computed for all of them at once.
    Candidates can also lie inside values: the real starts are exactly those reached from
    byte 0 by going from start to end (:func:`_reached_from_first`), and the walk must end on
    the block's last byte."""
    data = np.frombuffer(payload, np.uint8)
    if data.size < 20:
        return None
    row = int(data[8]) << 8 | int(data[9])
    # the tail's rare 0x7f byte, then its first and last (a superset: the walk decides)
    tail = np.flatnonzero(data[row + 11 : data.size - 8] == _HUDI_KEY_TAIL[1]) + row + 10
    tail = tail[(data[tail] == _HUDI_KEY_TAIL[0]) & (data[tail + 9] == _HUDI_KEY_TAIL[9])]
    head = tail - 10 - row
    head = head[(_be(data, head, 4) == row + 12) & (_be(data, head + 8, 2) == row)]
    if head.size == 0 or head[0] != 0:
        return None
    ends = head + 20 + row + _be(data, head + 4, 4)
    if with_mvcc:
        inside = ends < data.size
        first = np.where(inside, data[np.minimum(ends, data.size - 1)], 0).astype(np.int8)
        ends = ends + np.where(first >= -112, 1, 1 + np.where(first >= -120, -112, -120) - first)
        ends = np.where(inside, ends, data.size + 1)
    return _reached_from_first(head, ends, data.size)


def _reached_from_first(head: np.ndarray, ends: np.ndarray, size: int) -> list[int] | None:
    """The candidates reached from the first by following ``ends`` (see
    :func:`_hudi_cell_starts`), when that walk ends exactly at ``size``; else None."""
    count = head.size
    if ends[-1] == size and (ends[:-1] == head[1:]).all():
        starts: list[int] = head.tolist()  # no candidate inside a value: each ends the last
        return starts
    following = np.searchsorted(head, ends)
    found = following < count
    found[found] = head[following[found]] == ends[found]
    jump = np.where(found, following, count)  # count: the walk stops
    jump = np.append(jump, count)
    reached = np.zeros(count + 1, bool)
    reached[0] = True
    while True:  # reached: the candidates less than 2**k steps from the first
        grown = reached.copy()
        grown[jump[reached]] = True
        if (grown == reached).all():
            break
        reached, jump = grown, jump[jump]
    chain = np.flatnonzero(reached[:count])
    last = chain[-1]
    if ends[last] != size or not found[chain[:-1]].all():
        return None
    reached_starts: list[int] = head[chain].tolist()
    return reached_starts


def _row_at(payload: bytes, start: int) -> bytes:
    row_length = _ROW_LENGTH.unpack_from(payload, start + 8)[0]
    return payload[start + 10 : start + 10 + row_length]


def _find_in_block(payload: bytes, with_mvcc: bool, wanted: Sequence[bytes]) -> dict[bytes, bytes]:
    """The values of the ``wanted`` rows a data block holds (of equal rows, the last, as a
    whole read merging pairs in file order keeps it)."""
    starts = _pair_starts(payload, with_mvcc)
    matched = _matched_rows(payload, starts, wanted)
    if matched is None:
        matched = [_searched_row(payload, starts, row) for row in wanted]
    found: dict[bytes, bytes] = {}
    for row, i in zip(wanted, matched, strict=True):
        if i >= 0:
            key_length, value_length = _LENGTHS.unpack_from(payload, starts[i])
            value_start = starts[i] + 8 + key_length
            found[row] = payload[value_start : value_start + value_length]
    return found


def _searched_row(payload: bytes, starts: list[int], row: bytes) -> int:
    """The index of the last pair whose row is ``row`` (-1: none), by binary search."""
    i = bisect_right(starts, row, key=lambda start: _row_at(payload, start)) - 1
    return i if i >= 0 and _row_at(payload, starts[i]) == row else -1


def _matched_rows(payload: bytes, starts: list[int], wanted: Sequence[bytes]) -> list[int] | None:
    """:func:`_searched_row` of every wanted row at once, for a block whose rows are all as
    long (record keys of one shape): the rows are cut out of the block as one Arrow array and
    the wanted ones found by hash (the block reversed, so of equal rows the last is found).
    None for a block of rows of several lengths."""
    if not starts:
        return None
    data = np.frombuffer(payload, np.uint8)
    at = np.asarray(starts, np.int64)
    lengths = _be(data, at + 8, 2)
    row = int(lengths[0])
    if row == 0 or (lengths != row).any():
        return None
    cells = data[at[::-1, None] + 10 + np.arange(row)]  # last pair first
    rows = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(row), at.size, [None, pa.py_buffer(cells.tobytes())]
    )
    asked = [w if len(w) == row else None for w in wanted]
    position = pc.index_in(pa.array(asked, pa.binary(row)), value_set=rows)
    last = at.size - 1
    return [-1 if p is None else last - p for p in position.to_pylist()]


class RandomAccessFile(Protocol):
    """What a lookup reads an HFile through: pyarrow's ``NativeFile`` (a file of the storage,
    read by ranges) or :class:`InMemoryFile`."""

    def size(self) -> int: ...

    def read_at(self, nbytes: int, offset: int) -> bytes: ...


class InMemoryFile:
    """The bytes of an HFile already read (the content of a log block) as a
    :class:`RandomAccessFile`: ranges are views, not copies."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._view = memoryview(data)

    def size(self) -> int:
        return len(self._data)

    def read_at(self, nbytes: int, offset: int) -> bytes:
        if offset == 0 and nbytes >= len(self._data):
            return self._data
        return self._view[offset : offset + nbytes]  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class _DataIndex:
    """The root data index of a single-level HFile: each data block's offset, on-disk size
    (header included) and first row, in file order."""

    offsets: list[int]
    sizes: list[int]
    firsts: list[bytes]

    def blocks_of(self, rows: Sequence[bytes]) -> dict[int, list[bytes]]:
        """Block number -> the wanted rows it may hold: the last block whose first row (that of
        its index key: the row, or that of HBase's separator key) is at most the row."""
        out: dict[int, list[bytes]] = {}
        firsts = self.firsts
        for row in rows:
            i = bisect_right(firsts, row) - 1
            if i >= 0:
                out.setdefault(i, []).append(row)
        return out


def _data_index(payload: bytes, count: int) -> _DataIndex:
    """The root data index's entries: cut out at once when every key is a row as long as the
    first (Hudi's record keys of one shape: a fixed stride of int64 offset, int32 size, the
    one-byte varint, int16 row length, row), else read entry by entry."""
    fixed = _fixed_stride_index(payload, count)
    if fixed is not None:
        return fixed
    entries = _root_index(payload, count, False)
    return _DataIndex(
        [offset for offset, _, _ in entries],
        [size for _, size, _ in entries],
        [key[2 : 2 + _ROW_LENGTH.unpack_from(key)[0]] for _, _, key in entries],
    )


def _fixed_stride_index(payload: bytes, count: int) -> _DataIndex | None:
    if count == 0 or len(payload) < 15:
        return None
    key_length = payload[12]
    stride, row = 13 + key_length, key_length - 2
    if key_length >= 0x80 or row < 0 or count * stride > len(payload):
        return None
    entries = np.frombuffer(payload, np.uint8, count * stride).reshape(count, stride)
    if (entries[:, 12] != key_length).any() or (
        (entries[:, 13].astype(np.int64) << 8 | entries[:, 14]) != row
    ).any():
        return None
    head = np.ascontiguousarray(entries[:, :12]).view(np.dtype([("o", ">i8"), ("s", ">i4")]))
    rows = np.ascontiguousarray(entries[:, 15:]).tobytes()
    return _DataIndex(
        head["o"].ravel().tolist(),
        head["s"].ravel().tolist(),
        [rows[i : i + row] for i in range(0, count * row, row)] if row else [b""] * count,
    )


# decompressed bytes a lookup searches at once: the blocks of one read, bounded (see
# :func:`_block_runs`)
_RUN_BYTES = 8 * 1024 * 1024


def _block_runs(index: _DataIndex, numbers: list[int]) -> Iterator[list[int]]:
    """The wanted blocks (ascending numbers) in runs each read with one range: a run's span
    on disk (the blocks between included, read and skipped) stays within :data:`_RUN_BYTES`."""
    run: list[int] = []
    for n in numbers:
        if run and index.offsets[n] + index.sizes[n] - index.offsets[run[0]] > _RUN_BYTES:
            yield run
            run = []
        run.append(n)
    if run:
        yield run


def _search_run(
    source: RandomAccessFile, codec: CompressionCodec, with_mvcc: bool,
    index: _DataIndex, run: list[int], rows: dict[int, list[bytes]],
) -> dict[bytes, bytes]:  # fmt: skip
    """The wanted rows of one run of blocks: one read, each block decompressed, their pairs
    searched at once as one payload (blocks end on pair boundaries, in row order)."""
    start = index.offsets[run[0]]
    span = source.read_at(index.offsets[run[-1]] + index.sizes[run[-1]] - start, start)
    payloads = []
    for n in run:
        block, payload = _block(span, index.offsets[n] - start, codec)
        if block.magic != DATA_MAGIC:
            raise HFileFormatError(
                f"the data index names a {bytes(block.magic)!r} block at {index.offsets[n]}"
            )
        payloads.append(payload)
    payload = payloads[0] if len(payloads) == 1 else b"".join(payloads)
    return _find_in_block(payload, with_mvcc, [row for n in run for row in rows[n]])


def lookup_hfile(
    data: bytes | RandomAccessFile, rows: Sequence[bytes]
) -> tuple[dict[bytes, bytes], dict[str, bytes]]:
    """The values stored under ``rows`` (those the file holds) and the file info, reading only
    the trailer, the load-on-open section and the data blocks the root data index says may
    hold them (see the module notes); ``data`` is the file's bytes or a file read by ranges.

    An HFile whose data index has several levels (HBase's writer, for large files) is read
    whole, with the same answer.

    Raises:
        HFileFormatError: The bytes are not an HFile v3 as Hudi or HBase write it.
    """
    source = InMemoryFile(data) if isinstance(data, bytes | bytearray) else data
    size = source.size()
    trailer = _trailer(bytes(source.read_at(TRAILER_SIZE, max(0, size - TRAILER_SIZE))))
    codec = trailer.compression_codec
    wanted = sorted(set(rows))
    if trailer.num_data_index_levels != 1:
        hfile = read_hfile(bytes(source.read_at(size, 0)))
        whole = dict(hfile.entries)
        return {row: whole[row] for row in wanted if row in whole}, hfile.file_info
    start = trailer.load_on_open_data_offset
    if not 0 <= start <= trailer.file_info_offset < size:
        raise HFileFormatError(f"the HFile trailer's offsets run past its {size} bytes")
    section = bytes(source.read_at(size - start, start))
    _, info_payload = _block(section, trailer.file_info_offset - start, codec)
    file_info = _file_info(info_payload)
    with_mvcc = int.from_bytes(file_info.get("KEY_VALUE_VERSION", b"\0\0\0\0"), "big") == 1
    _, root_payload = _block(section, 0, codec)
    index = _data_index(root_payload, trailer.data_index_count)
    by_block = index.blocks_of(wanted)
    found: dict[bytes, bytes] = {}
    for run in _block_runs(index, sorted(by_block)):
        found.update(_search_run(source, codec, with_mvcc, index, run, by_block))
    return found, file_info
