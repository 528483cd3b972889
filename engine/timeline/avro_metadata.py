"""Timeline records and their one Avro codec.

Hudi's timeline records (plans and metadata of rollback, clean, compaction, replace, savepoint
and restore; commit metadata of layout 2; the archived entries of both layouts) are written once,
as ``.avsc`` files in ``engine/timeline/schemas/`` named by their full name
(``org.apache.hudi.avro.model.<Record>.avsc``), one per record type that more than one record
refers to or that is stored by itself. fastavro loads a schema with the records it names (its
``FlatDictRepository``), once per process.

Java stores a record as an Avro object container file (``Obj\\x01``, null codec) holding exactly
one record, read back with the writer schema resolved against its own generated classes, so a
field list that matches Hudi's by name and type is what matters (``HoodieWriteStat`` follows the
writer schema Hudi 1.x commits carry; Hudi 0.15 reads the fields it knows). :func:`serialize` is
the one encoder, :func:`deserialize` the one decoder. Which coding a commit's metadata has (JSON
in layout 1, Avro in layout 2) is the layout's to say (:mod:`engine.timeline.layout`).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import load_schema

from engine.errors import TimelineError

__all__ = [
    "ARCHIVED_META_ENTRY_SCHEMA",
    "CLEANER_PLAN_SCHEMA",
    "CLEAN_METADATA_SCHEMA",
    "COMMIT_METADATA_SCHEMA",
    "COMPACTION_PLAN_SCHEMA",
    "LSM_TIMELINE_INSTANT_SCHEMA",
    "NAMESPACE",
    "REPLACE_COMMIT_METADATA_SCHEMA",
    "REQUESTED_REPLACE_METADATA_SCHEMA",
    "RESTORE_METADATA_SCHEMA",
    "RESTORE_PLAN_SCHEMA",
    "ROLLBACK_METADATA_SCHEMA",
    "ROLLBACK_PLAN_SCHEMA",
    "SAVEPOINT_METADATA_SCHEMA",
    "SCHEMA_DIR",
    "TIMELINE_SCHEMAS",
    "WRITE_STAT_SCHEMA",
    "TimelineSchema",
    "deserialize",
    "serialize",
]

NAMESPACE = "org.apache.hudi.avro.model"
SCHEMA_DIR = Path(__file__).parent / "schemas"


@dataclass(frozen=True)
class TimelineSchema:
    """One timeline record type, by its name in :data:`NAMESPACE`; its ``.avsc`` file is read
    the first time the schema is asked for."""

    name: str

    @property
    def full_name(self) -> str:
        return f"{NAMESPACE}.{self.name}"

    @property
    def path(self) -> Path:
        return SCHEMA_DIR / f"{self.full_name}.avsc"

    @cached_property
    def parsed(self) -> Any:
        """The schema fastavro writes and resolves with (the records it names included)."""
        if not self.path.is_file():
            raise TimelineError(f"No Avro schema file for {self.full_name} at {self.path}")
        return load_schema(str(self.path))

    @cached_property
    def as_dict(self) -> dict[str, Any]:
        """The schema as JSON data, every named record it uses written out where first used,
        each named by ``name`` and ``namespace`` as Hudi's own schemas are."""
        named: dict[str, Any] = _spelled_as_hudi(self.parsed)
        return {k: v for k, v in named.items() if not k.startswith("__")}

    @cached_property
    def json(self) -> str:
        """The schema's JSON text (log block headers and Parquet footers carry it)."""
        return json.dumps(self.as_dict)


