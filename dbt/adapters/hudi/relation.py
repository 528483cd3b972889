"""How a Hudi model is named in the SQL of the models, tests and hooks that read it.

A copy-on-write model is read through its catalog table, which lists exactly the latest base
files (see ``snapshot.py``), so it renders like any Spark relation: ``schema.identifier``.

A merge-on-read model cannot be read exactly by a catalog object Spark understands natively: its
snapshot merges log blocks into base files, which only the engine does. ``ref()`` to it therefore
renders as a session view name::

    `hudi_snapshot__{schema}__{identifier}`

that the connection registers (``read_hudi`` over the table's base path, found in the catalog
table's properties) before it runs any statement naming it. Rendering stays pure: it records the
view name in :data:`SNAPSHOT_VIEWS` and touches no Spark, so ``dbt parse`` and ``dbt compile``
work without a session. ``{{ this }}`` and the names in logs and the manifest stay the catalog
name (the read-optimized table); ``{{ hudi_snapshot(this) }}`` reads the snapshot instead.
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

# view name -> (schema, identifier); filled while SQL is rendered, read before it runs
SNAPSHOT_VIEWS: dict[str, tuple[str, str]] = {}
_LOCK = threading.Lock()


def format_snapshot_view_name(schema: str, identifier: str) -> str:
    """The session view name that stands for merge-on-read model ``schema.identifier``."""
    return f"{SNAPSHOT_VIEW_PREFIX}{schema}__{identifier}"


def _materialized(relation_config: Any) -> str | None:
    config = getattr(relation_config, "config", None)
    if config is None:
        return None
    if isinstance(config, Mapping):
        value = config.get("materialized")
    else:
        value = getattr(config, "materialized", None)
    return value if isinstance(value, str) else None


@dataclass(frozen=True, eq=False, repr=False)
class HudiRelation(SparkRelation):
    """A Spark relation that knows whether it stands for a merge-on-read Hudi model.

    Attributes:
        hudi_snapshot: render as the model's session snapshot view instead of the catalog
            name (merge-on-read models only).
    """

    hudi_snapshot: bool = False
    hudi_source_location: str | None = None

    @classmethod
    def create_from(cls, quoting: Any, relation_config: Any, **kwargs: Any) -> HudiRelation:
        """Build the relation of a node; ``ref()`` to a merge-on-read model reads its snapshot.

        dbt-core's ``ref()`` passes ``event_time_filter`` (and ``limit``); ``this``, the
        manifest's ``relation_name`` and log lines do not, so they keep the catalog name.
        """
        is_ref = "event_time_filter" in kwargs
        relation = super().create_from(quoting, relation_config, **kwargs)
        location = hudi_source_location(relation_config)
        if location is not None:  # a Hudi table another pipeline writes (sources.py)
            return cast(HudiRelation, relation.incorporate(hudi_source_location=location))  # type: ignore[no-untyped-call]
        if is_ref and _materialized(relation_config) == MOR_MATERIALIZATION:
            return cast(HudiRelation, relation.incorporate(hudi_snapshot=True))  # type: ignore[no-untyped-call]
        return relation

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
        if not self.hudi_snapshot or not self.identifier:
            return super().render()
        name = self.snapshot_view_name
        with _LOCK:
            SNAPSHOT_VIEWS[name] = (self.schema or "", self.identifier)
        return str(self.quoted(name))  # type: ignore[no-untyped-call]

    def snapshot_relation(self) -> HudiRelation:
        """This relation as its session snapshot view (merge-on-read models)."""
        return cast(HudiRelation, self.incorporate(hudi_snapshot=True))  # type: ignore[no-untyped-call]

    def catalog_relation(self) -> HudiRelation:
        """This relation as its catalog table (for DDL, grants, docs)."""
        return cast(HudiRelation, self.incorporate(hudi_snapshot=False))  # type: ignore[no-untyped-call]
