"""Fault-injection harness: run a writer process until a kill point SIGKILLs it, then judge.

After every kill the table must read, through hudi-rs and through ``read_hudi``, exactly as of
its last completed commit; after the next write and a clean no leftover of a failed instant may
remain on storage (:func:`assert_no_orphans`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pyarrow.fs as pafs

from engine.faults import FAULT_COUNTER_ENV, FAULT_PID_ENV, FAULT_POINT_ENV
from engine.fs.filenames import is_base_file, is_log_file, parse_base_file_name, parse_log_file_name
from engine.fs.storage import Storage
from engine.io.logfile import HeaderMetadataType, HoodieLogBlockType, read_log_blocks
from engine.timeline.instant import Action, State
from engine.timeline.markers import create_marker
from engine.timeline.timeline import Timeline
from engine.view.fs_view import Visibility, list_partition_paths
from tests.hudi_rs import hudi_rs_rows

REPO = Path(__file__).resolve().parents[2]
WRITER_TIMEOUT = 300
Rows = dict[str, tuple[str, int, str]]  # id -> (dt, ts, v)


def reap(pid: int) -> None:
    """Kill whatever the writer left running: its process group (driver, JVM) and the Spark
    Python daemon and workers (their own group; found by the inherited HUDI_FAULT_PID)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    leftovers = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(FAULT_PID_ENV) == str(pid):
                proc.kill()
                leftovers.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    psutil.wait_procs(leftovers, timeout=30)


def run_writer(
    table: Path | str, work: Path, steps: list[dict[str, Any]], fault: str | None
) -> tuple[bool, str]:
    """Run ``steps`` in a writer process with kill point ``fault`` armed.

    Returns:
        (killed by SIGKILL, the process output); a failure other than the kill raises.
    """
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.pop(FAULT_PID_ENV, None)
    env[FAULT_POINT_ENV] = fault or ""
    counter = work / f"hits-{time.monotonic_ns()}"
    env[FAULT_COUNTER_ENV] = str(counter)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    spec = json.dumps({"table": str(table), "work": str(work / "spark"), "steps": steps})
    log = work / f"writer-{time.monotonic_ns()}.log"
    argv = [sys.executable, "-m", "tests.faults.writer", spec]
    returncode = run_in_own_group(argv, cwd=REPO, env=env, log=log, timeout=WRITER_TIMEOUT)
    text = log.read_text(errors="replace")
    if returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"writer failed ({returncode}) at {fault}:\n{text[-3000:]}")
    return returncode == -signal.SIGKILL, text


def run_in_own_group(
    argv: list[str], *, cwd: Path, env: dict[str, str], log: Path, timeout: float
) -> int:
    """Run ``argv`` as the leader of a new process group, its output to ``log``; whatever it
    left running is killed after it ends (:func:`reap`). Returns its exit code (``-9``: killed).
    """
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            return proc.wait(timeout=timeout)
        finally:
            reap(proc.pid)


# ---- what readers see -----------------------------------------------------------------------


def _as_rows(records: list[dict[str, Any]], source: str) -> Rows:
    out: Rows = {}
    for r in records:
        assert r["id"] not in out, f"{source}: duplicate record key {r['id']}"
        out[r["id"]] = (r["dt"], r["ts"], r["v"])
    return out


def assert_reads(spark: Any, path: Path | str, expected: Rows, context: str) -> None:
    """hudi-rs and read_hudi both return exactly ``expected``."""
    from engine import read_hudi

    judged = _as_rows(hudi_rs_rows(str(path)), "hudi-rs")
    assert judged == expected, f"hudi-rs after {context}"
    ours = _as_rows([r.asDict() for r in read_hudi(spark, str(path)).collect()], "read_hudi")
    assert ours == expected, f"read_hudi after {context}"


def copy_table(source: str, target: str) -> None:
    """Copy every file of the table at ``source`` to ``target`` (a fresh base path, local or on
    an object store)."""
    src, dst = Storage(source), Storage(target)
    if not src.is_object_store and not dst.is_object_store:
        shutil.copytree(src.root, dst.root)
        return
    selector = pafs.FileSelector(src.root, recursive=True)
    for info in src.fs.get_file_info(selector):
        if info.type == pafs.FileType.File:
            rel = info.path[len(src.root) + 1 :]
            dst.write_bytes(rel, src.read_bytes(rel))


def completed_writes(path: Path | str) -> set[str]:
    return {i.instant_time for i in Timeline.load(Storage(str(path))).commits_timeline()}


def pending_writes(path: Path | str) -> list[str]:
    timeline = Timeline.load(Storage(str(path)))
    return [i.instant_time for i in timeline.pending([Action.COMMIT, Action.DELTA_COMMIT])]


def uncommit(path: Path | str, instant_time: str) -> None:
    """Make a completed write look like one killed just before its commit: markers back, the
    completed instant file gone (requested and inflight stay)."""
    storage = Storage(str(path))
    timeline = Timeline.load(storage)
    instant = timeline.get(instant_time)
    assert instant is not None and instant.is_completed
    for stat in timeline.read_commit_metadata(instant).write_stats():
        partition, _, name = stat.path.rpartition("/")
        io_type = "APPEND" if stat.is_delta else ("MERGE" if stat.prev_commit else "CREATE")
        create_marker(storage, instant_time, partition, name, io_type)  # type: ignore[arg-type]
    storage.delete(f"{timeline.layout.directory}/{timeline.layout.file_name(instant)}")
    assert instant_time in pending_writes(path)


# ---- leftovers --------------------------------------------------------------------------------


def assert_no_orphans(path: Path | str) -> None:
    """No pending instant, no file of an uncommitted instant, no log block of one that no
    rollback command block covers, no marker directory of an uncompleted instant."""
    storage = Storage(str(path))
    timeline = Timeline.load(storage)
    assert not [i for i in timeline.instants if i.state is not State.COMPLETED], timeline.instants
    vis = Visibility.of(timeline)
    done = {i.instant_time for i in timeline.completed()}
    for partition, entries in list_partition_paths(storage).items():
        rollbacks: dict[tuple[str, str], set[str]] = {}
        blocks: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for entry in entries:
            rel = f"{partition}/{entry.name}" if partition else entry.name
            if is_base_file(entry.name):
                t = parse_base_file_name(entry.name).instant_time
                assert vis.is_committed(t), f"orphan base file {rel}"
            elif is_log_file(entry.name):
                log = parse_log_file_name(entry.name)
                key = (log.file_id, log.base_instant_time)
                for block in read_log_blocks(storage.read_bytes(rel)):
                    if block.block_type is HoodieLogBlockType.COMMAND_BLOCK:
                        target = block.header.get(HeaderMetadataType.TARGET_INSTANT_TIME)
                        rollbacks.setdefault(key, set()).add(str(target))
                    else:
                        blocks.setdefault(key, []).append((str(block.instant_time), rel))
        for key, written in blocks.items():
            for instant_time, rel in written:
                assert vis.is_committed(instant_time) or instant_time in rollbacks.get(key, ()), (
                    f"orphan log block of {instant_time} in {rel}"
                )
    start = timeline.first_commit_time() or ""
    for entry in storage.list_dir(".hoodie/.temp"):
        assert entry.name in done or entry.name < start, f"markers of instant {entry.name}"