def _spelled_as_hudi(node: Any) -> Any:
    """fastavro writes a named type's full name in ``name``; Hudi's schemas (and the readers
    that compare names) have the short name and a ``namespace``."""
    if isinstance(node, list):
        return [_spelled_as_hudi(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _spelled_as_hudi(v) for k, v in node.items()}
    name = out.get("name")
    if out.get("type") in ("record", "enum", "fixed") and isinstance(name, str) and "." in name:
        out["namespace"], out["name"] = name.rsplit(".", 1)
    return out


ROLLBACK_PLAN_SCHEMA = TimelineSchema("HoodieRollbackPlan")
ROLLBACK_METADATA_SCHEMA = TimelineSchema("HoodieRollbackMetadata")
CLEANER_PLAN_SCHEMA = TimelineSchema("HoodieCleanerPlan")
CLEAN_METADATA_SCHEMA = TimelineSchema("HoodieCleanMetadata")
COMPACTION_PLAN_SCHEMA = TimelineSchema("HoodieCompactionPlan")
# Hudi's insert_overwrite writes this record with every field null; a clustering carries its
# plan here (HoodieClusteringPlan: input groups of HoodieSliceInfo, a HoodieClusteringStrategy)
REQUESTED_REPLACE_METADATA_SCHEMA = TimelineSchema("HoodieRequestedReplaceMetadata")
# what `<t>.savepoint` holds in every table version: the files of the slices it pins
SAVEPOINT_METADATA_SCHEMA = TimelineSchema("HoodieSavepointMetadata")
RESTORE_PLAN_SCHEMA = TimelineSchema("HoodieRestorePlan")
RESTORE_METADATA_SCHEMA = TimelineSchema("HoodieRestoreMetadata")
WRITE_STAT_SCHEMA = TimelineSchema("HoodieWriteStat")
COMMIT_METADATA_SCHEMA = TimelineSchema("HoodieCommitMetadata")
REPLACE_COMMIT_METADATA_SCHEMA = TimelineSchema("HoodieReplaceCommitMetadata")
# the records of a layout-1 archive file (.hoodie/archived/.commits_.archive.N)
ARCHIVED_META_ENTRY_SCHEMA = TimelineSchema("HoodieArchivedMetaEntry")
# the rows of a layout-2 LSM history file (.hoodie/timeline/history)
LSM_TIMELINE_INSTANT_SCHEMA = TimelineSchema("HoodieLSMTimelineInstant")

#: every schema file's record type (the shared records a file refers to included)
TIMELINE_SCHEMAS = (
    *(
        TimelineSchema(name)
        for name in (
            "HoodieInstantInfo",
            "HoodieCleanPartitionMetadata",
            "HoodieWriteStat",
            "HoodieSliceInfo",
            "HoodieClusteringGroup",
            "HoodieClusteringStrategy",
            "HoodieClusteringPlan",
        )
    ),
    ROLLBACK_PLAN_SCHEMA,
    ROLLBACK_METADATA_SCHEMA,
    CLEANER_PLAN_SCHEMA,
    CLEAN_METADATA_SCHEMA,
    COMPACTION_PLAN_SCHEMA,
    REQUESTED_REPLACE_METADATA_SCHEMA,
    SAVEPOINT_METADATA_SCHEMA,
    RESTORE_PLAN_SCHEMA,
    RESTORE_METADATA_SCHEMA,
    COMMIT_METADATA_SCHEMA,
    REPLACE_COMMIT_METADATA_SCHEMA,
    ARCHIVED_META_ENTRY_SCHEMA,
    LSM_TIMELINE_INSTANT_SCHEMA,
)


def serialize(schema: TimelineSchema | dict[str, Any], record: dict[str, Any]) -> bytes:
    """One record as an Avro container file, the way Hudi stores timeline plans and metadata;
    ``schema`` is a timeline record type, or a parsed schema derived from one (an older
    release's shape of the record)."""
    parsed = schema.parsed if isinstance(schema, TimelineSchema) else schema
    buf = io.BytesIO()
    fastavro.writer(buf, parsed, [record], codec="null")
    return buf.getvalue()


def deserialize(data: bytes, *, source: str = "timeline metadata") -> dict[str, Any]:
    """The single record of an Avro container file written by Hudi or by :func:`serialize`,
    read with its own writer schema (the container carries it)."""
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except (ValueError, EOFError, fastavro.read.SchemaResolutionError) as e:
        raise TimelineError(f"Failed to parse Avro {source}: {e}") from e
    if len(records) != 1 or not isinstance(records[0], dict):
        raise TimelineError(f"Expected one record in {source}, found {len(records)}")
    return records[0]
