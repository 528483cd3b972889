"""Table schemas: Arrow <-> Avro, following the Spark/Hudi conventions.

Hudi keeps the table schema as Avro JSON: in every commit (``extraMetadata.schema``, without the
meta columns), in every log data block header (``SCHEMA``, with them) and in the Parquet footer
(``parquet.avro.schema``). Spark-written tables use the converter of Hudi's Spark client, so the
schema text is predictable (NS = hoodie.<table>)::

    {"type":"record","name":"<table>_record","namespace":NS,"fields":[
      {"name":"_hoodie_commit_time","type":["null","string"],"doc":"","default":null},  (meta, x5)
      {"name":"id","type":["null","int"],"default":null},                  nullable -> ["null", T]
      {"name":"id2","type":"int"},                                         not null -> T
      {"name":"d","type":["null",{"type":"fixed","name":"fixed",
          "namespace":NS.<table>_record.d,"size":5,
          "logicalType":"decimal","precision":10,"scale":5}],"default":null},
      {"name":"s","type":["null",{"type":"record","name":"s",
          "namespace":NS.<table>_record,"fields":[...]}],"default":null}]}

Nested records are named after their field, in the namespace of the enclosing record's full name;
array items and map values keep the field's name; decimals are ``fixed`` of the minimal size for
their precision, named ``fixed`` in the namespace ``<enclosing full name>.<field>``.

Type mapping (Arrow -> Avro; the reverse reads any Avro schema found in Hudi tables)::

    bool -> boolean            int8/16/32, uint8/16 -> int      int64, uint32 -> long
    float16/32 -> float        float64 -> double                string -> string
    binary, fixed_size_binary -> bytes                          decimal(p,s) -> fixed decimal
    date32/64 -> int date      timestamp(tz) -> long timestamp-micros
    timestamp (no tz) -> long local-timestamp-micros            time32 -> int time-millis
    time64 -> long time-micros list -> array                    map<string, V> -> map
    struct -> record           null -> null                     dictionary -> its value type
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from engine.errors import SchemaError

__all__ = [
    "COMMIT_SEQNO_COLUMN",
    "COMMIT_TIME_COLUMN",
    "FILE_NAME_COLUMN",
    "HOODIE_META_COLUMNS",
    "LONG_LOGICAL_TYPES",
    "META_COLUMNS",
    "OPERATION_COLUMN",
    "PARTITION_PATH_COLUMN",
    "RECORD_KEY_COLUMN",
    "add_meta_fields",
    "add_operation_field",
    "arrow_to_avro_schema",
    "avro_to_arrow_schema",
    "decimal_fixed_size",
    "meta_arrow_schema",
    "parse_avro_schema",
    "record_name_and_namespace",
    "remove_meta_fields",
    "sanitize_avro_name",
    "schema_json",
    "with_meta_columns",
    "with_operation_column",
]

COMMIT_TIME_COLUMN = "_hoodie_commit_time"
COMMIT_SEQNO_COLUMN = "_hoodie_commit_seqno"
RECORD_KEY_COLUMN = "_hoodie_record_key"
PARTITION_PATH_COLUMN = "_hoodie_partition_path"
FILE_NAME_COLUMN = "_hoodie_file_name"

META_COLUMNS: tuple[str, ...] = (
    COMMIT_TIME_COLUMN,
    COMMIT_SEQNO_COLUMN,
    RECORD_KEY_COLUMN,
    PARTITION_PATH_COLUMN,
    FILE_NAME_COLUMN,
)

OPERATION_COLUMN = "_hoodie_operation"
"""The optional sixth meta column (``hoodie.allow.operation.metadata.field``): the
``HoodieOperation`` a write applied to the record, right after the five meta columns."""

HOODIE_META_COLUMNS: tuple[str, ...] = (*META_COLUMNS, OPERATION_COLUMN)
"""Every column Hudi owns: never a data column, never in a commit schema."""

AvroSchema = dict[str, Any] | list[Any] | str
"""A parsed Avro schema node: a record/complex dict, a union list or a primitive/named ref."""

# Hudi's Spark writers put every table schema under this namespace root (not a config key).
_NAMESPACE_ROOT = "hoodie"
_PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string"))
_NAMED = frozenset(("record", "error", "enum", "fixed"))
_VALID_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INVALID_FIRST = re.compile(r"[^A-Za-z_]")
_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_]")


def sanitize_avro_name(name: str) -> str:
    """Make ``name`` a valid Avro name the way Hudi does (each invalid character -> ``__``)."""
    if not name:
        raise SchemaError("an Avro name must not be empty")
    if _INVALID_FIRST.match(name[0]):
        name = "__" + name[1:]
    return _INVALID_CHARS.sub("__", name)


def record_name_and_namespace(table_name: str) -> tuple[str, str]:
    """Record name and namespace of a table's schema: ``<table>_record``, ``hoodie.<table>``."""
    name = sanitize_avro_name(table_name)
    return f"{name}_record", f"{_NAMESPACE_ROOT}.{name}"


