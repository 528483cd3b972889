"""Writing HFiles byte for byte as Hudi's ``HFileWriterImpl`` (hudi-io) writes them.

The layout is described in :mod:`engine.io.hfile`. What makes the bytes Hudi's own:

- Data blocks take pairs until the next one would pass the block size, counting each pair at the
  bytes it occupies (key + value + 21); a key equal to the block's last key never starts a
  block. Hudi 1.1.1 counts pairs that way: its trailers' ``uncompressed_data_index_size`` is that
  sum (the hudi-io sources we could read count key + value + 9 instead). Whether 1.1.1 splits
  blocks on the same count cannot be checked on the corpus: none of its files has two data
  blocks. The first data block's previous-offset field is -1, each later one holds its own start
  offset (Hudi passes the offset after the block before).
- Meta blocks (one per entry) and the file info are ``java.util.HashMap``s in Hudi: they are
  stored in HashMap iteration order (:mod:`engine.io.java_hashmap`).
- The file info holds ``MAX_MEMSTORE_TS_KEY`` (inserted first), the caller's entries, then
  ``hfile.LASTKEY`` (int16 length + last row), ``hfile.CREATE_TIME_TS``, ``hfile.AVG_KEY_LEN``,
  ``hfile.AVG_VALUE_LEN`` and ``KEY_VALUE_VERSION`` 1 (MVCC byte present).
- The trailer sets ``uncompressed_data_index_size`` to the data blocks' uncompressed bytes (as
  Hudi 1.1.1 does), no ``total_uncompressed_bytes``, comparator ``HoodieHBaseKVComparator``.

``hfile.CREATE_TIME_TS`` is the writer's clock: the one value two writes of the same pairs
differ in. Callers pass it (tests pass the time a Hudi file carries and get its bytes).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from engine.errors import HFileFormatError
from engine.io.hfile import (
    BLOCK_HEADER_SIZE,
    BYTES_PER_CHECKSUM,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    META_MAGIC,
    PB_MAGIC,
    ROOT_INDEX_MAGIC,
    TRAILER_MAGIC,
    TRAILER_SIZE,
    CompressionCodec,
    HFile,
    compress,
    varint,
)
from engine.io.java_hashmap import java_hashmap_order

__all__ = [
    "COMPARATOR_CLASS_NAME",
    "DEFAULT_BLOCK_SIZE",
    "WRITER_FILE_INFO",
    "callers_file_info",
    "write_hfile",
]

COMPARATOR_CLASS_NAME = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
# hudi-io's HFileContext default (1 MiB, as Hudi's hoodie.hfile.block.size); the metadata table
# writer registers that key in engine.config when it writes with it
DEFAULT_BLOCK_SIZE = 1024 * 1024
# the file info entries HFileWriterImpl adds itself (the rest are its caller's)
WRITER_FILE_INFO = frozenset(
    {
        "MAX_MEMSTORE_TS_KEY",
        "hfile.LASTKEY",
        "hfile.CREATE_TIME_TS",
        "hfile.AVG_KEY_LEN",
        "hfile.AVG_VALUE_LEN",
        "KEY_VALUE_VERSION",
    }
)
# the order Hudi's HFile writers append their entries (a HashMap keeps it within a bucket)
_APPEND_ORDER = ("schema", "minRecordKey", "maxRecordKey", "bloomFilterTypeCode")
_LATEST_TIMESTAMP = (1 << 63) - 1
_PUT = 4


def _block(magic: bytes, payload: bytes, previous: int, codec: CompressionCodec) -> bytes:
    body = compress(payload, codec)
    data_with_header = BLOCK_HEADER_SIZE + len(body)
    checksum = 4 * -(-data_with_header // BYTES_PER_CHECKSUM)
    header = magic + struct.pack(
        ">iiqbii", len(body) + checksum, len(payload), previous, 0, BYTES_PER_CHECKSUM,
        data_with_header,
    )  # fmt: skip
    return header + body + bytes(checksum)


def _key_value(key: bytes, value: bytes) -> bytes:
    hbase_key = struct.pack(">h", len(key)) + key + struct.pack(">bqb", 0, _LATEST_TIMESTAMP, _PUT)
    return struct.pack(">ii", len(hbase_key), len(value)) + hbase_key + value + b"\0"


def _proto_bytes(number: int, value: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(value)) + value


def _proto_int(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


@dataclass
class _Layout:
    """What the writer accumulates while it writes blocks."""

    out: bytearray = field(default_factory=bytearray)
    index: list[tuple[int, int, bytes]] = field(default_factory=list)
    entries: int = 0
    key_bytes: int = 0
    value_bytes: int = 0
    uncompressed_bytes: int = 0
    first_data: int = -1
    last_data: int = 0
    last_key: bytes = b""


def _data_blocks(
    pairs: Iterable[tuple[bytes, bytes]], block_size: int, codec: CompressionCodec
) -> _Layout:
    layout = _Layout()
    block: list[bytes] = []
    first_key = b""
    estimated = 0
    previous = -1

    def flush() -> None:
        nonlocal previous
        offset = len(layout.out)
        layout.first_data = offset if layout.first_data < 0 else layout.first_data
        layout.last_data = offset
        payload = b"".join(block)
        layout.uncompressed_bytes += len(payload)
        layout.out += _block(DATA_MAGIC, payload, previous, codec)
        layout.index.append((offset, len(layout.out) - offset, first_key))
        previous = len(layout.out)

    for key, value in pairs:
        if layout.entries and key < layout.last_key:
            raise HFileFormatError(f"HFile keys must be sorted: {key!r} after {layout.last_key!r}")
        pair = _key_value(key, value)
        if block and key != layout.last_key and estimated + len(pair) > block_size:
            flush()
            block, estimated = [], 0
        if not block:
            first_key = key
        block.append(pair)
        estimated += len(pair)
        layout.entries += 1
        layout.key_bytes += len(key)
        layout.value_bytes += len(value)
        layout.last_key = key
    if block:
        flush()
    return layout


def _file_info(
    layout: _Layout, user_info: Mapping[str, bytes], create_time_ms: int
) -> dict[str, bytes]:
    info: dict[str, bytes] = {"MAX_MEMSTORE_TS_KEY": bytes(8)}
    info.update(user_info)
    last = layout.last_key
    info["hfile.LASTKEY"] = struct.pack(">h", len(last)) + last if last else b""
    info["hfile.CREATE_TIME_TS"] = struct.pack(">q", create_time_ms)
    count = layout.entries
    info["hfile.AVG_KEY_LEN"] = struct.pack(">i", layout.key_bytes // count if count else 0)
    info["hfile.AVG_VALUE_LEN"] = struct.pack(">i", layout.value_bytes // count if count else 0)
    info.setdefault("KEY_VALUE_VERSION", struct.pack(">i", 1))
    return {name: info[name] for name in java_hashmap_order(info)}


def _trailer(layout: _Layout, info_offset: int, load_on_open: int, meta_count: int,
             codec: CompressionCodec) -> bytes:  # fmt: skip
    proto = b"".join(
        (
            _proto_int(1, info_offset),
            _proto_int(2, load_on_open),
            _proto_int(3, layout.uncompressed_bytes),
            _proto_int(5, len(layout.index)),
            _proto_int(6, meta_count),
            _proto_int(7, layout.entries),
            _proto_int(8, 1),
            _proto_int(9, layout.first_data),
            _proto_int(10, layout.last_data),
            _proto_bytes(11, COMPARATOR_CLASS_NAME.encode()),
            _proto_int(12, codec),
        )
    )
    head = TRAILER_MAGIC + varint(len(proto)) + proto
    return head + bytes(TRAILER_SIZE - len(head) - 1) + b"\x03"


def write_hfile(
    pairs: Iterable[tuple[bytes, bytes]],
    *,
    create_time_ms: int,
    file_info: Mapping[str, bytes] | None = None,
    meta: Mapping[str, bytes] | None = None,
    codec: CompressionCodec = CompressionCodec.GZ,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> bytes:
    """The bytes of an HFile holding ``pairs`` (row key, value), sorted by key.

    Args:
        pairs: Key/value pairs in key order (equal keys allowed, as Hudi's writer allows).
        create_time_ms: ``hfile.CREATE_TIME_TS``, epoch milliseconds.
        file_info: The caller's file info entries in the order Hudi appends them (``schema``
            first; base files then ``minRecordKey``, ``maxRecordKey``, ``bloomFilterTypeCode``).
        meta: Meta blocks by name (``bloomFilter``).
        codec: Block compression (Hudi's metadata table writes GZ).
        block_size: Target uncompressed data block size.

    Raises:
        HFileFormatError: A key sorts before the one written before it.
    """
    layout = _data_blocks(pairs, block_size, codec)
    meta_index: list[tuple[int, int, bytes]] = []
    meta = meta or {}
    for name in java_hashmap_order(meta):
        offset = len(layout.out)
        layout.out += _block(META_MAGIC, meta[name], -1, codec)
        meta_index.append((offset, len(layout.out) - offset, name.encode()))
    load_on_open = len(layout.out)
    root = b"".join(
        struct.pack(">qi", off, size) + varint(len(key) + 2) + struct.pack(">h", len(key)) + key
        for off, size, key in layout.index
    )
    layout.out += _block(ROOT_INDEX_MAGIC, root, -1, codec)
    meta_root = b"".join(
        struct.pack(">qi", off, size) + varint(len(key)) + key for off, size, key in meta_index
    )
    layout.out += _block(ROOT_INDEX_MAGIC, meta_root, -1, codec)
    info_offset = len(layout.out)
    info = _file_info(layout, file_info or {}, create_time_ms)
    pairs_proto = b"".join(
        _proto_bytes(1, _proto_bytes(1, name.encode()) + _proto_bytes(2, value))
        for name, value in info.items()
    )
    info_payload = PB_MAGIC + varint(len(pairs_proto)) + pairs_proto
    layout.out += _block(FILE_INFO_MAGIC, info_payload, -1, codec)
    layout.out += _trailer(layout, info_offset, load_on_open, len(meta_index), codec)
    return bytes(layout.out)


def callers_file_info(hfile: HFile) -> dict[str, bytes]:
    """The file info entries of ``hfile`` its writer's caller appended, in the order Hudi's
    writers append them: what :func:`write_hfile` needs to write the same file again."""
    names = [n for n in hfile.file_info if n not in WRITER_FILE_INFO]
    names.sort(key=lambda n: _APPEND_ORDER.index(n) if n in _APPEND_ORDER else len(_APPEND_ORDER))
    return {n: hfile.file_info[n] for n in names}
