"""Decoding of Avro binary datums (as Hudi's Avro data blocks hold them) into Arrow tables.

The records come back to back, each as ``int32 length (big-endian) ; datum`` (see
:mod:`engine.io.avro` for the encoding). Log-file reads decode whole blocks of one schema, so
decoding is columnar rather than record by record: for flat records (primitive, logical, enum and
fixed fields, nullable or not) every record's cursor advances together, a varint in at most 10
vectorised steps, floats and fixed as (rows, width) byte matrices, strings as every other element
of one binary array laid over the whole buffer; a record must end where its length prefix says.
Nested records, and reader schemas the Arrow-level resolution cannot apply, fall back to fastavro
record by record. Either way the result is an Arrow table typed by
:func:`engine.model.schema.avro_to_arrow_schema`.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Mapping
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

from engine.errors import SchemaError
from engine.io.avro import _wrap_field
from engine.model.schema import avro_to_arrow_schema, parse_avro_schema

__all__ = ["decode_length_prefixed"]

_PREFIX = struct.Struct(">i")
_PAD = np.zeros(16, dtype=np.uint8)
# (padded data, cursor per decoded row) -> (values, cursor after the value)
_Decoder = Callable[[np.ndarray, np.ndarray], tuple[pa.Array, np.ndarray]]


def _read_varints(data: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    byte = data[pos].astype(np.uint64)
    raw = byte & np.uint64(0x7F)
    size = np.ones(len(pos), dtype=np.int64)
    going = np.flatnonzero(byte >= 0x80)
    shift = 7
    while len(going):
        if shift > 63:
            raise SchemaError("an Avro varint is longer than 10 bytes")
        byte = data[pos[going] + size[going]].astype(np.uint64)
        raw[going] |= (byte & np.uint64(0x7F)) << np.uint64(shift)
        size[going] += 1
        going = going[byte >= 0x80]
        shift += 7
    values = (raw >> np.uint64(1)).view(np.int64) ^ -(raw & np.uint64(1)).view(np.int64)
    return values, pos + size


def _matrix(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    return data[pos[:, None] + np.arange(width, dtype=np.int64)]


def _varint_decoder(dtype: pa.DataType, storage: pa.DataType) -> _Decoder:
    def decode(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        values, end = _read_varints(data, pos)
        arr = pa.array(values.astype(storage.to_pandas_dtype()), storage)
        return (arr if dtype == storage else arr.view(dtype)), end

    return decode


def _float_decoder(np_dtype: str, width: int) -> _Decoder:
    def decode(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        values = np.ascontiguousarray(_matrix(data, pos, width)).view(np_dtype).reshape(-1)
        return pa.array(values), pos + width

    return decode


def _decode_boolean(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    return pa.array(data[pos] != 0), pos + 1


def _decode_null(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    return pa.nulls(len(pos)), pos


def _slices(data: np.ndarray, pos: np.ndarray, lens: np.ndarray) -> pa.Array:
    """``data[pos[i]:pos[i]+lens[i]]`` for every i (positions ascending) as large_binary."""
    m = len(pos)
    offsets = np.empty(2 * m + 1, dtype=np.int64)
    offsets[0:-1:2], offsets[1::2] = pos, pos + lens
    offsets[-1] = offsets[-2] if m else 0
    every = pa.Array.from_buffers(
        pa.large_binary(), 2 * m, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    return every.take(pa.array(np.arange(0, 2 * m, 2, dtype=np.int64)))


def _bytes_decoder(dtype: pa.DataType) -> _Decoder:
    def decode(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        lens, start = _read_varints(data, pos)
        if len(lens) and int(lens.min()) < 0:
            raise SchemaError("negative Avro string/bytes length")
        try:
            return _slices(data, start, lens).cast(dtype), start + lens
        except pa.ArrowInvalid as e:
            raise SchemaError(f"Avro string is not valid UTF-8: {e}") from e

    return decode


def _fixed_decoder(size: int, dtype: pa.DataType) -> _Decoder:
    def decode(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        big = _matrix(data, pos, size)
        if not pa.types.is_decimal(dtype):
            return _slices(data, pos, np.full(len(pos), size, np.int64)).cast(dtype), pos + size
        width = dtype.byte_width
        negative = (big[:, 0] >= 0x80) if size else np.zeros(len(pos), bool)
        little = np.where(negative[:, None], np.uint8(0xFF), np.uint8(0)).astype(np.uint8)
        little = np.repeat(little, width, axis=1)
        little[:, :size] = big[:, ::-1]
        buffer = pa.py_buffer(np.ascontiguousarray(little))
        return pa.Array.from_buffers(dtype, len(pos), [None, buffer]), pos + size

    return decode


def _enum_decoder(symbols: list[str]) -> _Decoder:
    def decode(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        index, end = _read_varints(data, pos)
        if len(index) and (int(index.min()) < 0 or int(index.max()) >= len(symbols)):
            raise SchemaError(f"Avro enum index out of range for {symbols}")
        return pa.array(symbols, pa.string()).take(pa.array(index)), end

    return decode


def _union_decoder(inner: _Decoder, null_index: int, value_index: int) -> _Decoder:
    def decode(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        branch, pos = _read_varints(data, pos)
        valid = branch == value_index
        if bool((~valid & (branch != null_index)).any()):
            raise SchemaError(
                f"Avro union branch out of range (expected {null_index}/{value_index})"
            )
        rows = np.flatnonzero(valid)
        values, end = inner(data, pos[rows])
        pos = pos.copy()
        pos[rows] = end
        take = pa.array(np.cumsum(valid) - 1, mask=~valid)
        return values.take(take), pos

    return decode


def _flat_decoder(node: Any) -> _Decoder | None:
    """Decoder of a flat field type; None for nested or unsupported types (fastavro then)."""
    if isinstance(node, list):
        branches = [i for i, b in enumerate(node) if b != "null"]
        nulls = [i for i, b in enumerate(node) if b == "null"]
        if len(branches) != 1 or len(nulls) != 1:
            return None
        inner = _flat_decoder(node[branches[0]])
        return None if inner is None else _union_decoder(inner, nulls[0], branches[0])
    if isinstance(node, dict) and isinstance(node.get("type"), (dict, list)):
        return _flat_decoder(node["type"])
    kind = node.get("type") if isinstance(node, dict) else node
    logical = node.get("logicalType") if isinstance(node, dict) else None
    if kind in ("record", "error", "array", "map") or (kind == "bytes" and logical == "decimal"):
        return None
    try:
        dtype = avro_to_arrow_schema(_wrap_field(node)).field(0).type
    except SchemaError:
        return None  # a named reference, resolved only by the full path
    if kind == "boolean":
        return _decode_boolean
    if kind == "null":
        return _decode_null
    if kind in ("int", "long"):
        storage = pa.int32() if kind == "int" else pa.int64()
        return _varint_decoder(dtype, storage)
    if kind in ("float", "double"):
        return _float_decoder("<f4", 4) if kind == "float" else _float_decoder("<f8", 8)
    if kind in ("string", "bytes"):
        return _bytes_decoder(dtype)
    if kind == "enum":
        return _enum_decoder(list(node["symbols"]))
    if kind == "fixed":
        return _fixed_decoder(int(node["size"]), dtype)
    return None


def _decode_flat(
    data: memoryview, starts: np.ndarray, lens: np.ndarray, record: dict[str, Any]
) -> pa.Table | None:
    decoders = [(f["name"], _flat_decoder(f["type"])) for f in record["fields"]]
    if any(d is None for _, d in decoders):
        return None
    padded = np.concatenate([np.frombuffer(data, np.uint8), _PAD])
    pos = starts.copy()
    columns = {}
    try:
        for name, decoder in decoders:
            columns[name], pos = decoder(padded, pos)  # type: ignore[misc]
    except IndexError as e:
        raise SchemaError(f"Avro records run past the data: {e}") from e
    wrong = np.flatnonzero(pos != starts + lens)
    if len(wrong):
        i = int(wrong[0])
        raise SchemaError(
            f"Avro record {i} decoded {int(pos[i] - starts[i])} bytes, "
            f"its length prefix says {int(lens[i])}"
        )
    return pa.table(columns, schema=avro_to_arrow_schema(record))


def _resolve(table: pa.Table, reader_schema: Mapping[str, Any] | str) -> pa.Table | None:
    """Avro schema resolution at the Arrow level (None: leave it to fastavro)."""
    record = parse_avro_schema(reader_schema)
    target = avro_to_arrow_schema(record)
    columns = []
    for f, spec in zip(target, record["fields"], strict=True):
        if f.name in table.column_names:
            try:
                columns.append(table.column(f.name).cast(f.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
        elif "default" in spec and spec["default"] is None:
            columns.append(pa.nulls(table.num_rows, f.type))
        else:
            return None
    return pa.table(columns, schema=target)


def _record_bounds(data: memoryview, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each datum (the length prefixes chain, so this walks them)."""
    starts = np.empty(count, dtype=np.int64)
    lens = np.empty(count, dtype=np.int64)
    pos = 0
    unpack = _PREFIX.unpack_from
    try:
        for i in range(count):
            (length,) = unpack(data, pos)
            starts[i], lens[i] = pos + 4, length
            pos += 4 + length
    except struct.error as e:
        raise SchemaError(f"Avro record {i} of {count}: length prefix runs past the data") from e
    if pos > len(data) or (count and int(lens.min()) < 0):
        raise SchemaError(f"Avro records run past the data ({pos} > {len(data)} bytes)")
    return starts, lens


