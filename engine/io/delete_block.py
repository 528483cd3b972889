"""Payload of DELETE_BLOCKs: the Avro ``HoodieDeleteRecordList`` (block content version 3).

A DELETE_BLOCK's content is ``int32 version ; int32 n ; n bytes`` (framing in
:mod:`engine.io.logfile`); the n bytes are one Avro datum of the record list below, each entry a
record key, its partition path and its ordering (precombine) value. Java stores the ordering
value in a union of single-field wrapper records, one per Java type, so the value keeps its type
across engines; the wrapper follows the ordering field's Avro type, as Java's writer chooses it,
and a delete without an ordering value is ``IntWrapper(0)`` ("natural order").
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro

from engine.errors import LogFormatError, SchemaError

__all__ = [
    "WRAPPER_NAMES",
    "DeleteRecord",
    "decode_delete_record_list",
    "encode_delete_record_list",
    "wrapper_for_field",
]

_MODEL_NAMESPACE = "org.apache.hudi.avro.model"
# Union branches of orderingVal after "null", in Java's order (HoodieDeleteRecord.avsc, 0.14/0.15).
_WRAPPER_TYPES: tuple[tuple[str, str], ...] = (
    ("BooleanWrapper", "boolean"),
    ("IntWrapper", "int"),
    ("LongWrapper", "long"),
    ("FloatWrapper", "float"),
    ("DoubleWrapper", "double"),
    ("BytesWrapper", "bytes"),
    ("StringWrapper", "string"),
    ("DateWrapper", "int"),
    ("DecimalWrapper", "bytes"),
    ("TimeMicrosWrapper", "long"),
    ("TimestampMicrosWrapper", "long"),
)
WRAPPER_NAMES: tuple[str, ...] = tuple(name for name, _ in _WRAPPER_TYPES)
_DECIMAL_WRAPPER_SCALE = 15  # DecimalWrapper holds decimal(30, 15)
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

_DELETE_RECORD_LIST_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieDeleteRecordList",
        "namespace": _MODEL_NAMESPACE,
        "fields": [
            {
                "name": "deleteRecordList",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieDeleteRecord",
                        "fields": [
                            {"name": "recordKey", "type": ["null", "string"], "default": None},
                            {"name": "partitionPath", "type": ["null", "string"], "default": None},
                            {
                                "name": "orderingVal",
                                "type": [
                                    "null",
                                    *(
                                        {
                                            "type": "record",
                                            "name": name,
                                            "fields": [{"name": "value", "type": value_type}],
                                        }
                                        for name, value_type in _WRAPPER_TYPES
                                    ),
                                ],
                                "default": None,
                            },
                        ],
                    },
                },
            }
        ],
    }
)


@dataclass(frozen=True, slots=True)
class DeleteRecord:
    """A key deleted by a DELETE_BLOCK.

    Attributes:
        record_key: The record key.
        partition_path: Relative partition path of the key.
        ordering_value: Ordering (precombine) value, or None for natural order.
        ordering_wrapper: Java wrapper the value is (to be) stored in, e.g. ``"LongWrapper"``;
            None lets the encoder choose.
    """

    record_key: str
    partition_path: str
    ordering_value: Any = None
    ordering_wrapper: str | None = None

    @property
    def is_natural_order(self) -> bool:
        """True for Java's "no ordering value" marker, Integer 0 (or no value at all)."""
        if self.ordering_value is None:
            return True
        return self.ordering_wrapper == "IntWrapper" and self.ordering_value == 0


def wrapper_for_field(record_schema: Mapping[str, Any], ordering_field: str) -> str:
    """Wrapper Java uses for values of ``ordering_field`` (Avro type of the field)."""
    for f in record_schema.get("fields", []):
        if f.get("name") == ordering_field:
            return _wrapper_for_avro_type(f["type"], ordering_field)
    raise SchemaError(f"ordering field {ordering_field!r} is not in the table schema")


def _wrapper_for_avro_type(node: Any, ordering_field: str) -> str:
    if isinstance(node, list):
        branches = [b for b in node if b != "null"]
        if len(branches) != 1:
            raise SchemaError(f"ordering field {ordering_field!r} has a union type {node}")
        node = branches[0]
    kind, logical = (
        (node.get("type"), node.get("logicalType")) if isinstance(node, dict) else (node, None)
    )
    if logical == "decimal":
        return "DecimalWrapper"
    if kind == "int":
        return "DateWrapper" if logical == "date" else "IntWrapper"
    # timestamps stay Long: Java reads ordering values without logical conversion by default
    simple = {
        "boolean": "BooleanWrapper",
        "long": "LongWrapper",
        "float": "FloatWrapper",
        "double": "DoubleWrapper",
        "bytes": "BytesWrapper",
        "string": "StringWrapper",
    }
    if isinstance(kind, str) and kind in simple:
        return simple[kind]
    raise SchemaError(f"ordering field {ordering_field!r} has type {node} with no Java wrapper")


