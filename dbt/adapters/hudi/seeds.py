"""A seed's CSV rows as a Spark temporary view, typed as dbt-spark types them.

dbt-spark loads a seed with ``INSERT INTO ... VALUES (cast(? as <type>), ...)``; a Hudi seed is
written by the engine instead, from a view with the same columns and types (dbt's inferred type,
or the seed's ``column_types``). A value the cast cannot represent is an error naming the column
and the value, never a silent null.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["stage_seed"]


def _text(value: Any) -> str | None:
    """A CSV cell as the text Spark casts from (agate has parsed it already)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def stage_seed(spark: SparkSession, agate_table: Any, types: Mapping[str, str], view: str) -> None:
    """Register ``agate_table``'s rows as temporary view ``view`` with ``types`` per column.

    Raises:
        ValueError: a value that does not cast to its column's type (column, value, type).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    names = [str(n) for n in agate_table.column_names]
    schema = StructType([StructField(n, StringType(), True) for n in names])
    rows = [[_text(v) for v in row] for row in agate_table.rows]
    raw = spark.createDataFrame(rows, schema)
    typed = [F.col(_quoted(n)).cast(types[n]).alias(n) for n in names]
    lost = [
        F.when(F.col(_quoted(n)).isNotNull() & c.isNull(), F.lit(n))
        for n, c in zip(names, (F.col(_quoted(n)).cast(types[n]) for n in names), strict=True)
    ]
    if lost:
        flag = "__dbt_hudi_uncast_column"
        bad = raw.select(F.coalesce(*lost).alias(flag), *(F.col(_quoted(n)) for n in names)).where(
            F.col(flag).isNotNull()
        )
        first = bad.limit(1).collect()
        if first:
            column = first[0][flag]
            raise ValueError(
                f"Seed value {first[0][column]!r} of column {column!r} is not a "
                f"{types[column]} (set the seed's column_types to keep it)"
            )
    raw.select(*typed).createOrReplaceTempView(view)
