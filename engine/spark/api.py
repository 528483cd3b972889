"""``write_hudi`` and ``read_hudi``: Spark DataFrames in and out of a Hudi table.

The two entry points of the engine for Spark users, re-exported as ``engine.write_hudi`` and
``engine.read_hudi``; each opens :class:`engine.table.HudiTable` with the runner
:func:`engine.spark.local_runner.runner_for` picks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from engine.fs.s3 import is_s3_uri
from engine.read.filter import ReadFilter
from engine.spark.local_runner import runner_for
from engine.spark.reader import spark_opens
from engine.table import HudiTable, WriteResult

__all__ = ["read_hudi", "spark_reads_natively", "spark_table", "write_hudi"]


def spark_table(
    path: str, spark: SparkSession | None = None, options: Mapping[str, Any] | None = None
) -> HudiTable:
    """The table at ``path`` with its data work on ``spark`` (the active session if ``None``).

    A table on S3 takes its endpoint and credentials from ``options``, then from the session's
    ``spark.hadoop.fs.s3a.*`` configuration, then from the environment and the AWS profile.
    On a local master a small one-job write runs in the driver process
    (:func:`engine.spark.local_runner.runner_for`, the one place the runner is chosen; each
    write's ``hoodie.write.local.*`` options then decide).
    """
    runner = runner_for(spark)
    storage_options = None
    if is_s3_uri(path):
        storage_options = {**s3a_conf(runner.spark), **(options or {})}
    return HudiTable(path, runner=runner, storage_options=storage_options)


def spark_reads_natively(spark: SparkSession, path: str) -> bool:
    """Whether ``spark``'s own file sources open the table at ``path`` (always on a local disk; on
    S3 only with the Hadoop S3A connector): else only the engine's readers do."""
    return spark_opens(spark, spark_table(path, spark).storage)


def s3a_conf(spark: SparkSession) -> dict[str, str]:
    """The session's ``fs.s3a.*`` settings (given as ``spark.hadoop.fs.s3a.*``)."""
    return {k: v for k, v in spark.conf.getAll.items() if k.startswith("spark.hadoop.fs.s3a.")}


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
    return spark_table(path, df.sparkSession, options).write(df, options)


def read_hudi(
    spark: SparkSession,
    path: str,
    options: Mapping[str, Any] | None = None,
    filters: Sequence[ReadFilter] = (),
) -> DataFrame:
    """Read the Hudi table at ``path`` as a Spark DataFrame (meta columns included).

    Args:
        spark: the session to read with.
        path: the table's base path (local path or URI).
        options: Hudi read keys (``hoodie.datasource.query.type``, ``as.of.instant``,
            ``hoodie.datasource.read.begin.instanttime`` / ``.end.instanttime``).
        filters: rows kept (``ReadFilter("c", ">=", 5)``...); known when the read is planned,
            they prune partitions and skip files by the metadata table's column stats (a
            ``DataFrame.filter`` applied afterwards filters rows only).

    Raises:
        TableNotFoundError: no table at ``path``.
        ConfigError: an unknown or malformed option.
        QueryError: an unsupported table or malformed query.
    """
    result: DataFrame = spark_table(path, spark, options).read(options, filters)
    return result
