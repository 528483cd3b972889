"""The writer-schema rules of engine.schema_evolution, case by case against Hudi 0.14/0.15, and the
exact value promotion of engine.model.promote.

Each case names the Hudi source that decides it: ``shouldPromoteType`` (canonicalization of the
batch up to the table's type, AvroSchemaEvolutionUtils.reconcileSchemaRequirements), Avro
reader/writer compatibility (AvroSchemaCompatibility, the table widens), or a refusal.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from engine.config import parse_options
from engine.errors import ConfigError, SchemaEvolutionError
from engine.model.promote import promote_array, promote_table
from engine.model.schema_evolution import (
    SchemaChange,
    compare_schemas,
    deduce_writer_schema,
    lossy_widenings,
    type_name,
)

DEFAULTS = parse_options({})


def one(table: pa.DataType, incoming: pa.DataType) -> list[SchemaChange]:
    return compare_schemas(pa.schema([("c", table)]), pa.schema([("c", incoming)]))


# (table type, incoming type, kind, Hudi rule)
PRIMITIVE_CASES: list[tuple[pa.DataType, pa.DataType, str | None, str]] = [
    (pa.int32(), pa.int32(), None, "same type"),
    (pa.int32(), pa.int64(), "widened", "Avro: long reads int"),
    (pa.int32(), pa.float32(), "widened", "Avro: float reads int"),
    (pa.int32(), pa.float64(), "widened", "Avro: double reads int"),
    (pa.int64(), pa.float32(), "widened", "Avro: float reads long"),
    (pa.int64(), pa.float64(), "widened", "Avro: double reads long"),
    (pa.float32(), pa.float64(), "widened", "Avro: double reads float"),
    (pa.int64(), pa.int32(), "narrowed", "shouldPromoteType int -> long"),
    (pa.float64(), pa.int32(), "narrowed", "shouldPromoteType int -> double"),
    (pa.float64(), pa.float32(), "narrowed", "shouldPromoteType float -> double"),
    (pa.float32(), pa.int64(), "narrowed", "shouldPromoteType long -> float"),
    (pa.string(), pa.int32(), "narrowed", "shouldPromoteType int -> string"),
    (pa.string(), pa.int64(), "narrowed", "shouldPromoteType long -> string"),
    (pa.string(), pa.date32(), "narrowed", "shouldPromoteType date -> string"),
    (pa.string(), pa.binary(), "narrowed", "shouldPromoteType bytes -> string"),
    (pa.binary(), pa.string(), "narrowed", "shouldPromoteType string -> bytes"),
    (pa.date32(), pa.string(), "narrowed", "shouldPromoteType string -> date"),
    (pa.decimal128(10, 2), pa.int32(), "narrowed", "shouldPromoteType int -> decimal"),
    (pa.decimal128(10, 2), pa.float64(), "narrowed", "shouldPromoteType double -> decimal"),
    (pa.decimal128(12, 2), pa.decimal128(10, 2), "narrowed", "isDecimalFixedUpdateAllow"),
    (pa.decimal128(10, 2), pa.decimal128(11, 2), "widened", "checkDecimalWidening, 5 bytes"),
    (pa.decimal128(10, 2), pa.decimal128(12, 2), "incompatible", "fixed size 5 -> 6"),
    (pa.decimal128(10, 2), pa.decimal128(9, 2), "narrowed", "decimal(9,2) fits (10,2)"),
    (pa.decimal128(10, 4), pa.decimal128(10, 2), "incompatible", "fewer integer digits"),
    (pa.int32(), pa.string(), "incompatible", "string -> int is no promotion"),
    (pa.int64(), pa.string(), "incompatible", "string -> long is no promotion"),
    (pa.float32(), pa.string(), "incompatible", "string -> float is no promotion"),
    (pa.string(), pa.float64(), "incompatible", "Java's text of a double differs"),
    (pa.bool_(), pa.int32(), "incompatible", "int -> boolean is no promotion"),
    (pa.int32(), pa.bool_(), "incompatible", "boolean -> int is no promotion"),
    (pa.date32(), pa.int32(), "incompatible", "int -> date is no promotion"),
    (pa.timestamp("us", tz="UTC"), pa.date32(), "incompatible", "date -> timestamp"),
    (pa.int16(), pa.int8(), None, "both are Avro int"),
]


@pytest.mark.parametrize(("table", "incoming", "kind", "rule"), PRIMITIVE_CASES)
def test_primitive_rules(table: Any, incoming: Any, kind: str | None, rule: str) -> None:
    changes = one(table, incoming)
    if kind is None:
        assert changes == [], rule
        return
    (change,) = changes
    assert (change.column, change.kind) == ("c", kind), rule
    assert change.table_type == type_name(table if not pa.types.is_int16(table) else pa.int32())
    assert change.incoming_type == type_name(incoming)


def test_type_names_are_spark_sql() -> None:
    assert type_name(pa.int64()) == "bigint"
    assert type_name(pa.decimal128(10, 2)) == "decimal(10,2)"
    assert type_name(pa.timestamp("us")) == "timestamp_ntz"
    assert type_name(pa.struct([("a", pa.int32())])) == "struct<a:int>"
    assert type_name(pa.list_(pa.string())) == "array<string>"
    assert type_name(pa.map_(pa.string(), pa.float64())) == "map<string,double>"


def test_nested_changes_are_reported_field_by_field() -> None:
    table = pa.schema(
        [
            ("s", pa.struct([("a", pa.int32()), ("gone", pa.string())])),
            ("l", pa.list_(pa.struct([("x", pa.float32())]))),
            ("m", pa.map_(pa.string(), pa.int32())),
        ]
    )
    incoming = pa.schema(
        [
            ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])),
            ("l", pa.list_(pa.struct([("x", pa.float64()), ("y", pa.int32())]))),
            ("m", pa.map_(pa.string(), pa.string())),
        ]
    )
    got = {(c.column, c.kind) for c in compare_schemas(table, incoming)}
    assert got == {
        ("s.a", "widened"),
        ("s.b", "added"),
        ("s.gone", "removed"),
        ("l.element.x", "widened"),
        ("l.element.y", "added"),
        ("m.value", "incompatible"),
    }


def test_struct_against_primitive_is_incompatible() -> None:
    (change,) = one(pa.struct([("a", pa.int32())]), pa.string())
    assert change.kind == "incompatible"
    assert (change.table_type, change.incoming_type) == ("struct<a:int>", "string")


def test_new_table_takes_the_batch_schema_nullable() -> None:
    batch = pa.schema([pa.field("id", pa.string(), nullable=False), ("v", pa.int8())])
    writer = deduce_writer_schema(None, batch, DEFAULTS)
    assert writer == pa.schema([("id", pa.string()), ("v", pa.int32())])


def test_writer_schema_widens_and_adds_in_batch_order() -> None:
    """deduceWriterSchemaWithoutReconcile writes the canonicalized batch schema: its order,
    narrower batch types raised to the table's, wider ones widening the table."""
    table = pa.schema([("id", pa.string()), ("a", pa.int64()), ("b", pa.float32())])
    batch = pa.schema(
        [("b", pa.float64()), ("id", pa.string()), ("new", pa.int32()), ("a", pa.int32())]
    )
    writer = deduce_writer_schema(table, batch, DEFAULTS)
    assert writer == pa.schema(
        [("b", pa.float64()), ("id", pa.string()), ("new", pa.int32()), ("a", pa.int64())]
    )


