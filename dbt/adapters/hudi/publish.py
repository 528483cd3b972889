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

:func:`publish` does both after every commit, from one read plan of the snapshot; it writes the
catalog entry only when its definition (columns, base path, table type; recorded as a digest in
the entry's properties) or its docs change. It is the one entry point of the mechanism
(``HudiAdapter.hudi_publish``). Every table handle it opens carries the session's storage
settings (``spark_table``: S3 credentials given only as ``spark.hadoop.fs.s3a.*`` travel).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.hudi.relation import SNAPSHOT_VIEWS, format_snapshot_view_name
from dbt.adapters.hudi.timing import phase
from engine import spark_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

BASE_PATH_PROPERTY = "dbt_hudi.base_path"
TABLE_TYPE_PROPERTY = "dbt_hudi.table_type"
# a digest of the entry's columns and the two properties above: an unchanged entry is kept
DEFINITION_PROPERTY = "dbt_hudi.definition"
# the shape of the entry's query, part of the digest: an entry of an older shape is replaced
ENTRY_FORMAT = 2

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
    the profile's parameters); over Spark Connect only the settings the server accepts. A JVM
    it launches logs Spark's own lines to ``spark.log`` in dbt's log directory."""
    from engine import get_spark

    return get_spark(server_side_parameters, hive=True, log_file=spark_log_file())


def spark_log_file() -> str | None:
    """``spark.log`` beside dbt's ``dbt.log`` (dbt's ``--log-path``), when dbt runs."""
    import os

    try:
        from dbt.flags import get_flags

        log_path = getattr(get_flags(), "LOG_PATH", None)  # type: ignore[no-untyped-call]
    except Exception:  # dbt-core not driving this process (a library use of the adapter)
        return None
    if not log_path:
        return None
    os.makedirs(str(log_path), exist_ok=True)
    return os.path.join(os.path.abspath(str(log_path)), "spark.log")


def _quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(value: str) -> str:
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
    comments: Comments | None = None,
    instant_time: str | None = None,
) -> PublishedTable:
    """(Re)register ``schema.identifier``'s catalog entry and its snapshot view.

    The table's snapshot is planned once: its read plan gives the catalog entry its columns and
    is the snapshot view, the timeline hash taken just before it. The catalog entry is left as
    it is when its definition (columns, base path, table type) is unchanged and no new docs are
    given: a metastore write on every commit would change nothing.

    Args:
        spark: the dbt process's session.
        schema: the model's schema (Spark database).
        identifier: the model's alias.
        base_path: the Hudi table's base path.
        table_type: ``COPY_ON_WRITE`` or ``MERGE_ON_READ``.
        comments: docs for the entry; ``None`` keeps the current entry's.
        instant_time: the instant the caller just committed (else read from the timeline).
    """
    from engine import read_hudi

    table = spark_table(base_path, spark)
    properties = {BASE_PATH_PROPERTY: base_path, TABLE_TYPE_PROPERTY: table_type}
    with _LOCK:
        with phase("publish: snapshot read plan"):
            timeline_hash = table.timeline_hash()
            snapshot = read_hudi(spark, base_path)
        with phase("publish: catalog entry"):
            _publish_catalog_entry(
                spark, (schema, identifier), base_path, snapshot.schema, properties, comments
            )
        with phase("publish: snapshot view"):
            view = _register(spark, (schema, identifier), base_path, snapshot, timeline_hash)
    with phase("publish: latest instant"):
        latest = instant_time or table.latest_instant()
    return PublishedTable(
        catalog_name=f"{schema}.{identifier}",
        base_path=base_path,
        table_type=table_type,
        instant_time=latest,
        snapshot_view=view,
    )


def _definition_digest(columns: StructType, properties: Mapping[str, str]) -> str:
    """What a catalog entry is made of, docs aside: its columns (names, types, nullability)
    and properties (base path, table type)."""
    text = json.dumps(
        [ENTRY_FORMAT, columns.jsonValue(), sorted(properties.items())], sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _publish_catalog_entry(
    spark: SparkSession,
    name: tuple[str, str],
    base_path: str,
    columns: StructType,
    properties: Mapping[str, str],
    comments: Comments | None,
) -> bool:
    """Create or replace the catalog entry unless it already is this definition (recorded as
    the ``dbt_hudi.definition`` property) with these docs; whether it was written."""
    schema, identifier = name
    digest = _definition_digest(columns, properties)
    current = catalog_properties(spark, schema, identifier)
    if current.get(DEFINITION_PROPERTY) == digest:
        if comments is None or comments == existing_comments(spark, schema, identifier):
            return False
    kept = comments if comments is not None else existing_comments(spark, schema, identifier)
    _drop_table(spark, schema, identifier)
    recorded = {**properties, DEFINITION_PROPERTY: digest}
    spark.sql(_catalog_view_sql(schema, identifier, base_path, columns, recorded, kept))
    return True


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
    properties, and a query that fails every read (:func:`unreadable_select`)."""
    name = format_catalog_name(schema, identifier)
    column_comments = comments.columns or {}
    declared = ", ".join(
        _quote_identifier(f.name)
        + (f" COMMENT {quote_string(column_comments[f.name])}" if f.name in column_comments else "")
        for f in columns.fields
    )
    assignments = ", ".join(f"{quote_string(k)} = {quote_string(v)}" for k, v in properties.items())
    comment = f" COMMENT {quote_string(comments.table)}" if comments.table else ""
    message = unreadable_message(f"{schema}.{identifier}", base_path)
    return (
        f"CREATE OR REPLACE VIEW {name} ({declared}){comment} TBLPROPERTIES ({assignments}) "
        f"AS {unreadable_select(columns, message)}"
    )


