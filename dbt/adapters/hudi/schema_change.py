"""``on_schema_change`` for Hudi models: dbt's four modes on top of Hudi's writer-schema rules.

Hudi decides what a commit may do to a table's schema (``engine.model.schema_evolution``, after
Apache Hudi's ``HoodieSchemaUtils.deduceWriterSchema``): new columns are added as nullable, the
promotions Hudi allows widen the table (int → bigint, float → double, ...), a narrower incoming
type is promoted exactly to the table's, anything else is refused. dbt's ``on_schema_change``
says which of those a model may ask for. The model's SELECT (incoming) is compared with the
table's latest schema, meta columns excluded; names match case-insensitively, as Spark resolves
them, and are written in the table's spelling::

    model vs table      ignore               fail   append_new_columns     sync_all_columns
    added column        not written          error  added                  added
    widened type        error (table keeps   error  widened                widened
                        its narrower type)
    narrowed type       promoted exactly to  error  promoted exactly to    error: Hudi cannot
                        the table's type            the table's type       narrow a column
    removed column      error, or null when  error  kept; null in the      dropped
                        set.null.for.missing        rows written
    incompatible type   error                error  error                  error

Each mode reaches the writer through Hudi's own keys (:func:`mode_options`):
``append_new_columns`` sets ``hoodie.write.set.null.for.missing.columns``, ``sync_all_columns``
``hoodie.datasource.write.schema.allow.auto.evolution.column.drop``. Every refusal is raised
before anything is written, naming the model, each column and both types, and saying what to
do instead; the writer schema Hudi deduces is checked against the mode, so no option can make a
mode keep or drop a column silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pyarrow as pa

from engine import IS_DELETED_COLUMN, SchemaChange, compare_schemas, deduce_writer_schema
from engine import config as hc
from engine.config import HoodieConfig
from engine.errors import SchemaError, SchemaEvolutionError

_CHANGE_ORDER = ("added", "removed", "widened", "narrowed", "incompatible")


class OnSchemaChangeError(SchemaError):
    """A model's columns do not fit its table under its ``on_schema_change``; nothing written."""

    def __init__(self, model: str, mode: str, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"Model '{model}' (on_schema_change='{mode}'): the model's columns do not fit the "
            f"Hudi table; nothing was written:\n{lines}"
        )


@dataclass(frozen=True, slots=True)
class WritePlan:
    """What one write sends: the model's columns (renamed to the table's spelling) and what the
    commit does to the table's schema."""

    columns: tuple[tuple[str, str], ...]  # (model column, column written)
    writer_schema: pa.Schema
    changes: tuple[SchemaChange, ...]  # table schema -> writer schema
    differences: tuple[SchemaChange, ...] = ()  # table schema -> model's columns
    left_out: frozenset[str] = frozenset()  # model columns not written (ignore)

    def log_lines(self) -> list[str]:
        """What the write changes in the table's schema, then what it does to the model's rows
        (so that nothing is left out or nulled without a word)."""
        lines = [describe_change(c) for c in self.changes]
        dropped = {c.column for c in self.changes if c.kind == "removed"}
        for d in self.differences:
            if d.column in self.left_out:
                lines.append(
                    f"{d.column} ({d.incoming_type}) not in the table: not written "
                    "(on_schema_change='ignore')"
                )
            elif d.kind == "narrowed":
                lines.append(
                    f"{d.column} ({d.incoming_type}) promoted to the table's {d.table_type}"
                )
            elif d.kind == "removed" and d.column not in dropped:
                lines.append(
                    f"{d.column} ({d.table_type}) not in the model: null in the rows written"
                )
        return lines


def mode_options(mode: str) -> dict[str, str]:
    """The Hudi keys through which ``mode`` reaches the writer's schema deduction."""
    drop = hc.SCHEMA_ALLOW_AUTO_EVOLUTION_COLUMN_DROP.key
    if mode == "append_new_columns":
        return {hc.SET_NULL_FOR_MISSING_COLUMNS.key: "true", drop: "false"}
    if mode == "sync_all_columns":
        # legacy reconciliation would keep the columns the model dropped
        return {drop: "true", hc.RECONCILE_SCHEMA.key: "false"}
    if mode == "ignore":
        return {drop: "false"}
    return {}


