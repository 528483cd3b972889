"""How a Hudi model is named in the SQL of the models, tests and hooks that read it.

A Hudi table's snapshot changes with every commit, whoever makes it (another dbt invocation,
Apache Hudi's writers, a table service, a rollback), and only the engine knows which files it is
made of. So SQL never names a Hudi model's catalog object (see ``publish.py``): ``ref()`` to any
Hudi model — ``hudi_upsert``, ``hudi_insert_overwrite``, ``hudi_mor``, and dbt-spark
``file_format='hudi'`` tables, incremental models, seeds and snapshots — and ``{{ this }}`` rendered
while the model itself runs (an ``is_incremental()`` filter) render as a session view name::

    `hudi_snapshot__{schema}__{identifier}`

that the connection (re)registers over the table's latest committed snapshot before every
statement naming it, whenever the table's timeline changed (``publish.ensure_snapshot_views``).
Rendering stays pure: it records the view name in :data:`SNAPSHOT_VIEWS` and touches no Spark,
so ``dbt parse`` and ``dbt compile`` work without a session. The manifest's ``relation_name`` and
log lines (rendered outside the node's run) keep the catalog name; DDL, grants and docs address
the catalog object through ``catalog_relation()``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from dbt.adapters.spark.relation import SparkRelation

from dbt.adapters.hudi.sources import hudi_source_location, remember_source_view

MOR_MATERIALIZATION = "hudi_mor"
HUDI_MATERIALIZATIONS = ("hudi_upsert", "hudi_insert_overwrite", MOR_MATERIALIZATION)
SNAPSHOT_VIEW_PREFIX = "hudi_snapshot__"
HUDI_VIEW_PREFIX = "hudi_view__"
# the materializations a view over a Hudi model can reach it through (their SQL is inlined)
_PASS_THROUGH = ("view", "ephemeral")

# view name -> (schema, identifier); filled while SQL is rendered, read before it runs
SNAPSHOT_VIEWS: dict[str, tuple[str, str]] = {}
# session name of a `view` model over Hudi models -> (schema, identifier); likewise
HUDI_VIEWS: dict[str, tuple[str, str]] = {}
_LOCK = threading.Lock()


def format_snapshot_view_name(schema: str, identifier: str) -> str:
    """The session view name that stands for merge-on-read model ``schema.identifier``."""
    return f"{SNAPSHOT_VIEW_PREFIX}{schema}__{identifier}"


def format_hudi_view_name(schema: str, identifier: str) -> str:
    """The session view name that stands for ``view`` model ``schema.identifier`` over Hudi
    models (see ``views.py``)."""
    return f"{HUDI_VIEW_PREFIX}{schema}__{identifier}"


def _config_value(relation_config: Any, key: str) -> Any:
    config = getattr(relation_config, "config", None)
    if config is None:
        return None
    if isinstance(config, Mapping):
        return config.get(key)
    getter = getattr(config, "get", None)
    return getter(key) if callable(getter) else getattr(config, key, None)


def _materialized(relation_config: Any) -> str | None:
    value = _config_value(relation_config, "materialized")
    return value if isinstance(value, str) else None


def is_hudi_node(relation_config: Any) -> bool:
    """Whether a node writes a Hudi table: a ``hudi_*`` materialization, or a dbt-spark table,
    incremental model, seed or snapshot with ``file_format='hudi'``."""
    if _materialized(relation_config) in HUDI_MATERIALIZATIONS:
        return True
    file_format = _config_value(relation_config, "file_format")
    return isinstance(file_format, str) and file_format.strip().lower() == "hudi"


def _project_manifest() -> Any:
    """The manifest dbt handed the hudi adapter of this process (its macro resolver), if any."""
    try:
        from dbt.adapters.factory import get_adapter_by_type

        adapter = get_adapter_by_type("hudi")  # type: ignore[no-untyped-call]
        return getattr(adapter, "_macro_resolver", None)
    except Exception:  # no hudi adapter registered in this process
        return None


def reads_hudi(relation_config: Any, manifest: Any) -> bool:
    """Whether a node's SQL reads a Hudi model or a Hudi source: directly, or through the views
    and ephemeral models it selects from (their SQL reads the same session views)."""
    nodes = getattr(manifest, "nodes", None) or {}
    sources = getattr(manifest, "sources", None) or {}
    seen: set[str] = set()
    pending = [relation_config]
    while pending:
        depends_on = getattr(pending.pop(), "depends_on", None)
        for unique_id in getattr(depends_on, "nodes", None) or ():
            upstream = nodes.get(unique_id) or sources.get(unique_id)
            if upstream is None or unique_id in seen:
                continue
            seen.add(unique_id)
            if is_hudi_node(upstream) or hudi_source_location(upstream) is not None:
                return True
            if _materialized(upstream) in _PASS_THROUGH:
                pending.append(upstream)
    return False


# the answers of :func:`reads_hudi` for the manifest they were computed on: ``ref()`` renders a
# view model many times per run (each model that selects from it, each compile), and the walk
# through its upstream views would repeat; a new manifest (a new invocation) starts afresh
_READS_HUDI: tuple[Any, dict[str, bool]] = (None, {})
_READS_HUDI_LOCK = threading.Lock()


def _is_view_over_hudi(relation_config: Any) -> bool:
    """A ``view`` model that reads Hudi models (``ref()`` renders its session view)."""
    global _READS_HUDI
    if _materialized(relation_config) != "view":
        return False
    manifest = _project_manifest()
    if manifest is None:
        return False
    unique_id = getattr(relation_config, "unique_id", None)
    with _READS_HUDI_LOCK:
        if _READS_HUDI[0] is not manifest:
            _READS_HUDI = (manifest, {})
        answers = _READS_HUDI[1]
        if unique_id is None or unique_id not in answers:
            answer = reads_hudi(relation_config, manifest)
            if unique_id is None:
                return answer
            answers[unique_id] = answer
        return answers[unique_id]


def _running_node(relation_config: Any) -> bool:
    """Whether the calling thread runs this node now: dbt names a node's connection after its
    ``unique_id`` while it compiles and executes the node, and only then (the manifest's
    ``relation_name`` is rendered at parse time, with no such connection)."""
    unique_id = getattr(relation_config, "unique_id", None)
    if not unique_id:
        return False
    try:
        from dbt.adapters.factory import get_adapter_by_type

        connection = get_adapter_by_type("hudi").connections.get_if_exists()  # type: ignore[no-untyped-call]
    except Exception:  # no hudi adapter registered in this process: not running
        return False
    return connection is not None and connection.name == unique_id


@dataclass(frozen=True, eq=False, repr=False)
class HudiRelation(SparkRelation):
    """A Spark relation that knows whether it stands for a Hudi model's snapshot, or for a
    ``view`` model over Hudi models.

    Attributes:
        hudi_snapshot: render as the Hudi model's session snapshot view instead of the catalog
            name.
        hudi_view: render as the view model's session view (``views.py``) instead of the
            catalog name.
    """

    hudi_snapshot: bool = False
    hudi_view: bool = False
    hudi_source_location: str | None = None

    @classmethod
    def create_from(cls, quoting: Any, relation_config: Any, **kwargs: Any) -> HudiRelation:
        """Build the relation of a node; ``ref()`` to a Hudi model, and ``this`` while the
        model runs, read its latest committed snapshot.

        dbt-core's ``ref()`` passes ``event_time_filter`` (and ``limit``); ``this``, the
        manifest's ``relation_name`` and log lines do not.
        """
        is_ref = "event_time_filter" in kwargs
        relation = super().create_from(quoting, relation_config, **kwargs)
        location = hudi_source_location(relation_config)
        if location is not None:  # a Hudi table another pipeline writes (sources.py)
            return cast(HudiRelation, relation.incorporate(hudi_source_location=location))
        # ``this`` is built with no keyword (dbt's own display name passes a quote policy)
        is_this = not kwargs and _running_node(relation_config)
        if is_hudi_node(relation_config) and (is_ref or is_this):
            return cast(HudiRelation, relation.incorporate(hudi_snapshot=True))
        if is_ref and _is_view_over_hudi(relation_config):
            return cast(HudiRelation, relation.incorporate(hudi_view=True))
        return relation

    def incorporate(self, **kwargs: Any) -> Any:
        """dbt's ``incorporate``; a relation renamed from a snapshot relation (a temporary
        relation ``make_temp_relation`` derives) is a plain name, not a session view."""
        path = kwargs.get("path")
        renamed = isinstance(path, Mapping) and path.get("identifier", self.identifier) != (
            self.identifier
        )
        if renamed:
            for flag in ("hudi_snapshot", "hudi_view"):
                if getattr(self, flag) and flag not in kwargs:
                    kwargs[flag] = False
        return super().incorporate(**kwargs)  # type: ignore[no-untyped-call]

    @property
    def snapshot_view_name(self) -> str:
        """The session view name of this relation's snapshot."""
        return format_snapshot_view_name(self.schema or "", self.identifier or "")

    def render(self) -> str:
        if self.hudi_source_location and self.identifier:
            name = remember_source_view(
                self.schema or "", self.identifier, self.hudi_source_location
            )
            return str(self.quoted(name))  # type: ignore[no-untyped-call]
        if not self.identifier or not (self.hudi_snapshot or self.hudi_view):
            return super().render()
        target = (self.schema or "", self.identifier)
        if self.hudi_view:
            name = format_hudi_view_name(*target)
            with _LOCK:
                HUDI_VIEWS[name] = target
        else:
            name = self.snapshot_view_name
            with _LOCK:
                SNAPSHOT_VIEWS[name] = target
        return str(self.quoted(name))  # type: ignore[no-untyped-call]

    def snapshot_relation(self) -> HudiRelation:
        """This relation as its session snapshot view (merge-on-read models)."""
        return cast(HudiRelation, self.incorporate(hudi_snapshot=True))

    def catalog_relation(self) -> HudiRelation:
        """This relation as its catalog object (for DDL, grants, docs)."""
        return cast(HudiRelation, self.incorporate(hudi_snapshot=False, hudi_view=False))
