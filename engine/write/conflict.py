"""Optimistic concurrency control between writers: heartbeats and the conflict check.

Two writers on one table take the table lock (:mod:`engine.services.lock`) only around
start-commit and around commit; their data work overlaps. What keeps the table consistent:

* **Heartbeats** say which pending instants are alive. A writer creates
  ``.hoodie/.heartbeat/{instant_time}`` before requesting its instant and refreshes it every
  ``hoodie.client.heartbeat.interval_in_ms`` until the instant completes or fails. A pending
  write instant counts as failed (and is rolled back by the next writer) when its heartbeat is
  missing, when its holder is a dead process on this host, or when it has not been refreshed for
  ``interval * (hoodie.client.heartbeat.tolerable.misses + 1)``.
* **The conflict check** at commit, under the lock: every instant that completed after this
  write started and touched one of its file groups (wrote or replaced it) makes this write fail
  with :class:`~engine.errors.WriteConflictError`; its instant is rolled back first, so the
  table is as if it never ran. Writers touching disjoint file groups both succeed.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from engine import config
from engine.config import HoodieConfig
from engine.errors import HudiError, WriteConflictError
from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage
from engine.services.lock import TableLock, pid_alive
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action, Instant, State
from engine.timeline.timeline import Timeline
from engine.write.rollback import rollback_instant

__all__ = [
    "HEARTBEAT_FOLDER",
    "Heartbeat",
    "check_write_conflicts",
    "is_write_alive",
    "rollback_on_error",
]

HEARTBEAT_FOLDER = f"{METAFOLDER}/.heartbeat"
# instant times whose heartbeat this process keeps (a pending instant of our own pid is alive
# only while listed here)
_OWN: set[str] = set()


def _heartbeat_path(instant_time: str) -> str:
    return f"{HEARTBEAT_FOLDER}/{instant_time}"


class Heartbeat:
    """The heartbeat of one inflight write; a context manager around the write."""

    def __init__(self, storage: Storage, instant_time: str, cfg: HoodieConfig) -> None:
        self.storage = storage
        self.instant_time = instant_time
        self.interval = max(0.05, cfg.get(config.HEARTBEAT_INTERVAL_MS) / 1000)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _beat(self) -> None:
        record = {"host": socket.gethostname(), "pid": os.getpid(), "beat_at": time.time()}
        # atomic: another writer reading a half-written beat would think this write dead
        self.storage.write_atomic(_heartbeat_path(self.instant_time), json.dumps(record).encode())

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._beat()
            except OSError:
                continue  # a missed beat; the next one may succeed

    def start(self) -> Heartbeat:
        if self._thread is not None:
            return self
        _OWN.add(self.instant_time)
        self._beat()
        self._thread = threading.Thread(
            target=self._run, name=f"hudi-heartbeat-{self.instant_time}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop beating and remove the heartbeat (the instant is completed or rolled back)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        _OWN.discard(self.instant_time)
        self.storage.delete(_heartbeat_path(self.instant_time))

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def is_write_alive(storage: Storage, instant: Instant, cfg: HoodieConfig) -> bool:
    """Whether the writer of pending ``instant`` is still running (see the module notes)."""
    if instant.instant_time in _OWN:
        return True
    rel = _heartbeat_path(instant.instant_time)
    try:
        record = json.loads(storage.read_bytes(rel) or b"{}")
    except (HudiError, OSError, ValueError):
        return False  # no heartbeat: a writer without one (or one that died creating it)
    host, pid = record.get("host"), record.get("pid")
    if host == socket.gethostname() and isinstance(pid, int):
        return pid != os.getpid() and pid_alive(pid)
    interval = cfg.get(config.HEARTBEAT_INTERVAL_MS) / 1000
    misses = cfg.get(config.HEARTBEAT_TOLERABLE_MISSES)
    info = storage.fs.get_file_info(storage.full_path(rel))
    beat_at = info.mtime.timestamp() if info.mtime is not None else 0.0
    return time.time() - beat_at <= interval * (misses + 1)


def _touched(
    stats: Iterable[HoodieWriteStat], replaced: dict[str, list[str]] | None
) -> set[tuple[str, str]]:
    groups = {(s.partition_path or "", s.file_id) for s in stats}
    for partition, file_ids in (replaced or {}).items():
        groups |= {(partition, f) for f in file_ids}
    return groups


def check_write_conflicts(
    storage: Storage,
    started: Timeline,
    instant_time: str,
    action: Action,
    stats: Iterable[HoodieWriteStat],
    replaced: dict[str, list[str]] | None = None,
) -> None:
    """Fail a write whose file groups another writer changed since it started.

    Call under the table lock, right before completing the instant.

    Args:
        storage: The table's storage.
        started: The timeline the write started from (loaded when its instant was requested).
        instant_time: The write's inflight instant.
        action: Its action (commit, deltacommit, replacecommit).
        stats: Its write stats.
        replaced: Its ``partitionToReplaceFileIds`` (replacecommits).

    Raises:
        WriteConflictError: naming both instants and the shared file groups; the write's
            instant has been rolled back.
    """
    ours = _touched(stats, replaced)
    before = {i.instant_time for i in started.completed()}
    current = Timeline.load(storage)
    for other in current.commits_timeline():
        if other.instant_time in before or other.instant_time == instant_time:
            continue
        metadata = current.read_commit_metadata(other)
        clash = ours & (metadata.file_ids_written() | metadata.replaced_file_ids())
        if not clash:
            continue
        rollback_instant(
            storage, Instant(instant_time, action, State.INFLIGHT), current.max_instant_time()
        )
        shown = ", ".join(f"{p}/{f}" if p else f for p, f in sorted(clash)[:5])
        raise WriteConflictError(
            f"Write {instant_time} ({action.value}) on {storage.base_path} conflicts with "
            f"{other.action.value} {other.instant_time}, completed meanwhile, on file group(s) "
            f"{shown}; the write was rolled back, retry it"
        )


def _rollback_own(storage: Storage, lock: TableLock, instant_time: str) -> None:
    """Best effort: roll back this writer's instant if it is still pending."""
    try:
        with lock.hold():
            current = Timeline.load(storage)
            mine = current.get(instant_time)
            if mine is not None and not mine.is_completed:
                rollback_instant(storage, mine, current.max_instant_time())
    except (HudiError, OSError):
        pass  # left pending: the next writer rolls it back once the heartbeat is gone


@contextmanager
def rollback_on_error(storage: Storage, lock: TableLock, instant_time: str) -> Iterator[None]:
    """Around a write's data phase and commit: a failure rolls the instant back at once, so an
    error in a Spark task leaves the table as it was (a conflict has rolled back already)."""
    try:
        yield
    except WriteConflictError:
        raise
    except Exception:
        _rollback_own(storage, lock, instant_time)
        raise
