"""Writer-schema deduction: how a batch's schema evolves the table's, as Hudi 0.14/0.15 does.

Every write deduces the schema its files are written with from the table's latest schema and
the batch's (Hudi's ``HoodieSchemaUtils.deduceWriterSchema``, hudi-spark-common), then the
batch's values are promoted to it without loss (:mod:`engine.model.promote`). The rules, with their
Hudi sources:

1. **Canonicalization** (``AvroSchemaEvolutionUtils.reconcileSchemaRequirements``): a batch
   column nullable in the table becomes nullable; a batch column whose type Hudi promotes to
   the table's (``SchemaChangeUtils.shouldPromoteType`` / ``isTypeUpdateAllow``: int -> long,
   float, double, decimal, string; long -> float, double, decimal, string; float -> double,
   decimal; double -> decimal; date -> string; bytes -> string; string -> bytes, date, decimal;
   decimal -> a decimal at least as wide whose fixed size is not smaller) is written with the
   table's type. Such a column is reported ``narrowed``: the table keeps its type, and every
   value is cast exactly or the write fails.
2. **Compatibility** (``AvroSchemaCompatibility.checkReaderWriterCompatibility`` with the
   batch's schema as reader and the table's as writer, in ``HoodieSchemaCompatibility
   .checkValidEvolution`` / ``AvroSchemaUtils.checkSchemaCompatible``): any other type change
   must let the new schema read the old data; the Avro promotions int -> long, float, double;
   long -> float, double; float -> double; and a decimal of the same fixed size with no fewer
   integer digits and no smaller scale (Hudi's ``checkDecimalWidening``) **widen** the table:
   the commit's files carry the wider type and readers promote old files. An int or long
   widened to float/double is checked against the values the table holds (a long past 2**53
   is no double). New fields must be nullable (Avro: a reader field without default fails).
3. **Missing columns** (``HoodieSchemaUtils.deduceWriterSchemaWithoutReconcile``):
   by default (``hoodie.avro.schema.validate=false``,
   ``hoodie.datasource.write.schema.allow.auto.evolution.column.drop=false``) a table column
   or nested field missing from the batch fails the write (``MissingSchemaFieldException``)
   unless ``hoodie.write.set.null.for.missing.columns=true``, which keeps it and writes null
   (``AvroSchemaEvolutionUtils.reconcileSchema``: table order, each new column placed before
   the next batch column the table has). With column drop allowed the column leaves the table
   schema; with ``hoodie.avro.schema.validate=true`` and drop not allowed, a missing top-level
   column fails (``AvroSchemaUtils.canProject``, "Column dropping is not allowed").
4. **Legacy reconciliation** (``hoodie.datasource.write.reconcile.schema=true``,
   ``reconcileSchemasLegacy``): a batch that is a compatible projection of the table (no new
   column, no widening) writes with the table's schema, missing columns null; any other batch's
   (canonicalized) schema becomes the writer schema.
5. Column order is the batch's (Hudi writes the canonicalized batch schema), except under 3's
   null-for-missing and 4's projection, which keep the table's.

Where this engine is stricter than Hudi (it refuses instead of writing): any incompatible
change even with ``hoodie.avro.schema.validate=false`` and reconciliation on; float, double or
decimal into a string column (Java's text of the number differs from any other); a numeric
column turned into a string one (Hudi's reader would render old numbers as text);
``hoodie.schema.on.read.enable=true`` (no internal-schema evolution).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

from engine import config
from engine.config import HoodieConfig
from engine.errors import ConfigError, SchemaEvolutionError
from engine.model.promote import is_list_type, is_nested_type
from engine.model.schema import (
    HOODIE_META_COLUMNS,
    arrow_to_avro_schema,
    avro_to_arrow_schema,
    decimal_fixed_size,
)

__all__ = [
    "SchemaChange",
    "check_schema_on_read",
    "compare_schemas",
    "deduce_writer_schema",
    "lossy_widenings",
    "normalize_schema",
    "type_name",
]

ChangeKind = Literal["added", "removed", "widened", "narrowed", "incompatible"]


@dataclass(frozen=True)
class SchemaChange:
    """One difference between the table's schema and a batch's.

    Attributes:
        column: dotted path (``s.inner``; ``l.element`` for list items, ``m.value`` for map
            values).
        kind: ``added`` (batch only), ``removed`` (table only), ``widened`` (the table takes the
            batch's wider type), ``narrowed`` (the batch's type is narrower; the table keeps its
            type and values are cast exactly), ``incompatible`` (refused).
        table_type: Spark SQL name of the table's type (``None`` when added).
        incoming_type: Spark SQL name of the batch's type (``None`` when removed).
        reason: why an incompatible change is refused.
    """

    column: str
    kind: ChangeKind
    table_type: str | None
    incoming_type: str | None
    reason: str = ""

    def describe(self) -> str:
        if self.kind == "added":
            return f"column {self.column!r} ({self.incoming_type}) is new"
        if self.kind == "removed":
            return f"column {self.column!r} ({self.table_type}) is missing from the batch"
        text = (
            f"column {self.column!r}: the table's type {self.table_type}, "
            f"incoming type {self.incoming_type}"
        )
        return f"{text} ({self.reason})" if self.reason else text


# ---- type names --------------------------------------------------------------------------------


def type_name(dtype: pa.DataType) -> str:
    """Spark SQL-ish name of an Arrow type (``int``, ``bigint``, ``decimal(10,2)``,
    ``struct<a:int>``)."""
    if pa.types.is_dictionary(dtype):
        return type_name(dtype.value_type)
    if pa.types.is_struct(dtype):
        inner = ",".join(
            f"{dtype.field(i).name}:{type_name(dtype.field(i).type)}"
            for i in range(dtype.num_fields)
        )
        return f"struct<{inner}>"
    if is_list_type(dtype):
        return f"array<{type_name(dtype.value_type)}>"
    if pa.types.is_map(dtype):
        return f"map<{type_name(dtype.key_type)},{type_name(dtype.item_type)}>"
    if pa.types.is_decimal(dtype):
        return f"decimal({dtype.precision},{dtype.scale})"
    if pa.types.is_timestamp(dtype):
        return "timestamp" if dtype.tz is not None else "timestamp_ntz"
    return _kind(dtype)


def _kind(dtype: pa.DataType) -> str:
    """The Avro-level kind of a primitive type, under its Spark SQL name where they differ."""
    if pa.types.is_null(dtype):
        return "void"
    if pa.types.is_boolean(dtype):
        return "boolean"
    if dtype in (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()):
        return "int"
    if dtype in (pa.int64(), pa.uint32()):
        return "bigint"
    if dtype in (pa.float16(), pa.float32()):
        return "float"
    if dtype == pa.float64():
        return "double"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "string"
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return "binary"
    if pa.types.is_fixed_size_binary(dtype):
        return "binary"
    if pa.types.is_decimal(dtype):
        return "decimal"
    if pa.types.is_date(dtype):
        return "date"
    if pa.types.is_timestamp(dtype):
        return "timestamp" if dtype.tz is not None else "timestamp_ntz"
    if pa.types.is_time(dtype):
        return "time"
    return str(dtype)


# ---- primitive rules ----------------------------------------------------------------------------

# SchemaChangeUtils.shouldPromoteType(incoming, table): the batch is written with the table's
# type. Float/double/decimal -> string are left out on purpose (see the module docstring).
_CANONICALIZE: dict[str, frozenset[str]] = {
    "int": frozenset(("bigint", "float", "double", "string", "decimal")),
    "bigint": frozenset(("float", "double", "string", "decimal")),
    "float": frozenset(("double", "decimal")),
    "double": frozenset(("decimal",)),
    "date": frozenset(("string",)),
    "binary": frozenset(("string",)),
    "string": frozenset(("binary", "date", "decimal")),
}
# AvroSchemaCompatibility: a reader of the batch's kind reads the table's kind (the table widens).
_AVRO_PROMOTIONS: dict[str, frozenset[str]] = {
    "bigint": frozenset(("int",)),
    "float": frozenset(("int", "bigint")),
    "double": frozenset(("int", "bigint", "float")),
}
# widenings whose old values are not all representable: checked against the stored values
_LOSSY_WIDENINGS = frozenset((("int", "float"), ("bigint", "float"), ("bigint", "double")))
_TEXT_REFUSED = frozenset(("float", "double", "decimal"))


def _decimal_canonicalizes(incoming: pa.DataType, table: pa.DataType) -> bool:
    """SchemaChangeUtils.isDecimalFixedUpdateAllowInternal(incoming -> table)."""
    if decimal_fixed_size(incoming.precision) > decimal_fixed_size(table.precision):
        return False
    wider = (
        table.precision - table.scale >= incoming.precision - incoming.scale
        and table.scale >= incoming.scale
    )
    same_scale = table.precision >= incoming.precision and table.scale == incoming.scale
    return bool(wider or same_scale)


def _decimal_widens(incoming: pa.DataType, table: pa.DataType) -> bool:
    """AvroSchemaCompatibility.checkFixedSize + checkDecimalWidening (reader = incoming)."""
    if decimal_fixed_size(incoming.precision) != decimal_fixed_size(table.precision):
        return False
    return bool(
        incoming.precision - incoming.scale >= table.precision - table.scale
        and incoming.scale >= table.scale
    )


def _primitive_kind(table: pa.DataType, incoming: pa.DataType) -> tuple[ChangeKind | None, str]:
    """``(None, "")`` for the same type, else the change kind and, if refused, why."""
    t, i = _kind(table), _kind(incoming)
    if table.equals(incoming) or (t == i and t not in ("decimal", "timestamp", "timestamp_ntz")):
        return None, ""
    if i == "void":
        return "narrowed", ""  # a column of nulls fits any type
    if t == "decimal" and i == "decimal":
        if _decimal_canonicalizes(incoming, table):
            return "narrowed", ""
        if _decimal_widens(incoming, table):
            return "widened", ""
        return "incompatible", "Hudi allows neither a narrower decimal nor a change of fixed size"
    if t in _CANONICALIZE.get(i, ()):
        return "narrowed", ""
    if i in _AVRO_PROMOTIONS and t in _AVRO_PROMOTIONS[i]:
        return "widened", ""
    if t == "string" and i in _TEXT_REFUSED:
        return "incompatible", "the text of the number would differ from Apache Hudi's"
    if i == "string":
        return "incompatible", "a column does not become a string once it holds other values"
    return "incompatible", "no Hudi type promotion leads from one to the other"


# ---- comparison ----------------------------------------------------------------------------------


def normalize_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` without meta columns, its types as the table stores them (the Avro mapping:
    int8/int16 -> int, large strings -> string, decimals, timestamps in micros), top-level
    columns nullable (as every commit schema has them)."""
    data = pa.schema([f.with_nullable(True) for f in schema if f.name not in HOODIE_META_COLUMNS])
    if not len(data):
        return data
    return avro_to_arrow_schema(arrow_to_avro_schema(data, "t", with_meta=False))


