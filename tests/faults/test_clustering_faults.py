"""SIGKILL inside a clustering: inside its Spark tasks (a clustered file written, more to come;
a task's files all written, its stats not returned), before its replacecommit (clustered files
written) and right after it (markers left).

Killed before the commit, the clustering is an inflight instant: hudi-rs and ``read_hudi`` read
exactly the rows before it (the replaced file groups still live), and the next writer rolls it
back (its heartbeat is dead) and commits, leaving no file of it. Killed after, the clustering
is complete and the table reads the same rows from the new file groups.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import write_hudi
from engine.cli import main
from engine.fs.storage import Storage
from engine.timeline.timeline import Timeline
from tests.faults.harness import Rows, assert_no_orphans, assert_reads, run_writer
from tests.faults.writer import SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.interop]

BASE = {
    "hoodie.table.name": "clustering_faults",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.parquet.small.file.limit": "0",
}


def _seed(spark, path: Path) -> Rows:  # type: ignore[no-untyped-def]
    state: Rows = {}
    for b in range(2):
        rows = [(f"k{b}{i}", f"d{i % 2}", b, f"v{b}{i}") for i in range(4)]
        write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), BASE)
        state.update({r[0]: (r[1], r[2], r[3]) for r in rows})
    return state


def _clustering_files(path: Path, instant: str) -> list[Path]:
    return [p for p in path.rglob(f"*_{instant}.parquet") if ".hoodie" not in p.parts]


@pytest.mark.parametrize("point", ["clustering.before_complete", "clustering.after_complete"])
def test_kill_inside_clustering(spark, tmp_path, point) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    state = _seed(spark, path)
    step = {"kind": "cluster", "options": {"hoodie.clustering.plan.strategy.sort.columns": "v"}}
    killed, output = run_writer(path, tmp_path / "w", [step], point)
    assert killed, output
    timeline = Timeline.load(Storage(str(path)))
    [instant] = [
        i
        for i in timeline.instants
        if i.action.value == "replacecommit"
        and (not i.is_completed or timeline.read_commit_metadata(i).operation_type == "CLUSTER")
    ]
    assert instant.is_completed == (point == "clustering.after_complete")
    assert _clustering_files(path, instant.instant_time)
    assert_reads(spark, path, state, f"a kill at {point}")

    more = [("n1", "d0", 5, "new")]
    result = write_hudi(spark.createDataFrame(more, SCHEMA), str(path), BASE)
    state["n1"] = ("d0", 5, "new")
    assert_reads(spark, path, state, f"the write after a kill at {point}")
    if point == "clustering.before_complete":
        assert instant.instant_time in result.rolled_back
        assert not _clustering_files(path, instant.instant_time)
    else:
        assert Timeline.load(Storage(str(path))).get(instant.instant_time).is_completed


# each case starts a writer with its own JVM (~20 s on a loaded machine): make test runs the kill
# after a task's first file, make test-long also the one after a task's last
TASK_POINTS = [
    "clustering.task_after_file",
    pytest.param("clustering.task_before_return", marks=pytest.mark.long),
]


@pytest.mark.parametrize("point", TASK_POINTS)
def test_kill_inside_clustering_task(spark, tmp_path, point) -> None:  # type: ignore[no-untyped-def]
    """The kill comes from a Spark task (a Python worker) of the clustering job: the driver and
    its JVM die with it, the clustering is left inflight with some of its files written, and
    ``dbt-hudi rollback --failed`` or the next writer rolls it back."""
    path = tmp_path / "t"
    state = _seed(spark, path)
    step = {
        "kind": "cluster",
        "spark": True,
        "options": {"hoodie.clustering.plan.strategy.sort.columns": "v"},
    }
    killed, output = run_writer(path, tmp_path / "w", [step], point)
    assert killed, output
    timeline = Timeline.load(Storage(str(path)))
    [instant] = [i for i in timeline.instants if not i.is_completed]
    assert instant.action.value == "replacecommit", instant
    written = _clustering_files(path, instant.instant_time)
    assert written, f"a kill at {point} leaves the files the task wrote before it"
    assert_reads(spark, path, state, f"a kill at {point}")

    # the first case recovers by dbt-hudi rollback --failed, the other by the next writer
    by_cli = point == "clustering.task_after_file"
    if by_cli:
        assert main(["rollback", str(path), "--failed"]) == 0
        assert not _clustering_files(path, instant.instant_time)
        assert_reads(spark, path, state, f"dbt-hudi rollback --failed after a kill at {point}")
    more = [("n1", "d1", 5, "new")]
    result = write_hudi(spark.createDataFrame(more, SCHEMA), str(path), BASE)
    state["n1"] = ("d1", 5, "new")
    assert (instant.instant_time in result.rolled_back) != by_cli
    assert not _clustering_files(path, instant.instant_time)
    assert_reads(spark, path, state, f"the write after a kill at {point}")
    assert_no_orphans(path)
