"""The schema of the latest commit and the commits that changed it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine import config
from engine.errors import HudiError
from engine.inspect.table import InspectedTable


@dataclass(frozen=True)
class SchemaField:
    name: str
    type: str
    nullable: bool


@dataclass(frozen=True)
class SchemaChange:
    """A commit whose schema differs from the one before it."""

    instant_time: str
    action: str
    fields: int
    added: list[str]
    removed: list[str]
    changed: list[dict[str, str]]


def _type_name(avro: Any) -> tuple[str, bool]:
    """Readable Avro type and whether it is nullable (a union with null)."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        inner = [_type_name(b)[0] for b in branches]
        return (inner[0] if len(inner) == 1 else "union<" + ",".join(inner) + ">"), (
            len(branches) < len(avro)
        )
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        if logical == "decimal":
            return f"decimal({avro.get('precision')},{avro.get('scale', 0)})", False
        if logical:
            return str(logical), False
        kind = avro.get("type")
        if kind == "array":
            return f"array<{_type_name(avro.get('items'))[0]}>", False
        if kind == "map":
            return f"map<string,{_type_name(avro.get('values'))[0]}>", False
        if kind == "record":
            parts = [f"{f['name']}:{_type_name(f['type'])[0]}" for f in avro.get("fields", [])]
            return "struct<" + ",".join(parts) + ">", False
        if kind == "enum":
            return "enum", False
        if kind == "fixed":
            return f"fixed({avro.get('size')})", False
        return _type_name(kind)
    return str(avro), False


def _fields_of(schema_json: str) -> list[SchemaField]:
    try:
        record = json.loads(schema_json)
    except ValueError as e:
        raise HudiError(f"Unreadable Avro schema in the commit metadata: {e}") from e
    out = []
    for f in record.get("fields", []):
        type_name, nullable = _type_name(f.get("type"))
        out.append(SchemaField(str(f.get("name")), type_name, nullable))
    return out


def schema_fields(table: InspectedTable) -> list[SchemaField]:
    """Fields of the latest commit schema (else the create schema), meta fields excluded.

    Raises:
        HudiError: the table has no recorded schema.
    """
    schema = table.timeline.latest_schema() or table.info.properties.get(config.CREATE_SCHEMA.key)
    if not schema:
        raise HudiError(f"No schema recorded in {table.base_path} (no commit carries one)")
    return _fields_of(schema)


def schema_history(table: InspectedTable) -> list[SchemaChange]:
    """The commits on the active timeline that wrote with a new schema, oldest first."""
    changes: list[SchemaChange] = []
    before: dict[str, SchemaField] | None = None
    for instant in table.timeline.commits_timeline():
        schema = table.commit_metadata(instant).schema
        if not schema:
            continue
        now = {f.name: f for f in _fields_of(schema)}
        if before is not None and now == before:
            continue
        old = before or {}
        changes.append(
            SchemaChange(
                instant_time=instant.instant_time,
                action=instant.action.value,
                fields=len(now),
                added=[n for n in now if n not in old],
                removed=[n for n in old if n not in now],
                changed=[
                    {
                        "name": n,
                        "from": f"{old[n].type}{'?' if old[n].nullable else ''}",
                        "to": f"{now[n].type}{'?' if now[n].nullable else ''}",
                    }
                    for n in now
                    if n in old and old[n] != now[n]
                ],
            )
        )
        before = now
    return changes
