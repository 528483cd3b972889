"""The table lock: exclusive across processes, broken when its holder died, clear timeout."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from engine import config
from engine.errors import LockTimeoutError
from engine.fs.storage import Storage
from engine.services.lock import GUARD_FILE, LOCK_FILE, LOCK_RECORD, TableLock, take_guard

pytestmark = pytest.mark.unit


def _cfg(wait_ms: int) -> config.HoodieConfig:
    return config.parse_options({"hoodie.write.lock.wait_time_ms": wait_ms})


def _hold_forever(path: str, ready: object) -> None:
    lock = TableLock(Storage(path), _cfg(1000))
    lock.acquire()
    ready.set()  # type: ignore[attr-defined]
    time.sleep(60)


def _count_under_lock(path: str, rounds: int) -> None:
    counter = Path(path) / "counter"
    lock = TableLock(Storage(path), _cfg(30000))
    for _ in range(rounds):
        with lock.hold():
            value = int(counter.read_text())
            time.sleep(0.002)
            counter.write_text(str(value + 1))


def test_table_lock_held_by_other_process_times_out_naming_holder(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_forever, args=(str(tmp_path), ready))
    holder.start()
    try:
        assert ready.wait(30)
        with pytest.raises(LockTimeoutError, match=rf"pid {holder.pid}"):
            TableLock(Storage(str(tmp_path)), _cfg(300)).acquire()
    finally:
        os.kill(holder.pid or 0, signal.SIGKILL)
        holder.join()
    # the holder was killed: the next writer breaks its lock instead of waiting
    lock = TableLock(Storage(str(tmp_path)), _cfg(300))
    with lock.hold():
        assert (tmp_path / LOCK_FILE).exists()
    assert not (tmp_path / LOCK_FILE).exists()


def test_table_lock_mutual_exclusion_no_lost_updates(tmp_path: Path) -> None:
    (tmp_path / "counter").write_text("0")
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_count_under_lock, args=(str(tmp_path), 25)) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert (tmp_path / "counter").read_text() == "75"


def test_table_lock_reentrant_release_only_at_outermost(tmp_path: Path) -> None:
    lock = TableLock(Storage(str(tmp_path)), _cfg(100))
    with lock.hold():
        with lock.hold():
            pass
        assert (tmp_path / LOCK_FILE).exists()
    assert not (tmp_path / LOCK_FILE).exists()


def test_table_lock_release_leaves_a_lock_another_writer_took_over(tmp_path: Path) -> None:
    lock = TableLock(Storage(str(tmp_path)), _cfg(100))
    lock.acquire()
    # its record expired and another writer broke it and took the lock: the lock is theirs now
    theirs = b'{"host": "h", "pid": 1, "acquired_at": 0, "token": "theirs"}'
    (tmp_path / LOCK_RECORD).write_bytes(theirs)
    lock.release()
    assert (tmp_path / LOCK_RECORD).read_bytes() == theirs


def test_table_lock_times_out_on_a_held_guard_naming_it_table_untouched(tmp_path: Path) -> None:
    guard = take_guard(str(tmp_path / GUARD_FILE), time.monotonic() + 1)
    try:
        with pytest.raises(LockTimeoutError, match=r"guard .*\.hoodie/\.aux/lock\.guard"):
            TableLock(Storage(str(tmp_path)), _cfg(200)).acquire()
    finally:
        os.close(guard)
    assert not (tmp_path / LOCK_FILE).exists()


def test_guard_deleted_while_waited_for_is_taken_anew(tmp_path: Path) -> None:
    """A waiter that locks the guard's old file after it was deleted must not count it as held:
    whoever opens the path now gets the new file, and two holders would not exclude each other."""
    path = tmp_path / GUARD_FILE
    first = take_guard(str(path), time.monotonic() + 1)
    taken: list[int] = []
    waiter = threading.Thread(
        target=lambda: taken.append(take_guard(str(path), time.monotonic() + 10))
    )
    waiter.start()
    time.sleep(0.2)  # the waiter has opened the old file and polls its flock
    path.unlink()
    os.close(first)
    waiter.join(10)
    try:
        assert os.fstat(taken[0]).st_ino == path.stat().st_ino
    finally:
        os.close(taken[0])
