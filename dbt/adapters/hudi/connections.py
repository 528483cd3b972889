"""Profile credentials and the connection manager of ``type: hudi``.

Everything dbt-spark connects with keeps working (``method: session``, ``thrift``, ``http``,
``odbc``, and Spark Connect through ``session`` with ``SPARK_REMOTE``); a Hudi write additionally
needs the SparkSession to live in the dbt process, which only ``session`` provides.

Opening a ``session`` connection registers the engine's ``hudi`` data source in the session,
so hooks, run-operations and ``dbt show`` can read any Hudi table by path
(``CREATE TEMPORARY VIEW v USING hudi OPTIONS (path '...')``, ``spark.read.format("hudi")``).

Before a statement runs, the connection registers the snapshot views of the merge-on-read Hudi
models the statement names (see ``relation.py``), so SQL rendered in one process and run in a
fresh one (``dbt run -s downstream_only``) reads the latest committed snapshot; and it
re-registers the views of the Hudi sources it names (``sources.py``), so each statement reads
the snapshot committed when it starts; the session views of ``view`` models over Hudi models
(``views.py``) it names are registered, and the snapshots beneath them refreshed, likewise.

With ``method: session`` every statement finds its session through the adapter's
``publish.get_session``, as dbt-spark's cursor does, except that over Spark Connect the
server's static settings (its catalog, warehouse, memory) are not asked for again on every
statement: pyspark would warn each time.
"""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)

from dbt.adapters.hudi.relation import HUDI_VIEW_PREFIX, SNAPSHOT_VIEW_PREFIX
from dbt.adapters.hudi.sources import SOURCE_VIEW_PREFIX

_SNAPSHOT_VIEW_RE = re.compile(rf"`({re.escape(SNAPSHOT_VIEW_PREFIX)}[^`]+)`")
_SOURCE_VIEW_RE = re.compile(rf"`({re.escape(SOURCE_VIEW_PREFIX)}[^`]+)`")
_HUDI_VIEW_RE = re.compile(rf"`({re.escape(HUDI_VIEW_PREFIX)}[^`]+)`")
# sessions the data source is registered in (a registration lasts as long as its session)
_REGISTERED: weakref.WeakSet[Any] = weakref.WeakSet()
_REGISTER_LOCK = threading.Lock()


def register_data_source(server_side_parameters: dict[str, str] | None) -> None:
    """Register the engine's ``hudi`` data source in the process's session, once per session."""
    from dbt.adapters.hudi.publish import get_session
    from engine import register_data_source as register

    spark = get_session(server_side_parameters)
    with _REGISTER_LOCK:
        if spark not in _REGISTERED:
            register(spark)
            _REGISTERED.add(spark)


@dataclass
class HudiCredentials(SparkCredentials):
    """dbt-spark's credentials plus the root under which Hudi tables are created.

    Attributes:
        hudi_base_path: default root of Hudi base paths (``<root>/<schema>/<alias>``); when
            unset, the Spark warehouse directory is the root.
    """

    hudi_base_path: str | None = None

    @property
    def type(self) -> str:
        return "hudi"

    def _connection_keys(self) -> tuple[str, ...]:
        return (*super()._connection_keys(), "method", "hudi_base_path")

    @property
    def has_session(self) -> bool:
        """True when the SparkSession runs in this process (embedded, cluster or Connect)."""
        return bool(self.method == SparkConnectionMethod.SESSION)


class HudiConnectionManager(SparkConnectionManager):
    """dbt-spark's connection manager; registers snapshot views a statement needs first."""

    TYPE = "hudi"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        opened: Connection = super().open(connection)
        credentials = opened.credentials
        if isinstance(credentials, HudiCredentials) and credentials.has_session:
            from dbt.adapters.hudi.session_cursor import HudiSessionConnection, session_handle

            if not isinstance(getattr(opened.handle, "handle", None), HudiSessionConnection):
                opened.handle = session_handle(credentials.server_side_parameters)
            register_data_source(credentials.server_side_parameters)
        return opened

    def add_query(self, sql: str, *args: Any, **kwargs: Any) -> tuple[Connection, Any]:
        names = set(_SNAPSHOT_VIEW_RE.findall(sql)) if SNAPSHOT_VIEW_PREFIX in sql else set()
        sources = set(_SOURCE_VIEW_RE.findall(sql)) if SOURCE_VIEW_PREFIX in sql else set()
        views = set(_HUDI_VIEW_RE.findall(sql)) if HUDI_VIEW_PREFIX in sql else set()
        if names or sources or views:
            credentials = self.get_thread_connection().credentials
            if isinstance(credentials, HudiCredentials) and credentials.has_session:
                from dbt.adapters.hudi.publish import ensure_snapshot_views, get_session
                from dbt.adapters.hudi.sources import register_source_views
                from dbt.adapters.hudi.views import ensure_hudi_views

                params = credentials.server_side_parameters
                ensure_snapshot_views(sorted(names), params)
                if sources:
                    register_source_views(get_session(params), sorted(sources))
                ensure_hudi_views(sorted(views), params)
        return super().add_query(sql, *args, **kwargs)