def option_conflicts(mode: str, hudi_options: Mapping[str, str]) -> list[str]:
    """``hudi_options`` that ``mode`` sets itself, given another value (config problems)."""
    problems = []
    for key, value in mode_options(mode).items():
        given = hudi_options.get(key)
        if given is not None and given.strip().lower() != value:
            problems.append(
                f"hudi_options: {key!r}={given!r} contradicts on_schema_change={mode!r}, "
                f"which sets it to {value}; choose the on_schema_change that does what you want "
                "instead of setting the key"
            )
    return problems


def plan_write(
    model: str, mode: str, table: pa.Schema | None, incoming: pa.Schema, cfg: HoodieConfig
) -> WritePlan:
    """The columns a write of ``incoming`` into a table of schema ``table`` sends under ``mode``.

    Args:
        model: the model's name (for messages).
        mode: the model's ``on_schema_change``.
        table: the table's latest data schema (no meta columns), None before the first commit.
        incoming: the model's columns.
        cfg: the write's options, ``mode_options(mode)`` included.

    Raises:
        OnSchemaChangeError: the mode or Hudi's rules refuse a change; lists every column.
    """
    if table is None:
        return WritePlan(tuple((n, n) for n in incoming.names), incoming, ())
    names = _table_spelling(table, incoming)
    aligned = pa.schema([f.with_name(names[f.name]) for f in incoming])
    diffs = compare_schemas(table, aligned)
    if mode == "fail" and diffs:
        raise OnSchemaChangeError(model, mode, [_fail_summary(diffs)])
    top_level = {*table.names, *aligned.names}
    problems = [
        _refusal(d, d.column in top_level) for d in diffs if _refused(mode, d, top_level, cfg)
    ]
    if problems:
        raise OnSchemaChangeError(model, mode, problems)
    left_out = {d.column for d in diffs if mode == "ignore" and d.kind == "added"}
    written = [f for f in aligned if f.name not in left_out]
    try:
        writer = deduce_writer_schema(table, pa.schema(written), cfg)
    except SchemaEvolutionError as e:
        raise OnSchemaChangeError(model, mode, [str(e)]) from None
    changes = compare_schemas(table, writer)
    problems = _contradictions(mode, diffs, changes)
    if problems:
        raise OnSchemaChangeError(model, mode, problems)
    columns = tuple((n, names[n]) for n in incoming.names if names[n] not in left_out)
    return WritePlan(columns, writer, tuple(changes), tuple(diffs), frozenset(left_out))


def describe_change(change: SchemaChange) -> str:
    """One change a commit makes to the table's schema, for the run's log."""
    old, new = change.table_type, change.incoming_type
    if change.kind == "added":
        return f"added {change.column} ({new})"
    if change.kind == "removed":
        return f"removed {change.column} ({old})"
    return f"{change.kind} {change.column} ({old} -> {new})"


# ---- what each mode refuses ---------------------------------------------------------------------


def _refused(mode: str, d: SchemaChange, top_level: set[str], cfg: HoodieConfig) -> bool:
    """Whether ``mode`` refuses change ``d`` (Hudi refuses every incompatible one)."""
    if d.kind == "incompatible":
        return True
    if mode == "ignore":
        # left out, the delete marker would turn the rows it marks into records
        nested_add = d.kind == "added" and (
            d.column not in top_level or d.column == IS_DELETED_COLUMN
        )
        missing = d.kind == "removed" and not cfg.get(hc.SET_NULL_FOR_MISSING_COLUMNS)
        return d.kind == "widened" or nested_add or missing
    return mode == "sync_all_columns" and d.kind == "narrowed"


