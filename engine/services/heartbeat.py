"""Heartbeats of inflight writes: which pending instants are alive.

A writer creates ``.hoodie/.heartbeat/{instant_time}`` before requesting its instant and
refreshes it every ``hoodie.client.heartbeat.interval_in_ms`` until the instant completes or
fails. A pending write instant counts as failed (and is rolled back by the next writer) when its
heartbeat is missing, when its holder is a dead process on this host, or when it has not been
refreshed for ``interval * (hoodie.client.heartbeat.tolerable.misses + 1)``.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time

from engine import config
from engine.config import HoodieConfig
from engine.errors import HudiError
from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage
from engine.services.lock import pid_alive
from engine.timeline.instant import Instant

__all__ = ["HEARTBEAT_FOLDER", "Heartbeat", "is_write_alive"]

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


def has_heartbeat(storage: Storage, instant_time: str) -> bool:
    """Whether the writer of ``instant_time`` kept a heartbeat (alive or not): the engine's
    writes and clusterings do, Apache Hudi's clustering does not."""
    return storage.exists(_heartbeat_path(instant_time))


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
