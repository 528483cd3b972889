"""Cleaning and archival of engine-written tables, judged by hudi-rs after every service run.

The cleaner is run on demand (``python -m engine.cli clean``) and automatically after commits;
archival after commits. hudi-rs must keep returning the expected rows, time travel to every
retained commit must still work, and replaced file groups must leave storage only through the
cleaner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.fs.storage import Storage
from engine.timeline.avro_metadata import deserialize
from engine.timeline.timeline import Timeline
from tests.interop.services import rows_by_id, run_cli, service_options, spark_rows_by_id, write

# the subject is cleaning and archival, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.driver_writes]

OPTIONS = service_options("svc")
DAYS = ("2024-01-01", "2024-01-02")


def write_rounds(
    spark: Any, path: Path, rounds: int, options: dict[str, str]
) -> list[tuple[str, dict[str, str]]]:
    """``rounds`` upserts touching both partitions; returns (instant, expected rows) per round."""
    history = []
    state: dict[str, str] = {}
    for r in range(rounds):
        batch = [(f"k{i}", DAYS[i % 2], r, f"r{r}-{i}") for i in range(4) if r == 0 or i < 2]
        t = write(spark, path, batch, options)
        state = {**state, **{b[0]: b[3] for b in batch}}
        history.append((t, dict(state)))
    return history


def base_files(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*.parquet"))


def test_clean_cli_keep_latest_commits_keeps_retained_time_travel(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    history = write_rounds(spark, path, 4, OPTIONS)
    instants = [t for t, _ in history]
    assert len(base_files(path)) == 8  # 2 file groups x 4 slices
    code, out, _ = run_cli("clean", str(path), "--option", "hoodie.cleaner.commits.retained=2")
    assert code == 0
    clean_time, _, deleted = out.strip().partition(" ")
    assert deleted == "deleted 2 file(s)"
    # slices of the first commit go; the one in effect at the earliest retained commit stays
    assert not any(instants[0] in f for f in base_files(path))
    assert len(base_files(path)) == 6
    hoodie = path / ".hoodie"
    plan = deserialize((hoodie / f"{clean_time}.clean.requested").read_bytes())
    assert plan["policy"] == "KEEP_LATEST_COMMITS"
    assert plan["earliestInstantToRetain"]["timestamp"] == instants[2]
    assert (hoodie / f"{clean_time}.clean.inflight").exists()
    meta = deserialize((hoodie / f"{clean_time}.clean").read_bytes())
    assert meta["totalFilesDeleted"] == 2
    assert meta["earliestCommitToRetain"] == instants[2]
    assert rows_by_id(path) == history[-1][1]
    for t, expected in history[2:]:
        assert rows_by_id(path, t) == expected
    assert run_cli("clean", str(path), "--option", "hoodie.cleaner.commits.retained=2")[:2] == (
        0,
        "nothing to clean\n",
    )


def test_clean_keep_latest_file_versions_keeps_one_slice_per_group(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    history = write_rounds(spark, path, 3, OPTIONS)
    code, _, _ = run_cli(
        "clean",
        str(path),
        "--option",
        "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
        "--option",
        "hoodie.cleaner.fileversions.retained=1",
    )
    assert code == 0
    files = base_files(path)
    assert len(files) == 2 and all(history[-1][0] in f for f in files)
    assert rows_by_id(path) == history[-1][1]
    assert spark_rows_by_id(spark, path) == history[-1][1]


def test_clean_and_archive_automatic_after_commits(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    options = {
        **OPTIONS,
        "hoodie.clean.automatic": "true",
        "hoodie.archive.automatic": "true",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
    }
    history = write_rounds(spark, path, 6, options)
    storage = Storage(str(path))
    timeline = Timeline.load(storage)
    cleans = [i for i in timeline.completed() if i.action.value == "clean"]
    assert cleans, timeline.instants
    commits = [i.instant_time for i in timeline.commits_timeline()]
    assert len(commits) <= 3 and commits[-1] == history[-1][0]
    archives = list((path / ".hoodie" / "archived").glob(".commits_.archive.*"))
    assert archives, "nothing archived"
    # at most the slice in effect at the retained commit and the latest one per group
    assert len(base_files(path)) <= 4
    assert rows_by_id(path) == history[-1][1]
    assert rows_by_id(path, commits[-1]) == history[-1][1]
    assert spark_rows_by_id(spark, path) == history[-1][1]
    code, out, _ = run_cli("timeline", str(path), "--json")
    assert code == 0
    listed = [(r["instant_time"], r["action"], r["state"]) for r in json.loads(out)]
    assert [t for t, action, _ in listed if action == "commit"] == commits
    assert all(state == "completed" for _, _, state in listed)


def test_clean_removes_replaced_file_groups_only_after_retention(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    history = write_rounds(spark, path, 2, OPTIONS)
    replaced = [f for f in base_files(path) if f.startswith(DAYS[0])]
    over = [("n1", DAYS[0], 9, "over")]
    t_replace = write(
        spark, path, over, {**OPTIONS, "hoodie.datasource.write.operation": "insert_overwrite"}
    )
    after_replace = {k: v for k, v in history[-1][1].items() if int(k[1:]) % 2 == 1} | {
        "n1": "over"
    }
    assert rows_by_id(path) == after_replace
    assert rows_by_id(path, history[-1][0]) == history[-1][1]  # before the replacecommit
    # the replacecommit is the earliest retained commit: its replaced groups stay
    run_cli("clean", str(path), "--option", "hoodie.cleaner.commits.retained=1")
    assert all((path / f).exists() for f in replaced)
    more = [("k1", DAYS[1], 10, "late")]
    write(spark, path, more, OPTIONS)
    code, _, _ = run_cli("clean", str(path), "--option", "hoodie.cleaner.commits.retained=1")
    assert code == 0
    assert not any((path / f).exists() for f in replaced)
    assert rows_by_id(path) == {**after_replace, "k1": "late"}
    meta = Timeline.load(Storage(str(path))).get(t_replace)
    assert meta is not None and meta.is_completed