def decode_length_prefixed(
    data: bytes | memoryview,
    count: int,
    writer_schema: Mapping[str, Any] | str,
    reader_schema: Mapping[str, Any] | str | None = None,
) -> pa.Table:
    """Decode ``count`` length-prefixed datums into an Arrow table.

    Flat records (primitive, logical, enum and fixed fields, nullable or not) are decoded column
    by column with numpy, all records at once; others go through fastavro.

    Args:
        data: The records back to back (``int32 length ; datum`` each).
        count: Number of records.
        writer_schema: Schema the datums were written with.
        reader_schema: Optional schema to resolve to (Avro schema resolution); defaults to the
            writer schema. The result's columns follow it.

    Raises:
        SchemaError: The data does not decode under the schema.
    """
    view = memoryview(data)
    starts, lens = _record_bounds(view, count)
    table = _decode_flat(view, starts, lens, parse_avro_schema(writer_schema))
    if table is not None:
        resolved = table if reader_schema is None else _resolve(table, reader_schema)
        if resolved is not None:
            return resolved
    return _decode_fastavro(view, starts, lens, writer_schema, reader_schema)


def _parsed(avro: Mapping[str, Any] | str) -> Any:
    try:
        return fastavro.parse_schema(parse_avro_schema(avro))
    except Exception as e:  # fastavro raises several unrelated types for bad schemas
        raise SchemaError(f"invalid Avro schema: {e}") from e


def _decode_fastavro(
    data: memoryview,
    starts: np.ndarray,
    lens: np.ndarray,
    writer_schema: Mapping[str, Any] | str,
    reader_schema: Mapping[str, Any] | str | None,
) -> pa.Table:
    writer = _parsed(writer_schema)
    reader = _parsed(reader_schema) if reader_schema is not None else None
    arrow_schema = avro_to_arrow_schema(
        reader_schema if reader_schema is not None else writer_schema
    )
    stream = io.BytesIO(data)
    rows = []
    for i, (start, length) in enumerate(zip(starts.tolist(), lens.tolist(), strict=True)):
        stream.seek(start)
        try:
            rows.append(fastavro.schemaless_reader(stream, writer, reader))
        except (EOFError, ValueError, IndexError, TypeError) as e:
            raise SchemaError(f"Avro record {i} of {len(starts)} does not decode: {e}") from e
        if stream.tell() - start != length:
            raise SchemaError(
                f"Avro record {i} decoded {stream.tell() - start} bytes, "
                f"its length prefix says {length}"
            )
    return pa.Table.from_pylist(rows, schema=arrow_schema)
