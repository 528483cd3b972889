"""Clustering on Spark: plan, execute, commit, on table versions 6 and 9, copy-on-write and
merge-on-read.

Every check reads the table through hudi-rs (the judge) and through ``read_hudi``; the requested
plan and the completed replacecommit are checked field by field against what Hudi writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from engine import HudiTable, read_hudi, spark_table, write_hudi
from engine.errors import ClusteringUpdateError
from engine.fs.storage import Storage
from engine.io.parquet import read_record_key_range
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSystemView
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

# the subject is clustering, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.interop, pytest.mark.driver_writes]

SORTED = "hoodie.clustering.plan.strategy.sort.columns"


def opts(table_type: str = "COPY_ON_WRITE", version: int = 6, **extra: Any) -> dict[str, Any]:
    base = {
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.write.table.version": str(version),
    }
    return write_options("events", base, extra)


def rows_of(spark: Any, path: Path) -> dict[str, tuple[str, str, str, str]]:
    """key -> (dt, v, commit time, seqno) through hudi-rs, checked equal to read_hudi's."""
    judged = {
        r["id"]: (r["dt"], r["v"], r["_hoodie_commit_time"], r["_hoodie_commit_seqno"])
        for r in hudi_rs_rows(str(path))
    }
    ours = {
        r["id"]: (r["dt"], r["v"], r["_hoodie_commit_time"], r["_hoodie_commit_seqno"])
        for r in read_hudi(spark, str(path)).collect()
    }
    assert ours == judged
    return judged


def live_groups(path: Path) -> set[tuple[str, str]]:
    storage = Storage(str(path))
    view = FileSystemView(storage, Timeline.load(storage))
    return {(s.partition_path, s.file_id) for s in view.latest_file_slices()}


def small_batches(spark: Any, path: Path, options: dict[str, Any], batches: int = 3) -> None:
    """``batches`` inserts of new keys, each into new file groups (no small-file packing)."""
    for b in range(batches):
        rows = [(f"k{b}_{i}", f"2024-01-0{i % 2 + 1}", b, f"v{(7 * i + b) % 10}") for i in range(6)]
        write_hudi(
            spark.createDataFrame(rows, SCHEMA),
            str(path),
            {**options, "hoodie.parquet.small.file.limit": "0"},
        )


def timeline_file(path: Path, suffix: str) -> Path:
    hits = sorted((path / ".hoodie").rglob(f"*{suffix}"))
    hits = [h for h in hits if "metadata" not in h.parts]
    assert len(hits) == 1, hits
    return hits[0]


