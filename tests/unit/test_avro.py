"""engine.io.avro and avro_decode: the columnar encoder must produce fastavro's (= Java's) bytes
exactly, and the decoder must read them back."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import struct

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import SchemaError
from engine.io.avro import encode_datums, encode_length_prefixed
from engine.io.avro_decode import decode_length_prefixed
from engine.model.schema import arrow_to_avro_schema, avro_to_arrow_schema

UTC = dt.UTC


def python_value(value: object, dtype: pa.DataType) -> object:
    """Arrow ``to_pylist`` value -> what fastavro expects (maps as dicts, nested)."""
    if value is None:
        return None
    if pa.types.is_map(dtype):
        return {k: python_value(v, dtype.item_type) for k, v in value}  # type: ignore[attr-defined]
    if pa.types.is_struct(dtype):
        return {f.name: python_value(value[f.name], f.type) for f in dtype}  # type: ignore[index]
    if pa.types.is_list(dtype):
        return [python_value(v, dtype.value_type) for v in value]  # type: ignore[attr-defined]
    return value


def encode_length_prefixed_fastavro(table: pa.Table, schema: dict) -> bytes:
    """Reference: fastavro's schemaless writer, row by row (what Java writes, byte for byte)."""
    parsed = fastavro.parse_schema(schema)
    names = [f["name"] for f in schema["fields"]]
    columns = [
        [python_value(v, table.schema.field(n).type) for v in table.column(n).to_pylist()]
        for n in names
    ]
    out = io.BytesIO()
    for i in range(table.num_rows):
        datum = io.BytesIO()
        fastavro.schemaless_writer(
            datum, parsed, {n: c[i] for n, c in zip(names, columns, strict=True)}
        )
        out.write(struct.pack(">i", len(datum.getvalue())) + datum.getvalue())
    return out.getvalue()


ALL_TYPES = pa.schema(
    [
        pa.field("b", pa.bool_()),
        pa.field("i", pa.int32()),
        pa.field("l", pa.int64(), nullable=False),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("bin", pa.binary()),
        pa.field("dec", pa.decimal128(10, 5)),
        pa.field("big", pa.decimal128(38, 2)),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("ntz", pa.timestamp("us")),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("points", pa.list_(pa.field("element", pa.int64(), nullable=False))),
        pa.field(
            "items",
            pa.list_(pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.string())])),
        ),
        pa.field("m", pa.map_(pa.string(), pa.struct([pa.field("v", pa.float64())]))),
        pa.field(
            "nested",
            pa.struct(
                [
                    pa.field("a", pa.string()),
                    pa.field("inner", pa.struct([pa.field("dd", pa.decimal128(5, 2))])),
                    pa.field("ll", pa.list_(pa.list_(pa.int32()))),
                ]
            ),
        ),
    ]
)


def sample_rows() -> list[dict]:
    return [
        {
            "b": True,
            "i": -(2**31),
            "l": 2**63 - 1,
            "f": 1.5,
            "d": -0.0,
            "s": "héllo ✓",
            "bin": b"\x00\xff",
            "dec": decimal.Decimal("-12345.67891"),
            "big": decimal.Decimal("123456789012345678901234567890123456.78"),
            "day": dt.date(1969, 12, 31),
            "ts": dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC),
            "ntz": dt.datetime(1900, 1, 1),
            "tags": ["a", None, ""],
            "points": [1, -1, 300],
            "items": [{"x": 1, "y": None}, None, {"x": None, "y": "z"}],
            "m": [("k", {"v": 1.0}), ("", None)],
            "nested": {"a": "x", "inner": {"dd": decimal.Decimal("-0.01")}, "ll": [[1], [], None]},
        },
        {
            "b": None,
            "i": None,
            "l": -(2**63),
            "f": None,
            "d": None,
            "s": None,
            "bin": None,
            "dec": None,
            "big": None,
            "day": None,
            "ts": None,
            "ntz": None,
            "tags": None,
            "points": [],
            "items": [],
            "m": None,
            "nested": None,
        },
        {
            "b": False,
            "i": 0,
            "l": 0,
            "f": float("inf"),
            "d": float("nan"),
            "s": "",
            "bin": b"",
            "dec": decimal.Decimal("99999.99999"),
            "big": decimal.Decimal("-1"),
            "day": dt.date(2262, 4, 11),
            "ts": dt.datetime(1960, 1, 1, tzinfo=UTC),
            "ntz": None,
            "tags": [],
            "points": None,
            "items": None,
            "m": [],
            "nested": {"a": None, "inner": None, "ll": []},
        },
    ]


def both_encoders(table: pa.Table, schema: dict) -> tuple[bytes, bytes]:
    return encode_length_prefixed(table, schema), encode_length_prefixed_fastavro(table, schema)


