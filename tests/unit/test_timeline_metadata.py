"""Avro timeline content: Hudi's files parse, and what the engine writes reads back alike."""

from __future__ import annotations

import pytest

from engine.errors import TimelineError
from engine.fs.storage import Storage
from engine.timeline.avro_metadata import (
    CLEAN_METADATA_SCHEMA,
    CLEANER_PLAN_SCHEMA,
    COMPACTION_PLAN_SCHEMA,
    REQUESTED_REPLACE_METADATA_SCHEMA,
    ROLLBACK_METADATA_SCHEMA,
    ROLLBACK_PLAN_SCHEMA,
    deserialize,
    serialize,
)
from engine.timeline.timeline import Timeline

pytestmark = pytest.mark.unit


def test_deserialize_corpus_rollback_plan_and_metadata(corpus_table) -> None:  # type: ignore[no-untyped-def]
    root = corpus_table("mor_parquet__v6_nonpartitioned_rollback")
    plan = deserialize((root / ".hoodie" / "20250126040936578.rollback.requested").read_bytes())
    assert plan["instantToRollback"] == {"commitTime": "20250126040826878", "action": "deltacommit"}
    meta = deserialize((root / ".hoodie" / "20250126040936578.rollback").read_bytes())
    assert meta["commitsRollback"] == ["20250126040826878"]
    # what the engine writes with its own schema carries the same content
    again = deserialize(serialize(ROLLBACK_METADATA_SCHEMA, meta))
    assert again == meta
    assert deserialize(serialize(ROLLBACK_PLAN_SCHEMA, plan)) == plan


def test_deserialize_corpus_requested_replace_all_null(corpus_table) -> None:  # type: ignore[no-untyped-def]
    root = corpus_table("mor_parquet__v6_simplekeygen_nonhivestyle_overwritetable")
    timeline = Timeline.load(Storage(str(root)))
    assert timeline.commits_timeline()[-1].action.value == "replacecommit"
    record = deserialize(
        (root / ".hoodie" / "20250121000702475.replacecommit.requested").read_bytes()
    )
    assert record["operationType"] is None
    empty = {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": 1}
    assert deserialize(serialize(REQUESTED_REPLACE_METADATA_SCHEMA, empty))["version"] == 1


def test_serialize_clean_and_compaction_round_trip() -> None:
    plan = {
        "earliestInstantToRetain": {"timestamp": "1", "action": "commit", "state": "COMPLETED"},
        "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": None,
        "version": 2,
        "filePathsToBeDeletedPerPartition": {
            "p": [{"filePath": "/t/p/f.parquet", "isBootstrapBaseFile": False}]
        },
        "partitionsToBeDeleted": [],
    }
    assert deserialize(serialize(CLEANER_PLAN_SCHEMA, plan)) == plan
    meta = {
        "policy": "KEEP_LATEST_COMMITS",
        "startCleanTime": "2",
        "timeTakenInMillis": 5,
        "totalFilesDeleted": 1,
        "earliestCommitToRetain": "1",
        "lastCompletedCommitTimestamp": "1",
        "partitionMetadata": {
            "p": {
                "partitionPath": "p",
                "policy": "KEEP_LATEST_COMMITS",
                "deletePathPatterns": ["f.parquet"],
                "successDeleteFiles": ["f.parquet"],
                "failedDeleteFiles": [],
                "isPartitionDeleted": False,
            }
        },
        "version": 2,
        "bootstrapPartitionMetadata": {},
    }
    assert deserialize(serialize(CLEAN_METADATA_SCHEMA, meta)) == meta
    compaction = {
        "operations": [
            {
                "baseInstantTime": "1",
                "deltaFilePaths": [".f-0_1.log.1_0-0-0"],
                "dataFilePath": "f-0_0-0-0_1.parquet",
                "fileId": "f-0",
                "partitionPath": "p",
                "metrics": {"TOTAL_LOG_FILES": 1.0},
                "bootstrapFilePath": None,
            }
        ],
        "extraMetadata": None,
        "version": 2,
        "strategy": None,
        "preserveHoodieMetadata": True,
    }
    assert deserialize(serialize(COMPACTION_PLAN_SCHEMA, compaction)) == compaction


def test_deserialize_garbage_raises_naming_source() -> None:
    with pytest.raises(TimelineError, match=r"x\.clean"):
        deserialize(b"not avro", source="x.clean")
