"""The one-job write of the simple index (engine/write/partition_write.py): how many Spark jobs
and stages a write runs (Spark's status tracker), and that the rows are those of the two-job
write (hudi-rs against an oracle)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from engine import config, write_hudi
from engine.errors import RecordKeyError
from engine.write import partition_write
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

pytestmark = [pytest.mark.spark, pytest.mark.interop]

_GROUP = "one-job-write-test"
# one job; Spark's adaptive execution (on by default) submits its shuffle map stage as a job
# of its own, so the tracker shows two job ids for the write's two stages
_ONE_JOB = 2


@contextmanager
def counted_jobs(spark: SparkSession) -> Iterator[Callable[[], tuple[int, int]]]:
    """(jobs, stages) the block ran, from Spark's status tracker (skipped stages excluded)."""
    sc = spark.sparkContext
    sc.setJobGroup(_GROUP, "counted", interruptOnCancel=False)
    tracker = sc.statusTracker()
    seen = set(tracker.getJobIdsForGroup(_GROUP))
    ran: list[int] = []

    def count() -> tuple[int, int]:
        stages = 0
        for job_id in ran:
            info = tracker.getJobInfo(job_id)
            for stage_id in info.stageIds if info else []:
                stage = tracker.getStageInfo(stage_id)
                stages += stage is not None and stage.numCompletedTasks > 0
        return len(ran), stages

    try:
        yield count
    finally:
        ran.extend(sorted(set(tracker.getJobIdsForGroup(_GROUP)) - seen))
        sc.setJobGroup("", "", interruptOnCancel=False)


def _rows(path: Path) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["dt"], r["ts"], r["v"]) for r in hudi_rs_rows(path))


# the Spark job's shape is counted: the write runs in Spark tasks even on the local test master
# (tests/integration/test_local_write.py covers the driver-side write)
_TASKS = {config.WRITE_LOCAL_ENABLED.key: "false"}


def _table(spark: SparkSession, path: Path, table_type: str) -> dict[str, Any]:
    opts = write_options("onejob", {"hoodie.datasource.write.table.type": table_type}, _TASKS)
    rows = [(f"k{i}", f"p{i % 4}", 1, "a") for i in range(40)]
    write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), opts)
    return opts


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_upsert_into_two_partitions_is_one_job(
    spark: SparkSession, tmp_path: Path, table_type: str
) -> None:
    path = tmp_path / "t"
    opts = _table(spark, path, table_type)
    oracle = {(f"k{i}", f"p{i % 4}"): (1, "a") for i in range(40)}
    batch = [(f"k{i}", f"p{i % 4}", 2, "b") for i in range(0, 40, 4)]  # updates in p0
    batch += [(f"n{i}", "p1", 3, "c") for i in range(5)]  # inserts in p1
    batch += [("k1", "p1", 0, "old")]  # the default payload overwrites whatever the order
    with counted_jobs(spark) as count:
        result = write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), opts)
    oracle.update({(key, dt): (ts, v) for key, dt, ts, v in batch})
    assert _rows(path) == sorted((k, dt, ts, v) for (k, dt), (ts, v) in oracle.items())
    assert count() == (_ONE_JOB, 2)  # the map stage and the write stage
    stats = result.write_stats
    assert sum(s.num_update_writes for s in stats) == 11  # k0..k36 in p0, k1 in p1
    assert sum(s.num_inserts for s in stats) == 5


def test_key_in_two_file_groups_and_deletes(spark: SparkSession, tmp_path: Path) -> None:
    """A key inserted twice (no small-file packing) lives in two file groups: the one-job
    upsert updates both, as the simple index does; a delete removes stored keys only."""
    path = tmp_path / "t"
    opts = write_options("twice", {"hoodie.parquet.small.file.limit": "0"}, _TASKS)
    insert = {**opts, "hoodie.datasource.write.operation": "insert"}
    write_hudi(spark.createDataFrame([("a", "p", 1, "x")], SCHEMA), str(path), insert)
    write_hudi(spark.createDataFrame([("a", "p", 1, "y")], SCHEMA), str(path), insert)
    with counted_jobs(spark) as count:
        write_hudi(spark.createDataFrame([("a", "p", 5, "z")], SCHEMA), str(path), opts)
    assert count()[0] == _ONE_JOB
    assert _rows(path) == [("a", "p", 5, "z"), ("a", "p", 5, "z")]
    delete = {**opts, "hoodie.datasource.write.operation": "delete"}
    gone = [("a", "p", 6, "z"), ("never", "p", 6, "z")]
    with counted_jobs(spark) as count:
        write_hudi(spark.createDataFrame(gone, SCHEMA), str(path), delete)
    assert count()[0] == _ONE_JOB
    assert _rows(path) == []


def test_null_key_fails_the_map_stage_table_untouched(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = _table(spark, path, "COPY_ON_WRITE")
    before = sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file())
    files = sorted(str(p) for p in path.rglob("*.parquet"))
    batch = [("k0", "p0", 2, "b"), (None, "p9", 2, "b")]
    with pytest.raises(RecordKeyError) as caught:
        write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), opts)
    assert str(caught.value) == (
        "recordKey value for field 'id' cannot be null or empty "
        "(config 'hoodie.datasource.write.recordkey.field')"
    )
    assert sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file()) == before
    assert sorted(str(p) for p in path.rglob("*.parquet")) == files
    assert not (path / "p9").exists()


