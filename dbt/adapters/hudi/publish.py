"""How downstream SQL reads a Hudi model: its snapshot view, and what the catalog holds.

A Hudi table's latest snapshot is whatever its timeline says now: another dbt invocation, Apache
Hudi's writers, a streaming job, compaction, cleaning and rollback all change which files make it
up. Measured on PySpark 4.3 without the Hudi JVM bundle, no catalog object follows a timeline:
an external ``USING parquet`` table over the base path sees every file slice (stale and duplicate
rows); one filtered to the base files of the last publish reads *nothing* once a clean deletes
them (silently: 0 rows); a catalog table ``USING`` a Python data source loses its path; a
persistent view may not name a temporary view (``INVALID_TEMP_OBJ_REFERENCE``). So:

* **Snapshot view** (every Hudi model; what ``ref()`` renders to, see ``relation.py``): a session
  temporary view over the engine's snapshot read of the base path. It is registered after each
  commit of this process and, before **every** statement that names it, registered again when the
  table's timeline hash changed since (:func:`ensure_snapshot_views`): each statement reads the
  latest committed snapshot when it starts, whoever committed it.
* **Catalog entry** (``schema.identifier``): a view with the snapshot's columns (comments
  included, so ``dbt docs generate`` lists them) and the table's base path and type as
  properties, whose every read fails with an error naming the base path and how to read the
  table: ``engine.read_hudi(spark, path)``, ``spark.read.format("hudi").load(path)`` after
  ``engine.register_data_source(spark)``, or ``ref()`` in dbt. It never answers stale or empty.

:func:`publish` does both after every commit; it is the one entry point of the mechanism
(``HudiAdapter.hudi_publish``). Every table handle it opens carries the session's storage
settings (``spark_table``: S3 credentials given only as ``spark.hadoop.fs.s3a.*`` travel).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.hudi.relation import SNAPSHOT_VIEWS, format_snapshot_view_name
from dbt.adapters.hudi.timing import phase
from engine import spark_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

BASE_PATH_PROPERTY = "dbt_hudi.base_path"
TABLE_TYPE_PROPERTY = "dbt_hudi.table_type"

_LOCK = threading.RLock()
# snapshot view name -> (base path, timeline hash it was registered at), in this process
_REGISTERED: dict[str, tuple[str, str]] = {}


@dataclass(frozen=True)
class PublishedTable:
    """What :func:`publish` registered."""

    catalog_name: str
    base_path: str
    table_type: str
    instant_time: str | None
    snapshot_view: str


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


def _drop_table(spark: SparkSession, schema: str, identifier: str) -> None:
    """Drop a catalog *table* holding the name (an older publish's): metadata only, never Hudi
    files; a view is replaced in place by ``CREATE OR REPLACE VIEW``."""
    if not spark.catalog.tableExists(f"{schema}.{identifier}"):
        return
    table = spark.catalog.getTable(f"{schema}.{identifier}")
    if (table.tableType or "").upper() != "VIEW":
        spark.sql(f"DROP TABLE IF EXISTS {format_catalog_name(schema, identifier)}")


@dataclass(frozen=True)
class Comments:
    """Docs a catalog entry carries: the table's comment and its columns'."""

    table: str | None = None
    columns: Mapping[str, str] | None = None


def existing_comments(spark: SparkSession, schema: str, identifier: str) -> Comments:
    """The comments the current catalog entry carries (kept when it is published again)."""
    name = f"{schema}.{identifier}"
    if not spark.catalog.tableExists(name):
        return Comments()
    table = spark.catalog.getTable(name)
    columns = {c.name: c.description for c in spark.catalog.listColumns(name) if c.description}
    return Comments(table.description or None, columns)


def publish(
    spark: SparkSession,
    *,
    schema: str,
    identifier: str,
    base_path: str,
    table_type: str,
    columns: StructType,
    comments: Comments | None = None,
) -> PublishedTable:
    """(Re)register ``schema.identifier``'s catalog entry and its snapshot view.

    Args:
        spark: the dbt process's session.
        schema: the model's schema (Spark database).
        identifier: the model's alias.
        base_path: the Hudi table's base path.
        table_type: ``COPY_ON_WRITE`` or ``MERGE_ON_READ``.
        columns: the table's snapshot schema (meta columns included), the catalog's columns.
        comments: docs for the entry; ``None`` keeps the current entry's.
    """
    table = spark_table(base_path, spark)
    properties = {BASE_PATH_PROPERTY: base_path, TABLE_TYPE_PROPERTY: table_type}
    with _LOCK:
        with phase("publish: catalog entry"):
            kept = (
                comments if comments is not None else existing_comments(spark, schema, identifier)
            )
            _drop_table(spark, schema, identifier)
            spark.sql(_catalog_view_sql(schema, identifier, base_path, columns, properties, kept))
        with phase("publish: snapshot view"):
            view = register_snapshot_view(spark, schema, identifier, base_path)
    with phase("publish: latest instant"):
        instant_time = table.latest_instant()
    return PublishedTable(
        catalog_name=f"{schema}.{identifier}",
        base_path=base_path,
        table_type=table_type,
        instant_time=instant_time,
        snapshot_view=view,
    )


def unreadable_message(catalog_name: str, base_path: str) -> str:
    """What reading a Hudi model's catalog entry says: where the table is and how to read it."""
    return (
        f"{catalog_name} is a Hudi table at {base_path}. Its catalog entry lists no files (they "
        "change with every commit, so a listing would go stale): read the table with "
        f"engine.read_hudi(spark, '{base_path}'), or spark.read.format('hudi').load('{base_path}') "
        "after engine.register_data_source(spark), or through ref() in dbt"
    )


def _catalog_view_sql(
    schema: str,
    identifier: str,
    base_path: str,
    columns: StructType,
    properties: Mapping[str, str],
    comments: Comments,
) -> str:
    """``CREATE OR REPLACE VIEW`` of the catalog entry: the columns (with their comments), the
    properties, and a filter that fails every read that reaches a row (a filter, unlike a
    projected column, cannot be pruned by ``count(*)``)."""
    name = format_catalog_name(schema, identifier)
    column_comments = comments.columns or {}
    declared = ", ".join(
        _quote_identifier(f.name)
        + (
            f" COMMENT {_quote_string(column_comments[f.name])}"
            if f.name in column_comments
            else ""
        )
        for f in columns.fields
    )
    selected = ", ".join(
        f"CAST(NULL AS {f.dataType.simpleString()}) AS {_quote_identifier(f.name)}"
        for f in columns.fields
    )
    assignments = ", ".join(
        f"{_quote_string(k)} = {_quote_string(v)}" for k, v in properties.items()
    )
    comment = f" COMMENT {_quote_string(comments.table)}" if comments.table else ""
    message = _quote_string(unreadable_message(f"{schema}.{identifier}", base_path))
    return (
        f"CREATE OR REPLACE VIEW {name} ({declared}){comment} TBLPROPERTIES ({assignments}) "
        f"AS SELECT {selected} WHERE raise_error({message}) IS NULL"
    )


def register_snapshot_view(
    spark: SparkSession,
    schema: str,
    identifier: str,
    base_path: str,
    timeline_hash: str | None = None,
) -> str:
    """Register the session view that reads the table's latest committed snapshot.

    The timeline hash is taken before the read plans (``timeline_hash``: one the caller has just
    taken): a commit landing in between leaves the recorded hash older than the plan, so the next
    statement registers again (never the other way round, which would keep a stale plan)."""
    from engine import read_hudi

    name = format_snapshot_view_name(schema, identifier)
    with _LOCK:
        if timeline_hash is None:
            timeline_hash = spark_table(base_path, spark).timeline_hash()
        read_hudi(spark, base_path).createOrReplaceTempView(name)
        SNAPSHOT_VIEWS[name] = (schema, identifier)
        _REGISTERED[name] = (base_path, timeline_hash)
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
    """Make each named snapshot view read its table's latest committed snapshot: register it
    when this session lacks it, and again when the table's timeline hash moved since (a commit,
    clean, compaction or rollback by anyone).

    Raises:
        DbtRuntimeError: a view stands for a model whose catalog entry does not exist (the model
            was never built) or is not a Hudi model's.
    """
    spark = None
    for name in names:
        target = SNAPSHOT_VIEWS.get(name)
        if target is None:
            continue  # not rendered by this process: leave the name to Spark
        if spark is None:
            spark = get_session(server_side_parameters)
        with _LOCK:
            _refresh_snapshot_view(spark, name, target)


def _refresh_snapshot_view(spark: SparkSession, name: str, target: tuple[str, str]) -> None:
    schema, identifier = target
    registered = _REGISTERED.get(name)
    base_path = registered[0] if registered else catalog_base_path(spark, schema, identifier)
    if base_path is None:
        raise DbtRuntimeError(
            f"Hudi model {schema}.{identifier} has no catalog entry with a "
            f"'{BASE_PATH_PROPERTY}' property: build it first (dbt run -s {identifier})"
        )
    current = spark_table(base_path, spark).timeline_hash()
    if registered == (base_path, current) and spark.catalog.tableExists(name):
        return
    register_snapshot_view(spark, schema, identifier, base_path, current)
