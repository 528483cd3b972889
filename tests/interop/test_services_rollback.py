"""Rollbacks, heartbeats and the write-conflict check, judged by hudi-rs.

Covers the rollback of the latest completed write (``python -m engine.cli rollback``) on
copy-on-write and merge-on-read tables (where a rollback COMMAND block is appended, as Hudi
does), failed writes rolled back by the next write, and the commit-time conflict check.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.config import parse_options
from engine.errors import WriteConflictError
from engine.fs.filenames import parse_log_file_name
from engine.fs.storage import Storage
from engine.io.logfile import HeaderMetadataType, HoodieLogBlockType, read_log_blocks
from engine.services.heartbeat import Heartbeat, is_write_alive
from engine.timeline.avro_metadata import deserialize
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action, Instant, State, new_instant_time
from engine.timeline.timeline import Timeline, create_requested, transition_to_inflight
from engine.write.conflict import check_write_conflicts
from tests.faults.harness import assert_no_orphans, uncommit
from tests.interop.services import rows_by_id, run_cli, service_options, spark_rows_by_id, write
from tests.keyed_table import SCHEMA

pytestmark = [pytest.mark.interop, pytest.mark.spark]

OPTIONS = service_options("rb")
MOR = {**OPTIONS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def seed(spark: Any, path: Path, options: dict[str, str]) -> dict[str, str]:
    rows = [(f"k{i}", f"2024-01-0{i % 2 + 1}", 1, f"a{i}") for i in range(4)]
    write(spark, path, rows, options)
    return {r[0]: r[3] for r in rows}


def test_rollback_cli_last_cow_commit_restores_previous_state(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    before = seed(spark, path, OPTIONS)
    t = write(spark, path, [("k0", "2024-01-01", 2, "b0"), ("k9", "2024-01-03", 2, "b9")], OPTIONS)
    assert rows_by_id(path)["k0"] == "b0"
    code, out, err = run_cli("rollback", str(path), t)
    assert code == 0, err
    rollback_time = out.strip()
    assert rows_by_id(path) == before
    assert spark_rows_by_id(spark, path) == before
    assert not list(path.rglob(f"*_{t}.parquet"))
    hoodie = path / ".hoodie"
    assert not [p for p in hoodie.iterdir() if p.name.startswith(t)]
    meta = deserialize((hoodie / f"{rollback_time}.rollback").read_bytes())
    assert meta["commitsRollback"] == [t]
    assert meta["instantsRollback"] == [{"commitTime": t, "action": "commit"}]
    assert meta["totalFilesDeleted"] == 2
    plan = deserialize((hoodie / f"{rollback_time}.rollback.requested").read_bytes())
    assert plan["instantToRollback"] == {"commitTime": t, "action": "commit"}
    # the table keeps working
    write(spark, path, [("k1", "2024-01-02", 3, "c1")], OPTIONS)
    assert rows_by_id(path) == {**before, "k1": "c1"}
    assert_no_orphans(path)


def test_rollback_cli_not_the_last_write_fails_and_changes_nothing(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    seed(spark, path, OPTIONS)
    first = Timeline.load(Storage(str(path))).commits_timeline()[0].instant_time
    write(spark, path, [("k0", "2024-01-01", 2, "b0")], OPTIONS)
    listing = sorted(p.name for p in (path / ".hoodie").iterdir())
    code, _, err = run_cli("rollback", str(path), first)
    assert code == 2
    assert "not the latest completed write" in err and first in err
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == listing


def test_rollback_last_mor_deltacommit_appends_command_block(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    before = seed(spark, path, MOR)
    write(spark, path, [("k0", "2024-01-01", 2, "b0")], MOR)
    middle = {**before, "k0": "b0"}
    t = write(spark, path, [("k0", "2024-01-01", 3, "c0"), ("k1", "2024-01-02", 3, "c1")], MOR)
    logs_before = sorted(p.name for p in path.rglob(".*.log.*"))
    code, out, err = run_cli("rollback", str(path), t)
    assert code == 0, err
    rollback_time = out.strip()
    assert rows_by_id(path) == middle
    assert spark_rows_by_id(spark, path) == middle
    added = sorted({p.name for p in path.rglob(".*.log.*")} - set(logs_before))
    assert len(added) == 2 and all(n.endswith("_1-0-1") for n in added)  # one per file slice
    for name in added:
        log = parse_log_file_name(name)
        found = next(path.rglob(name))
        [block] = list(read_log_blocks(found.read_bytes()))
        assert block.block_type is HoodieLogBlockType.COMMAND_BLOCK
        assert block.header[HeaderMetadataType.INSTANT_TIME] == rollback_time
        assert block.header[HeaderMetadataType.TARGET_INSTANT_TIME] == t
        assert log.version >= 2
    meta = deserialize((path / ".hoodie" / f"{rollback_time}.rollback").read_bytes())
    per_partition = meta["partitionMetadata"]
    assert all(
        m["rollbackLogFiles"] and m["logFilesFromFailedCommit"] for m in per_partition.values()
    )
    write(spark, path, [("k2", "2024-01-01", 4, "d2")], MOR)
    assert rows_by_id(path) == {**middle, "k2": "d2"}
    assert_no_orphans(path)


def test_failed_write_rolled_back_by_next_write(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    before = seed(spark, path, MOR)
    t = write(spark, path, [("k0", "2024-01-01", 2, "dead")], MOR)
    uncommit(path, t)  # what a writer killed before its commit leaves
    assert rows_by_id(path) == before
    result = write_hudi(
        spark.createDataFrame([("k1", "2024-01-02", 3, "live")], SCHEMA), str(path), MOR
    )
    assert result.rolled_back == [t]
    assert rows_by_id(path) == {**before, "k1": "live"}
    assert_no_orphans(path)


def test_version_9_rollbacks_delete_the_delta_commits_log_files(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Table version 9: log files are named by their delta commit, so a rollback deletes them
    (no COMMAND block), for the latest completed write and for a failed one alike."""
    path = tmp_path / "t"
    before = seed(spark, path, {**MOR, "hoodie.write.table.version": "9"})
    write(spark, path, [("k0", "2024-01-01", 2, "b0")], MOR)
    middle = {**before, "k0": "b0"}
    t = write(spark, path, [("k0", "2024-01-01", 3, "c0"), ("k1", "2024-01-02", 3, "c1")], MOR)
    assert list(path.rglob(f".*_{t}.log.*")), "the update went to log files named by its instant"
    code, _, err = run_cli("rollback", str(path), t)
    assert code == 0, err
    assert rows_by_id(path) == middle
    assert not list(path.rglob(f".*_{t}.log.*")) and not list(path.rglob(f"*_{t}.parquet"))
    for log in path.rglob(".*.log.*"):
        kinds = {b.block_type for b in read_log_blocks(log.read_bytes())}
        assert HoodieLogBlockType.COMMAND_BLOCK not in kinds, log.name
    failed = write(spark, path, [("k0", "2024-01-01", 4, "dead")], MOR)
    uncommit(path, failed)
    assert rows_by_id(path) == middle
    result = write_hudi(
        spark.createDataFrame([("k1", "2024-01-02", 5, "live")], SCHEMA), str(path), MOR
    )
    assert result.rolled_back == [failed]
    assert rows_by_id(path) == {**middle, "k1": "live"}
    assert not list(path.rglob(f".*_{failed}.log.*"))
    timeline = Timeline.load(Storage(str(path)))
    assert timeline.layout.version == 2
    assert all(i.completion_time for i in timeline.completed())
    assert_no_orphans(path)