def unreadable_select(columns: StructType, message: str) -> str:
    """A query with ``columns`` whose every read fails with ``message``.

    Each column is the error itself (cast to its type), so no predicate on a column folds to a
    constant: a literal ``NULL`` column would let the optimizer answer ``WHERE id > 1`` with
    zero rows without reading. The filter fails reads that project no column (``count(*)``).
    """
    error = f"raise_error({quote_string(message)})"
    selected = ", ".join(
        f"CAST({error} AS {f.dataType.simpleString()}) AS {_quote_identifier(f.name)}"
        for f in columns.fields
    )
    return f"SELECT {selected} WHERE {error} IS NULL"


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

    with _LOCK:
        if timeline_hash is None:
            timeline_hash = spark_table(base_path, spark).timeline_hash()
        snapshot = read_hudi(spark, base_path)
        return _register(spark, (schema, identifier), base_path, snapshot, timeline_hash)


def _register(
    spark: SparkSession,
    name: tuple[str, str],
    base_path: str,
    snapshot: DataFrame,
    timeline_hash: str,
) -> str:
    """Register ``snapshot`` (planned after ``timeline_hash`` was taken) as the model's view."""
    view = format_snapshot_view_name(*name)
    with _LOCK:
        snapshot.createOrReplaceTempView(view)
        SNAPSHOT_VIEWS[view] = name
        _REGISTERED[view] = (base_path, timeline_hash)
    return view


def catalog_properties(spark: SparkSession, schema: str, identifier: str) -> dict[str, str]:
    if not spark.catalog.tableExists(f"{schema}.{identifier}"):
        return {}
    rows = spark.sql(f"SHOW TBLPROPERTIES {format_catalog_name(schema, identifier)}").collect()
    return {str(r["key"]): str(r["value"]) for r in rows}


def catalog_base_path(spark: SparkSession, schema: str, identifier: str) -> str | None:
    """The base path recorded on ``schema.identifier``'s catalog table, if it is a Hudi model's."""
    return catalog_properties(spark, schema, identifier).get(BASE_PATH_PROPERTY) or None


def catalog_table_type(spark: SparkSession, schema: str, identifier: str) -> str | None:
    """The Hudi table type recorded on ``schema.identifier``'s catalog table, if any."""
    return catalog_properties(spark, schema, identifier).get(TABLE_TYPE_PROPERTY) or None


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