def _wrapper_for_value(value: Any) -> str:
    if isinstance(value, bool):
        return "BooleanWrapper"
    if isinstance(value, int):
        return "LongWrapper"
    if isinstance(value, float):
        return "DoubleWrapper"
    if isinstance(value, str):
        return "StringWrapper"
    if isinstance(value, (bytes, bytearray)):
        return "BytesWrapper"
    if isinstance(value, decimal.Decimal):
        return "DecimalWrapper"
    if isinstance(value, dt.datetime):
        return "TimestampMicrosWrapper"
    if isinstance(value, dt.date):
        return "DateWrapper"
    if isinstance(value, dt.time):
        return "TimeMicrosWrapper"
    raise SchemaError(f"ordering value {value!r} has no Java wrapper type")


def _wrap(value: Any, wrapper: str) -> Any:
    """Python value -> raw Avro value of the wrapper's ``value`` field."""
    try:
        if wrapper == "DateWrapper" and isinstance(value, dt.date):
            return (value - _EPOCH_DATE).days
        if wrapper == "DecimalWrapper":
            unscaled = int(
                decimal.Decimal(value).scaleb(_DECIMAL_WRAPPER_SCALE).to_integral_value()
            )
            return unscaled.to_bytes(
                (unscaled + (unscaled < 0)).bit_length() // 8 + 1, "big", signed=True
            )
        if wrapper == "TimestampMicrosWrapper" and isinstance(value, dt.datetime):
            moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
            return (moment - _EPOCH) // dt.timedelta(microseconds=1)
        if wrapper == "TimeMicrosWrapper" and isinstance(value, dt.time):
            return (
                (value.hour * 60 + value.minute) * 60 + value.second
            ) * 1_000_000 + value.microsecond
        if wrapper in ("IntWrapper", "LongWrapper"):
            return int(value)
        if wrapper in ("FloatWrapper", "DoubleWrapper"):
            return float(value)
        return value
    except (TypeError, ValueError, decimal.InvalidOperation) as e:
        raise SchemaError(f"ordering value {value!r} does not fit {wrapper}: {e}") from e


def _unwrap(value: Any, wrapper: str) -> Any:
    if wrapper == "DateWrapper":
        return _EPOCH_DATE + dt.timedelta(days=value)
    if wrapper == "DecimalWrapper":
        unscaled = int.from_bytes(value, "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-_DECIMAL_WRAPPER_SCALE)
    if wrapper == "TimestampMicrosWrapper":
        return _EPOCH + dt.timedelta(microseconds=value)
    return value


def encode_delete_record_list(records: Sequence[DeleteRecord], wrapper: str | None = None) -> bytes:
    """Avro payload (HoodieDeleteRecordList) of a DELETE_BLOCK.

    Args:
        records: Keys to delete.
        wrapper: Wrapper for ordering values, from the ordering field's type; a record's own
            ``ordering_wrapper`` takes precedence, the value's Python type is the fallback.
    """
    items = []
    for r in records:
        if r.ordering_value is None:
            name, raw = "IntWrapper", 0  # Java's DeleteRecord.create(key): Integer 0
        else:
            name = r.ordering_wrapper or wrapper or _wrapper_for_value(r.ordering_value)
            if name not in WRAPPER_NAMES:
                raise SchemaError(f"unknown ordering value wrapper {name!r}")
            raw = _wrap(r.ordering_value, name)
        items.append(
            {
                "recordKey": r.record_key,
                "partitionPath": r.partition_path,
                "orderingVal": (f"{_MODEL_NAMESPACE}.{name}", {"value": raw}),
            }
        )
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, _DELETE_RECORD_LIST_SCHEMA, {"deleteRecordList": items})
    except (TypeError, ValueError, OverflowError) as e:
        raise SchemaError(f"delete records do not encode: {e}") from e
    return out.getvalue()


def decode_delete_record_list(payload: bytes) -> list[DeleteRecord]:
    """Delete records of a HoodieDeleteRecordList payload."""
    try:
        decoded: Any = fastavro.schemaless_reader(
            io.BytesIO(payload), _DELETE_RECORD_LIST_SCHEMA, None, return_record_name=True
        )
    except (EOFError, ValueError, IndexError, TypeError) as e:
        raise LogFormatError(f"delete block payload does not decode: {e}") from e
    out = []
    for item in decoded["deleteRecordList"]:
        ordering = item["orderingVal"]
        value, wrapper = None, None
        if ordering is not None:
            full_name, wrapped = ordering
            wrapper = full_name.rsplit(".", 1)[-1]
            value = _unwrap(wrapped["value"], wrapper)
        out.append(DeleteRecord(item["recordKey"], item["partitionPath"], value, wrapper))
    return out
