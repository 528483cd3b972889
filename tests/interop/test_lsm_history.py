"""Archival of tables written in versions 8 and 9 (timeline layout 2) into the LSM history, with
cleaning and compaction running as they do after commits: hudi-rs still reads the table, and our
reader reaches archived instants for time travel and incremental queries, or names the instant
whose files the cleaner removed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.errors import QueryError
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.timeline.timeline import Timeline
from tests.interop.services import rows_by_id, service_options, spark_rows_by_id
from tests.interop.test_services_clean_archive import write_rounds

# the subject is the archived timeline, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.driver_writes]


def archiving(version: str, more: dict[str, str]) -> dict[str, Any]:
    """Options of a table in ``version`` archived beyond three commits, and ``more``."""
    return {
        **service_options("svc"),
        "hoodie.archive.automatic": "true",
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.write.table.version": version,
        **more,
    }


def ours(path: Path, options: dict[str, str] | None = None) -> dict[str, str]:
    """id -> v as the Arrow reader reads the table."""
    return {r["id"]: r["v"] for r in read_table(str(path), options).to_pylist()}


def history_files(path: Path) -> list[str]:
    history = path / ".hoodie" / "timeline" / "history"
    version = (history / "_version_").read_text()
    return [
        f["fileName"] for f in json.loads((history / f"manifest_{version}").read_text())["files"]
    ]


def test_version_9_cow_archives_into_history_and_cleaned_instants_are_named(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    options = archiving(
        "9", {"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "1"}
    )
    history = write_rounds(spark, path, 6, options)
    timeline = Timeline.load(Storage(str(path)))
    active = [i.instant_time for i in timeline.commits_timeline()]
    assert len(active) <= 3 and active[-1] == history[-1][0]
    assert history_files(path)
    archived = [t for t, _ in history if t not in active]
    assert archived and not list((path / ".hoodie").rglob("*.archive.*"))
    assert [i.instant_time for i in timeline.with_history().commits_timeline()] == [
        t for t, _ in history
    ]
    assert rows_by_id(path) == history[-1][1]
    assert spark_rows_by_id(spark, path) == history[-1][1]
    assert ours(path, {"as.of.instant": history[-1][0]}) == history[-1][1]
    # the cleaner kept only the latest slices: time travel into archived instants is refused
    with pytest.raises(QueryError, match=f"Time travel to instant {archived[0]} needs"):
        read_table(str(path), {"as.of.instant": archived[0]})
    # so is an incremental query ending there: it would read the slices of that instant
    first_done = timeline.with_history().completion_times()[archived[0]]
    with pytest.raises(QueryError, match=f"An incremental query ending at instant {archived[0]}"):
        read_table(
            str(path),
            {
                "hoodie.datasource.query.type": "incremental",
                "hoodie.datasource.read.begin.instanttime": "0",
                "hoodie.datasource.read.end.instanttime": first_done,
            },
        )
    # incremental queries start before the active timeline: the archived commits are in range
    incremental = read_table(
        str(path),
        {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": "0",
        },
    ).to_pylist()
    assert {r["id"]: r["v"] for r in incremental} == history[-1][1]
    assert {r["_hoodie_commit_time"] for r in incremental} == {history[0][0], history[-1][0]}


def test_version_8_mor_archived_instants_read_by_time_travel_and_incremental(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    options = archiving(
        "8",
        {
            "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": "3",
        },
    )
    history = write_rounds(spark, path, 6, options)
    timeline = Timeline.load(Storage(str(path)))
    active = {i.instant_time for i in timeline.commits_timeline()}
    archived = [(t, rows) for t, rows in history if t not in active]
    assert archived and history_files(path)
    assert rows_by_id(path) == history[-1][1]
    assert ours(path) == history[-1][1]
    # nothing was cleaned: every archived instant reads as it was
    for t, rows in archived:
        assert ours(path, {"as.of.instant": t}) == rows
    # incremental ranges of table versions 8 and 9 are completion times
    completion = Timeline.load(Storage(str(path))).with_history().completion_times()
    begin, end = completion[archived[0][0]], completion[archived[-1][0]]
    incremental = read_table(
        str(path),
        {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": begin,
            "hoodie.datasource.read.end.instanttime": end,
        },
    ).to_pylist()
    written = {k: v for k, v in archived[-1][1].items() if v != history[0][1].get(k)}
    assert {r["id"]: r["v"] for r in incremental} == written
