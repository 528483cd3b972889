"""``on_schema_change`` for Hudi models: which columns a write sends to an existing table.

dbt's four modes, applied to the model's SELECT (``incoming``) against the table's current
columns (``existing``), meta columns excluded. Column names compare case-insensitively, as
Spark resolves them::

    ignore              existing columns, in table order; new columns dropped, missing ones null
    fail                any added, removed or retyped column is an error naming them
    append_new_columns  existing columns (missing ones null) + new columns at the end
    sync_all_columns    exactly the incoming columns (removed columns leave the schema)

Pure: the adapter turns the plan into a Spark projection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import SchemaError

Columns = Sequence[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class ColumnPlan:
    """One output column: SELECT column ``source`` (cast when ``cast_to`` is set), or null."""

    name: str
    data_type: str
    source: str | None
    cast_to: str | None = None


@dataclass(frozen=True, slots=True)
class SchemaDiff:
    added: tuple[str, ...]
    removed: tuple[str, ...]
    retyped: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.retyped)


def diff_columns(existing: Columns, incoming: Columns) -> SchemaDiff:
    """Columns added, removed and retyped by ``incoming`` relative to ``existing``."""
    old = {n.lower(): (n, t) for n, t in existing}
    new = {n.lower(): (n, t) for n, t in incoming}
    return SchemaDiff(
        added=tuple(n for n, _ in incoming if n.lower() not in old),
        removed=tuple(n for n, _ in existing if n.lower() not in new),
        retyped=tuple(
            f"{n} ({old[n.lower()][1]} -> {t})"
            for n, t in incoming
            if n.lower() in old and old[n.lower()][1] != t
        ),
    )


def plan_columns(existing: Columns, incoming: Columns, mode: str) -> list[ColumnPlan]:
    """The columns to write under ``mode``.

    Raises:
        SchemaError: ``mode`` is ``fail`` and the columns differ (the message lists them).
    """
    diff = diff_columns(existing, incoming)
    new = {n.lower(): (n, t) for n, t in incoming}
    if mode == "fail" and diff.changed:
        parts = [
            f"{label}: {', '.join(cols)}"
            for label, cols in (
                ("added", diff.added),
                ("removed", diff.removed),
                ("retyped", diff.retyped),
            )
            if cols
        ]
        raise SchemaError(
            "on_schema_change='fail' and the model's columns differ from the table's ("
            + "; ".join(parts)
            + "); set on_schema_change to append_new_columns or sync_all_columns, "
            "or run with --full-refresh"
        )
    if mode == "sync_all_columns":
        return [ColumnPlan(n, t, n) for n, t in incoming]
    plan: list[ColumnPlan] = []
    for name, data_type in existing:
        hit = new.get(name.lower())
        if hit is None:
            plan.append(ColumnPlan(name, data_type, None, data_type))
        else:
            cast_to = None if hit[1] == data_type else data_type
            plan.append(ColumnPlan(name, data_type, hit[0], cast_to))
    if mode == "append_new_columns":
        plan.extend(ColumnPlan(n, new[n.lower()][1], n) for n in diff.added)
    return plan
