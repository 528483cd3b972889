"""Many waiters take over a stale table lock: one holder at a time, no fresh lock deleted.

Twelve processes wait for ``.hoodie/lock`` while its holder is gone: a real process killed with
SIGKILL while holding it, or a holder on another host whose record is older than
``hoodie.write.lock.filesystem.expire``. A barrier releases them together, so they all judge the
lock stale at once (the race a check-then-delete takeover loses: one waiter deletes the lock
another has just created). Every other holder then SIGKILLs itself while holding the lock, so
most acquisitions are takeovers. Each holder appends ``enter``/``exit`` lines with its own token
and the token the lock file names at that moment to a shared log: the log must be strictly
alternating enter/exit pairs of one token (no overlap), the lock file must name the holder at
both ends (its lock was not deleted under it), and every waiter must get the lock once.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from engine.services.lock import LOCK_FILE, LOCK_RECORD
from tests.concurrency import lock_contender

pytestmark = pytest.mark.unit

WAITERS = 12
_CTX = multiprocessing.get_context("forkserver")
_CTX.set_forkserver_preload([lock_contender.__name__])


def _killed_holder(path: Path) -> int:
    """Leave the lock of a holder killed (SIGKILL) while holding it; expiry off."""
    ready = _CTX.Event()
    holder = _CTX.Process(target=lock_contender.hold_until_killed, args=(str(path), ready))
    holder.start()
    assert ready.wait(30)
    os.kill(holder.pid or 0, signal.SIGKILL)
    holder.join()
    assert (path / LOCK_FILE).exists()
    return 0


def _expired_holder_on_another_host(path: Path) -> int:
    """Leave a lock record of a holder on another host, taken two minutes ago; expiry 1 min."""
    (path / LOCK_FILE).mkdir(parents=True)
    record = {"host": "another-host", "pid": 1, "acquired_at": time.time() - 120, "token": "old"}
    (path / LOCK_RECORD).write_text(json.dumps(record))
    return 1


def _reap(waiters: list[Any], timeout: float) -> None:
    """Join every waiter, reaping each as soon as it ends: a dead holder stays a zombie (its pid
    alive to ``os.kill(pid, 0)``) until its parent reaps it."""
    deadline = time.monotonic() + timeout
    while any(w.exitcode is None for w in waiters) and time.monotonic() < deadline:
        multiprocessing.active_children()
        time.sleep(0.01)


def _assert_one_holder_at_a_time(log: Path) -> set[str]:
    """The tokens of the holders, checked to have held the lock one after another."""
    text = log.read_text()  # the whole log in every failure: it shows who overlapped whom
    lines = [line.split() for line in text.splitlines()]
    assert len(lines) == 2 * WAITERS, text
    for enter, leave in zip(lines[::2], lines[1::2], strict=True):
        token = enter[1]
        assert enter == ["enter", token, token], text
        assert leave == ["exit", token, token], text
    return {line[1] for line in lines}


@pytest.mark.parametrize("stale", [_killed_holder, _expired_holder_on_another_host])
def test_waiters_take_over_a_stale_lock_one_at_a_time(tmp_path: Path, stale: Any) -> None:
    expire_minutes = stale(tmp_path)
    log = tmp_path / "holders.log"
    start = _CTX.Barrier(WAITERS + 1)
    waiters = [
        _CTX.Process(
            target=lock_contender.contend,
            args=(str(tmp_path), str(log), expire_minutes, start, i % 2 == 1),
        )
        for i in range(WAITERS)
    ]
    for waiter in waiters:
        waiter.start()
    start.wait(60)
    _reap(waiters, 60)
    assert [w.exitcode for w in waiters] == [0, -signal.SIGKILL] * (WAITERS // 2)
    assert len(_assert_one_holder_at_a_time(log)) == WAITERS
