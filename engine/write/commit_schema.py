"""The schema a write commits with: the table's schema evolved by the batch, its values checked.

::

    delete                      the latest committed schema, unchanged (none: nothing to delete)
    no schema on the timeline   the batch's schema
    otherwise                   the writer schema :func:`engine.model.schema_evolution.
                                deduce_writer_schema` decides on; the values its decisions rest on
                                are checked by the runner (a batch's narrowed column must fit the
                                table's type exactly; a table's int widened to float must not hold
                                an int past the mantissa); the table's own schema text is kept
                                when nothing changes

Decided and checked before the instant is requested, so a batch that does not fit leaves the
table untouched.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.config import HoodieConfig, WriteOperation
from engine.errors import HudiError
from engine.fs.storage import Storage
from engine.io.parquet import commit_schema_of
from engine.model.schema import avro_to_arrow_schema, remove_meta_fields, schema_json
from engine.model.schema_evolution import (
    SchemaChange,
    compare_schemas,
    deduce_writer_schema,
    lossy_widenings,
    normalize_schema,
)
from engine.read.plan import plan_query
from engine.timeline.timeline import Timeline
from engine.write.runner import IncomingBatch, Runner

__all__ = ["commit_schema", "exact_only"]

# (incoming, table) kinds whose cast is exact for every value: no data pass needed
_ALWAYS_EXACT = frozenset(
    (
        ("int", "bigint"),
        ("int", "double"),
        ("float", "double"),
        ("int", "string"),
        ("bigint", "string"),
        ("date", "string"),
        ("string", "binary"),
    )
)


def commit_schema(
    incoming: IncomingBatch,
    runner: Runner,
    *,
    cfg: HoodieConfig,
    table_name: str,
    timeline: Timeline | None,
    operation: WriteOperation,
    storage: Storage,
) -> str:
    """Avro schema (no meta fields) of the instant a write of ``incoming`` requests.

    Raises:
        HudiError: a delete on a table without data.
        ConfigError: ``hoodie.schema.on.read.enable=true``.
        SchemaEvolutionError: the change is refused, or a value would not survive it.
    """
    latest = timeline.latest_schema() if timeline is not None else None
    if operation == WriteOperation.DELETE:
        if latest is None:
            raise HudiError(f"Cannot delete from a table without data at {storage.base_path}")
        return latest
    table = avro_to_arrow_schema(remove_meta_fields(latest)) if latest is not None else None
    writer = deduce_writer_schema(table, incoming.arrow_schema, cfg)
    if table is None or latest is None:
        return commit_schema_of(writer, table_name)
    narrowed = [
        c
        for c in compare_schemas(writer, incoming.arrow_schema)
        if c.kind == "narrowed" and not exact_only(c)
    ]
    runner.check_values(incoming, writer, _top_level(narrowed))
    widened = _top_level(lossy_widenings(table, writer))
    if widened:  # the latest snapshot, which every reader then returns in the wider type
        runner.check_values(runner.read(plan_query(storage)), writer, widened)
    if normalize_schema(table).equals(writer):
        return schema_json(remove_meta_fields(latest))
    return commit_schema_of(writer, table_name)


def exact_only(change: SchemaChange) -> bool:
    """Whether a narrowed change's cast is exact whatever the values."""
    incoming, table = change.incoming_type or "", change.table_type or ""
    if incoming == "void" or (incoming, table) in _ALWAYS_EXACT:
        return True
    return incoming.startswith("decimal") and table.startswith("decimal")


def _top_level(changes: Sequence[SchemaChange]) -> list[str]:
    return sorted({c.column.split(".", 1)[0] for c in changes})