@pytest.mark.unit
def test_encode_length_prefixed_all_types_matches_fastavro_bytes() -> None:
    table = pa.Table.from_pylist(sample_rows(), schema=ALL_TYPES)
    schema = arrow_to_avro_schema(table.schema, "t", with_meta=False)
    ours, reference = both_encoders(table, schema)
    assert ours == reference
    back = decode_length_prefixed(ours, table.num_rows, schema)
    expected = table.cast(avro_to_arrow_schema(schema))
    # NaN != NaN: compare the JSON-ish text of both tables instead of equals()
    assert str(back.to_pylist()) == str(expected.to_pylist())


@pytest.mark.unit
def test_encode_length_prefixed_sliced_and_chunked_input_matches_fastavro() -> None:
    rows = sample_rows() * 5
    table = pa.Table.from_pylist(rows, schema=ALL_TYPES)
    chunked = pa.concat_tables([table.slice(1, 4), table.slice(7, 6)])
    schema = arrow_to_avro_schema(table.schema, "t", with_meta=False)
    ours, reference = both_encoders(chunked, schema)
    assert ours == reference
    datums = encode_datums(chunked, schema)
    framed = b"".join(struct.pack(">i", len(d)) + d for d in datums)
    assert framed == reference


@pytest.mark.unit
def test_encode_length_prefixed_schema_branch_order_and_narrow_types() -> None:
    # [T, "null"] unions (Spark's own converter) and int8/float16/date64/ns inputs
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "a", "type": ["int", "null"]},
            {"name": "t", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
            {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 3}},
            {
                "name": "bd",
                "type": [
                    "null",
                    {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 3},
                ],
            },
        ],
    }
    table = pa.table(
        {
            "a": pa.array([1, None, -3], pa.int8()),
            "t": pa.array([1_000, None, -1_999], pa.timestamp("ns", tz="UTC")),
            "day": pa.array([0, 86_400_000, -86_400_000], pa.date64()),
            "e": pa.array(["Y", "X", "Y"]),
            "fx": pa.array([b"abc", b"def", b"\x00\x00\x00"], pa.binary(3)),
            "bd": pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("-128.000")]),
        }
    )
    ours = encode_length_prefixed(table, schema)
    parsed = fastavro.parse_schema(schema)
    stream = io.BytesIO(ours)
    decoded = []
    for _ in range(3):
        (length,) = struct.unpack(">i", stream.read(4))
        start = stream.tell()
        decoded.append(fastavro.schemaless_reader(stream, parsed, None))
        assert stream.tell() - start == length
    assert [r["a"] for r in decoded] == [1, None, -3]
    assert decoded[0]["t"] == dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert [r["day"] for r in decoded] == [
        dt.date(1970, 1, 1),
        dt.date(1970, 1, 2),
        dt.date(1969, 12, 31),
    ]
    assert [r["e"] for r in decoded] == ["Y", "X", "Y"]
    assert decoded[2]["fx"] == b"\x00\x00\x00"
    assert [r["bd"] for r in decoded] == [
        decimal.Decimal("1.500"),
        None,
        decimal.Decimal("-128.000"),
    ]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("column", "fragment"),
    [
        (pa.array([1, None], pa.int64()), "not nullable"),
        (pa.array([2**40, 1], pa.int64()), "Avro int range"),
    ],
)
def test_encode_length_prefixed_value_not_fitting_raises(column: pa.Array, fragment: str) -> None:
    field_type = "long" if fragment == "not nullable" else "int"
    schema = {"type": "record", "name": "r", "fields": [{"name": "c", "type": field_type}]}
    with pytest.raises(SchemaError, match=fragment):
        encode_length_prefixed(pa.table({"c": column}), schema)


@pytest.mark.unit
def test_encode_length_prefixed_bad_enum_symbol_raises() -> None:
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}}],
    }
    with pytest.raises(SchemaError, match="enum"):
        encode_length_prefixed(pa.table({"e": ["A", "B"]}), schema)


@pytest.mark.unit
def test_encode_length_prefixed_null_struct_with_required_child_is_accepted() -> None:
    dtype = pa.struct([pa.field("x", pa.int32(), nullable=False)])
    children = [pa.array([1, None], pa.int32())]
    column = pa.StructArray.from_arrays(children, fields=list(dtype), mask=pa.array([False, True]))
    table = pa.table({"s": column})
    schema = arrow_to_avro_schema(pa.schema([pa.field("s", dtype)]), "t", with_meta=False)
    ours, reference = both_encoders(table, schema)
    assert ours == reference


