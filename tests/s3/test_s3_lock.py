"""The table lock on S3: conditional puts against the local server (If-None-Match), take-over of
abandoned locks, renewal, and the refusal of concurrent writers without a safe lock."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from engine import write_hudi
from engine.config import parse_options
from engine.errors import ConfigError, LockTimeoutError
from engine.fs.storage import Storage
from engine.services.lock import TableLock, pid_alive
from engine.services.storage_lock import LOCK_KEY, ConditionalWriteLock
from tests.keyed_table import SCHEMA, write_options
from tests.s3.server import S3Server

STORAGE_LOCK = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"
FILE_LOCK = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control"}


def _lock(storage: Storage, token: str, validity: int = 60, renew: int = 5) -> ConditionalWriteLock:
    assert storage.s3 is not None
    return ConditionalWriteLock(
        storage.s3,
        storage.root,
        validity_secs=validity,
        renew_secs=renew,
        token=token,
        pid_alive=pid_alive,
    )


def _lock_record(s3: S3Server, storage: Storage) -> dict[str, object]:
    bucket, _, prefix = storage.root.partition("/")
    body = s3.client().get_object(Bucket=bucket, Key=f"{prefix}/{LOCK_KEY}")["Body"].read()
    return dict(json.loads(body))


def test_one_holder_at_a_time_among_racing_writers(s3: S3Server) -> None:
    storage = Storage(s3.table_uri("lock"))
    locks = [_lock(storage, f"w{i}") for i in range(6)]
    start = threading.Barrier(len(locks))
    won: list[int] = []

    def race(i: int) -> None:
        start.wait()
        if locks[i].try_acquire():
            won.append(i)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(locks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1, won
    holder = locks[won[0]]
    assert _lock_record(s3, storage)["token"] == holder.token
    other = locks[(won[0] + 1) % len(locks)]
    assert not other.try_acquire()
    holder.release()
    assert other.try_acquire()
    other.release()


def test_expired_and_dead_holders_are_taken_over_once(s3: S3Server) -> None:
    storage = Storage(s3.table_uri("lock"))
    bucket, _, prefix = storage.root.partition("/")
    key = f"{prefix}/{LOCK_KEY}"
    client = s3.client()
    stale = {"host": "elsewhere", "pid": 1, "token": "old", "expiration": time.time() - 1}
    client.put_object(Bucket=bucket, Key=key, Body=json.dumps(stale).encode())
    a, b = _lock(storage, "a"), _lock(storage, "b")
    assert a.try_acquire()  # expired: taken over conditionally on its ETag
    assert not b.try_acquire()  # a's record is fresh
    a.release()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    import socket

    record = {
        "host": socket.gethostname(),
        "pid": int(dead.stdout),
        "token": "killed",
        "expiration": time.time() + 600,
    }
    client.put_object(Bucket=bucket, Key=key, Body=json.dumps(record).encode())
    assert b.try_acquire()  # a dead process on this host holds no lock
    b.release()


def test_holder_renews_its_lock(s3: S3Server) -> None:
    storage = Storage(s3.table_uri("lock"))
    lock = _lock(storage, "renewing", validity=10, renew=1)
    assert lock.try_acquire()
    first = float(_lock_record(s3, storage)["expiration"])  # type: ignore[arg-type]
    time.sleep(2.5)
    assert float(_lock_record(s3, storage)["expiration"]) > first  # type: ignore[arg-type]
    assert not lock.lost
    lock.release()


def test_table_lock_uses_conditional_writes_on_s3_and_times_out_clearly(s3: S3Server) -> None:
    storage = Storage(s3.table_uri("lock"))
    cfg = parse_options({**OCC, "hoodie.write.lock.wait_time_ms": "300"})
    first, second = TableLock(storage, cfg), TableLock(storage, cfg)
    with first.hold():
        assert _lock_record(s3, storage)["token"] == first.token
        with pytest.raises(LockTimeoutError, match=r"table_lock\.json"):
            second.acquire()
    with second.hold():
        assert _lock_record(s3, storage)["token"] == second.token


@pytest.mark.spark
def test_concurrent_writers_without_a_safe_lock_are_refused(spark, s3: S3Server) -> None:  # type: ignore[no-untyped-def]
    path = s3.table_uri("refused")
    options = write_options("t", OCC, {"hoodie.write.lock.provider": FILE_LOCK})
    df = spark.createDataFrame([("k", "d", 1, "v")], SCHEMA)
    with pytest.raises(ConfigError, match=r"hoodie\.write\.concurrency\.mode") as error:
        write_hudi(df, path, options)
    assert "StorageBasedLockProvider" in str(error.value)
    assert not Storage(path).list_dir("")  # nothing written
    # one writer at a time may still use the file lock there (best effort, said in the docs)
    TableLock(Storage(path), parse_options({"hoodie.write.lock.provider": FILE_LOCK}))


def test_storage_lock_provider_on_a_local_disk_is_the_exclusive_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = parse_options({**OCC, "hoodie.write.lock.provider": STORAGE_LOCK})
    lock = TableLock(Storage(str(tmp_path / "t")), cfg)
    with lock.hold():
        assert (tmp_path / "t" / ".hoodie" / "lock").exists()
