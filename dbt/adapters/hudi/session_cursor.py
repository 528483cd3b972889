"""The ``method: session`` connection handle: dbt-spark's cursor with the adapter's session.

dbt-spark's cursor rebuilds the session for every statement with Hive support and the
profile's ``server_side_parameters``. Embedded, that is what ``publish.get_session`` does too;
over Spark Connect ``get_session`` leaves out what the server fixed when it started (its
catalog, warehouse, memory), which pyspark would otherwise warn about on every statement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dbt.adapters.spark.session import Connection, Cursor, SessionConnectionWrapper
from dbt_common.exceptions import DbtRuntimeError
from pyspark.errors import AnalysisException

from dbt.adapters.hudi.publish import get_session


class HudiSessionCursor(Cursor):
    """A cursor whose statements run on :func:`get_session`'s session."""

    def execute(self, sql: str, *parameters: Any) -> None:
        if parameters:
            sql = sql % parameters
        spark = get_session(self.server_side_parameters)
        try:
            self._df = spark.sql(sql)
        except AnalysisException as exc:
            raise DbtRuntimeError(str(exc)) from exc


class HudiSessionConnection(Connection):
    """dbt-spark's session connection handing out :class:`HudiSessionCursor`."""

    def cursor(self) -> HudiSessionCursor:
        return HudiSessionCursor(server_side_parameters=self.server_side_parameters)


def session_handle(server_side_parameters: Mapping[str, str]) -> SessionConnectionWrapper:
    """The handle of an opened ``method: session`` connection."""
    return SessionConnectionWrapper(
        HudiSessionConnection(server_side_parameters=dict(server_side_parameters))
    )
