"""The table lock on S3: an object created with a conditional put.

S3 has no exclusive file creation and no atomic rename, so the file lock's "create, then read back
the owner" can let two writers both believe they hold it. Since 2024 S3 (and S3-compatible
servers) honour ``If-None-Match: *`` on PutObject: of two concurrent puts of the same key exactly
one succeeds, the other gets ``412 Precondition Failed``. That is the lock, at the key Hudi's
``StorageBasedLockProvider`` uses (``.hoodie/.locks/table_lock.json``):

* **acquire**: put the owner record with ``If-None-Match: *``;
* **renew**: while held, a daemon thread rewrites the record with a later expiration, conditional
  on the ETag it last wrote (``If-Match``), every ``hoodie.write.lock.storage.renew.interval.secs``;
* **take over**: a record past its expiration (``hoodie.write.lock.storage.validity.timeout.secs``)
  or whose holder is a dead process on this host is replaced conditionally on the ETag read, so of
  two writers breaking the same stale lock only one wins;
* **release**: delete conditional on our ETag (plain delete after an owner check where a server
  does not support conditional deletes).

pyarrow's S3 filesystem cannot send conditional headers, hence boto3 (the ``s3`` extra).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from engine.errors import ConfigError, HudiError
from engine.fs.properties import METAFOLDER
from engine.fs.s3 import S3Settings

LOCK_KEY = f"{METAFOLDER}/.locks/table_lock.json"
_PRECONDITION_CODES = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict", "409"})


class LockLostError(HudiError):
    """The conditional-write lock was taken over while held (its renewals failed)."""


def boto3_available() -> bool:
    """Whether the conditional-write lock can run here (boto3 installed)."""
    try:
        import boto3  # noqa: F401
    except ImportError:
        return False
    return True


def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    err = response.get("Error") or {}
    return str(err.get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


class ConditionalWriteLock:
    """The lock object of one table on S3 (one holder at a time across hosts)."""

    def __init__(
        self,
        s3: S3Settings,
        root: str,
        *,
        validity_secs: int,
        renew_secs: int,
        token: str,
        pid_alive: Callable[[int], bool],
    ) -> None:
        if validity_secs < 10 or renew_secs <= 0 or renew_secs * 2 > validity_secs:
            raise ConfigError(
                f"Lock validity {validity_secs}s and renew interval {renew_secs}s: the validity "
                "must be at least 10 s and at least twice the renew interval"
            )
        try:
            import boto3
        except ImportError:
            raise ConfigError(
                "The table lock on S3 writes with conditional puts, which needs boto3: "
                "pip install 'dbt-hudi[s3]'"
            ) from None
        self.bucket, _, prefix = root.partition("/")
        self.key = f"{prefix}/{LOCK_KEY}" if prefix else LOCK_KEY
        self.validity_secs = validity_secs
        self.renew_secs = renew_secs
        self.token = token
        self._pid_alive = pid_alive
        self._client: Any = boto3.client("s3", **s3.client_kwargs())
        self._etag: str | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.lost = False

    @property
    def location(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def _record(self) -> bytes:
        return json.dumps(
            {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "token": self.token,
                "acquired_at": time.time(),
                "expiration": time.time() + self.validity_secs,
            }
        ).encode()

    def _put(self, **condition: str) -> bool:
        try:
            response = self._client.put_object(
                Bucket=self.bucket, Key=self.key, Body=self._record(), **condition
            )
        except Exception as e:
            if _error_code(e) in _PRECONDITION_CODES:
                return False
            raise
        self._etag = str(response["ETag"])
        return True

    def owner(self) -> tuple[dict[str, Any], str | None]:
        """The holder's record and the object's ETag (``({}, None)`` when nobody holds it)."""
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=self.key)
        except Exception as e:
            if _error_code(e) in ("NoSuchKey", "404"):
                return {}, None
            raise
        try:
            data = json.loads(response["Body"].read() or b"{}")
        except ValueError:
            data = {}
        return (data if isinstance(data, dict) else {}), str(response["ETag"])

    def try_acquire(self) -> bool:
        """Create the lock object, or take over an abandoned one; True when we hold it."""
        if self._put(IfNoneMatch="*"):
            self._start_renewing()
            return True
        record, etag = self.owner()
        if etag is None or not self._abandoned(record):
            return False
        if self._put(IfMatch=etag):
            self._start_renewing()
            return True
        return False

    def _abandoned(self, record: dict[str, Any]) -> bool:
        expiration = record.get("expiration")
        if not isinstance(expiration, (int, float)) or expiration < time.time():
            return True
        pid = record.get("pid")
        return (
            record.get("host") == socket.gethostname()
            and isinstance(pid, int)
            and (pid != os.getpid() and not self._pid_alive(pid))
        )

    def _start_renewing(self) -> None:
        self.lost = False
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew_loop, daemon=True)
        self._renewer.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.renew_secs):
            etag = self._etag
            if etag is None:
                return
            try:
                renewed = self._put(IfMatch=etag)
            except Exception:  # a failed renewal is retried; the validity covers a few misses
                continue
            if not renewed:
                self.lost = True
                return

    def release(self) -> None:
        """Stop renewing and delete the lock object if it is still ours."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None
        etag, self._etag = self._etag, None
        if etag is None or self.lost:
            return
        try:
            self._client.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=etag)
        except Exception as e:
            code = _error_code(e)
            if code in _PRECONDITION_CODES or code in ("NoSuchKey", "404"):
                return
            if code not in ("NotImplemented", "501"):
                raise
            record, _ = self.owner()
            if record.get("token") == self.token:
                self._client.delete_object(Bucket=self.bucket, Key=self.key)