def _writer_b_inflight(storage: Storage, started: Timeline) -> str:
    """Writer B's instant, requested and inflight after ``started``."""
    t_b = new_instant_time(started.max_instant_time())
    create_requested(storage, t_b, Action.COMMIT)
    transition_to_inflight(storage, t_b, Action.COMMIT)
    return t_b


def _touching(path: Path, partition: str) -> list[HoodieWriteStat]:
    file_id = next((path / partition).glob("*.parquet")).name.split("_")[0]
    return [HoodieWriteStat(file_id=file_id, path="", partition_path=partition)]


def test_conflict_check_same_file_group_raises_and_rolls_back(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    before = seed(spark, path, OPTIONS)
    storage = Storage(str(path))
    started = Timeline.load(storage)
    # writer B requests its instant, then writer A commits into the same file group
    t_b = _writer_b_inflight(storage, started)
    with Heartbeat(storage, t_b, parse_options({})):  # B is alive: A must not roll it back
        t_a = write(spark, path, [("k0", "2024-01-01", 2, "a-wins")], OPTIONS)
        assert Timeline.load(storage).get(t_b) is not None
        check_write_conflicts(storage, started, t_b, Action.COMMIT, _touching(path, "2024-01-02"))
        with pytest.raises(WriteConflictError, match=f"{t_b}.*{t_a}.*rolled back"):
            check_write_conflicts(
                storage, started, t_b, Action.COMMIT, _touching(path, "2024-01-01")
            )
    assert Timeline.load(storage).get(t_b) is None
    assert rows_by_id(path) == {**before, "k0": "a-wins"}


def _inserted(path: Path, partition: str, instant_time: str, keys: list[str]) -> HoodieWriteStat:
    """A base file writer B inserted ``keys`` into, in a new file group of its own."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    file_id = f"b{len(keys)}{'0' * 7}-0000-0000-0000-000000000000-0"
    rel = f"{partition}/{file_id}_0-1-0_{instant_time}.parquet"
    (path / partition).mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"_hoodie_record_key": keys}), path / rel)
    return HoodieWriteStat(
        file_id=file_id, path=rel, partition_path=partition, num_inserts=len(keys)
    )


def test_conflict_check_same_new_key_in_two_file_groups_raises(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two writers insert one new key, each into a file group of its own: the second to commit
    fails (neither saw the other's key), so the key is never in the table twice."""
    path = tmp_path / "t"
    before = seed(spark, path, OPTIONS)
    storage = Storage(str(path))
    started = Timeline.load(storage)
    t_b = _writer_b_inflight(storage, started)
    with Heartbeat(storage, t_b, parse_options({})):
        t_a = write(spark, path, [("k-new", "2024-01-03", 2, "a")], OPTIONS)
        others = [_inserted(path, "2024-01-03", t_b, ["k-other"])]
        check_write_conflicts(storage, started, t_b, Action.COMMIT, others)
        same = [_inserted(path, "2024-01-03", t_b, ["k-new", "k-mine"])]
        with pytest.raises(WriteConflictError, match=f"{t_b}.*{t_a}.*k-new.*rolled back"):
            check_write_conflicts(storage, started, t_b, Action.COMMIT, same)
    assert Timeline.load(storage).get(t_b) is None
    assert rows_by_id(path) == {**before, "k-new": "a"}


def test_is_write_alive_heartbeat_states(tmp_path) -> None:  # type: ignore[no-untyped-def]
    storage = Storage(str(tmp_path))
    cfg = parse_options(
        {
            "hoodie.client.heartbeat.interval_in_ms": "1000",
            "hoodie.client.heartbeat.tolerable.misses": "1",
        }
    )

    def instant(t: str) -> Instant:
        return Instant(t, Action.COMMIT, State.INFLIGHT)

    def beat(t: str, record: dict[str, Any], age: float = 0.0) -> None:
        rel = f".hoodie/.heartbeat/{t}"
        storage.write_bytes(rel, json.dumps(record).encode(), overwrite=True)
        stamp = time.time() - age
        os.utime(storage.full_path(rel), (stamp, stamp))

    assert not is_write_alive(storage, instant("1"), cfg)  # no heartbeat
    with Heartbeat(storage, "2", cfg):
        assert is_write_alive(storage, instant("2"), cfg)  # this process's own write
    assert not is_write_alive(storage, instant("2"), cfg)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    child = gone.pid
    beat("3", {"host": socket.gethostname(), "pid": child})
    assert not is_write_alive(storage, instant("3"), cfg)  # its process is gone
    beat("4", {"host": "elsewhere", "pid": 1})
    assert is_write_alive(storage, instant("4"), cfg)  # another host, fresh
    beat("5", {"host": "elsewhere", "pid": 1}, age=10)
    assert not is_write_alive(storage, instant("5"), cfg)  # another host, beats missed
