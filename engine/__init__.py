"""dbt-hudi's engine: writes and reads Apache Hudi tables (table version 6) on PySpark.

Public API (with :mod:`engine.config` for option keys and :mod:`engine.errors`)::

    from engine import write_hudi, read_hudi        # Spark DataFrames in and out
    from engine import HudiTable, spark_table       # the facade: write, read, services
    from engine import read_table                   # the pure-Arrow reader (no Spark)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "HOODIE_META_COLUMNS",
    "IS_DELETED_COLUMN",
    "META_COLUMNS",
    "QUIET_LOG4J",
    "RUN_ID_KEY",
    "RUN_NODE_KEY",
    "HudiTable",
    "IndexType",
    "SchemaChange",
    "SparkRunner",
    "StagedSnapshot",
    "TableType",
    "ValidatorKind",
    "WriteOperation",
    "WriteResult",
    "__version__",
    "compare_schemas",
    "configured_checks",
    "deduce_writer_schema",
    "explain_text",
    "get_spark",
    "parse_filter",
    "read_hudi",
    "read_table",
    "register_data_source",
    "spark_reads_natively",
    "spark_table",
    "warm_arrow_scan",
    "warm_python_workers",
    "warm_write_path",
    "write_hudi",
]

# public name -> module that defines it; imported on first use, so that importing ``engine``
# imports neither pyspark nor the write path (Spark executors import parts of the engine)
_EXPORTS = {
    "HudiTable": "engine.table",
    "WriteResult": "engine.table",
    "RUN_ID_KEY": "engine.table",
    "RUN_NODE_KEY": "engine.table",
    "IndexType": "engine.index",
    "TableType": "engine.config",
    "WriteOperation": "engine.config",
    "HOODIE_META_COLUMNS": "engine.model.schema",
    "META_COLUMNS": "engine.model.schema",
    "IS_DELETED_COLUMN": "engine.model.merge",
    "SchemaChange": "engine.model.schema_evolution",
    "compare_schemas": "engine.model.schema_evolution",
    "deduce_writer_schema": "engine.model.schema_evolution",
    "StagedSnapshot": "engine.write.precommit",
    "ValidatorKind": "engine.write.precommit",
    "configured_checks": "engine.write.precommit",
    "read_table": "engine.read.arrow",
    "parse_filter": "engine.read.filter",
    "SparkRunner": "engine.spark.runner",
    "get_spark": "engine.spark.session",
    "explain_text": "engine.spark.explain",
    "QUIET_LOG4J": "engine.spark.session",
    "spark_table": "engine.spark.api",
    "spark_reads_natively": "engine.spark.api",
    "write_hudi": "engine.spark.api",
    "read_hudi": "engine.spark.api",
    "register_data_source": "engine.spark",
    "warm_arrow_scan": "engine.spark.warmup",
    "warm_python_workers": "engine.spark.warmup",
    "warm_write_path": "engine.spark.warmup",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from engine.config import TableType, WriteOperation
    from engine.index import IndexType
    from engine.model.merge import IS_DELETED_COLUMN
    from engine.model.schema import HOODIE_META_COLUMNS, META_COLUMNS
    from engine.model.schema_evolution import SchemaChange, compare_schemas, deduce_writer_schema
    from engine.read.arrow import read_table
    from engine.read.filter import parse_filter
    from engine.spark import register_data_source
    from engine.spark.api import read_hudi, spark_reads_natively, spark_table, write_hudi
    from engine.spark.explain import explain_text
    from engine.spark.runner import SparkRunner
    from engine.spark.session import QUIET_LOG4J, get_spark
    from engine.spark.warmup import warm_arrow_scan, warm_python_workers, warm_write_path
    from engine.table import RUN_ID_KEY, RUN_NODE_KEY, HudiTable, WriteResult
    from engine.write.precommit import StagedSnapshot, ValidatorKind, configured_checks