def decimal_fixed_size(precision: int) -> int:
    """Smallest byte count holding any unscaled value of ``precision`` digits (Spark's rule)."""
    size = 1
    while 2 ** (8 * size - 1) - 1 < 10**precision - 1:
        size += 1
    return size


def meta_arrow_schema() -> pa.Schema:
    """The five meta columns as Arrow fields (nullable strings), in Hudi's order."""
    return pa.schema([pa.field(name, pa.string(), nullable=True) for name in META_COLUMNS])


def with_meta_columns(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the meta columns first (replacing any meta columns it already has)."""
    data = [f for f in schema if f.name not in HOODIE_META_COLUMNS]
    return pa.schema([*meta_arrow_schema(), *data], metadata=schema.metadata)


def with_operation_column(schema: pa.Schema) -> pa.Schema:
    """A base file schema (meta columns first) with ``_hoodie_operation`` after the five meta
    columns, where ``HoodieAvroUtils.addMetadataFields(schema, true)`` puts it."""
    if OPERATION_COLUMN in schema.names:
        return schema
    at = max(schema.get_field_index(name) for name in META_COLUMNS) + 1
    return schema.insert(at, pa.field(OPERATION_COLUMN, pa.string(), nullable=True))


# ---------------------------------------------------------------------------------------------
# Arrow -> Avro


def arrow_to_avro_schema(schema: pa.Schema, table_name: str, *, with_meta: bool) -> dict[str, Any]:
    """Avro record schema of an Arrow schema, as Hudi's Spark converter writes it.

    Meta columns present in ``schema`` are dropped; ``with_meta`` puts all five first (the form of
    log block headers and Parquet footers), otherwise the result is the commit schema.

    Args:
        schema: Arrow schema of the table's rows.
        table_name: Hudi table name; gives the record name and namespace.
        with_meta: Whether to include the five meta columns.

    Returns:
        The schema as a JSON-ready dict (key order = Java's ``Schema.toString`` order).

    Raises:
        SchemaError: A field name is not a valid Avro name or a type has no Avro mapping.
    """
    name, namespace = record_name_and_namespace(table_name)
    full_name = f"{namespace}.{name}"
    fields: list[dict[str, Any]] = []
    if with_meta:
        fields.extend(_meta_field(col) for col in META_COLUMNS)
    for field in schema:
        if field.name in HOODIE_META_COLUMNS:
            continue
        fields.append(_avro_field(field, full_name, field.name))
    return {"type": "record", "name": name, "namespace": namespace, "fields": fields}


def _meta_field(name: str) -> dict[str, Any]:
    # Hudi's HoodieAvroUtils adds the meta fields with an empty doc string.
    return {"name": name, "type": ["null", "string"], "doc": "", "default": None}


def _avro_field(field: pa.Field, parent_full_name: str, path: str) -> dict[str, Any]:
    if not _VALID_NAME.match(field.name):
        raise SchemaError(f"column {path!r} is not a valid Avro field name")
    avro_type = _avro_type(field.type, field.name, parent_full_name, path)
    if field.nullable and avro_type != "null":
        return {"name": field.name, "type": ["null", avro_type], "default": None}
    return {"name": field.name, "type": avro_type}


def _nullable(avro_type: AvroSchema, nullable: bool) -> AvroSchema:
    return ["null", avro_type] if nullable and avro_type != "null" else avro_type


def _avro_type(dtype: pa.DataType, record_name: str, namespace: str, path: str) -> AvroSchema:
    """Avro type of ``dtype``; ``record_name``/``namespace`` name nested records like Spark."""
    if pa.types.is_dictionary(dtype):
        return _avro_type(dtype.value_type, record_name, namespace, path)
    primitive = _avro_primitive(dtype)
    if primitive is not None:
        return primitive
    if pa.types.is_decimal(dtype):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{record_name}",
            "size": decimal_fixed_size(dtype.precision),
            "logicalType": "decimal",
            "precision": dtype.precision,
            "scale": dtype.scale,
        }
    if (
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    ):
        item = dtype.value_field
        items = _avro_type(item.type, record_name, namespace, f"{path}.element")
        return {"type": "array", "items": _nullable(items, item.nullable)}
    if pa.types.is_map(dtype):
        if not (pa.types.is_string(dtype.key_type) or pa.types.is_large_string(dtype.key_type)):
            raise SchemaError(f"column {path!r}: Avro maps need string keys, got {dtype.key_type}")
        item = dtype.item_field
        values = _avro_type(item.type, record_name, namespace, f"{path}.value")
        return {"type": "map", "values": _nullable(values, item.nullable)}
    if pa.types.is_struct(dtype):
        full_name = f"{namespace}.{record_name}"
        fields = [
            _avro_field(dtype.field(i), full_name, f"{path}.{dtype.field(i).name}")
            for i in range(dtype.num_fields)
        ]
        return {"type": "record", "name": record_name, "namespace": namespace, "fields": fields}
    raise SchemaError(f"column {path!r}: Arrow type {dtype} has no Avro mapping")


def _avro_primitive(dtype: pa.DataType) -> AvroSchema | None:
    """Avro type of a primitive Arrow type (logical types included); ``None`` otherwise."""
    if pa.types.is_null(dtype):
        return "null"
    if pa.types.is_boolean(dtype):
        return "boolean"
    if dtype in (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()):
        return "int"
    if dtype in (pa.int64(), pa.uint32()):
        return "long"
    if dtype in (pa.float16(), pa.float32()):
        return "float"
    if dtype == pa.float64():
        return "double"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or _is_string_view(dtype):
        return "string"
    if (
        pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_fixed_size_binary(dtype)
        or _is_binary_view(dtype)
    ):
        return "bytes"
    if pa.types.is_date(dtype):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(dtype):
        logical = "timestamp-micros" if dtype.tz is not None else "local-timestamp-micros"
        return {"type": "long", "logicalType": logical}
    if pa.types.is_time32(dtype):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(dtype):
        return {"type": "long", "logicalType": "time-micros"}
    return None


def _is_string_view(dtype: pa.DataType) -> bool:
    return bool(getattr(pa.types, "is_string_view", lambda _: False)(dtype))


def _is_binary_view(dtype: pa.DataType) -> bool:
    return bool(getattr(pa.types, "is_binary_view", lambda _: False)(dtype))


# ---------------------------------------------------------------------------------------------
# Avro -> Arrow


def parse_avro_schema(avro: Mapping[str, Any] | str) -> dict[str, Any]:
    """The record schema as a dict, from JSON text (commit metadata, headers) or a dict.

    Raises:
        SchemaError: The text is not JSON or not an Avro record schema.
    """
    if isinstance(avro, str):
        try:
            parsed = json.loads(avro)
        except json.JSONDecodeError as e:
            raise SchemaError(f"invalid Avro schema JSON: {e}: {avro[:200]!r}") from e
    else:
        parsed = dict(avro)
    if not isinstance(parsed, dict) or parsed.get("type") not in ("record", "error"):
        raise SchemaError(f"an Avro table schema must be a record, got {str(parsed)[:200]!r}")
    return parsed


def avro_to_arrow_schema(avro: Mapping[str, Any] | str) -> pa.Schema:
    """Arrow schema of an Avro record schema (the types hudi-rs reads the table with).

    Union ``[null, T]`` (either order) becomes a nullable ``T``; ``timestamp-micros`` becomes
    ``timestamp[us, tz=UTC]``; decimals (fixed or bytes) become ``decimal128``; lists name their
    item ``element``.

    Raises:
        SchemaError: The schema is not a record or uses a type with no Arrow mapping.
    """
    record = parse_avro_schema(avro)
    names: dict[str, AvroSchema] = {}
    struct = _arrow_type(record, names, _namespace_of(record, None), record.get("name", ""))
    return pa.schema(list(struct))


def _namespace_of(node: Mapping[str, Any], enclosing: str | None) -> str | None:
    name = str(node.get("name", ""))
    if "." in name:
        return name.rsplit(".", 1)[0]
    namespace = node.get("namespace")
    return str(namespace) if namespace is not None else enclosing


def _full_name(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _arrow_field(
    name: str, node: AvroSchema, names: dict[str, AvroSchema], ns: str | None, path: str
) -> pa.Field:
    nullable = False
    if isinstance(node, list):
        branches = [b for b in node if b != "null"]
        nullable = len(branches) < len(node)
        if len(branches) != 1:
            if not branches:
                return pa.field(name, pa.null(), nullable=True)
            raise SchemaError(f"field {path!r}: unions other than [null, T] are not supported")
        node = branches[0]
    return pa.field(name, _arrow_type(node, names, ns, path), nullable=nullable)


def _arrow_type(  # noqa: C901 - one branch per Avro type and logical type
    node: AvroSchema, names: dict[str, AvroSchema], ns: str | None, path: str
) -> pa.DataType:
    if isinstance(node, list):
        return _arrow_field("", node, names, ns, path).type
    if isinstance(node, str):
        if node in _PRIMITIVES:
            return _primitive(node)
        ref = names.get(node) or names.get(_full_name(node, ns))
        if ref is None:
            raise SchemaError(f"field {path!r}: unknown Avro type {node!r}")
        return _arrow_type(ref, names, ns, path)
    kind = node.get("type")
    if isinstance(kind, (dict, list)):
        return _arrow_type(kind, names, ns, path)
    logical = node.get("logicalType")
    if kind in _NAMED:
        child_ns = _namespace_of(node, ns)
        full = _full_name(str(node["name"]), child_ns)
        names[full] = node
        if kind == "fixed":
            if logical == "decimal":
                return _decimal(node, path)
            return pa.binary()
        if kind == "enum":
            return pa.string()
        fields = [
            _arrow_field(f["name"], f["type"], names, child_ns, f"{path}.{f['name']}")
            for f in node["fields"]
        ]
        return pa.struct(fields)
    if kind == "array":
        item = _arrow_field("element", node["items"], names, ns, f"{path}.element")
        return pa.list_(item)
    if kind == "map":
        value = _arrow_field("value", node["values"], names, ns, f"{path}.value")
        return pa.map_(pa.field("key", pa.string(), nullable=False), value)
    if kind == "int" and logical == "date":
        return pa.date32()
    if kind == "int" and logical == "time-millis":
        return pa.time32("ms")
    if kind == "long" and logical in LONG_LOGICAL_TYPES:
        return LONG_LOGICAL_TYPES[logical]
    if kind == "bytes" and logical == "decimal":
        return _decimal(node, path)
    if isinstance(kind, str) and kind in _PRIMITIVES:
        return _primitive(kind)
    raise SchemaError(f"field {path!r}: Avro type {kind!r} has no Arrow mapping")


# Arrow type of each logical type on an Avro long.
LONG_LOGICAL_TYPES: dict[str, pa.DataType] = {
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "timestamp-nanos": pa.timestamp("ns", tz="UTC"),
    "local-timestamp-micros": pa.timestamp("us"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-nanos": pa.timestamp("ns"),
    "time-micros": pa.time64("us"),
}


def _primitive(kind: str) -> pa.DataType:
    return {
        "null": pa.null(),
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "bytes": pa.binary(),
        "string": pa.string(),
    }[kind]


def _decimal(node: Mapping[str, Any], path: str) -> pa.DataType:
    precision = int(node["precision"])
    scale = int(node.get("scale", 0))
    if precision > 76:
        raise SchemaError(f"field {path!r}: decimal precision {precision} exceeds 76")
    if precision > 38:
        return pa.decimal256(precision, scale)
    return pa.decimal128(precision, scale)


# ---------------------------------------------------------------------------------------------
# meta fields and JSON text


def add_meta_fields(avro: Mapping[str, Any] | str) -> dict[str, Any]:
    """The record schema with the five meta fields first (as log block headers carry it)."""
    record = remove_meta_fields(avro)
    record["fields"] = [*(_meta_field(col) for col in META_COLUMNS), *record["fields"]]
    return record


def remove_meta_fields(avro: Mapping[str, Any] | str) -> dict[str, Any]:
    """The record schema without meta fields (as commit metadata carries it)."""
    record = parse_avro_schema(avro)
    fields: Iterable[Mapping[str, Any]] = record.get("fields", [])
    record["fields"] = [dict(f) for f in fields if f.get("name") not in HOODIE_META_COLUMNS]
    return record


def add_operation_field(avro: Mapping[str, Any] | str) -> dict[str, Any]:
    """A schema with the five meta fields first and ``_hoodie_operation`` after them (the
    writer schema of base files and log blocks when the operation field is allowed)."""
    record = add_meta_fields(avro)
    fields = record["fields"]
    record["fields"] = [
        *fields[: len(META_COLUMNS)],
        _meta_field(OPERATION_COLUMN),
        *fields[len(META_COLUMNS) :],
    ]
    return record


def schema_json(avro: Mapping[str, Any] | str) -> str:
    """Compact JSON text of a schema, byte for byte as Java's ``Schema.toString()`` writes it.

    Keys follow Java's order, a namespace equal to the enclosing one is omitted, a named type
    seen before is written as a name reference, and a primitive without properties is a string.
    """
    record = parse_avro_schema(avro)
    canonical = _canonical(record, None, set())
    return json.dumps(canonical, separators=(",", ":"), ensure_ascii=False)


_FIELD_KEYS = ("name", "type", "doc", "default", "order", "aliases")
_SKIP = frozenset(
    (
        "type",
        "name",
        "namespace",
        "doc",
        "fields",
        "symbols",
        "size",
        "items",
        "values",
        "aliases",
        "default",
    )
)


def _canonical(node: Any, enclosing: str | None, seen: set[str]) -> Any:
    if isinstance(node, list):
        return [_canonical(b, enclosing, seen) for b in node]
    if not isinstance(node, Mapping):
        return node
    kind = node.get("type")
    if isinstance(kind, (dict, list)) and len(node) == 1:
        return _canonical(kind, enclosing, seen)
    props = {k: v for k, v in node.items() if k not in _SKIP}
    if kind in _NAMED:
        return _canonical_named(node, str(kind), props, enclosing, seen)
    out: dict[str, Any] = {"type": kind}
    if kind == "array":
        out["items"] = _canonical(node["items"], enclosing, seen)
    elif kind == "map":
        out["values"] = _canonical(node["values"], enclosing, seen)
    elif not props:
        return kind
    out.update(props)
    return out


def _canonical_named(
    node: Mapping[str, Any], kind: str, props: dict[str, Any], enclosing: str | None, seen: set[str]
) -> Any:
    raw_name = str(node["name"])
    namespace = _namespace_of(node, enclosing)
    name = raw_name.rsplit(".", 1)[-1]
    full = _full_name(name, namespace)
    if full in seen:
        return name if namespace == enclosing else full
    seen.add(full)
    out: dict[str, Any] = {"type": kind, "name": name}
    if namespace != enclosing:
        out["namespace"] = namespace or ""
    if "doc" in node:
        out["doc"] = node["doc"]
    if kind in ("record", "error"):
        fields = []
        for field in node["fields"]:
            entry = {k: field[k] for k in _FIELD_KEYS if k in field}
            entry["type"] = _canonical(field["type"], namespace, seen)
            entry.update({k: v for k, v in field.items() if k not in _FIELD_KEYS})
            fields.append(entry)
        out["fields"] = fields
    elif kind == "enum":
        out["symbols"] = node["symbols"]
    elif kind == "fixed":
        out["size"] = node["size"]
    out.update(props)
    if "aliases" in node:
        out["aliases"] = node["aliases"]
    if kind == "enum" and "default" in node:
        out["default"] = node["default"]
    return out
