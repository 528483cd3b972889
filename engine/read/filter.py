"""Read filters: ``field op value`` conditions, and the partition pruning they allow.

A filter on a partition column is checked against each partition path's values before any file
is listed (values typed by the table's Avro schema); every filter is applied again to the rows
read, so pruning only ever skips partitions that cannot match.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine import config
from engine.errors import QueryError
from engine.model.keygen import DEFAULT_PARTITION_PATH

__all__ = [
    "FILTER_OPS",
    "PartitionLayout",
    "ReadFilter",
    "compare",
    "parse_filter",
    "partition_pruner",
    "partition_values",
]

FILTER_OPS = ("=", "!=", "<", "<=", ">", ">=", "IN", "NOT IN")


class PartitionLayout(Protocol):
    """How a table's partition paths spell its partition values: what pruning needs of the
    table (:class:`engine.read.plan.TableInfo` is one), declared here so that filters stay
    below the query planner that uses them."""

    @property
    def partition_fields(self) -> tuple[str, ...]: ...

    @property
    def keygen_class(self) -> str | None: ...

    @property
    def hive_style(self) -> bool: ...

    @property
    def url_encode(self) -> bool: ...


@dataclass(frozen=True)
class ReadFilter:
    """``field op value``; ``value`` is a scalar, or a tuple for ``IN`` / ``NOT IN``."""

    field: str
    op: str
    value: Any


def parse_filter(text: str) -> ReadFilter:
    """Parse ``'FIELD OP VALUE'`` (the hudi_rs_read CLI form); IN lists are comma-separated."""
    m = re.match(r"^\s*(\S+)\s+(NOT\s+IN|IN|!=|<=|>=|=|<|>)\s+(.*?)\s*$", text, re.IGNORECASE)
    if m is None:
        raise QueryError(f"Invalid filter {text!r}: expected 'FIELD OP VALUE'")
    name, op, value = m.group(1), " ".join(m.group(2).upper().split()), m.group(3)
    if op in ("IN", "NOT IN"):
        return ReadFilter(name, op, tuple(v.strip() for v in value.split(",")))
    return ReadFilter(name, op, value)


def _avro_field_kinds(avro_schema: str | None) -> dict[str, str]:
    """Top-level field name -> coarse kind (int, float, bool, str, date) from an Avro schema."""
    if not avro_schema:
        return {}
    try:
        fields = json.loads(avro_schema).get("fields", [])
    except ValueError:
        return {}
    kinds: dict[str, str] = {}
    for f in fields:
        t = f.get("type")
        if isinstance(t, list):
            t = next((b for b in t if b != "null"), None)
        logical = t.get("logicalType") if isinstance(t, dict) else None
        base = t.get("type") if isinstance(t, dict) else t
        if logical == "date":
            kinds[f["name"]] = "date"
        elif logical is not None:
            continue
        elif base in ("int", "long"):
            kinds[f["name"]] = "int"
        elif base in ("float", "double"):
            kinds[f["name"]] = "float"
        elif base == "boolean":
            kinds[f["name"]] = "bool"
        elif base == "string":
            kinds[f["name"]] = "str"
    return kinds


def _coerce(value: Any, kind: str) -> Any:
    """``value`` in the Python type of ``kind``; ValueError when it does not fit."""
    if value is None:
        return None
    if kind == "int":
        if isinstance(value, bool):
            raise ValueError(value)
        return int(value) if not isinstance(value, str) else int(value.strip())
    if kind == "float":
        return float(value)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise ValueError(value)
    if kind == "date":
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        return dt.date.fromisoformat(str(value).strip())
    return str(value)


def compare(left: Any, op: str, right: Any) -> bool:
    """Evaluate ``left op right`` with SQL-ish null handling (null never matches)."""
    if op in ("IN", "NOT IN"):
        if left is None:
            return False
        hit = left in right
        return hit if op == "IN" else not hit
    if left is None or right is None:
        return False
    if op == "=":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    if op == ">=":
        return bool(left >= right)
    raise QueryError(f"Unsupported filter operator {op!r}; expected one of {FILTER_OPS}")


def partition_values(table: PartitionLayout, partition_path: str) -> dict[str, str | None] | None:
    """Partition field -> raw value of a partition path; ``None`` when it cannot be parsed."""
    fields = table.partition_fields
    if not fields:
        return None
    segments = partition_path.split("/") if partition_path else []
    if len(segments) != len(fields):
        return None
    values: dict[str, str | None] = {}
    for name, segment in zip(fields, segments, strict=True):
        if table.hive_style:
            key, sep, value = segment.partition("=")
            if not sep or key != name:
                return None
        else:
            value = segment
        if table.url_encode:
            value = urllib.parse.unquote(value)
        values[name] = None if value == DEFAULT_PARTITION_PATH else value
    return values


def partition_pruner(
    table: PartitionLayout, filters: Sequence[ReadFilter], avro_schema: str | None
) -> Any:
    """A predicate on partition paths from the filters on partition columns, or ``None``.

    Timestamp-based key generators format partition values, so their paths cannot be compared
    with column values: no pruning then.
    """
    if table.keygen_class == config.TIMESTAMP_KEYGEN or not table.partition_fields:
        return None
    kinds = _avro_field_kinds(avro_schema)
    relevant = [f for f in filters if f.field in table.partition_fields]
    if not relevant:
        return None

    def keep(partition_path: str) -> bool:
        values = partition_values(table, partition_path)
        if values is None:
            return True
        for f in relevant:
            kind = kinds.get(f.field, "str")
            try:
                left = _coerce(values[f.field], kind)
                if f.op in ("IN", "NOT IN"):
                    right: Any = tuple(_coerce(v, kind) for v in f.value)
                else:
                    right = _coerce(f.value, kind)
            except (ValueError, TypeError):
                continue  # cannot compare: keep the partition, rows are filtered later
            if not compare(left, f.op, right):
                return False
        return True

    return keep
