"""How downstream SQL reads a Hudi model: its catalog table and, for MOR, its snapshot view.

Measured on PySpark 4.3 (no Hudi JVM bundle): a catalog table ``USING`` a Python data source
loses its options and location; a persistent view may not name a temporary view
(``INVALID_TEMP_OBJ_REFERENCE``); an external parquet table over the base path sees every file
slice (stale and duplicate rows). What is exact:

* **Catalog table** (every Hudi model): an external ``USING parquet`` table at the base path with
  the snapshot's columns and the storage options::

      recursiveFileLookup = true
      pathGlobFilter      = {<name of the latest committed base file of each file group>,...}

  so Spark reads exactly the latest committed base files (older slices, replaced file groups,
  files of inflight instants, ``.hoodie/`` and log files are all left out), and the metastore
  keeps it across processes (a 21 kB filter round-trips through Derby). That is the snapshot of
  a copy-on-write table and the read-optimized view of a merge-on-read table (Hudi's Hive-sync
  convention for a MOR table's plain name). ``dbt docs generate`` lists it with its columns.
  Table properties record the base path, table type and instant.
* **Snapshot view** (merge-on-read models): a session temporary view over the engine's snapshot
  read (base files merged with log blocks), registered after each commit and, in a fresh
  process, before the first statement that names it (``HudiConnectionManager.add_query``).

:func:`publish` does both after every commit; it is the one entry point of the mechanism
(``HudiAdapter.hudi_publish``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.hudi.relation import SNAPSHOT_VIEWS, format_snapshot_view_name
from engine import HudiTable, TableType

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

BASE_PATH_PROPERTY = "dbt_hudi.base_path"
TABLE_TYPE_PROPERTY = "dbt_hudi.table_type"
INSTANT_TIME_PROPERTY = "dbt_hudi.instant_time"
# a file name no Hudi writer produces: the filter of a table without base files
_NO_BASE_FILES = "__dbt_hudi_no_base_files__"
_GLOB_SPECIALS = "\\{}[]*?,^"

_LOCK = threading.RLock()


@dataclass(frozen=True)
class PublishedTable:
    """What :func:`publish` registered."""

    catalog_name: str
    base_path: str
    table_type: str
    instant_time: str | None
    base_files: int
    snapshot_view: str | None


def get_session(server_side_parameters: Mapping[str, str] | None = None) -> SparkSession:
    """The process's SparkSession, built as dbt-spark's session cursor builds it (Hive support,
    the profile's parameters); over Spark Connect only the settings the server accepts."""
    from engine import get_spark

    return get_spark(server_side_parameters, hive=True)


def _quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _quote_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def format_catalog_name(schema: str, identifier: str) -> str:
    return f"{_quote_identifier(schema)}.{_quote_identifier(identifier)}"


def _glob_escape(name: str) -> str:
    return "".join("\\" + c if c in _GLOB_SPECIALS else c for c in name)


def format_base_file_filter(base_file_names: Iterable[str]) -> str:
    """The ``pathGlobFilter`` matching exactly ``base_file_names`` (file names, no directory)."""
    names = sorted(set(base_file_names))
    if not names:
        return _NO_BASE_FILES
    return "{" + ",".join(_glob_escape(n) for n in names) + "}"


def latest_base_file_names(base_path: str) -> tuple[list[str], str | None]:
    """Names of the latest committed base file of every live file group, and the last instant."""
    return HudiTable(base_path).latest_base_file_names()


def _drop_catalog_object(spark: SparkSession, schema: str, identifier: str) -> None:
    """Drop what holds the name now: external tables lose metadata only, never Hudi files."""
    name = format_catalog_name(schema, identifier)
    if not spark.catalog.tableExists(f"{schema}.{identifier}"):
        return
    table = spark.catalog.getTable(f"{schema}.{identifier}")
    if (table.tableType or "").upper() == "VIEW":
        spark.sql(f"DROP VIEW IF EXISTS {name}")
    else:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def publish(
    spark: SparkSession,
    *,
    schema: str,
    identifier: str,
    base_path: str,
    table_type: str,
    columns: StructType,
) -> PublishedTable:
    """(Re)register ``schema.identifier`` as the table's latest committed snapshot.

    Args:
        spark: the dbt process's session.
        schema: the model's schema (Spark database).
        identifier: the model's alias.
        base_path: the Hudi table's base path.
        table_type: ``COPY_ON_WRITE`` or ``MERGE_ON_READ``.
        columns: the table's snapshot schema (meta columns included), the catalog's columns.
    """
    names, instant_time = latest_base_file_names(base_path)
    location = HudiTable(base_path).uri
    with _LOCK:
        _drop_catalog_object(spark, schema, identifier)
        spark.catalog.createTable(
            f"{schema}.{identifier}",
            path=location,
            source="parquet",
            schema=columns,
            recursiveFileLookup="true",
            pathGlobFilter=format_base_file_filter(names),
        )
        properties = {
            BASE_PATH_PROPERTY: base_path,
            TABLE_TYPE_PROPERTY: table_type,
            INSTANT_TIME_PROPERTY: instant_time or "",
        }
        assignments = ", ".join(
            f"{_quote_string(k)} = {_quote_string(v)}" for k, v in properties.items()
        )
        catalog_name = format_catalog_name(schema, identifier)
        spark.sql(f"ALTER TABLE {catalog_name} SET TBLPROPERTIES ({assignments})")
        view = None
        if table_type == TableType.MERGE_ON_READ:
            view = register_snapshot_view(spark, schema, identifier, base_path)
    return PublishedTable(
        catalog_name=f"{schema}.{identifier}",
        base_path=base_path,
        table_type=table_type,
        instant_time=instant_time,
        base_files=len(names),
        snapshot_view=view,
    )


def register_snapshot_view(
    spark: SparkSession, schema: str, identifier: str, base_path: str
) -> str:
    """Register the session view that reads the table's latest committed snapshot."""
    from engine import read_hudi

    name = format_snapshot_view_name(schema, identifier)
    with _LOCK:
        read_hudi(spark, base_path).createOrReplaceTempView(name)
        SNAPSHOT_VIEWS[name] = (schema, identifier)
    return name


def _catalog_properties(spark: SparkSession, schema: str, identifier: str) -> dict[str, str]:
    if not spark.catalog.tableExists(f"{schema}.{identifier}"):
        return {}
    rows = spark.sql(f"SHOW TBLPROPERTIES {format_catalog_name(schema, identifier)}").collect()
    return {str(r["key"]): str(r["value"]) for r in rows}


def catalog_base_path(spark: SparkSession, schema: str, identifier: str) -> str | None:
    """The base path recorded on ``schema.identifier``'s catalog table, if it is a Hudi model's."""
    return _catalog_properties(spark, schema, identifier).get(BASE_PATH_PROPERTY) or None


def catalog_table_type(spark: SparkSession, schema: str, identifier: str) -> str | None:
    """The Hudi table type recorded on ``schema.identifier``'s catalog table, if any."""
    return _catalog_properties(spark, schema, identifier).get(TABLE_TYPE_PROPERTY) or None


def ensure_snapshot_views(names: Iterable[str], server_side_parameters: Mapping[str, str]) -> None:
    """Register each named snapshot view this session does not have yet.

    Raises:
        DbtRuntimeError: a view stands for a model whose catalog table does not exist (the model
            was never built) or is not a Hudi table.
    """
    spark = None
    for name in names:
        target = SNAPSHOT_VIEWS.get(name)
        if target is None:
            continue  # not rendered by this process: leave the name to Spark
        if spark is None:
            spark = get_session(server_side_parameters)
        if spark.catalog.tableExists(name):
            continue
        schema, identifier = target
        with _LOCK:
            if spark.catalog.tableExists(name):
                continue
            base_path = catalog_base_path(spark, schema, identifier)
            if base_path is None:
                raise DbtRuntimeError(
                    f"Hudi model {schema}.{identifier} has no catalog table with a "
                    f"'{BASE_PATH_PROPERTY}' property: build it first (dbt run -s {identifier})"
                )
            register_snapshot_view(spark, schema, identifier, base_path)