def compare_schemas(table_schema: pa.Schema, incoming: pa.Schema) -> list[SchemaChange]:
    """Every difference between the table's data schema and a batch's, field by field.

    Nullability differences are not changes (canonicalization aligns them). An added or
    removed struct is one change, not one per field.
    """
    changes: list[SchemaChange] = []
    _compare_fields(
        list(normalize_schema(table_schema)), list(normalize_schema(incoming)), "", changes
    )
    return changes


def _compare_fields(
    table: list[pa.Field], incoming: list[pa.Field], prefix: str, out: list[SchemaChange]
) -> None:
    by_name = {f.name: f for f in table}
    seen = {f.name for f in incoming}
    for f in incoming:
        path = prefix + f.name
        if f.name not in by_name:
            reason = "" if f.nullable else "a new field must be nullable (Avro: no default value)"
            kind: ChangeKind = "added" if f.nullable else "incompatible"
            out.append(SchemaChange(path, kind, None, type_name(f.type), reason))
            continue
        _compare_types(by_name[f.name].type, f.type, path, out)
    for f in table:
        if f.name not in seen:
            out.append(SchemaChange(prefix + f.name, "removed", type_name(f.type), None))


def _compare_types(
    table: pa.DataType, incoming: pa.DataType, path: str, out: list[SchemaChange]
) -> None:
    if pa.types.is_struct(table) and pa.types.is_struct(incoming):
        _compare_fields(list(table), list(incoming), path + ".", out)
    elif is_list_type(table) and is_list_type(incoming):
        _compare_types(table.value_type, incoming.value_type, path + ".element", out)
    elif pa.types.is_map(table) and pa.types.is_map(incoming):
        _compare_types(table.key_type, incoming.key_type, path + ".key", out)
        _compare_types(table.item_type, incoming.item_type, path + ".value", out)
    elif is_nested_type(table) or is_nested_type(incoming):
        if pa.types.is_null(incoming):
            out.append(SchemaChange(path, "narrowed", type_name(table), type_name(incoming)))
            return
        out.append(
            SchemaChange(
                path,
                "incompatible",
                type_name(table),
                type_name(incoming),
                "a nested type only evolves field by field",
            )
        )
    else:
        kind, reason = _primitive_kind(table, incoming)
        if kind is not None:
            out.append(SchemaChange(path, kind, type_name(table), type_name(incoming), reason))


