"""``dbt-hudi health``: each finding on a table built to have it, and its fix command fixes it.

* a copy-on-write table with two small base files in one partition (inserts written with
  ``hoodie.parquet.small.file.limit=0``), three slices of one file group and automatic cleaning
  off (a stale clean), and a write whose writer died after its instant went inflight;
* a table clustered by ``v``, then written outside that order (its sort order no longer holds);
* the merge-on-read table of tests/cli/conftest.py (three delta commits per file group) judged
  with a lower compaction trigger, then with a compaction scheduled and left pending.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli import oracle
from tests.cli.conftest import cli_json, rows, run_cli
from tests.keyed_table import SCHEMA, write_options

pytestmark = pytest.mark.spark

NO_CLEAN = {"hoodie.clean.automatic": "false"}
RETAIN_ONE = ("--option", "hoodie.cleaner.commits.retained=1")


def checks(report: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f["check"], f["subject"]) for f in report["findings"])


def health(path: Path, *options: str) -> dict[str, Any]:
    report: dict[str, Any] = cli_json("health", str(path), *options)
    return report


@pytest.fixture(scope="module")
def troubled_cow(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine import write_hudi

    path = tmp_path_factory.mktemp("health") / "cow"
    no_small_files = {"hoodie.parquet.small.file.limit": "0", **NO_CLEAN}
    for start in (0, 20):  # two file groups in partition "a"
        batch = spark.createDataFrame(rows(20, start=start, parts=("a",)), SCHEMA)
        write_hudi(batch, str(path), write_options("cow", no_small_files))
    for ts in (2, 3):  # two more slices of the first file group
        batch = spark.createDataFrame(rows(5, ts=ts, parts=("a",)), SCHEMA)
        write_hudi(batch, str(path), write_options("cow", NO_CLEAN))
    return path


def _copy(path: Path, tmp_path: Path) -> Path:
    dest = tmp_path / path.name
    shutil.copytree(path, dest)
    return dest


def _dead_writer_leaves_inflight_write(path: Path, hours_ago: float) -> str:
    """What a writer killed right after its instant went inflight leaves: requested and
    inflight instant files and a heartbeat naming a process that is gone."""
    from engine.fs.storage import Storage
    from engine.timeline.instant import Action, new_instant_time
    from engine.timeline.timeline import Timeline, create_requested, transition_to_inflight

    storage = Storage(str(path))
    instant_time = new_instant_time(Timeline.load(storage).max_instant_time())
    create_requested(storage, instant_time, Action.COMMIT)
    transition_to_inflight(storage, instant_time, Action.COMMIT)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    beat = {"host": socket.gethostname(), "pid": int(gone.stdout), "beat_at": time.time()}
    storage.write_bytes(f".hoodie/.heartbeat/{instant_time}", json.dumps(beat).encode())
    then = time.time() - hours_ago * 3600
    for name in (f"{instant_time}.commit.requested", f"{instant_time}.inflight"):
        os.utime(path / ".hoodie" / name, (then, then))
    return instant_time


def test_health_flags_small_files_stale_clean_and_failed_write_and_fixes_clear_them(
    troubled_cow: Path, tmp_path: Path
) -> None:
    path = _copy(troubled_cow, tmp_path)
    failed = _dead_writer_leaves_inflight_write(path, hours_ago=3)
    status, _, _ = run_cli("health", str(path), *RETAIN_ONE)
    assert status == 1
    report = health(path, *RETAIN_ONE)
    assert report["healthy"] is False
    assert checks(report) == [
        ("clean_due", "cleaner"),
        ("failed_write", failed),
        ("small_files", "a"),
    ]
    by_check = {f["check"]: f for f in report["findings"]}

    bases = [b for (p, _), (_, b, _) in oracle.latest_slices(path).items() if p == "a"]
    assert len(bases) == 2
    assert by_check["small_files"]["message"].startswith(
        "2 base files under hoodie.parquet.small.file.limit=104857600"
    )
    assert by_check["failed_write"]["severity"] == "error"
    assert f"commit {failed} inflight for 3.0h" in by_check["failed_write"]["message"]
    assert by_check["failed_write"]["fix"] == f"dbt-hudi rollback {path} {failed}"
    # the clean would delete the oldest slice of the first file group, nothing else
    groups = oracle.groups(path)
    (oldest,) = [g.base_files[min(g.base_files)] for g in groups.values() if len(g.base_files) == 3]
    size = (path / "a" / oldest).stat().st_size
    assert report["facts"]["clean_would_delete_files"] == 1
    assert report["facts"]["clean_would_delete_bytes"] == size
    assert report["facts"]["last_clean"] is None
    assert by_check["clean_due"]["fix"] == (
        f"dbt-hudi clean {path} --option hoodie.cleaner.commits.retained=1"
    )
    # with the writers' default retention (10 commits) nothing is due for cleaning
    assert ("clean_due", "cleaner") not in checks(health(path))

    for finding in (by_check["failed_write"], by_check["clean_due"]):
        status, _, err = run_cli(*finding["fix"].split()[1:])
        assert (status, err) == (0, ""), finding
    assert not (path / "a" / oldest).exists()
    after = health(path, *RETAIN_ONE)
    assert checks(after) == [("small_files", "a")]
    assert after["facts"]["last_clean"] is not None
    assert [i.action for i in oracle.instants(path)][-2:] == ["rollback", "clean"]


def test_rewriting_the_partition_clears_small_files(
    spark: Any, troubled_cow: Path, tmp_path: Path
) -> None:
    from engine import write_hudi

    path = _copy(troubled_cow, tmp_path)
    overwrite = {"hoodie.datasource.write.operation": "insert_overwrite", **NO_CLEAN}
    batch = spark.createDataFrame(rows(40, ts=4, parts=("a",)), SCHEMA)
    write_hudi(batch, str(path), write_options("cow", overwrite))
    assert checks(health(path)) == []


def test_health_flags_a_sort_order_that_no_longer_holds_and_clustering_clears_it(
    spark: Any, tmp_path: Path
) -> None:
    """A clustering sorted partition "a" by ``v``; a write after it adds a file group of a
    third of the bytes outside that order: a warning whose fix, run, restores the order."""
    from engine import spark_table, write_hudi

    path = tmp_path / "sorted"
    opts = write_options("sorted", {"hoodie.parquet.small.file.limit": "0", **NO_CLEAN})
    for start in (0, 20):
        batch = spark.createDataFrame(rows(20, start=start, parts=("a",)), SCHEMA)
        write_hudi(batch, str(path), opts)
    [clustered] = spark_table(str(path), spark).cluster(sort_columns="v", strategy="z-order")
    assert "sort_order" not in {c for c, _ in checks(health(path))}

    batch = spark.createDataFrame(rows(20, start=40, parts=("a",)), SCHEMA)
    write_hudi(batch, str(path), opts)
    [finding] = [f for f in health(path)["findings"] if f["check"] == "sort_order"]
    assert (finding["severity"], finding["subject"]) == ("warning", "a")
    assert f"since clustering {clustered} ordered the rows by v (z-order)" in finding["message"]
    assert finding["fix"] == f"dbt-hudi cluster {path} --sort-columns v --strategy z-order"
    status, _, err = run_cli(*finding["fix"].split()[1:])
    assert status == 0, err
    assert "sort_order" not in {c for c, _ in checks(health(path))}


def test_health_flags_archival_lag_and_archive_clears_it(
    troubled_cow: Path, tmp_path: Path
) -> None:
    path = _copy(troubled_cow, tmp_path)
    keep = ("--option", "hoodie.keep.min.commits=1", "--option", "hoodie.keep.max.commits=2")
    report = health(path, *keep)
    (lag,) = [f for f in report["findings"] if f["check"] == "archival_due"]
    commits = [i.instant_time for i in oracle.instants(path)]
    assert lag["subject"] == "3 instant(s)" and commits[2] in lag["message"]
    status, out, _ = run_cli(*lag["fix"].split()[1:], *keep)
    assert status == 0 and out.split() == commits[:3]
    assert [i.instant_time for i in oracle.instants(path)] == commits[3:]
    assert "archival_due" not in {f["check"] for f in health(path, *keep)["findings"]}


def test_health_flags_compaction_due_then_pending_compaction_and_compact_clears_both(
    mor_table: Path, tmp_path: Path
) -> None:
    path = _copy(mor_table, tmp_path)  # three delta commits on every file group
    trigger = ("--option", "hoodie.compact.inline.max.delta.commits=2")
    assert checks(health(path)) == []  # default trigger: 5 delta commits
    report = health(path, *trigger)
    (due,) = report["findings"]
    groups = cli_json("file-groups", str(path))
    with_logs = [g for g in groups if g["log_files"] and g["delta_commits"] >= 2]
    assert due["check"] == "compaction_due" and due["subject"] == f"{len(with_logs)} file group(s)"
    assert due["fix"] == f"dbt-hudi compact {path}"

    status, out, _ = run_cli("compact", str(path), "--schedule")
    (scheduled,) = out.split()
    assert status == 0 and oracle.instants(path)[-1].action == "compaction"
    then = time.time() - 2 * 86400
    os.utime(path / ".hoodie" / f"{scheduled}.compaction.requested", (then, then))
    pending = health(path, *trigger)
    assert checks(pending) == [("pending_compaction", scheduled)]
    assert "for 2.0d" in pending["findings"][0]["message"]
    assert all(
        g["pending_compaction"] == scheduled
        for g in cli_json("file-groups", str(path))
        if g["log_files"]
    )

    status, out, err = run_cli("compact", str(path))
    assert (status, err, out.split()) == (0, "", [scheduled])
    assert checks(health(path, *trigger)) == []
    (row,) = [r for r in cli_json("timeline", str(path)) if r["instant_time"] == scheduled]
    assert (row["action"], row["state"], row["operation"]) == ("commit", "completed", "COMPACT")


def test_metadata_table_lagging_the_data_table_is_an_error(cow_table: Path, tmp_path: Path) -> None:
    from engine.fs.properties import read_properties, write_properties
    from engine.fs.storage import Storage

    path = _copy(cow_table, tmp_path)
    storage = Storage(str(path))
    write_properties(
        storage, {**read_properties(storage), "hoodie.table.metadata.partitions": "files"}
    )
    commits = [i.instant_time for i in oracle.instants(path)]
    mdt = path / ".hoodie" / "metadata" / ".hoodie"
    mdt.mkdir(parents=True)
    for t in commits[:-1]:
        (mdt / f"{t}.deltacommit").write_text("{}")
    (finding,) = health(path)["findings"]
    assert (finding["check"], finding["severity"]) == ("metadata_table", "error")
    assert commits[-1] in finding["message"]
    (mdt / f"{commits[-1]}.deltacommit").write_text("{}")
    report = health(path)
    assert report["findings"] == [] and report["facts"]["metadata_table"] == "in sync"


def test_health_text_names_every_fix(troubled_cow: Path, tmp_path: Path) -> None:
    from engine.inspect import health as inspect_health
    from engine.inspect import health_text, open_table

    path = _copy(troubled_cow, tmp_path)
    report = inspect_health(open_table(str(path), {"hoodie.cleaner.commits.retained": "1"}))
    text = health_text(report)
    assert f"{len(report.findings)} finding(s)" in text and "\x1b[" not in text
    for finding in report.findings:
        assert finding.fix in text and finding.check in text