@pytest.mark.unit
def test_decode_length_prefixed_wrong_length_prefix_raises() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "c", "type": "long"}]}
    data = encode_length_prefixed(pa.table({"c": [300]}), schema)
    with pytest.raises(SchemaError, match="length prefix"):
        decode_length_prefixed(struct.pack(">i", 5) + data[4:] + b"\x00" * 3, 1, schema)
    with pytest.raises(SchemaError, match="run past the data"):
        decode_length_prefixed(struct.pack(">i", 5) + data[4:], 1, schema)


_scalars = {
    "i": st.none() | st.integers(-(2**31), 2**31 - 1),
    "l": st.integers(-(2**63), 2**63 - 1),
    "d": st.none() | st.floats(allow_nan=False),
    "s": st.none() | st.text(max_size=20),
    "bin": st.none() | st.binary(max_size=20),
    "dec": st.none() | st.decimals(min_value=-99999, max_value=99999, places=5, allow_nan=False),
    "tags": st.none() | st.lists(st.none() | st.text(max_size=5), max_size=4),
    "m": st.none()
    | st.dictionaries(st.text(max_size=4), st.none() | st.integers(-5, 5), max_size=3),
}
_PROPERTY_SCHEMA = pa.schema(
    [
        pa.field("i", pa.int32()),
        pa.field("l", pa.int64(), nullable=False),
        pa.field("d", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("bin", pa.binary()),
        pa.field("dec", pa.decimal128(10, 5)),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
    ]
)


@pytest.mark.unit
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries(_scalars), min_size=1, max_size=30))
def test_encode_length_prefixed_random_rows_match_fastavro(rows: list[dict]) -> None:
    for row in rows:
        if row["m"] is not None:
            row["m"] = list(row["m"].items())
    table = pa.Table.from_pylist(rows, schema=_PROPERTY_SCHEMA)
    schema = arrow_to_avro_schema(table.schema, "p", with_meta=False)
    ours, reference = both_encoders(table, schema)
    assert ours == reference
    assert decode_length_prefixed(ours, len(rows), json.dumps(schema)).equals(table)


_FLAT_SCHEMA = {
    "type": "record",
    "name": "flat",
    "fields": [
        {"name": "b", "type": ["null", "boolean"], "default": None},
        {"name": "i", "type": ["int", "null"]},
        {"name": "l", "type": "long"},
        {"name": "f", "type": ["null", "float"], "default": None},
        {"name": "s", "type": ["null", "string"], "default": None},
        {"name": "bin", "type": "bytes"},
        {
            "name": "dec",
            "type": [
                "null",
                {
                    "type": "fixed",
                    "name": "fixed",
                    "size": 5,
                    "logicalType": "decimal",
                    "precision": 10,
                    "scale": 5,
                },
            ],
        },
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
        {"name": "fx", "type": ["null", {"type": "fixed", "name": "F2", "size": 2}]},
    ],
}
_flat_rows = st.fixed_dictionaries(
    {
        "b": st.none() | st.booleans(),
        "i": st.none() | st.integers(-(2**31), 2**31 - 1),
        "l": st.integers(-(2**63), 2**63 - 1),
        "f": st.none() | st.floats(width=32, allow_nan=False),
        "s": st.none() | st.text(max_size=30),
        "bin": st.binary(max_size=30),
        "dec": st.none()
        | st.decimals(min_value=-99999, max_value=99999, places=5, allow_nan=False),
        "day": st.none() | st.dates(),
        "ts": st.none() | st.datetimes(min_value=dt.datetime(1, 1, 2), timezones=st.just(UTC)),
        "e": st.sampled_from(["A", "B", "C"]),
        "fx": st.none() | st.binary(min_size=2, max_size=2),
    }
)


@pytest.mark.unit
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_flat_rows, min_size=0, max_size=40))
def test_decode_length_prefixed_flat_records_match_fastavro(rows: list[dict]) -> None:
    parsed = fastavro.parse_schema(_FLAT_SCHEMA)
    out = io.BytesIO()
    for row in rows:
        datum = io.BytesIO()
        fastavro.schemaless_writer(datum, parsed, row)
        out.write(struct.pack(">i", len(datum.getvalue())) + datum.getvalue())
    decoded = decode_length_prefixed(out.getvalue(), len(rows), _FLAT_SCHEMA)
    expected = pa.Table.from_pylist(rows, schema=avro_to_arrow_schema(_FLAT_SCHEMA))
    assert decoded.equals(expected)
    if rows:
        table = decoded.slice(1) if len(rows) > 1 else decoded
        again = encode_length_prefixed(table, _FLAT_SCHEMA)
        assert again == encode_length_prefixed_fastavro(table, _FLAT_SCHEMA)