# ---- deduction -----------------------------------------------------------------------------------


def check_schema_on_read(cfg: HoodieConfig) -> None:
    """Refuse ``hoodie.schema.on.read.enable=true``: internal-schema evolution (renames, drops
    by id, ``.hoodie/.schema`` history) is not implemented."""
    if cfg.get(config.SCHEMA_ON_READ_ENABLE):
        raise ConfigError(
            f"{config.SCHEMA_ON_READ_ENABLE.key}=true (schema-on-read evolution) is not "
            "implemented; leave it false (schema evolution on write is always on)"
        )


def deduce_writer_schema(
    table_schema: pa.Schema | None, incoming: pa.Schema, cfg: HoodieConfig
) -> pa.Schema:
    """The data schema (no meta columns) a write of ``incoming`` into the table writes with.

    Args:
        table_schema: the table's latest data schema, ``None`` for a table without data.
        incoming: the batch's schema.
        cfg: write options merged with the table's properties.

    Raises:
        ConfigError: ``hoodie.schema.on.read.enable=true``.
        SchemaEvolutionError: an incompatible change or a missing column Hudi refuses; the
            message names every such column with the table's and the incoming type.
    """
    check_schema_on_read(cfg)
    batch = normalize_schema(incoming)
    if table_schema is None:
        return batch
    table = normalize_schema(table_schema)
    changes = compare_schemas(table, batch)
    refused = [c for c in changes if c.kind == "incompatible"]
    if refused:
        raise SchemaEvolutionError(
            "The batch's schema cannot evolve the table's: "
            + "; ".join(c.describe() for c in refused)
        )
    removed = [c for c in changes if c.kind == "removed"]
    if cfg.get(config.RECONCILE_SCHEMA):
        if all(c.kind in ("removed", "narrowed") for c in changes):
            return table  # a compatible projection: written with the table's schema
        return _merge(table, batch, keep_missing=False)
    validate = cfg.get(config.AVRO_SCHEMA_VALIDATE)
    allow_drop = cfg.get(config.SCHEMA_ALLOW_AUTO_EVOLUTION_COLUMN_DROP)
    if not validate and not allow_drop:
        if removed and not cfg.get(config.SET_NULL_FOR_MISSING_COLUMNS):
            raise _missing_columns_error(removed)
        return _merge(table, batch, keep_missing=bool(removed))
    if validate and not allow_drop:
        top_level = [c for c in removed if "." not in c.column]
        if top_level:
            raise _missing_columns_error(top_level, dropping=True)
    return _merge(table, batch, keep_missing=False)


