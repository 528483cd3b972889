"""Spark <-> Arrow schema conversions at the Spark boundary of the writer."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructField, StructType

from engine.model.merge import INTERNAL_COLUMNS
from engine.model.schema import HOODIE_META_COLUMNS

__all__ = ["data_arrow_schema", "spark_struct_of", "with_string_fields"]


def data_arrow_schema(struct: StructType) -> pa.Schema:
    """Arrow schema of a DataFrame's data columns (meta and internal columns left out)."""
    skip = {*HOODIE_META_COLUMNS, *INTERNAL_COLUMNS}
    kept = StructType([f for f in struct.fields if f.name not in skip])
    return to_arrow_schema(kept, timezone="UTC")


def spark_struct_of(schema: pa.Schema) -> StructType:
    """Spark struct of an Arrow schema (output schemas of Arrow UDFs)."""
    return from_arrow_schema(schema)


def with_string_fields(struct: StructType, names: tuple[str, ...]) -> StructType:
    """``struct`` plus nullable string fields ``names`` at the end."""
    from pyspark.sql.types import StringType

    return StructType([*struct.fields, *(StructField(n, StringType(), True) for n in names)])
