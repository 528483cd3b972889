"""One process contending for a table lock (the workers of ``test_lock_takeover``).

Kept apart from the test module so a forkserver can preload it: the contenders fork from a
process that has imported only this and the engine, not pytest, and start in milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from engine.config import parse_options
from engine.fs.storage import Storage
from engine.services.lock import LOCK_RECORD, TableLock


def table_lock(path: str, expire_minutes: int) -> TableLock:
    options = {
        "hoodie.write.lock.wait_time_ms": 60000,
        "hoodie.write.lock.filesystem.expire": expire_minutes,
    }
    return TableLock(Storage(path), parse_options(options))


def named_token(path: str) -> str:
    """The token the lock file names now (``-`` when there is no readable lock file)."""
    try:
        return str(json.loads((Path(path) / LOCK_RECORD).read_bytes()).get("token"))
    except (OSError, ValueError):
        return "-"


def _log(log: str, line: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())  # one append: lines of processes never interleave
    finally:
        os.close(fd)


def contend(path: str, log: str, expire_minutes: int, start: Any, die_holding: bool) -> None:
    """Wait at ``start``, take the lock, log ``enter``/``exit`` with the token the lock file
    names; then release it, or (``die_holding``) SIGKILL itself still holding it, leaving a
    stale lock for the next waiters to take over."""
    lock = table_lock(path, expire_minutes)
    start.wait(60)
    lock.acquire()
    _log(log, f"enter {lock.token} {named_token(path)}")
    time.sleep(0.005)
    _log(log, f"exit {lock.token} {named_token(path)}")
    if die_holding:
        os.kill(os.getpid(), signal.SIGKILL)
    lock.release()


def hold_until_killed(path: str, ready: Any) -> None:
    table_lock(path, 0).acquire()
    ready.set()
    time.sleep(60)