def test_partition_larger_than_a_task_takes_the_two_job_write(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A partition whose base files exceed twice max.file.size is rewritten one task per file
    group: the profile and lookup job, then the write."""
    path = tmp_path / "t"
    opts = _table(spark, path, "COPY_ON_WRITE")
    small = {**opts, "hoodie.parquet.max.file.size": "1024", "hoodie.parquet.small.file.limit": "0"}
    with counted_jobs(spark) as count:
        write_hudi(spark.createDataFrame([("k0", "p0", 2, "b")], SCHEMA), str(path), small)
    assert count()[0] > _ONE_JOB
    assert ("k0", "p0", 2, "b") in _rows(path)


def test_commit_between_listing_and_request_is_listed_again(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver lists the table before the instant is requested; a commit landing in between
    (inserting the very key the batch updates) makes the write list it again, so the key is
    found in the new base file (a stale listing would merge the old one and conflict)."""
    path = tmp_path / "t"
    opts = write_options("relist")
    write_hudi(spark.createDataFrame([("a", "p", 1, "x")], SCHEMA), str(path), opts)
    original = partition_write.plan_partition_targets
    listings: list[object] = []

    def list_then_other_writer(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        listings.append(result)
        if len(listings) == 1:
            monkeypatch.setattr(partition_write, "plan_partition_targets", original)
            write_hudi(spark.createDataFrame([("k", "p", 1, "y")], SCHEMA), str(path), opts)
            monkeypatch.setattr(partition_write, "plan_partition_targets", list_then_other_writer)
        return result

    monkeypatch.setattr(partition_write, "plan_partition_targets", list_then_other_writer)
    write_hudi(spark.createDataFrame([("k", "p", 2, "z")], SCHEMA), str(path), opts)
    assert _rows(path) == [("a", "p", 1, "x"), ("k", "p", 2, "z")]
    assert len(listings) == 2


_GLOBAL = {"hoodie.index.type": "GLOBAL_SIMPLE"}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_global_upsert_without_moved_keys_is_one_job(
    spark: SparkSession, tmp_path: Path, table_type: str
) -> None:
    """GLOBAL_SIMPLE: each partition's task looks its keys up in its own partition, then the
    keys it did not find in the other partitions' base files whose footer range meets them
    (``k100`` falls in every range and is read for; ``z*`` past all of them is not)."""
    path = tmp_path / "t"
    opts = {**_table(spark, path, table_type), **_GLOBAL}
    oracle = {f"k{i}": (f"p{i % 4}", 1, "a") for i in range(40)}
    batch = [(f"k{i}", f"p{i % 4}", 2, "b") for i in range(0, 40, 3)]
    batch += [("k100", "p1", 3, "c"), ("z1", "p2", 3, "c"), ("z2", "p2", 3, "c")]
    with counted_jobs(spark) as count:
        write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), opts)
    assert count() == (_ONE_JOB, 2)
    oracle.update({key: (dt, ts, v) for key, dt, ts, v in batch})
    assert _rows(path) == sorted((k, dt, ts, v) for k, (dt, ts, v) in oracle.items())


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_global_moved_key_rolls_the_attempt_back_and_writes_in_two_jobs(
    spark: SparkSession, tmp_path: Path, table_type: str
) -> None:
    """A key arriving in another partition than the one storing it is found by its task, which
    cannot reach the old partition's file group: the attempt is rolled back (a rollback
    instant, no file of it left) and the two-job write moves the key."""
    path = tmp_path / "t"
    opts = {**_table(spark, path, table_type), **_GLOBAL}
    before = _data_files(path)
    batch = [("k0", "p3", 2, "moved"), ("k1", "p1", 2, "b"), ("n1", "p2", 2, "c")]
    result = write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), opts)
    oracle = {f"k{i}": (f"p{i % 4}", 1, "a") for i in range(40)}
    oracle.update({key: (dt, ts, v) for key, dt, ts, v in batch})
    assert _rows(path) == sorted((k, dt, ts, v) for k, (dt, ts, v) in oracle.items())
    timeline = [p.name for p in (path / ".hoodie").iterdir() if p.is_file()]
    assert len([n for n in timeline if n.endswith(".rollback")]) == 1
    # the attempt's base files are gone (its log files keep a rollback command block, as
    # Hudi 0.14 rolls back log appends): the base files added are those the commit names
    added = {f for f in _data_files(path) - before if f.endswith(".parquet")}
    assert added == {s.path for s in result.write_stats if s.path.endswith(".parquet")}


def _data_files(path: Path) -> set[str]:
    return {
        str(p.relative_to(path))
        for p in path.rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and not p.name.startswith(".hoodie_")
    }


def test_global_new_key_in_two_partitions_is_refused_table_untouched(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A key new to the table arriving in two partitions is written by two tasks that cannot see
    each other: the driver finds it in their results, the attempt is rolled back, and the
    two-job write refuses the batch before writing, naming the key."""
    path = tmp_path / "t"
    opts = {**_table(spark, path, "COPY_ON_WRITE"), **_GLOBAL}
    before = _rows(path)
    files = sorted(str(p) for p in path.rglob("*.parquet"))
    batch = [("n", "p0", 2, "x"), ("n", "p1", 2, "y"), ("k2", "p2", 2, "b")]
    with pytest.raises(RecordKeyError, match="'n' arrives in partitions 'p0' and 'p1'"):
        write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), opts)
    assert _rows(path) == before
    assert sorted(str(p) for p in path.rglob("*.parquet")) == files
