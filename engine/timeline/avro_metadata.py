"""Avro-serialised timeline content: plans and metadata of rollback, clean, compaction, replace,
savepoint and restore.

Java stores these as an Avro object container file (``Obj\\x01``, null codec) holding exactly one
record, read back with the writer schema resolved against its own generated classes, so a field
list that matches Hudi 0.14/0.15 by name and type is what matters. The schemas below follow the
records Hudi writes (``org.apache.hudi.avro.model`` namespace).
"""

from __future__ import annotations

import io
from typing import Any

import fastavro

from engine.errors import TimelineError

NAMESPACE = "org.apache.hudi.avro.model"


def _opt(name: str, type_: Any, default: Any = None) -> dict[str, Any]:
    return {"name": name, "type": ["null", type_], "default": default}


def _versioned() -> dict[str, Any]:
    return {"name": "version", "type": ["int", "null"], "default": 1}


_STRING_ARRAY = {"type": "array", "items": "string"}
_STRING_MAP = {"type": "map", "values": "string"}
_LONG_MAP = {"type": "map", "values": "long"}

_INSTANT_INFO = {
    "type": "record",
    "name": "HoodieInstantInfo",
    "namespace": NAMESPACE,
    "fields": [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}],
}

ROLLBACK_PLAN_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRollbackPlan",
    "namespace": NAMESPACE,
    "fields": [
        _opt("instantToRollback", _INSTANT_INFO),
        _opt(
            "RollbackRequests",
            {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieRollbackRequest",
                    "fields": [
                        {"name": "partitionPath", "type": "string"},
                        _opt("fileId", "string"),
                        _opt("latestBaseInstant", "string"),
                        {"name": "filesToBeDeleted", "type": _STRING_ARRAY, "default": []},
                        _opt("logBlocksToBeDeleted", _LONG_MAP),
                    ],
                },
            },
        ),
        _versioned(),
    ],
}

ROLLBACK_METADATA_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRollbackMetadata",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "startRollbackTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": _STRING_ARRAY},
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieRollbackPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": "string"},
                        {"name": "successDeleteFiles", "type": _STRING_ARRAY},
                        {"name": "failedDeleteFiles", "type": _STRING_ARRAY},
                        _opt("rollbackLogFiles", _LONG_MAP),
                        _opt("logFilesFromFailedCommit", _LONG_MAP),
                    ],
                },
            },
        },
        _versioned(),
        {
            "name": "instantsRollback",
            "type": {"type": "array", "items": _INSTANT_INFO},
            "default": [],
        },
    ],
}

_CLEAN_PARTITION_METADATA = {
    "type": "record",
    "name": "HoodieCleanPartitionMetadata",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "partitionPath", "type": "string"},
        {"name": "policy", "type": "string"},
        {"name": "deletePathPatterns", "type": _STRING_ARRAY},
        {"name": "successDeleteFiles", "type": _STRING_ARRAY},
        {"name": "failedDeleteFiles", "type": _STRING_ARRAY},
        _opt("isPartitionDeleted", "boolean"),
    ],
}

CLEANER_PLAN_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieCleanerPlan",
    "namespace": NAMESPACE,
    "fields": [
        _opt(
            "earliestInstantToRetain",
            {
                "type": "record",
                "name": "HoodieActionInstant",
                "fields": [
                    {"name": "timestamp", "type": "string"},
                    {"name": "action", "type": "string"},
                    {"name": "state", "type": "string"},
                ],
            },
        ),
        {"name": "policy", "type": "string"},
        _opt("filesToBeDeletedPerPartition", {"type": "map", "values": _STRING_ARRAY}),
        _versioned(),
        _opt(
            "filePathsToBeDeletedPerPartition",
            {
                "type": "map",
                "values": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieCleanFileInfo",
                        "fields": [
                            _opt("filePath", "string"),
                            _opt("isBootstrapBaseFile", "boolean"),
                        ],
                    },
                },
            },
        ),
        _opt("partitionsToBeDeleted", _STRING_ARRAY),
    ],
}

CLEAN_METADATA_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieCleanMetadata",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "policy", "type": "string", "default": ""},
        {"name": "startCleanTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "earliestCommitToRetain", "type": "string"},
        {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
        {"name": "partitionMetadata", "type": {"type": "map", "values": _CLEAN_PARTITION_METADATA}},
        _versioned(),
        _opt(
            "bootstrapPartitionMetadata",
            {"type": "map", "values": "HoodieCleanPartitionMetadata"},
        ),
    ],
}