def test_refusal_names_column_and_both_types() -> None:
    table = pa.schema([("id", pa.string()), ("s", pa.struct([("a", pa.int32())]))])
    batch = pa.schema([("id", pa.string()), ("s", pa.struct([("a", pa.string())]))])
    with pytest.raises(SchemaEvolutionError, match=r"'s\.a'.*int.*string"):
        deduce_writer_schema(table, batch, DEFAULTS)


def test_missing_column_fails_by_default() -> None:
    """checkValidEvolution -> MissingSchemaFieldException, nested fields included."""
    table = pa.schema(
        [("id", pa.string()), ("s", pa.struct([("a", pa.int32()), ("b", pa.int32())]))]
    )
    batch = pa.schema([("id", pa.string()), ("s", pa.struct([("a", pa.int32())]))])
    with pytest.raises(SchemaEvolutionError, match=r"'s\.b' \(int\).*set.null.for.missing"):
        deduce_writer_schema(table, batch, DEFAULTS)


def test_set_null_for_missing_columns_keeps_table_order() -> None:
    """reconcileSchema: table order, a new column before the next batch column the table has."""
    table = pa.schema(
        [("id", pa.string()), ("a", pa.int32()), ("b", pa.string()), ("c", pa.int32())]
    )
    batch = pa.schema([("id", pa.string()), ("new", pa.string()), ("c", pa.int64())])
    cfg = parse_options({"hoodie.write.set.null.for.missing.columns": "true"})
    writer = deduce_writer_schema(table, batch, cfg)
    assert writer.names == ["id", "a", "b", "new", "c"]
    assert writer.field("c").type == pa.int64()


def test_column_drop_allowed_drops() -> None:
    table = pa.schema([("id", pa.string()), ("a", pa.int32())])
    batch = pa.schema([("id", pa.string())])
    cfg = parse_options({"hoodie.datasource.write.schema.allow.auto.evolution.column.drop": True})
    assert deduce_writer_schema(table, batch, cfg).names == ["id"]