def _refusal(d: SchemaChange, is_top: bool) -> str:
    """Why change ``d`` is refused (see :func:`_refused`), and what to do instead."""
    col, old, new = d.column, d.table_type, d.incoming_type
    reason = f" ({d.reason})" if d.reason else ""
    if d.kind == "incompatible" and old is None:
        return f"field '{col}' ({new}) is new, and Hudi cannot add it{reason}"
    if d.kind == "incompatible":
        return (
            f"column '{col}' is {old} in the table and {new} in the model, and Hudi cannot "
            f"change {old} into {new}{reason}: make the model yield {old} again, or rebuild the "
            "table with --full-refresh"
        )
    if d.kind == "widened":
        return (
            f"column '{col}' is {old} in the table and {new} in the model: "
            f"on_schema_change='ignore' keeps the table's {old}, which cannot hold every {new} "
            f"value; set on_schema_change='append_new_columns' or 'sync_all_columns' to widen "
            f"the table (Hudi promotes {old} to {new}), or make the model yield {old} again"
        )
    if d.kind == "added" and col == IS_DELETED_COLUMN:
        return (
            f"column '{col}' marks deletes and is new: on_schema_change='ignore' would leave it "
            "out and write the rows it marks as records; set on_schema_change="
            "'append_new_columns' to add it, or rebuild the table with --full-refresh"
        )
    if d.kind == "added":
        return (
            f"field '{col}' ({new}) is new inside a struct: on_schema_change='ignore' cannot "
            "leave out one field of a struct; remove it from the model, or set "
            "on_schema_change='append_new_columns' to add it"
        )
    if d.kind == "removed":
        return (
            f"column '{col}' ({old}) is in the table but not in the model: "
            "on_schema_change='ignore' keeps it, and Hudi writes no row without it unless "
            f"{hc.SET_NULL_FOR_MISSING_COLUMNS.key} is true; select it again, set "
            "on_schema_change='append_new_columns' (keeps it, null in the rows written) or "
            "'sync_all_columns' (drops it), or set that key in hudi_options"
        )
    keep = f"cast({col} as {old})" if is_top else f"the table's {old}"
    return (
        f"column '{col}' is {old} in the table and {new} in the model: sync_all_columns would "
        f"change the table's type to {new}, and Hudi cannot narrow a column type; keep "
        f"{old} in the model ({keep}), set on_schema_change='append_new_columns' (the table "
        f"keeps {old}, values are promoted exactly), or rebuild the table with --full-refresh"
    )


def _fail_summary(diffs: list[SchemaChange]) -> str:
    parts = []
    for kind in _CHANGE_ORDER:
        cols = [d for d in diffs if d.kind == kind]
        if not cols:
            continue
        if kind in ("added", "removed"):
            listed = ", ".join(d.column for d in cols)
        else:
            listed = ", ".join(f"{d.column} ({d.table_type} -> {d.incoming_type})" for d in cols)
        parts.append(f"{kind}: {listed}")
    return (
        "the model's columns differ from the table's ("
        + "; ".join(parts)
        + "); set on_schema_change to append_new_columns or sync_all_columns, or run with "
        "--full-refresh to rebuild the table"
    )


def _contradictions(mode: str, diffs: list[SchemaChange], changes: list[SchemaChange]) -> list[str]:
    """Where Hudi's writer schema (under the write's options) would not do what ``mode`` says."""
    options = ", ".join(
        (
            hc.RECONCILE_SCHEMA.key,
            hc.SET_NULL_FOR_MISSING_COLUMNS.key,
            hc.AVRO_SCHEMA_VALIDATE.key,
        )
    )
    if mode == "ignore":
        unexpected = changes
        why = "on_schema_change='ignore' keeps the table's shape"
    elif mode == "append_new_columns":
        unexpected = [c for c in changes if c.kind == "removed"]
        why = "on_schema_change='append_new_columns' keeps every column of the table"
    elif mode == "sync_all_columns":
        dropped = {c.column for c in changes if c.kind == "removed"}
        kept = [d.column for d in diffs if d.kind == "removed" and d.column not in dropped]
        return [
            f"column '{n}' is not in the model, but Hudi's writer schema keeps it, and "
            f"on_schema_change='sync_all_columns' removes it; check hudi_options ({options})"
            for n in kept
        ]
    else:
        return []
    return [
        f"Hudi's writer schema would make this change: {c.kind} {c.column}; {why}; check "
        f"hudi_options ({options})"
        for c in unexpected
    ]


# ---- names ----------------------------------------------------------------------------------


def _table_spelling(table: pa.Schema, incoming: pa.Schema) -> dict[str, str]:
    """Model column -> the table's spelling of it (Spark resolves names case-insensitively)."""
    by_lower = {n.lower(): n for n in table.names}
    return {n: by_lower.get(n.lower(), n) for n in incoming.names}
