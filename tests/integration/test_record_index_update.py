"""The record index update of a commit is made from the keys its handles wrote and deleted
(:class:`~engine.timeline.commit_metadata.WrittenKeys` on each write stat), not from reading the
files back: for every commit of a run of writes (inserts, updates in place, keys moving
partition, deletes; copy-on-write and merge-on-read), the changes made from the handles' keys
equal those made by reading the written files (the oracle: the same stats without their
keys). hudi-rs and the whole index read then agree with the expected rows.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.fs.storage import Storage
from engine.metadata import record_index, record_index_partition
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

pytestmark = pytest.mark.spark

Row = tuple[str, str, int, str]


def _read_back(commit: HoodieCommitMetadata) -> HoodieCommitMetadata:
    """``commit`` with its stats' keys dropped: the update then reads the written files."""
    stats = {
        partition: [replace(s, written_keys=None) for s in stats]
        for partition, stats in commit.partition_to_write_stats.items()
    }
    return replace(commit, partition_to_write_stats=stats)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_the_update_from_the_handles_keys_equals_reading_the_files(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_type: str
) -> None:
    path = tmp_path / "t"
    options = write_options(
        "rli_update",
        {
            "hoodie.index.type": "RECORD_INDEX",
            "hoodie.record.index.update.partition.path": "true",
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.write.table.version": "9",
            "hoodie.write.local.enabled": "true",
            "hoodie.write.local.max.bytes": str(2**63 - 1),
        },
    )
    compared: list[int] = []  # per commit: stats that carried their keys
    changes_of = record_index_partition._commit_changes

    def both(storage: Storage, commit: HoodieCommitMetadata) -> Any:
        ours = changes_of(storage, commit)
        oracle = changes_of(storage, _read_back(commit))
        assert (ours.written, ours.deleted) == (oracle.written, oracle.deleted)
        compared.append(sum(s.written_keys is not None for s in commit.write_stats()))
        return ours

    monkeypatch.setattr(record_index_partition, "_commit_changes", both)

    def write(rows: list[Row], operation: str = "upsert") -> None:
        frame = spark.createDataFrame(rows, SCHEMA)
        write_hudi(frame, str(path), {**options, "hoodie.datasource.write.operation": operation})

    expected: dict[str, Row] = {}
    first = [(f"k{i}", f"p{i % 3}", 1, f"a{i}") for i in range(12)]
    write(first, "bulk_insert")
    expected |= {r[0]: r for r in first}
    # updates in place, inserts, and keys moving to another partition
    second = [("k0", "p0", 2, "b0"), ("k4", "p2", 2, "moved"), ("k5", "p0", 2, "moved")]
    second += [("n1", "p0", 2, "c1"), ("n2", "p1", 2, "c2"), ("n3", "p3", 2, "c3")]
    write(second)
    expected |= {r[0]: r for r in second}
    deleted = [("k1", "p1", 3, ""), ("n2", "p1", 3, ""), ("k4", "p2", 3, "")]
    write(deleted, "delete")
    for key, *_ in deleted:
        expected.pop(key)
    third = [("k1", "p2", 4, "back"), ("n4", "p1", 4, "d4"), ("k7", "p1", 4, "d7")]
    write(third)
    expected |= {r[0]: r for r in third}

    # bulk_insert's files are read back (its writer reports no keys); every upsert and delete
    # (the second in two Spark jobs: its keys come back with the tasks' stats) had its keys
    assert len(compared) == 4 and all(compared[1:])
    got = sorted((r["id"], r["dt"], r["ts"], r["v"]) for r in hudi_rs_rows(path))
    assert got == sorted(expected.values())
    storage = Storage(str(path))
    mapped = record_index.read_record_index(storage, Timeline.load(storage))
    assert mapped is not None
    assert {k: v.partition_path for k, v in mapped.items()} == {
        k: r[1] for k, r in expected.items()
    }