def test_validate_refuses_top_level_drop_only() -> None:
    """checkSchemaCompatible: canProject looks at top-level fields; Avro ignores a nested field
    the reader lacks."""
    cfg = parse_options({"hoodie.avro.schema.validate": "true"})
    table = pa.schema(
        [("id", pa.string()), ("s", pa.struct([("a", pa.int32()), ("b", pa.int32())]))]
    )
    with pytest.raises(SchemaEvolutionError, match=r"'s'.*allow\.auto\.evolution\.column\.drop"):
        deduce_writer_schema(table, pa.schema([("id", pa.string())]), cfg)
    nested = pa.schema([("id", pa.string()), ("s", pa.struct([("a", pa.int32())]))])
    assert deduce_writer_schema(table, nested, cfg) == nested


def test_reconcile_projection_writes_with_table_schema() -> None:
    """reconcileSchemasLegacy: a compatible projection takes the table's schema."""
    cfg = parse_options({"hoodie.datasource.write.reconcile.schema": "true"})
    table = pa.schema([("id", pa.string()), ("a", pa.int64()), ("b", pa.string())])
    assert (
        deduce_writer_schema(table, pa.schema([("a", pa.int32()), ("id", pa.string())]), cfg)
        == table
    )
    # not a projection (a new column): the batch's schema, the missing column dropped
    batch = pa.schema([("id", pa.string()), ("a", pa.int64()), ("z", pa.int32())])
    assert deduce_writer_schema(table, batch, cfg).names == ["id", "a", "z"]


def test_schema_on_read_is_refused() -> None:
    cfg = parse_options({"hoodie.schema.on.read.enable": "true"})
    with pytest.raises(ConfigError, match=r"hoodie\.schema\.on\.read\.enable"):
        deduce_writer_schema(None, pa.schema([("id", pa.string())]), cfg)


def test_lossy_widenings_are_listed() -> None:
    table = pa.schema(
        [("a", pa.int32()), ("b", pa.int64()), ("c", pa.int32()), ("d", pa.float32())]
    )
    writer = pa.schema(
        [("a", pa.float32()), ("b", pa.float64()), ("c", pa.int64()), ("d", pa.float64())]
    )
    assert [c.column for c in lossy_widenings(table, writer)] == ["a", "b"]


# ---- exact promotion ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "source", "target", "fragment"),
    [
        ([5_000_000_000], pa.int64(), pa.int32(), "5000000000"),
        ([0.1], pa.float64(), pa.float32(), "0.1"),
        ([16_777_217], pa.int32(), pa.float32(), "16777217"),
        ([2**53 + 1], pa.int64(), pa.float64(), str(2**53 + 1)),
        ([12345], pa.int64(), pa.decimal128(4, 0), "12345"),
        ([b"\xff"], pa.binary(), pa.string(), "UTF8"),
        (["1.5"], pa.string(), pa.decimal128(10, 2), "1.5"),
        (["not a date"], pa.string(), pa.date32(), "not a date"),
    ],
)
def test_promotion_refuses_any_value_that_would_change(
    values: list[Any], source: Any, target: Any, fragment: str
) -> None:
    with pytest.raises(SchemaEvolutionError, match=fragment):
        promote_array(pa.array(values, source), target, "c")


@pytest.mark.parametrize(
    ("values", "source", "target"),
    [
        ([1, None, -(2**31)], pa.int32(), pa.int64()),
        ([2**30, 3], pa.int64(), pa.float32()),
        ([2**53], pa.int64(), pa.float64()),
        ([0.5, float("inf")], pa.float64(), pa.float32()),
        ([1, 2], pa.int64(), pa.string()),
        (["2024-02-29"], pa.string(), pa.date32()),
        ([12], pa.int64(), pa.decimal128(4, 1)),
    ],
)
def test_promotion_keeps_exact_values(values: list[Any], source: Any, target: Any) -> None:
    out = promote_array(pa.array(values, source), target, "c")
    assert out.type == target
    assert pa.array(out.to_pylist(), target).cast(source).to_pylist() == values


def test_promotion_of_nested_old_rows() -> None:
    """Old files of an evolved table: new struct fields null, list items and map values widened,
    parent nulls and slices kept."""
    old = pa.table(
        {
            "s": pa.array([{"a": 1}, None, {"a": 3}], pa.struct([("a", pa.int32())])),
            "l": pa.array([[1], None, [2, 3]], pa.list_(pa.int32())),
            "m": pa.array([[("k", 1.5)], None, []], pa.map_(pa.string(), pa.float32())),
        }
    ).slice(1)
    target = pa.schema(
        [
            ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])),
            ("l", pa.list_(pa.field("element", pa.int64()))),
            ("m", pa.map_(pa.field("key", pa.string(), nullable=False), pa.float64())),
            ("added", pa.string()),
        ]
    )
    out = promote_table(old, target)
    assert out.schema == target
    assert out.to_pylist() == [
        {"s": None, "l": None, "m": None, "added": None},
        {"s": {"a": 3, "b": None}, "l": [2, 3], "m": [], "added": None},
    ]
