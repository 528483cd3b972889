"""Two writer processes on one S3 table under optimistic concurrency control with the
conditional-write lock: no lost and no duplicated rows, conflicts fail and are retried cleanly
(the local run of the same test: ``tests/concurrency``), 3 rounds each (10 under
``make test-long``); the lock itself is also raced by concurrent writers against the same server
(``test_s3_lock.py``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.concurrency.test_two_writers import OPTIONS, run_two_writers
from tests.s3.server import S3Server

pytestmark = [
    pytest.mark.spark,
    pytest.mark.interop,
]

ROUNDS = 10 if os.environ.get("HUDI_TEST_LONG") else 3
S3_OPTIONS = {
    **OPTIONS,
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.write.lock.provider": "StorageBasedLockProvider",
}


def test_two_writers_on_s3_lose_and_duplicate_nothing(
    spark: Any, s3: S3Server, tmp_path: Path
) -> None:
    run_two_writers(spark, s3.table_uri("two-writers"), tmp_path, ROUNDS, S3_OPTIONS)