COMPACTION_PLAN_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieCompactionPlan",
    "namespace": NAMESPACE,
    "fields": [
        _opt(
            "operations",
            {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieCompactionOperation",
                    "fields": [
                        _opt("baseInstantTime", "string"),
                        _opt("deltaFilePaths", _STRING_ARRAY),
                        _opt("dataFilePath", "string"),
                        _opt("fileId", "string"),
                        _opt("partitionPath", "string"),
                        _opt("metrics", {"type": "map", "values": "double"}),
                        _opt("bootstrapFilePath", "string"),
                    ],
                },
            },
        ),
        _opt("extraMetadata", _STRING_MAP),
        _versioned(),
        _opt(
            "strategy",
            {
                "type": "record",
                "name": "HoodieCompactionStrategy",
                "fields": [
                    _opt("compactorClassName", "string"),
                    _opt("strategyParams", _STRING_MAP),
                    _versioned(),
                ],
            },
        ),
        {"name": "preserveHoodieMetadata", "type": ["boolean", "null"], "default": False},
    ],
}

REQUESTED_REPLACE_METADATA_SCHEMA: dict[str, Any] = {
    # Hudi's insert_overwrite writes this record with every field null; clustering (not done
    # by this engine) would carry its plan here.
    "type": "record",
    "name": "HoodieRequestedReplaceMetadata",
    "namespace": NAMESPACE,
    "fields": [
        _opt("operationType", "string"),
        _opt("clusteringPlan", "string"),  # never written non-null here
        _opt("extraMetadata", _STRING_MAP),
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}

SAVEPOINT_METADATA_SCHEMA: dict[str, Any] = {
    # what `<t>.savepoint` holds in every table version: the files of the slices it pins
    "type": "record",
    "name": "HoodieSavepointMetadata",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "savepointedBy", "type": "string"},
        {"name": "savepointedAt", "type": "long"},
        {"name": "comments", "type": "string"},
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieSavepointPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": "string"},
                        {"name": "savepointDataFile", "type": _STRING_ARRAY},
                    ],
                },
            },
        },
        _versioned(),
    ],
}

RESTORE_PLAN_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRestorePlan",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "instantsToRollback", "type": {"type": "array", "items": _INSTANT_INFO}},
        {"name": "version", "type": ["int", "null"], "default": 2},
        {"name": "savepointToRestoreTimestamp", "type": ["string", "null"], "default": None},
    ],
}

RESTORE_METADATA_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRestoreMetadata",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "startRestoreTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "instantsToRollback", "type": _STRING_ARRAY},
        {
            "name": "hoodieRestoreMetadata",
            "type": {
                "type": "map",
                "values": {"type": "array", "items": ["null", ROLLBACK_METADATA_SCHEMA]},
            },
        },
        _versioned(),
        {
            "name": "restoreInstantInfo",
            "type": {"type": "array", "items": f"{NAMESPACE}.HoodieInstantInfo"},
            "default": [],
        },
        _opt("extraMetadata", _STRING_MAP),
    ],
}

_PARSED = {
    id(schema): fastavro.parse_schema(schema)
    for schema in (
        ROLLBACK_PLAN_SCHEMA,
        ROLLBACK_METADATA_SCHEMA,
        CLEANER_PLAN_SCHEMA,
        CLEAN_METADATA_SCHEMA,
        COMPACTION_PLAN_SCHEMA,
        REQUESTED_REPLACE_METADATA_SCHEMA,
        SAVEPOINT_METADATA_SCHEMA,
        RESTORE_PLAN_SCHEMA,
    )
}


def serialize(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    """One record as an Avro container file, the way Hudi stores timeline plans and metadata."""
    parsed = _PARSED.get(id(schema)) or fastavro.parse_schema(schema)
    buf = io.BytesIO()
    fastavro.writer(buf, parsed, [record], codec="null")
    return buf.getvalue()


def deserialize(data: bytes, *, source: str = "timeline metadata") -> dict[str, Any]:
    """The single record of an Avro container file written by Hudi or by :func:`serialize`."""
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except (ValueError, EOFError, fastavro.read.SchemaResolutionError) as e:
        raise TimelineError(f"Failed to parse Avro {source}: {e}") from e
    if len(records) != 1 or not isinstance(records[0], dict):
        raise TimelineError(f"Expected one record in {source}, found {len(records)}")
    return records[0]