def _missing_columns_error(
    removed: list[SchemaChange], *, dropping: bool = False
) -> SchemaEvolutionError:
    columns = ", ".join(f"{c.column!r} ({c.table_type})" for c in removed)
    how = (
        f"set {config.SCHEMA_ALLOW_AUTO_EVOLUTION_COLUMN_DROP.key}=true to drop them"
        if dropping
        else f"set {config.SET_NULL_FOR_MISSING_COLUMNS.key}=true to keep them and write null, "
        f"or {config.SCHEMA_ALLOW_AUTO_EVOLUTION_COLUMN_DROP.key}=true to drop them"
    )
    return SchemaEvolutionError(
        f"Columns of the table are missing from the batch: {columns}; {how}"
    )


def _merge(table: pa.Schema, batch: pa.Schema, *, keep_missing: bool) -> pa.Schema:
    fields = _merge_fields(list(table), list(batch), keep_missing)
    return pa.schema(fields)


def _merge_fields(
    table: list[pa.Field], batch: list[pa.Field], keep_missing: bool
) -> list[pa.Field]:
    by_name = {f.name: f for f in table}
    merged = [
        _merge_field(by_name[f.name], f, keep_missing) if f.name in by_name else f for f in batch
    ]
    if not keep_missing:
        return merged
    return _table_order(table, merged)


