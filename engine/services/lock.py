"""The table lock: one writer at a time changes the timeline.

The lock is ``.hoodie/lock``, the path Apache Hudi's ``FileSystemBasedLockProvider`` uses, so
Hudi's writers and ours exclude each other. Writers hold it around start-commit and around
commit (conflict check + completing the instant), not while Spark writes data, so disjoint
writers overlap their data work.

On a local file system our lock is a *directory* ``.hoodie/lock/`` holding the record
``owner`` (host, pid, time, token): the record is written into a staging directory
``.hoodie/.aux/.lock-<token>`` that is then renamed to ``.hoodie/lock``, so the lock appears
at once with its record, and the rename fails when anything is there already. A directory,
because of how Hudi's provider takes the lock: it checks that ``.hoodie/lock`` does not exist
and then creates it through Hadoop's local file system, which checks again and opens the file
with truncation (no exclusive create). Had our lock been a file, it could be created in between
and Hudi would truncate our record and believe it held the lock beside us; a directory cannot
be opened as a file, so Hudi's create fails there and its ``tryLock`` answers false. Hudi's lock
file is empty (its provider writes its owner information only when the file does not exist
after creating it, which never happens), so a lock that is a file is Hudi's (or a foreign
writer's) and names no holder: we break it only as Hudi does, when
``hoodie.write.lock.filesystem.expire`` is set and its modification time is older than that,
never for being empty. Hudi breaks ours by the same rule (recursively on 0.15, not at all on
1.x, whose provider deletes the lock non-recursively), and only with an expiry set.

A lock of ours left behind by a killed writer is broken when its holder is provably gone: same
host and the pid no longer alive, or older than ``hoodie.write.lock.filesystem.expire`` minutes.
Every change our writers make to the lock (create it; judge it stale, break it and create our
own; release, which removes it only while it names our token) happens under an exclusive
``flock`` of the guard file ``.hoodie/.aux/lock.guard``. So of any number of waiters that find
the same stale lock exactly one breaks it and takes the lock, the others find the winner's fresh
record when their turn comes. The kernel drops a ``flock`` when its holder dies, so the guard
itself never goes stale; it is never deleted (nothing reads ``.aux`` but bootstrap indexes).
Breaking and releasing rename our lock away before deleting it, so it vanishes at once.

Object stores offer no such primitive: there the lock is the conditional-write lock of
``engine.services.storage_lock`` (``hoodie.write.lock.provider=...StorageBasedLockProvider``,
the default on S3 when boto3 is installed). Without it a table on an object store only has a
best-effort file lock (write, then read back the owner token; a stale lock is judged and deleted
unguarded), fine for one writer; writers declaring
``hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL`` are then refused rather than
trusted to it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import pyarrow.fs as pafs

from engine import config
from engine.config import HoodieConfig
from engine.errors import ConfigError, HudiError, LockTimeoutError
from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage
from engine.polling import poll
from engine.services.storage_lock import ConditionalWriteLock, boto3_available

LOCK_FILE = f"{METAFOLDER}/lock"
# local file systems: the lock is a directory, its holder's record this file in it
LOCK_RECORD = f"{LOCK_FILE}/owner"
GUARD_FILE = f"{METAFOLDER}/.aux/lock.guard"
_STAGING = f"{METAFOLDER}/.aux/.lock-"
# the checksum Hadoop's local file system writes beside Hudi's lock file
_HADOOP_LOCK_CRC = f"{METAFOLDER}/.lock.crc"
# what a rename onto an existing lock answers: a lock of ours, a lock file (Hudi's)
_HELD_ERRNOS = frozenset({errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR})
_POLL_SECONDS = 0.1
_GUARD_POLL_SECONDS = 0.005
# an empty lock file older than this is abandoned: its creator died before writing the record
_EMPTY_RECORD_GRACE_SECONDS = 5


def pid_alive(pid: int) -> bool:
    """Whether a local process ``pid`` still runs (a holder's liveness on this host)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def take_guard(path: str, deadline: float) -> int:
    """An open descriptor of the guard file ``path`` holding its exclusive ``flock``.

    The ``flock`` belongs to the open file, so closing the descriptor (or dying) releases it.
    Once locked, the descriptor must still be the file at ``path``: had the guard been deleted
    and created anew meanwhile, two processes could each hold a different file.

    Raises:
        LockTimeoutError: the guard stayed held until ``deadline`` (``time.monotonic()``).
    """
    os.makedirs(os.path.dirname(path), exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _flock_until(fd, path, deadline)
            if _same_file(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _flock_until(fd: int, path: str, deadline: float) -> None:
    def take() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    if not poll(take, seconds=deadline - time.monotonic(), every=_GUARD_POLL_SECONDS):
        raise LockTimeoutError(
            f"Timed out waiting for the table lock's guard {path}: a process taking or "
            "releasing the lock holds it (stopped?); raise "
            f"{config.LOCK_WAIT_TIME_MS.key} or end that process"
        )


def _same_file(fd: int, path: str) -> bool:
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


class TableLock:
    """Exclusive lock on one table's timeline; use :meth:`hold` as a context manager."""

    def __init__(self, storage: Storage, cfg: HoodieConfig) -> None:
        self.storage = storage
        self.wait_ms = cfg.get(config.LOCK_WAIT_TIME_MS)
        self.expire_minutes = cfg.get(config.LOCK_FILESYSTEM_EXPIRE)
        self.token = uuid.uuid4().hex
        self._held = 0
        _refuse_other_lock_path(storage, cfg)
        self._conditional = _conditional_lock(storage, cfg, self.token)
        self._local = isinstance(storage.fs, pafs.LocalFileSystem)

    def _owner_record(self) -> bytes:
        return json.dumps(
            {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "acquired_at": time.time(),
                "token": self.token,
            }
        ).encode()

    def _try_create(self) -> bool:
        if self._local:
            return self._try_rename_into_place()
        if self.storage.exists(LOCK_FILE):
            return False
        self.storage.write_bytes(LOCK_FILE, self._owner_record(), overwrite=True)
        return self._read_owner().get("token") == self.token

    def _try_rename_into_place(self) -> bool:
        """Local file systems: the staged lock directory renamed to ``.hoodie/lock``; false when
        a lock (ours, a directory, or Hudi's, a file) is there. A leftover empty directory is
        replaced (the rename takes an empty directory's place)."""
        staging = self.storage.full_path(_STAGING + self.token)
        os.makedirs(staging, exist_ok=True)
        with open(os.path.join(staging, "owner"), "wb") as f:
            f.write(self._owner_record())
        try:
            os.rename(staging, self.storage.full_path(LOCK_FILE))
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if exc.errno in _HELD_ERRNOS:
                return False
            raise
        return True

    def _foreign_lock(self) -> bool:
        """Whether the lock is a file: Hudi's provider's (local file systems, where ours is a
        directory)."""
        return self._local and os.path.isfile(self.storage.full_path(LOCK_FILE))

    def _read_owner(self) -> dict[str, object]:
        rel = LOCK_RECORD if self._local else LOCK_FILE
        if self._local and not os.path.isdir(self.storage.full_path(LOCK_FILE)):
            return {}
        try:
            data = json.loads(self.storage.read_bytes(rel) or b"{}")
        except (OSError, ValueError, HudiError):
            return {}
        return data if isinstance(data, dict) else {}

    def _is_abandoned(self) -> bool:
        if self._foreign_lock():
            # Hudi's lock names no holder: only its age breaks it, as Hudi's provider judges
            return 0 < self.expire_minutes * 60 < self._age_seconds()
        owner = self._read_owner()
        if not owner:
            # a holder killed between create and write (object stores), or an empty directory
            return self._age_seconds() > _EMPTY_RECORD_GRACE_SECONDS
        pid, host = owner.get("pid"), owner.get("host")
        if host == socket.gethostname() and isinstance(pid, int) and not pid_alive(pid):
            return True
        acquired = owner.get("acquired_at")
        return (
            self.expire_minutes > 0
            and isinstance(acquired, (int, float))
            and time.time() - acquired > self.expire_minutes * 60
        )

    def _age_seconds(self) -> float:
        info = self.storage.fs.get_file_info(self.storage.full_path(LOCK_FILE))
        mtime = info.mtime.timestamp() if info.mtime is not None else time.time()
        return time.time() - mtime

    def _break(self) -> None:
        """Remove a lock judged abandoned (under the guard)."""
        if not self._local:
            self.storage.delete(LOCK_FILE)
        elif self._foreign_lock():
            for rel in (LOCK_FILE, _HADOOP_LOCK_CRC):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.storage.full_path(rel))
        else:
            self._remove_directory()

    def _remove_directory(self) -> None:
        """Our lock directory renamed away (gone at once), then deleted."""
        gone = self.storage.full_path(f"{_STAGING}gone-{uuid.uuid4().hex}")
        try:
            os.rename(self.storage.full_path(LOCK_FILE), gone)
        except FileNotFoundError:
            return
        shutil.rmtree(gone, ignore_errors=True)

    def acquire(self) -> None:
        """Take the lock (re-entrant within this object).

        Raises:
            LockTimeoutError: another writer held it for ``hoodie.write.lock.wait_time_ms``.
        """
        if self._held:
            self._held += 1
            return
        deadline = time.monotonic() + self.wait_ms / 1000
        if self._conditional is not None:
            self._acquire_conditional(self._conditional, deadline)
            return
        took = poll(
            lambda: self._try_take(deadline),
            seconds=deadline - time.monotonic(),
            every=_POLL_SECONDS,
        )
        if not took:
            raise LockTimeoutError(
                f"Timed out after {self.wait_ms} ms waiting for the lock of table "
                f"{self.storage.base_path} ({self.storage.full_path(LOCK_FILE)} {self._holder()}"
                f"); raise {config.LOCK_WAIT_TIME_MS.key} or remove it if its holder is gone"
            )
        self._held = 1

    def _holder(self) -> str:
        """Who holds the lock, for a timeout's message."""
        if self._foreign_lock():
            return (
                "is a file: Apache Hudi's FileSystemBasedLockProvider holds it, naming no "
                f"holder; it expires after {config.LOCK_FILESYSTEM_EXPIRE.key} minutes if set"
            )
        owner = self._read_owner()
        return f"held by host {owner.get('host')!r} pid {owner.get('pid')!r}"

    def _try_take(self, deadline: float) -> bool:
        """One attempt: create the lock file, or break a lock whose holder is gone and create it.

        Judging, breaking and creating happen under the guard, so two waiters never both break
        one stale lock, nor one of them the lock the other has just created.
        """
        with self._guarded(deadline):
            if self._try_create():
                return True
            if not self._is_abandoned():
                return False
            self._break()
            return self._try_create()

    def _guarded(self, deadline: float) -> AbstractContextManager[None]:
        """The guard of the lock file on a local file system; nothing on object stores."""
        if not self._local:
            return nullcontext()
        return _held_guard(self.storage.full_path(GUARD_FILE), deadline)

    def _acquire_conditional(self, lock: ConditionalWriteLock, deadline: float) -> None:
        if not poll(lock.try_acquire, seconds=deadline - time.monotonic(), every=_POLL_SECONDS):
            owner, _ = lock.owner()
            raise LockTimeoutError(
                f"Timed out after {self.wait_ms} ms waiting for the lock of table "
                f"{self.storage.base_path} ({lock.location} held by host "
                f"{owner.get('host')!r} pid {owner.get('pid')!r} until "
                f"{owner.get('expiration')!r}); raise {config.LOCK_WAIT_TIME_MS.key}"
            )
        self._held = 1

    def release(self) -> None:
        if self._held > 1:
            self._held -= 1
            return
        held, self._held = self._held, 0
        if held == 1 and self._conditional is not None:
            self._conditional.release()
        elif held == 1:
            with self._guarded(time.monotonic() + self.wait_ms / 1000):
                # a lock broken as expired and taken by another writer is theirs now
                if self._read_owner().get("token") != self.token:
                    return
                if self._local:
                    self._remove_directory()
                else:
                    self.storage.delete(LOCK_FILE)

    @contextmanager
    def hold(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()


@contextmanager
def _held_guard(path: str, deadline: float) -> Iterator[None]:
    fd = take_guard(path, deadline)
    try:
        yield
    finally:
        os.close(fd)


def _conditional_lock(
    storage: Storage, cfg: HoodieConfig, token: str
) -> ConditionalWriteLock | None:
    """The conditional-write lock when the table needs or asks for one; ``None`` for the file lock.

    Raises:
        ConfigError: concurrent writers on an object store without a lock safe there, or a
            conditional-write lock on an object store other than S3.
    """
    provider = cfg.get(config.LOCK_PROVIDER)
    concurrent = cfg.get(config.WRITE_CONCURRENCY_MODE) == config.OPTIMISTIC_CONCURRENCY_CONTROL
    if not storage.is_object_store:
        return None  # exclusive creation of the lock file is the local conditional write
    wanted = provider == config.STORAGE_LOCK_PROVIDER or (provider is None and boto3_available())
    if wanted and storage.s3 is not None:
        return ConditionalWriteLock(
            storage.s3,
            storage.root,
            validity_secs=cfg.get(config.LOCK_STORAGE_VALIDITY_SECS),
            renew_secs=cfg.get(config.LOCK_STORAGE_RENEW_INTERVAL_SECS),
            token=token,
            pid_alive=pid_alive,
        )
    if provider == config.STORAGE_LOCK_PROVIDER:
        raise ConfigError(
            f"{config.LOCK_PROVIDER.key}={provider} on {storage.base_path}: conditional-write "
            "locks are implemented for s3:// and s3a:// tables only"
        )
    if concurrent:
        raise ConfigError(
            f"{config.WRITE_CONCURRENCY_MODE.key}={config.OPTIMISTIC_CONCURRENCY_CONTROL} on "
            f"{storage.base_path} needs a lock that is safe on an object store, and the file "
            "lock is not (no exclusive create there): set "
            f"{config.LOCK_PROVIDER.key}={config.STORAGE_LOCK_PROVIDER} (conditional writes; "
            "pip install 'dbt-hudi[s3]'), or write with one writer at a time"
        )
    return None


def _refuse_other_lock_path(storage: Storage, cfg: HoodieConfig) -> None:
    """Our lock is ``.hoodie/lock``; Hudi's writers told to lock elsewhere
    (``hoodie.write.lock.filesystem.path``) would not meet it.

    Raises:
        ConfigError: the option names another folder than the table's ``.hoodie``.
    """
    wanted = cfg.get(config.LOCK_FILESYSTEM_PATH)
    if not wanted:
        return
    given = wanted.removeprefix("file://").removeprefix("file:").rstrip("/")
    if not storage.is_object_store:
        given = os.path.abspath(given)
    if given not in (storage.full_path(METAFOLDER), storage.uri(METAFOLDER).rstrip("/")):
        raise ConfigError(
            f"{config.LOCK_FILESYSTEM_PATH.key}={wanted}: this writer's file lock is "
            f"{storage.full_path(LOCK_FILE)}, so a writer locking {given}/lock would not exclude "
            f"it; leave the option unset (Hudi's default, the table's {METAFOLDER}) on every "
            "writer of the table"
        )