def requested_record(path: Path, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    with open(timeline_file(path, name), "rb") as f:
        reader = fastavro.reader(f)
        records = list(reader)
        return reader.writer_schema, records[0]  # type: ignore[return-value]


@pytest.mark.parametrize("version", [6, 9])
def test_clustering_cow_keeps_every_row_and_writes_hudis_plan(spark, tmp_path, version) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    options = opts(version=version)
    small_batches(spark, path, options)
    before = rows_of(spark, path)
    groups_before = live_groups(path)
    assert len(groups_before) == 6  # 3 batches x 2 partitions

    table = spark_table(str(path))
    planned: list[Any] = []
    done = table.cluster({SORTED: "v"}, on_planned=lambda t, p: planned.append((t, p)))
    assert len(done) == 1
    t = done[0]
    assert planned and planned[0][0] == t

    # every row kept with its commit time and seqno; the replaced groups are gone at once
    assert rows_of(spark, path) == before
    after = live_groups(path)
    assert after.isdisjoint(groups_before)
    assert len(after) == 2  # one new file group per partition

    # the plan as Hudi writes it
    name = ".replacecommit.requested" if version == 6 else ".clustering.requested"
    _, record = requested_record(path, f"{t}{name}")
    assert record["operationType"] == "CLUSTER"
    plan = record["clusteringPlan"]
    assert plan["strategy"] == {
        "strategyClassName": (
            "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
        ),
        "strategyParams": {SORTED: "v"},
        "version": 1,
    }
    assert plan["preserveHoodieMetadata"] is True
    assert plan["extraMetadata"] == {} and plan["version"] == 1
    assert ("missingSchedulePartitions" in plan) == (version >= 8)
    sliced = {(s["partitionPath"], s["fileId"]) for g in plan["inputGroups"] for s in g["slices"]}
    assert sliced == groups_before
    for group in plan["inputGroups"]:
        assert group["numOutputFileGroups"] == 1 and group["version"] == 1
        assert set(group["metrics"]) == {
            "TOTAL_LOG_FILES", "TOTAL_IO_MB", "TOTAL_IO_READ_MB", "TOTAL_LOG_FILES_SIZE",
            "TOTAL_IO_WRITE_MB",
        }  # fmt: skip
        for s in group["slices"]:
            assert s["dataFilePath"].startswith(str(path)) and s["dataFilePath"].endswith(
                ".parquet"
            )
            assert s["deltaFilePaths"] == [] and s["bootstrapFilePath"] == ""
    if version >= 8:
        assert timeline_file(path, f"{t}.clustering.inflight").read_bytes() == b""

    # the completed replacecommit, in the layout's coding (JSON on 6, Avro on 8 and 9)
    timeline = Timeline.load(Storage(str(path)))
    done = next(i for i in timeline.completed() if i.instant_time == t)
    assert done.action.value == "replacecommit"
    meta = timeline.read_commit_metadata(done)
    assert meta.operation_type == "CLUSTER"
    replaced = meta.partition_to_replace_file_ids or {}
    assert {(p, f) for p, ids in replaced.items() for f in ids} == groups_before
    stats = meta.write_stats()
    assert {(s.partition_path, s.file_id) for s in stats} == after
    for s in stats:
        assert s.prev_commit == "null" and s.num_inserts == s.num_writes and s.num_deletes == 0
        lo, hi = read_record_key_range(Storage(str(path)), s.path)
        assert lo is not None and hi is not None and lo <= hi
    if version == 6:
        completed = timeline_file(path, f"{t}.replacecommit")
        raw = json.loads(completed.read_text())
        assert raw["operationType"] == "CLUSTER" and raw["compacted"] is False

    # rows of a partition are in sort-column order in their new file
    for s in stats:
        values = [r["v"] for r in _file_rows(path, s.path)]
        assert values == sorted(values)


def _file_rows(path: Path, rel: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(path / rel).to_pylist()


def test_updates_under_pending_clustering_are_rejected(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    options = opts()
    small_batches(spark, path, options, batches=2)
    table = spark_table(str(path))
    scheduled = table.cluster({SORTED: "v"}, schedule_only=True)
    assert len(scheduled) == 1
    update = [("k0_0", "2024-01-01", 9, "changed")]
    with pytest.raises(ClusteringUpdateError, match="pending clustering"):
        write_hudi(spark.createDataFrame(update, SCHEMA), str(path), options)
    # the rejected write left nothing; the plan is still pending and runs
    assert table.pending_clustering() == scheduled
    before = rows_of(spark, path)
    assert table.cluster() == scheduled
    assert rows_of(spark, path) == before
    write_hudi(spark.createDataFrame(update, SCHEMA), str(path), options)
    assert rows_of(spark, path)["k0_0"][1] == "changed"


def test_clustering_mor_merges_logs(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    options = opts("MERGE_ON_READ")
    small_batches(spark, path, options, batches=2)
    # updates and a delete into log files
    update = [("k0_1", "2024-01-02", 5, "u1"), ("k1_2", "2024-01-01", 5, "u2")]
    write_hudi(spark.createDataFrame(update, SCHEMA), str(path), options)
    delete = [("k1_3", "2024-01-02", 6, "x")]
    write_hudi(
        spark.createDataFrame(delete, SCHEMA),
        str(path),
        {**options, "hoodie.datasource.write.operation": "delete"},
    )
    before = rows_of(spark, path)
    assert "k1_3" not in before and before["k0_1"][1] == "u1"
    done = HudiTable(str(path), runner=spark_table(str(path)).runner).cluster({SORTED: "id"})
    assert len(done) == 1
    assert rows_of(spark, path) == before
    storage = Storage(str(path))
    view = FileSystemView(storage, Timeline.load(storage))
    assert all(not s.log_files for s in view.latest_file_slices())


def test_inline_clustering_every_n_commits_and_schedule_only(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    inline = opts(
        **{"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "2"}
    )
    small_batches(spark, path, {**inline, SORTED: "v"}, batches=3)
    storage = Storage(str(path))
    timeline = Timeline.load(storage)
    clusterings = [
        i
        for i in timeline.completed()
        if timeline.read_commit_metadata(i).operation_type == "CLUSTER"
    ]
    # commits 1, 2 -> clustering; commit 3 alone is not enough for the next one
    assert len(clusterings) == 1
    assert len(live_groups(path)) == 4  # the clustered 2 + the third batch's 2
    rows_of(spark, path)

    scheduled = opts(**{"hoodie.clustering.schedule.inline": "true"})
    small_batches(spark, tmp_path / "s", scheduled, batches=4)
    table = spark_table(str(tmp_path / "s"))
    pending = table.pending_clustering()
    assert len(pending) == 1  # planned after commit 4, left for a runner
    before = rows_of(spark, tmp_path / "s")
    assert table.cluster() == pending
    assert table.pending_clustering() == []
    assert rows_of(spark, tmp_path / "s") == before


def test_incremental_and_cdc_queries_see_no_change_and_clean_removes_replaced(
    spark, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    options = opts(**{"hoodie.table.cdc.enabled": "true"})
    small_batches(spark, path, options, batches=2)
    last = Timeline.load(Storage(str(path))).last_completed()
    assert last is not None
    (t,) = spark_table(str(path)).cluster({SORTED: "v"})
    incremental = {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": last.instant_time,
    }
    assert read_hudi(spark, str(path), incremental).count() == 0
    changes = read_hudi(
        spark, str(path), {**incremental, "hoodie.datasource.query.incremental.format": "cdc"}
    )
    assert changes.count() == 0
    replaced_files = {p for p in (path).rglob("*.parquet") if t not in p.name}
    assert replaced_files
    # two more commits, one retained: the clean deletes every replaced file
    small_batches(spark, path, options, batches=1)
    spark_table(str(path)).clean({"hoodie.cleaner.commits.retained": "1"})
    assert not any(p.exists() for p in replaced_files if ".hoodie" not in p.parts)
    rows_of(spark, path)


def test_allowed_update_fails_the_pending_clustering(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from engine.errors import WriteConflictError

    path = tmp_path / "t"
    allow = opts(
        **{
            "hoodie.clustering.updates.strategy": (
                "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"
            )
        }
    )
    small_batches(spark, path, allow, batches=2)
    table = spark_table(str(path))
    (t,) = table.cluster(schedule_only=True)
    update = [("k0_0", "2024-01-01", 9, "changed")]
    write_hudi(spark.createDataFrame(update, SCHEMA), str(path), allow)
    with pytest.raises(WriteConflictError, match="changed after it was planned"):
        table.cluster(allow)
    assert table.pending_clustering() == []  # rolled back
    rows = rows_of(spark, path)
    assert rows["k0_0"][1] == "changed"
    assert not list(path.rglob(f"*_{t}.parquet"))


def test_restore_to_a_savepoint_before_a_clustering(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    options = opts(version=9)
    small_batches(spark, path, options, batches=2)
    before = rows_of(spark, path)
    groups = live_groups(path)
    table = spark_table(str(path))
    savepoint = table.savepoint().instant_time
    (t,) = table.cluster(sort_columns="v")
    assert live_groups(path).isdisjoint(groups)
    table.restore(savepoint)
    assert live_groups(path) == groups  # the replaced file groups are live again
    assert rows_of(spark, path) == before
    assert not list(path.rglob(f"*_{t}.parquet"))
    (again,) = table.cluster(sort_columns="v")  # and the table clusters again
    assert again > t and rows_of(spark, path) == before
