"""Bucket-index writes end to end: file ids carry Java's bucket of every key, the settings persist,
merge-on-read sends inserts and updates of existing buckets to log files, bad input changes
nothing. hudi-rs judges every table."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from engine import HudiTable, write_hudi
from engine.errors import ConfigError, RecordKeyError
from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from engine.write.bucket_index import bucket_id, bucket_of_file_id
from tests.hudi_rs import hudi_rs_rows

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SCHEMA = "id string, dt string, ts long, v string"
OPTIONS = {
    "hoodie.table.name": "b",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.index.type": "BUCKET",
    "hoodie.bucket.index.num.buckets": 3,
}


def rows(keys: range, ts: int, tag: str) -> list[tuple[Any, ...]]:
    return [(f"k{i}", f"p{i % 2}", ts, f"{tag}{i}") for i in keys]


def write(spark: Any, path: str, data: list[tuple[Any, ...]], **options: Any) -> Any:
    df = spark.createDataFrame(data, SCHEMA)
    return write_hudi(
        df, path, {**OPTIONS, "hoodie.datasource.write.operation": "upsert", **options}
    )


def snapshot(path: str) -> dict[str, str]:
    return {r["id"]: r["v"] for r in hudi_rs_rows(path)}


def test_copy_on_write_buckets_are_javas_and_persist(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "cow")
    write(spark, path, rows(range(20), 1, "a"))
    props = read_properties(Storage(path))
    assert props["hoodie.index.type"] == "BUCKET"
    assert props["hoodie.bucket.index.num.buckets"] == "3"
    # Apache Hudi's procedures check the bucket index against the write config's record key
    assert props["hoodie.datasource.write.recordkey.field"] == "id"
    # the next write sets no index option: the table's own settings route it
    plain = {k: v for k, v in OPTIONS.items() if "index" not in k}
    df = spark.createDataFrame(rows(range(10, 30), 2, "b"), SCHEMA)
    write_hudi(df, path, {**plain, "hoodie.datasource.write.operation": "upsert"})
    expected = {f"k{i}": ("b" if i >= 10 else "a") + str(i) for i in range(30)}
    assert snapshot(path) == expected
    for name, key in _stored_keys(path):
        assert bucket_of_file_id(name) == bucket_id(key, ("id",), 3), (name, key)
    groups = {(p, f[:8]) for p, f in _file_groups(path)}
    assert len(groups) == len(_file_groups(path)) <= 6  # one file group per bucket


def test_merge_on_read_updates_and_inserts_go_to_logs(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "mor")
    mor = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    write(spark, path, rows(range(30), 1, "a"), **mor)
    result = write(spark, path, rows(range(20, 40), 2, "b"), **mor)  # 10 updates, 10 inserts
    assert result.write_stats and all(s.is_delta for s in result.write_stats)
    expected = {f"k{i}": ("b" if i >= 20 else "a") + str(i) for i in range(40)}
    assert snapshot(path) == expected


def test_other_bucket_counts_and_other_indexes_are_refused(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    write(spark, path, rows(range(6), 1, "a"))
    with pytest.raises(ConfigError, match=r"hoodie\.bucket\.index\.num\.buckets"):
        write(spark, path, rows(range(3), 2, "b"), **{"hoodie.bucket.index.num.buckets": 5})
    simple = str(tmp_path / "simple")
    write(spark, simple, rows(range(6), 1, "a"), **{"hoodie.index.type": "SIMPLE"})
    with pytest.raises(ConfigError, match="is not a bucket of"):
        write(spark, simple, rows(range(3), 2, "b"))
    assert snapshot(simple) == {f"k{i}": f"a{i}" for i in range(6)}


def test_a_null_key_fails_before_anything_is_written(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    write(spark, path, rows(range(6), 1, "a"))
    timeline = sorted(os.listdir(os.path.join(path, ".hoodie")))
    files = _all_files(path)
    with pytest.raises(RecordKeyError, match="cannot be null or empty"):
        write(spark, path, [*rows(range(3), 2, "b"), (None, "p9", 2, "x")])
    assert sorted(os.listdir(os.path.join(path, ".hoodie"))) == timeline
    assert _all_files(path) == files
    assert snapshot(path) == {f"k{i}": f"a{i}" for i in range(6)}


def test_a_batch_in_one_partition_is_one_job_of_one_stage(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "mor")
    mor = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    write(spark, path, rows(range(30), 1, "a"), **mor)
    options = {**OPTIONS, **mor, "hoodie.datasource.write.operation": "upsert"}
    # Spark's tasks: the driver-side write of a small batch runs no job of its own
    # (tests/integration/test_local_write.py)
    options["hoodie.write.local.enabled"] = "false"
    batch = spark.createDataFrame(rows(range(20, 40), 2, "b"), SCHEMA).coalesce(1)
    assert _jobs_and_stages(spark, lambda: write_hudi(batch, path, options)) == (1, 1)
    expected = {f"k{i}": ("b" if i >= 20 else "a") + str(i) for i in range(40)}
    assert snapshot(path) == expected
    # the one task sees every record before it writes: a null key still writes nothing
    timeline, files = sorted(os.listdir(os.path.join(path, ".hoodie"))), _all_files(path)
    bad = spark.createDataFrame([*rows(range(3), 3, "c"), (None, "p0", 3, "x")], SCHEMA)
    with pytest.raises(RecordKeyError, match="cannot be null or empty"):
        write_hudi(bad.coalesce(1), path, options)
    assert sorted(os.listdir(os.path.join(path, ".hoodie"))) == timeline
    assert _all_files(path) == files
    assert snapshot(path) == expected


def _jobs_and_stages(spark: Any, action: Any) -> tuple[int, int]:
    """Spark jobs and stages ``action`` ran (this thread's job group)."""
    context, group = spark.sparkContext, "bucket-index-jobs"
    tracker = context.statusTracker()
    context.setJobGroup(group, group)
    try:
        before = set(tracker.getJobIdsForGroup(group))
        action()
        jobs = sorted(set(tracker.getJobIdsForGroup(group)) - before)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return len(jobs), sum(len(tracker.getJobInfo(j).stageIds) for j in jobs)


def _file_groups(path: str) -> set[tuple[str, str]]:
    timeline = HudiTable(path).timeline()
    out = set()
    for instant in timeline.commits_timeline():
        for stat in timeline.read_commit_metadata(instant).write_stats():
            out.add((stat.partition_path or "", stat.file_id))
    return out


def _stored_keys(path: str) -> list[tuple[str, str]]:
    """(file id, record key) of every row of every base file."""
    out = []
    for root, _, names in os.walk(path):
        for name in names:
            if name.endswith(".parquet") and ".hoodie" not in root:
                keys = pq.read_table(os.path.join(root, name), columns=["_hoodie_record_key"])
                file_id = name.split("_", 1)[0]
                out += [(file_id, k) for k in keys.column(0).to_pylist()]
    return out


def _all_files(path: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(root, n), path)
        for root, _, names in os.walk(path)
        for n in names
        if ".hoodie" not in root
    )