def _table_order(table: list[pa.Field], merged: list[pa.Field]) -> list[pa.Field]:
    """``reconcileSchema``'s order: the table's fields (missing ones made nullable), each new
    field placed before the next batch field the table has (else last)."""
    by_name = {f.name: f for f in merged}
    in_table = {f.name for f in table}
    out = [by_name[f.name] if f.name in by_name else f.with_nullable(True) for f in table]
    for pos, f in enumerate(merged):
        if f.name in in_table:
            continue
        later = [g.name for g in merged[pos + 1 :] if g.name in in_table]
        names = [g.name for g in out]
        out.insert(names.index(later[0]) if later else len(out), f)
    return out


def _merge_field(table: pa.Field, batch: pa.Field, keep_missing: bool) -> pa.Field:
    dtype = _merge_type(table.type, batch.type, keep_missing)
    return pa.field(batch.name, dtype, nullable=table.nullable or batch.nullable)


def _merge_type(table: pa.DataType, batch: pa.DataType, keep_missing: bool) -> pa.DataType:
    if pa.types.is_struct(table) and pa.types.is_struct(batch):
        return pa.struct(_merge_fields(list(table), list(batch), keep_missing))
    if is_list_type(table) and is_list_type(batch):
        item = _merge_field(table.value_field, batch.value_field, keep_missing)
        return pa.list_(item)
    if pa.types.is_map(table) and pa.types.is_map(batch):
        value = _merge_field(table.item_field, batch.item_field, keep_missing)
        return pa.map_(table.key_field, value)
    kind, _ = (None, "") if is_nested_type(table) else _primitive_kind(table, batch)
    return batch if kind == "widened" else table


def lossy_widenings(table_schema: pa.Schema, writer: pa.Schema) -> list[SchemaChange]:
    """Widenings of the table (int/long -> float/double) whose stored values must be checked:
    not every int fits a float's mantissa, nor every long a double's."""
    return [
        c
        for c in compare_schemas(table_schema, writer)
        if c.kind == "widened" and (c.table_type, c.incoming_type) in _LOSSY_WIDENINGS
    ]
