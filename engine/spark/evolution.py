"""Value checks of a schema change, as Spark jobs before a write is requested.

:mod:`engine.write.commit_schema` decides on types; some of its decisions hold only if the
values agree (a batch's long written into a float column must be a float exactly, a table's int
widened to float must not hold an int past float's mantissa). Both are proven here over the
data, in Spark tasks with :func:`engine.model.promote.promote_array`, so a failing value stops
the write before anything is written; the error names the column, both types and the value.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StringType, StructField, StructType

from engine.errors import SchemaEvolutionError
from engine.model.promote import promote_array

__all__ = ["check_values"]

_ERROR_FIELD = "__evolution_error"


def check_values(df: DataFrame, writer: pa.Schema, columns: list[str]) -> None:
    """Fail if a value of ``columns`` of ``df`` does not become its ``writer`` type exactly.

    Raises:
        SchemaEvolutionError: the first value found that would change.
    """
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
