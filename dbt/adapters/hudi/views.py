"""``view`` models over Hudi models: dbt's default materialization, live in every dbt session.

A Hudi model's snapshot is a session view (``publish.py``), and Spark refuses a persistent view
over a temporary one. So a ``view`` model whose SQL reads Hudi models or Hudi sources (directly,
or through other such views and ephemeral models) is two objects:

* **Catalog view** ``schema.identifier``: what ``dbt docs``, ``dbt ls`` and the catalog show, a
  real view with the model's columns. Its text is the model's SQL with each session view it
  reads replaced by that model's catalog entry (a view over a view: the upstream view's catalog
  name; a Hudi source: a query with the source's columns that refuses to be read). Read outside
  dbt it fails as the Hudi model's own catalog entry does, naming the base path and how to read
  the table: never a stale or empty answer.
* **Session view** ``hudi_view__{schema}__{identifier}``: what ``ref()`` renders to
  (``relation.py``), a temporary view of the model's SQL as compiled, over the session views of
  the Hudi models it reads. Spark resolves a temporary view's text anew on every query, by name,
  so it reads whatever those views are now; and the connection refreshes them before every
  statement that names the view (:func:`ensure_hudi_views`), exactly as for a Hudi model
  itself. The compiled SQL and the session views it names are kept on the catalog view
  (property ``dbt_hudi.session_view``), so a fresh process (``dbt run -s downstream``,
  ``dbt show``) registers the session view from the catalog alone.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.hudi.publish import (
    catalog_properties,
    ensure_snapshot_views,
    format_catalog_name,
    get_session,
    quote_string,
    unreadable_message,
    unreadable_select,
)
from dbt.adapters.hudi.relation import (
    HUDI_VIEW_PREFIX,
    HUDI_VIEWS,
    SNAPSHOT_VIEW_PREFIX,
    SNAPSHOT_VIEWS,
)
from dbt.adapters.hudi.sources import SOURCE_VIEW_PREFIX, SOURCE_VIEWS, register_source_views

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SESSION_VIEW_PROPERTY = "dbt_hudi.session_view"
_SESSION_NAME = re.compile(
    "`((?:"
    + "|".join(re.escape(p) for p in (SNAPSHOT_VIEW_PREFIX, SOURCE_VIEW_PREFIX, HUDI_VIEW_PREFIX))
    + ")[^`]+)`"
)
_LOCK = threading.RLock()
# session view name -> its definition, for the views this process defined or loaded
_DEFINITIONS: dict[str, SessionView] = {}


@dataclass(frozen=True)
class SessionView:
    """A view model's session view: its compiled SQL and what each session name in it stands
    for (``[schema, identifier]`` of a Hudi model or view model, the base path of a source)."""

    name: str
    sql: str
    snapshots: Mapping[str, tuple[str, str]]
    sources: Mapping[str, str]
    views: Mapping[str, tuple[str, str]]

    def to_json(self) -> str:
        return json.dumps(
            {
                "sql": self.sql,
                "snapshots": {k: list(v) for k, v in self.snapshots.items()},
                "sources": dict(self.sources),
                "views": {k: list(v) for k, v in self.views.items()},
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, name: str, text: str) -> SessionView:
        data = json.loads(text)
        return cls(
            name=name,
            sql=str(data["sql"]),
            snapshots={k: (str(v[0]), str(v[1])) for k, v in data["snapshots"].items()},
            sources={k: str(v) for k, v in data["sources"].items()},
            views={k: (str(v[0]), str(v[1])) for k, v in data["views"].items()},
        )


def session_names(sql: str) -> list[str]:
    """The session views (Hudi snapshots, Hudi sources, views over them) ``sql`` names."""
    return sorted(set(_SESSION_NAME.findall(sql)))


def reads_session_views(sql: str) -> bool:
    return bool(_SESSION_NAME.search(sql))


def _definition(name: str, sql: str) -> SessionView:
    """What ``sql``'s session names stand for, from what this process rendered or loaded."""
    names = session_names(sql)
    snapshots = {n: SNAPSHOT_VIEWS[n] for n in names if n in SNAPSHOT_VIEWS}
    sources = {n: SOURCE_VIEWS[n] for n in names if n in SOURCE_VIEWS}
    views = {n: HUDI_VIEWS[n] for n in names if n in HUDI_VIEWS}
    unknown = [n for n in names if n not in snapshots and n not in sources and n not in views]
    if unknown:
        raise DbtRuntimeError(
            f"View {name} names session views this process did not render: {', '.join(unknown)}"
        )
    return SessionView(name, sql, snapshots, sources, views)


