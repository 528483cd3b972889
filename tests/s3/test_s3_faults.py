"""SIGKILL fault injection on S3 tables of the local server: the chains of
``tests/faults/test_fault_injection.py`` run on ``s3://`` copies of S3 baselines, judged by
hudi-rs (through its S3 support) and ``read_hudi`` after every kill, then recovered with no
orphan left. ``make test`` runs the two chains only S3 has (a rollback killed mid-delete, a writer
JVM killed mid-file: 4 kill points); ``make test-long`` adds three chains of the local suite on S3,
Spark writers killed among them (9 kill points at least). A write killed mid-file leaves no object
on S3 (an object appears whole on close), so its rollback has nothing to delete."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.faults.test_fault_injection import (
    FIXED,
    Baseline,
    Chain,
    build_baselines,
    run_chain,
)
from tests.s3.server import S3Server

pytestmark = [pytest.mark.spark, pytest.mark.interop]

_WRITER_CHAINS = ("mor-compaction", "cow-failed-write-rollback-then-clean", "cow-after-commit")
S3_CHAINS = [
    Chain(  # a failed write's files on S3, its rollback killed mid-delete, then killed again
        "s3-cow-rollback-mid-delete",
        "cow",
        None,
        prepare="uncommit",
        follow_ups=[("rollback", "rollback.mid_delete"), ("rollback", "rollback.before_complete")],
    ),
    Chain(  # the writer JVM killed mid-file: no object appears on S3
        "s3-cow-killed-mid-file",
        "cow",
        "file.mid_write",
        follow_ups=[("rollback", "rollback.before_complete")],
    ),
    *(c for c in FIXED if c.name in _WRITER_CHAINS and os.environ.get("HUDI_TEST_LONG")),
]
MIN_KILLS = 9 if os.environ.get("HUDI_TEST_LONG") else 4


@pytest.fixture(scope="module")
def s3_baselines(spark: Any, s3: S3Server) -> dict[str, Baseline]:
    tables = tuple(sorted({c.table for c in S3_CHAINS}))
    return build_baselines(spark, lambda name: s3.table_uri(f"fault-baseline-{name}"), tables)


@pytest.mark.parametrize("chain", S3_CHAINS, ids=lambda c: c.name)
def test_fault_injection_on_s3_kill_then_recover(
    spark: Any,
    s3: S3Server,
    s3_baselines: dict[str, Baseline],
    tmp_path_factory: pytest.TempPathFactory,
    chain: Any,
) -> None:
    run_chain(spark, s3_baselines, tmp_path_factory, chain, s3.table_uri)


def test_fault_injection_on_s3_kill_count(
    spark: Any,
    s3: S3Server,
    s3_baselines: dict[str, Baseline],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    kills = [
        k
        for chain in S3_CHAINS
        for k in run_chain(spark, s3_baselines, tmp_path_factory, chain, s3.table_uri)
    ]
    print(f"\n[faults on s3] {len(kills)} kill points hit: {', '.join(kills)}")
    assert len(kills) >= MIN_KILLS, kills
