"""Merge-on-read inserts on an index that finds keys in log files (RECORD_INDEX) become log
blocks of an existing small file group, as Hudi's append handle writes them when the index can
index log files; the record index then places the keys there, the next upsert updates them in
place, compaction folds them into the base file, a rollback of the deltacommit removes them, and
the conflict check of a concurrent writer sees them. hudi-rs reads exactly the expected rows
after every step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import write_hudi
from engine.cli import main as cli_main
from engine.config import parse_options
from engine.errors import WriteConflictError
from engine.fs.storage import Storage
from engine.io.parquet import read_base_file
from engine.metadata.record_index import locate
from engine.model.schema import RECORD_KEY_COLUMN
from engine.services.compaction import schedule_compaction
from engine.services.heartbeat import Heartbeat
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action, new_instant_time
from engine.timeline.timeline import Timeline, create_requested, transition_to_inflight
from engine.view.fs_view import FileSystemView
from engine.write import pipeline
from engine.write.conflict import check_write_conflicts
from tests.hudi_rs import hudi_rs_rows
from tests.interop.index_partitions import record_index_matches_rows
from tests.keyed_table import SCHEMA, write_options

pytestmark = [pytest.mark.spark, pytest.mark.interop]

Rows = list[tuple[str, str, int, str]]


def _options(**extra: Any) -> dict[str, Any]:
    return write_options(
        "events",
        {
            "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.index.type": "RECORD_INDEX",
            "hoodie.write.table.version": "9",
        },
        extra,
    )


def _write(spark: Any, path: Path, rows: Rows, **extra: Any) -> str:
    frame = spark.createDataFrame(rows, SCHEMA)
    return write_hudi(frame, str(path), _options(**extra)).instant_time


def _stats(path: Path, instant_time: str) -> list[HoodieWriteStat]:
    timeline = Timeline.load(Storage(str(path)))
    (instant,) = [i for i in timeline.completed() if i.instant_time == instant_time]
    return timeline.read_commit_metadata(instant).write_stats()


def _hudi_rs(path: Path) -> dict[str, tuple[str, int, str]]:
    """id -> (dt, ts, v) as hudi-rs reads the table; a key read twice fails."""
    rows = hudi_rs_rows(path)
    keys = [r["id"] for r in rows]
    assert len(keys) == len(set(keys)), sorted(keys)
    return {r["id"]: (r["dt"], r["ts"], r["v"]) for r in rows}


def _file_groups(path: Path) -> dict[str, str]:
    """key -> file id, as the record index places the table's keys."""
    storage = Storage(str(path))
    located = locate(storage, Timeline.load(storage), [*_hudi_rs(path), "never-written"])
    assert located is not None
    return {k: where.file_id for k, where in located.items()}


def _expected(rows: Rows) -> dict[str, tuple[str, int, str]]:
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


@pytest.mark.parametrize("job", ["one job", "routed"])
def test_mor_record_index_inserts_append_to_a_small_file_group_with_logs(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job: str
) -> None:
    if job == "routed":  # as when a partition is too large for one task
        monkeypatch.setattr(pipeline, "one_job_plan", lambda *args, **kwargs: None)
    path = tmp_path / "t"
    first = [(f"k{i}", "d", 1, "a") for i in range(4)]
    _write(spark, path, first)
    (group,) = set(_file_groups(path).values())
    _write(spark, path, [("k0", "d", 2, "b")])  # the group now has a log file

    batch = [("n0", "d", 3, "new"), ("n1", "d", 3, "new"), ("k1", "d", 3, "c")]
    t3 = _write(spark, path, batch)
    (stat,) = _stats(path, t3)
    # one log file of the group: two inserts and an update, no base file rewritten
    assert stat.is_delta and stat.file_id == group and stat.prev_commit != "null"
    assert (stat.num_writes, stat.num_inserts, stat.num_update_writes) == (3, 2, 1)
    assert len(list((path / "d").glob("*.parquet"))) == 1
    assert _file_groups(path) == dict.fromkeys(["k0", "k1", "k2", "k3", "n0", "n1"], group)
    want = _expected(first) | _expected([("k0", "d", 2, "b"), *batch])
    assert _hudi_rs(path) == want

    # the next upsert finds the appended keys: updated in place, never inserted again
    t4 = _write(spark, path, [("n0", "d", 4, "upd")])
    (stat,) = _stats(path, t4)
    assert (stat.num_inserts, stat.num_update_writes) == (0, 1) and stat.file_id == group
    assert _hudi_rs(path) == want | _expected([("n0", "d", 4, "upd")])
    record_index_matches_rows(str(path))


