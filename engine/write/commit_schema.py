"""The schema a write commits with: the table's schema, evolved by columns the batch adds.

::

    no schema on the timeline   the batch's schema (a delete has nothing to derive one from)
    delete                      the latest committed schema, unchanged
    otherwise                   the latest committed schema; every batch column must cast to the
                                table's type of that column; new columns are appended, nullable

Checked before the instant is requested, so a batch that does not fit leaves the table untouched.
"""

from __future__ import annotations

import pyarrow as pa

from engine.config import WriteOperation
from engine.errors import HudiError, SchemaError
from engine.io.parquet import commit_schema_of
from engine.model.schema import avro_to_arrow_schema, remove_meta_fields, schema_json
from engine.timeline.timeline import Timeline

__all__ = ["commit_schema", "pa_schema_append"]


def commit_schema(
    incoming: pa.Schema,
    *,
    table_name: str,
    timeline: Timeline | None,
    operation: WriteOperation,
    base_path: str,
) -> str:
    """Avro schema (no meta fields) of the instant a write of ``incoming`` records requests.

    Raises:
        HudiError: a delete on a table without data.
        SchemaError: a column does not fit the table's type.
    """
    latest = timeline.latest_schema() if timeline is not None else None
    if latest is None:
        if operation == WriteOperation.DELETE:
            raise HudiError(f"Cannot delete from a table without data at {base_path}")
        return commit_schema_of(incoming, table_name)
    if operation == WriteOperation.DELETE:
        return latest
    current = avro_to_arrow_schema(latest)
    _check_castable(incoming, current)
    added = [f for f in incoming if f.name not in current.names]
    if not added:
        return schema_json(remove_meta_fields(latest))
    evolved = pa_schema_append(current, added)
    return commit_schema_of(evolved, table_name)


def _check_castable(incoming: pa.Schema, current: pa.Schema) -> None:
    """Fail before the write starts when a column cannot become the table's type."""
    for column in incoming:
        if column.name not in current.names:
            continue
        target = current.field(column.name).type
        try:
            pa.array([], type=column.type).cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise SchemaError(
                f"Column {column.name!r} of type {column.type} does not fit the table's {target}"
            ) from e


def pa_schema_append(schema: pa.Schema, fields: list[pa.Field]) -> pa.Schema:
    """``schema`` with ``fields`` appended (schema evolution by added columns)."""
    return pa.schema([*schema, *(f.with_nullable(True) for f in fields)])
