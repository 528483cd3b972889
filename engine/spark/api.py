"""``write_hudi`` and ``read_hudi``: Spark DataFrames in and out of a Hudi table.

The two entry points of the engine for Spark users, re-exported as ``engine.write_hudi`` and
``engine.read_hudi``; each opens :class:`engine.table.HudiTable` with a :class:`SparkRunner`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from engine.spark.runner import SparkRunner
from engine.table import HudiTable, WriteResult

__all__ = ["read_hudi", "spark_table", "write_hudi"]


def spark_table(path: str, spark: SparkSession | None = None) -> HudiTable:
    """The table at ``path`` with its data work on ``spark`` (the active session if ``None``)."""
    return HudiTable(path, runner=SparkRunner(spark))


def write_hudi(df: DataFrame, path: str, options: Mapping[str, Any] | None = None) -> WriteResult:
    """Write a Spark DataFrame into the Hudi table at ``path`` (created on first write).

    Args:
        df: Records to write.
        path: Table base path (local path or URI reachable from every Spark executor).
        options: Hudi datasource options (``hoodie.*``), e.g. record key, partition path,
            precombine field, operation, table type.

    Returns:
        The committed instant and its write stats.
    """
    return spark_table(path, df.sparkSession).write(df, options)


def read_hudi(
    spark: SparkSession, path: str, options: Mapping[str, Any] | None = None
) -> DataFrame:
    """Read the Hudi table at ``path`` as a Spark DataFrame (meta columns included).

    Args:
        spark: the session to read with.
        path: the table's base path (local path or URI).
        options: Hudi read keys (``hoodie.datasource.query.type``, ``as.of.instant``,
            ``hoodie.datasource.read.begin.instanttime`` / ``.end.instanttime``).

    Raises:
        TableNotFoundError: no table at ``path``.
        ConfigError: an unknown or malformed option.
        QueryError: an unsupported table or malformed query.
    """
    result: DataFrame = spark_table(path, spark).read(options)
    return result