def test_mor_record_index_log_inserts_compacted_into_the_base_file(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    _write(spark, path, [("k0", "d", 1, "a"), ("k1", "d", 1, "a")])
    _write(spark, path, [("n0", "d", 2, "new"), ("k0", "d", 2, "b")])
    storage = Storage(str(path))
    compaction = schedule_compaction(storage, parse_options(_options()), force=True)
    assert compaction is not None
    assert cli_main(["compact", str(path)]) == 0
    (file_slice,) = FileSystemView(storage, Timeline.load(storage)).latest_file_slices()
    assert file_slice.base_instant_time == compaction and not file_slice.log_files
    keys = read_base_file(storage, file_slice.base_file_path or "", [RECORD_KEY_COLUMN])
    assert sorted(keys.column(RECORD_KEY_COLUMN).to_pylist()) == ["k0", "k1", "n0"]
    assert _hudi_rs(path) == {"k0": ("d", 2, "b"), "k1": ("d", 1, "a"), "n0": ("d", 2, "new")}
    record_index_matches_rows(str(path))


def test_mor_record_index_rollback_removes_log_inserts(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write(spark, path, [("k0", "d", 1, "a")])
    t2 = _write(spark, path, [("n0", "d", 2, "new"), ("k0", "d", 2, "b")])
    (stat,) = _stats(path, t2)
    assert stat.is_delta and stat.num_inserts == 1
    assert cli_main(["rollback", str(path), t2]) == 0
    assert _hudi_rs(path) == {"k0": ("d", 1, "a")}
    assert set(_file_groups(path)) == {"k0"}  # the index forgot n0 with the deltacommit
    record_index_matches_rows(str(path))
    # written again, n0 is an insert once more
    t3 = _write(spark, path, [("n0", "d", 3, "again")])
    (stat,) = _stats(path, t3)
    assert stat.num_inserts == 1
    assert _hudi_rs(path) == {"k0": ("d", 1, "a"), "n0": ("d", 3, "again")}


def test_conflict_check_finds_a_key_another_writer_appended_as_an_insert(
    spark: Any, tmp_path: Path
) -> None:
    """Writer A appends a new key to a file slice's log; writer B, started before A committed,
    inserted the same key into a file group of its own: B fails at commit, rolled back."""
    path = tmp_path / "t"
    _write(spark, path, [("k0", "d1", 1, "a"), ("k1", "d2", 1, "a")])
    storage = Storage(str(path))
    started = Timeline.load(storage)
    t_b = new_instant_time(started.max_instant_time())
    create_requested(storage, t_b, Action.DELTA_COMMIT)
    transition_to_inflight(storage, t_b, Action.DELTA_COMMIT)
    with Heartbeat(storage, t_b, parse_options({})):  # B is alive: A must not roll it back
        t_a = _write(spark, path, [("k-new", "d1", 2, "a")])
        (appended,) = _stats(path, t_a)
        assert appended.is_delta and appended.num_inserts == 1
        # B's insert of another key passes; of A's key, fails
        check_write_conflicts(
            storage, started, t_b, Action.DELTA_COMMIT, [_base_file(path, t_b, ["k-other"])]
        )
        mine = [_base_file(path, t_b, ["k-mine", "k-new"])]
        with pytest.raises(WriteConflictError, match=f"{t_b}.*{t_a}.*k-new.*rolled back"):
            check_write_conflicts(storage, started, t_b, Action.DELTA_COMMIT, mine)
    assert Timeline.load(storage).get(t_b) is None
    assert set(_hudi_rs(path)) == {"k0", "k1", "k-new"}


def _base_file(path: Path, instant_time: str, keys: list[str]) -> HoodieWriteStat:
    """A base file writer B inserted ``keys`` into, in a new file group of partition d2."""
    file_id = f"b{len(keys)}{'0' * 7}-0000-0000-0000-000000000000-0"
    rel = f"d2/{file_id}_0-1-0_{instant_time}.parquet"
    pq.write_table(pa.table({RECORD_KEY_COLUMN: keys}), path / rel)
    return HoodieWriteStat(file_id=file_id, path=rel, partition_path="d2", num_inserts=len(keys))
