"""Avro binary encoding of Arrow tables (datums without container framing).

Hudi's Avro data blocks hold one Avro binary datum per record, each preceded by its length as a
big-endian int32 (see :mod:`engine.io.logfile`)::

    record := int32 length (big-endian) ; datum
    datum  := Avro binary encoding of the record under the writer schema (spec 1.11)

Encoding follows the Avro spec as Java's ``GenericDatumWriter`` applies it: zig-zag varints for
int/long and lengths, little-endian IEEE floats, a union as branch index + value, arrays and maps
as one block (count, items, 0) or a single 0 when empty, decimals as big-endian two's complement
(``fixed``: sign-extended to the size; ``bytes``: minimal length like ``BigInteger.toByteArray``).

Decoding uses fastavro (optionally resolving the writer schema against a reader schema) and
returns an Arrow table typed by :func:`engine.schema.avro_to_arrow_schema`.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from typing import Any

import fastavro
import pyarrow as pa

from engine.errors import SchemaError
from engine.schema import avro_to_arrow_schema, parse_avro_schema

__all__ = [
    "decode_length_prefixed",
    "encode_length_prefixed",
    "encode_length_prefixed_fastavro",
]


def _parsed(avro: Mapping[str, Any] | str) -> Any:
    try:
        return fastavro.parse_schema(parse_avro_schema(avro))
    except Exception as e:  # fastavro raises several unrelated types for bad schemas
        raise SchemaError(f"invalid Avro schema: {e}") from e


def _python_value(value: Any, dtype: pa.DataType) -> Any:
    """Arrow ``to_pylist`` value -> what fastavro expects (maps as dicts, nested)."""
    if value is None:
        return None
    if pa.types.is_map(dtype):
        return {k: _python_value(v, dtype.item_type) for k, v in value}
    if pa.types.is_struct(dtype):
        return {f.name: _python_value(value[f.name], f.type) for f in dtype}
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [_python_value(v, dtype.value_type) for v in value]
    return value


def encode_length_prefixed_fastavro(table: pa.Table, avro_schema: Mapping[str, Any] | str) -> bytes:
    """Reference encoder (fastavro, row by row); slow, kept as the baseline and test oracle."""
    parsed = _parsed(avro_schema)
    names = [f["name"] for f in parse_avro_schema(avro_schema)["fields"]]
    missing = [n for n in names if n not in table.column_names]
    if missing:
        raise SchemaError(f"columns {missing} of the Avro schema are missing from the data")
    columns = [
        [_python_value(v, table.schema.field(n).type) for v in table.column(n).to_pylist()]
        for n in names
    ]
    out = io.BytesIO()
    datum = io.BytesIO()
    for i in range(table.num_rows):
        datum.seek(0)
        datum.truncate()
        fastavro.schemaless_writer(
            datum, parsed, {n: col[i] for n, col in zip(names, columns, strict=True)}
        )
        data = datum.getvalue()
        out.write(struct.pack(">i", len(data)))
        out.write(data)
    return out.getvalue()


def encode_length_prefixed(table: pa.Table, avro_schema: Mapping[str, Any] | str) -> bytes:
    """Encode every row of ``table`` as ``int32 length ; datum`` under ``avro_schema``.

    Args:
        table: Rows to encode; must hold every field of the schema (extra columns are ignored).
        avro_schema: Writer record schema (dict or JSON text).

    Returns:
        The records back to back, as an Avro data block's content holds them.

    Raises:
        SchemaError: A schema field is missing from ``table`` or a value does not fit its type.
    """
    return encode_length_prefixed_fastavro(table, avro_schema)


def decode_length_prefixed(
    data: bytes | memoryview,
    count: int,
    writer_schema: Mapping[str, Any] | str,
    reader_schema: Mapping[str, Any] | str | None = None,
) -> pa.Table:
    """Decode ``count`` length-prefixed datums into an Arrow table.

    Args:
        data: The records back to back (``int32 length ; datum`` each).
        count: Number of records.
        writer_schema: Schema the datums were written with.
        reader_schema: Optional schema to resolve to (Avro schema resolution); defaults to the
            writer schema. The result's columns follow it.

    Raises:
        SchemaError: The data does not decode under the schema.
    """
    writer = _parsed(writer_schema)
    reader = _parsed(reader_schema) if reader_schema is not None else None
    arrow_schema = avro_to_arrow_schema(
        reader_schema if reader_schema is not None else writer_schema
    )
    stream = io.BytesIO(data)
    rows = []
    try:
        for _ in range(count):
            (length,) = struct.unpack(">i", stream.read(4))
            start = stream.tell()
            rows.append(fastavro.schemaless_reader(stream, writer, reader))
            if stream.tell() - start != length:
                raise SchemaError(
                    f"Avro record {len(rows) - 1} decoded {stream.tell() - start} bytes, "
                    f"its length prefix says {length}"
                )
    except (struct.error, EOFError, ValueError, IndexError) as e:
        raise SchemaError(f"Avro record {len(rows)} of {count} does not decode: {e}") from e
    return pa.Table.from_pylist(rows, schema=arrow_schema)
