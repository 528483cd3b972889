"""The record shapes of change data capture: ``.cdc`` log records and the CDC query's rows.

A ``.cdc`` log file holds CDC_DATA_BLOCKs whose records follow the table's supplemental logging
mode (``hoodie.table.cdc.supplemental.logging.mode``), as Hudi's ``HoodieCDCUtils`` defines them::

    OP_KEY_ONLY        record "Record" {op: [string, null], record_key: [string, null]}
    DATA_BEFORE        record "CDC"    {op, record_key, before: [null, <data record>]}
    DATA_BEFORE_AFTER  record "CDC"    {op, ts_ms, before: [null, <data record>], after: ...}

In the two "CDC" shapes every field is ``[null, ...]`` with ``doc ""`` and ``default null``, and
the images are the table's data schema without meta fields. ``op`` is ``i``, ``u`` or ``d``;
``ts_ms`` is the instant time of the write. The CDC query returns four string columns
(``op``, ``ts_ms``, ``before``, ``after``), the images as JSON objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import pyarrow as pa

from engine.model.schema import parse_avro_schema, remove_meta_fields

__all__ = [
    "CDC_AFTER",
    "CDC_BEFORE",
    "CDC_COLUMNS",
    "CDC_OP",
    "CDC_RECORD_KEY",
    "CDC_TS",
    "CdcOperation",
    "SupplementalLoggingMode",
    "cdc_avro_schema",
    "cdc_query_schema",
]

CDC_OP = "op"
CDC_TS = "ts_ms"
CDC_BEFORE = "before"
CDC_AFTER = "after"
CDC_RECORD_KEY = "record_key"
CDC_COLUMNS = (CDC_OP, CDC_TS, CDC_BEFORE, CDC_AFTER)
CDC_FILE_SUFFIX = ".cdc"


class SupplementalLoggingMode(StrEnum):
    """What a ``.cdc`` record carries besides ``op`` (``HoodieCDCSupplementalLoggingMode``)."""

    OP_KEY_ONLY = "OP_KEY_ONLY"
    DATA_BEFORE = "DATA_BEFORE"
    DATA_BEFORE_AFTER = "DATA_BEFORE_AFTER"


class CdcOperation(StrEnum):
    """The ``op`` of a change (``HoodieCDCOperation``)."""

    INSERT = "i"
    UPDATE = "u"
    DELETE = "d"


_OP_KEY_ONLY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Record",
    "fields": [
        {"name": CDC_OP, "type": ["string", "null"]},
        {"name": CDC_RECORD_KEY, "type": ["string", "null"]},
    ],
}


def _nullable_field(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "doc": "", "default": None}


def cdc_avro_schema(
    mode: SupplementalLoggingMode, table_schema: Mapping[str, Any] | str
) -> dict[str, Any]:
    """The Avro schema of the ``.cdc`` records of ``mode`` for a table schema (meta fields,
    if any, are dropped from the images)."""
    if mode is SupplementalLoggingMode.OP_KEY_ONLY:
        return parse_avro_schema(_OP_KEY_ONLY_SCHEMA)
    image = remove_meta_fields(table_schema)
    fields = [_nullable_field(CDC_OP, "string")]
    if mode is SupplementalLoggingMode.DATA_BEFORE_AFTER:
        fields += [
            _nullable_field(CDC_TS, "string"),
            _nullable_field(CDC_BEFORE, image),
            _nullable_field(CDC_AFTER, _full_name(image)),
        ]
    else:
        fields += [_nullable_field(CDC_RECORD_KEY, "string"), _nullable_field(CDC_BEFORE, image)]
    return {"type": "record", "name": "CDC", "fields": fields}


def _full_name(record: Mapping[str, Any]) -> str:
    """A second use of a named record is a reference to its full name."""
    name, namespace = str(record["name"]), record.get("namespace")
    return f"{namespace}.{name}" if namespace and "." not in name else name


def cdc_query_schema() -> pa.Schema:
    """The CDC query's columns: four strings, the images as JSON."""
    return pa.schema([pa.field(name, pa.string()) for name in CDC_COLUMNS])
