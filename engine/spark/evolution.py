"""Value checks of a schema change, run as Spark jobs before a write is requested.

:func:`engine.model.schema_evolution.deduce_writer_schema` decides on types; some of its
decisions hold only if the values agree: a batch's long written into a float column must be a
float exactly, a table's int widened to float must not hold an int past float's mantissa. Both
are proven here over the data, in Spark tasks with :func:`engine.model.promote.promote_array`,
so a failing value stops the write before anything is written; the error names the column, both
types and the value.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StringType, StructField, StructType

from engine.config import HoodieConfig
from engine.errors import SchemaEvolutionError
from engine.io.parquet import commit_schema_of
from engine.model.promote import promote_array
from engine.model.schema import avro_to_arrow_schema, remove_meta_fields, schema_json
from engine.model.schema_evolution import (
    SchemaChange,
    compare_schemas,
    deduce_writer_schema,
    lossy_widenings,
    normalize_schema,
)
from engine.spark.schema import data_arrow_schema

__all__ = ["check_batch_values", "check_stored_values", "commit_schema_for", "exact_only"]

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
_ERROR_FIELD = "__evolution_error"


def commit_schema_for(
    df: DataFrame, latest: str | None, cfg: HoodieConfig, table_name: str, base_path: str
) -> str:
    """The commit schema (Avro JSON, no meta fields) of writing ``df`` into a table whose
    latest commit schema is ``latest``: the deduced writer schema, its values checked.

    The table's own schema text is kept when nothing changes (a table written by Apache Hudi
    keeps its exact schema).

    Raises:
        ConfigError: ``hoodie.schema.on.read.enable=true``.
        SchemaEvolutionError: the change is refused, or a value would not survive it.
    """
    incoming = data_arrow_schema(df.schema)
    table = avro_to_arrow_schema(remove_meta_fields(latest)) if latest is not None else None
    writer = deduce_writer_schema(table, incoming, cfg)
    if table is None or latest is None:
        return commit_schema_of(writer, table_name)
    check_batch_values(df, writer, compare_schemas(writer, incoming))
    check_stored_values(df.sparkSession, base_path, writer, lossy_widenings(table, writer))
    if normalize_schema(table).equals(writer):
        return schema_json(remove_meta_fields(latest))
    return commit_schema_of(writer, table_name)


def exact_only(change: SchemaChange) -> bool:
    """Whether a narrowed change's cast is exact whatever the values."""
    incoming, table = change.incoming_type or "", change.table_type or ""
    if incoming == "void" or (incoming, table) in _ALWAYS_EXACT:
        return True
    return incoming.startswith("decimal") and table.startswith("decimal")


def check_batch_values(df: DataFrame, writer: pa.Schema, changes: Sequence[SchemaChange]) -> None:
    """Fail if a value of a narrowed column does not fit the table's type exactly.

    Raises:
        SchemaEvolutionError: the first value found that would change.
    """
    columns = _top_level([c for c in changes if c.kind == "narrowed" and not exact_only(c)])
    _check(df, writer, columns)


def check_stored_values(
    spark: SparkSession, base_path: str, writer: pa.Schema, widened: Sequence[SchemaChange]
) -> None:
    """Fail if the table holds a value its widened type cannot hold exactly (the latest
    snapshot, which every reader then returns in the wider type).

    Raises:
        SchemaEvolutionError: the first such value.
    """
    from engine.read.plan import read_hudi

    columns = _top_level(list(widened))
    if columns:
        _check(read_hudi(spark, base_path), writer, columns)


def _top_level(changes: Sequence[SchemaChange]) -> list[str]:
    return sorted({c.column.split(".", 1)[0] for c in changes})


def _check(df: DataFrame, writer: pa.Schema, columns: list[str]) -> None:
    if not columns:
        return
    targets = {name: writer.field(name).type for name in columns}

    def check(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for name, target in targets.items():
                try:
                    promote_array(batch.column(name), target, name)
                except SchemaEvolutionError as e:
                    yield pa.RecordBatch.from_pydict({_ERROR_FIELD: [str(e)]})
                    return

    out = StructType([StructField(_ERROR_FIELD, StringType(), True)])
    found = df.select(*[f"`{c}`" for c in columns]).mapInArrow(check, out).limit(1).collect()
    if found:
        raise SchemaEvolutionError(str(found[0][_ERROR_FIELD]))