def catalog_text(spark: SparkSession, view: SessionView) -> str:
    """The catalog view's text: ``view.sql`` with each session name replaced by what reads as
    it does outside dbt (a Hudi model's or view model's catalog name; for a Hudi source, a
    query that refuses to be read, naming its base path)."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        target = view.snapshots.get(name) or view.views.get(name)
        if target is not None:
            return format_catalog_name(*target)
        location = view.sources[name]
        columns = spark.table(f"`{name}`").schema
        message = unreadable_message(f"Hudi source {name}", location)
        return f"({unreadable_select(columns, message)})"

    return _SESSION_NAME.sub(replace, view.sql)


def define_view(
    schema: str, identifier: str, sql: str, server_side_parameters: Mapping[str, str]
) -> tuple[str, str]:
    """Define view model ``schema.identifier`` over Hudi models from its compiled ``sql``:
    register its session view, and return the catalog view's text and the ``TBLPROPERTIES``
    clause that keeps the session view's definition."""
    from dbt.adapters.hudi.relation import format_hudi_view_name

    name = format_hudi_view_name(schema, identifier)
    view = _definition(name, sql)
    spark = get_session(server_side_parameters)
    with _LOCK:
        _ensure_dependencies(spark, view, server_side_parameters, seen={name})
        _DEFINITIONS[name] = view
        HUDI_VIEWS[name] = (schema, identifier)
        _register(spark, view)
        properties = f"TBLPROPERTIES ({quote_string(SESSION_VIEW_PROPERTY)} = "
        return catalog_text(spark, view), f"{properties}{quote_string(view.to_json())})"


def _register(spark: SparkSession, view: SessionView) -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{view.name}` AS {view.sql}")


def _load(spark: SparkSession, name: str, target: tuple[str, str]) -> SessionView:
    """The definition kept on the catalog view ``target`` (a view built by another process)."""
    text = catalog_properties(spark, *target).get(SESSION_VIEW_PROPERTY)
    if text is None:
        raise DbtRuntimeError(
            f"View model {target[0]}.{target[1]} reads Hudi models, but its catalog view has no "
            f"'{SESSION_VIEW_PROPERTY}' property: build it first (dbt run -s {target[1]})"
        )
    return SessionView.from_json(name, text)


def _ensure_dependencies(
    spark: SparkSession,
    view: SessionView,
    server_side_parameters: Mapping[str, str],
    seen: set[str],
) -> None:
    """Bring the session views ``view`` reads to their tables' latest commits."""
    with _LOCK:
        SNAPSHOT_VIEWS.update(view.snapshots)
        SOURCE_VIEWS.update(view.sources)
        HUDI_VIEWS.update(view.views)
    ensure_snapshot_views(sorted(view.snapshots), server_side_parameters)
    if view.sources:
        register_source_views(spark, sorted(view.sources))
    _ensure(spark, sorted(set(view.views) - seen), server_side_parameters, seen)


def _ensure(
    spark: SparkSession, names: Iterable[str], params: Mapping[str, str], seen: set[str]
) -> None:
    for name in names:
        target = HUDI_VIEWS.get(name)
        if target is None:
            continue  # not rendered by this process: leave the name to Spark
        seen.add(name)
        with _LOCK:
            view = _DEFINITIONS.get(name)
            if view is None:
                view = _DEFINITIONS[name] = _load(spark, name, target)
            _ensure_dependencies(spark, view, params, seen)
            if not spark.catalog.tableExists(name):
                _register(spark, view)


def ensure_hudi_views(names: Iterable[str], server_side_parameters: Mapping[str, str]) -> None:
    """Make each named view model's session view exist in this session and read the latest
    committed snapshots of the Hudi tables beneath it.

    Raises:
        DbtRuntimeError: a view model reading Hudi models was never built.
    """
    wanted = [n for n in names if n in HUDI_VIEWS]
    if wanted:
        _ensure(get_session(server_side_parameters), wanted, server_side_parameters, set())
