"""dbt sources that are Hudi tables another pipeline writes.

A source table declares where the Hudi table lives, in dbt's ``external`` properties::

    sources:
      - name: lake
        tables:
          - name: trips
            external:
              location: s3a://lake/trips      # the Hudi table's base path
              file_format: hudi

``{{ source('lake', 'trips') }}`` then renders as the session view
``hudi_source__<schema>__<table>``, and the connection registers that view (the engine's
snapshot read of the base path) before **every** statement that names it, so each statement reads
the latest snapshot committed when it starts: copy-on-write or merge-on-read, any table version
the engine reads (6, 8, 9). Rendering stays pure (no Spark), like the snapshot views of
merge-on-read models (``relation.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from dbt_common.exceptions import CompilationError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCE_VIEW_PREFIX = "hudi_source__"
FILE_FORMAT = "hudi"

# view name -> the Hudi table's base path; filled while SQL is rendered, read before it runs
SOURCE_VIEWS: dict[str, str] = {}
_LOCK = threading.Lock()


def format_source_view_name(schema: str, identifier: str) -> str:
    """The session view name that stands for Hudi source table ``schema.identifier``."""
    return f"{SOURCE_VIEW_PREFIX}{schema}__{identifier}"


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def hudi_source_location(relation_config: Any) -> str | None:
    """The base path of a source table declared ``external: {file_format: hudi}``, else None.

    Raises:
        CompilationError: ``file_format: hudi`` without a ``location``.
    """
    if str(_get(relation_config, "resource_type") or "") != "source":
        return None
    external = _get(relation_config, "external")
    file_format = _get(external, "file_format")
    if not isinstance(file_format, str) or file_format.strip().lower() != FILE_FORMAT:
        return None
    location = _get(external, "location")
    if not isinstance(location, str) or not location.strip():
        name = f"{_get(relation_config, 'source_name')}.{_get(relation_config, 'name')}"
        raise CompilationError(
            f"Source {name}: external.file_format 'hudi' needs external.location, the Hudi "
            "table's base path"
        )
    return location.strip()


def remember_source_view(schema: str, identifier: str, location: str) -> str:
    """Record the view name standing for a Hudi source (at render time) and return it."""
    name = format_source_view_name(schema, identifier)
    with _LOCK:
        SOURCE_VIEWS[name] = location
    return name


def register_source_views(spark: SparkSession, names: Iterable[str]) -> None:
    """(Re)register each named Hudi source view over its table's latest committed snapshot."""
    from engine import read_hudi

    for name in names:
        location = SOURCE_VIEWS.get(name)
        if location is not None:
            read_hudi(spark, location).createOrReplaceTempView(name)
