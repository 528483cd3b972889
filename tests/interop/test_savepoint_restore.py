"""Savepoints and restore on real tables, judged by hudi-rs and by our readers.

For copy-on-write and merge-on-read, table versions 6 and 9 (and merge-on-read 8): savepoint a
commit, write more (updates of the same keys, a compaction on merge-on-read) and clean
aggressively, then restore to the savepoint. The cleaner keeps the savepointed slices, a restore
to a cleaned instant without a savepoint is refused with the table untouched, and after the
restore hudi-rs, the Arrow reader and the Spark reader read exactly the savepointed rows, time
travel to a removed instant fails naming it, and the next upsert works.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import read_table, spark_table
from engine.errors import QueryError, TimelineError
from engine.fs.storage import Storage
from engine.timeline.avro_metadata import deserialize
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from tests.interop.services import rows_by_id, service_options, spark_rows_by_id, write

# the subject is savepoints and restores, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.driver_writes]

AGGRESSIVE = {"hoodie.cleaner.commits.retained": "1"}


def _options(table_type: str, version: int) -> dict[str, Any]:
    return {
        **service_options("sp"),
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.write.table.version": str(version),
    }


def _arrow_rows(path: Path, as_of: str | None = None) -> dict[str, str]:
    options = {"as.of.instant": as_of} if as_of else None
    return {r["id"]: r["v"] for r in read_table(str(path), options).to_pylist()}


def _incremental(begin: str) -> dict[str, str]:
    return {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": begin,
    }


def _listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def _update(spark: Any, path: Path, opts: dict[str, Any], ts: int, tag: str) -> str:
    rows = [(f"k{i}", f"2024-01-0{i % 2 + 1}", ts, f"{tag}{i}") for i in range(4)]
    return write(spark, path, rows, opts)


@pytest.mark.parametrize(
    ("table_type", "version"),
    [
        ("COPY_ON_WRITE", 6),
        ("COPY_ON_WRITE", 9),
        ("MERGE_ON_READ", 6),
        ("MERGE_ON_READ", 8),
        ("MERGE_ON_READ", 9),
    ],
)
def test_restore_to_savepoint_after_aggressive_cleaning(
    spark: Any, tmp_path: Path, table_type: str, version: int
) -> None:
    path = tmp_path / "t"
    opts = _options(table_type, version)
    first = _update(spark, path, opts, 1, "a")
    saved = _update(spark, path, opts, 2, "b")
    table = spark_table(str(path), spark)
    savepoint = table.savepoint(comment="before the bad run")
    assert savepoint.instant_time == saved
    assert [s.instant_time for s in table.savepoints()] == [saved]
    expected = rows_by_id(path)
    assert expected == {f"k{i}": f"b{i}" for i in range(4)}

    later: list[str] = []
    for ts, tag in ((3, "c"), (4, "d"), (5, "e")):
        later.append(_update(spark, path, opts, ts, tag))
        if table_type == "MERGE_ON_READ":
            later += table.compact()
    later.append(write(spark, path, [("k9", "2024-01-03", 7, "x9")], opts))
    assert table.clean(AGGRESSIVE) is not None
    # the savepointed slices stayed: time travel to the savepoint still reads its rows
    assert _arrow_rows(path, saved) == expected

    # cleaned and not pinned (on merge-on-read the first commit's slice is the savepoint's)
    cleaned = first if table_type == "COPY_ON_WRITE" else later[1]
    listing = _listing(path)
    with pytest.raises(TimelineError, match=f"Restore to instant {cleaned}"):
        table.restore(cleaned)
    assert _listing(path) == listing

    result = table.restore(saved)
    assert result.target == saved
    assert [i.instant_time for i in result.rolled_back] == sorted(later, reverse=True)
    assert rows_by_id(path) == expected
    assert _arrow_rows(path) == expected
    assert spark_rows_by_id(spark, path) == expected
    assert _arrow_rows(path, saved) == expected
    with pytest.raises(QueryError, match=f"removed instant.*{later[0]}"):
        _arrow_rows(path, later[0])
    # a reader that consumed up to a removed instant cannot be answered by the changes since
    with pytest.raises(QueryError, match=f"incremental query from instant {later[0]}"):
        read_table(str(path), _incremental(later[0]))
    # from the savepoint on (layout 2 compares completion times: its own commit may show)
    since_saved = read_table(str(path), _incremental(saved))
    since = since_saved.column("_hoodie_commit_time").to_pylist()
    assert set(since) <= {saved}

    timeline = Timeline.load(Storage(str(path)))
    restores = timeline.completed([Action.RESTORE])
    assert [r.instant_time for r in restores] == [result.instant_time]
    metadata = deserialize(timeline.read_content(restores[0]))
    assert sorted(metadata["hoodieRestoreMetadata"]) == sorted(later)
    assert not timeline.pending()
    assert timeline.savepoint_times() == [saved]
    assert not [i for i in timeline.commits_timeline() if i.instant_time > saved]

    write(spark, path, [("k1", "2024-01-02", 8, "y1")], opts)
    assert rows_by_id(path) == {**expected, "k1": "y1"}
    assert _arrow_rows(path) == {**expected, "k1": "y1"}


def test_savepoint_delete_lets_the_cleaner_go(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = _options("COPY_ON_WRITE", 6)
    _update(spark, path, opts, 1, "a")
    table = spark_table(str(path), spark)
    saved = table.savepoint().instant_time
    # Hudi's record: who, when, the files of every slice as of the commit, by partition
    record = deserialize((path / ".hoodie" / f"{saved}.savepoint").read_bytes())
    assert record["savepointedBy"] and record["savepointedAt"] > 0 and record["version"] == 1
    pinned = {n for m in record["partitionMetadata"].values() for n in m["savepointDataFile"]}
    assert pinned == {p.name for p in path.rglob(f"*_{saved}.parquet")}
    assert (path / ".hoodie" / f"{saved}.savepoint.inflight").exists()
    with pytest.raises(TimelineError, match="savepointed already"):
        table.savepoint(saved)
    with pytest.raises(TimelineError, match=f"Cannot roll back {saved}: it is savepointed"):
        table.rollback(saved)
    _update(spark, path, opts, 2, "b")
    _update(spark, path, opts, 3, "c")
    table.clean(AGGRESSIVE)
    assert list(path.rglob(f"*_{saved}.parquet"))
    table.delete_savepoint(saved)
    assert table.savepoints() == []
    assert not [p for p in (path / ".hoodie").iterdir() if ".savepoint" in p.name]
    table.clean(AGGRESSIVE)
    assert not list(path.rglob(f"*_{saved}.parquet"))
    with pytest.raises(TimelineError, match=f"No savepoint at {saved}"):
        table.delete_savepoint(saved)


def test_time_travel_between_savepoints_of_a_merge_on_read_table(
    spark: Any, tmp_path: Path
) -> None:
    """A savepoint completes after its commit (table version 9 names completion times): slicing
    files by completion time keeps the commit's own, so time travel to either savepoint reads its
    rows after a compaction and a clean."""
    path = tmp_path / "t"
    opts = {
        **_options("MERGE_ON_READ", 9),
        **AGGRESSIVE,
        "hoodie.clean.automatic": "true",
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "2",
    }
    table = spark_table(str(path), spark)
    first = write(spark, path, [("k0", "2024-01-01", 1, "a0")], opts)
    table.savepoint(first)
    second = write(
        spark, path, [("k0", "2024-01-01", 2, "b0"), ("k7", "2024-01-03", 2, "b7")], opts
    )
    assert table.timeline().completed([Action.COMMIT])  # compacted
    table.savepoint(second)
    assert _arrow_rows(path, first) == {"k0": "a0"} == rows_by_id(path, first)
    assert _arrow_rows(path) == {"k0": "b0", "k7": "b7"} == rows_by_id(path)
    assert _arrow_rows(path, second) == {"k0": "b0", "k7": "b7"}
