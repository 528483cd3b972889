"""Property: random merge-on-read sequences under every payload, compaction interleaved, read back
as the row model says.

Batches carry duplicate keys, ``_hoodie_is_deleted`` rows, deletes by key and keys landing in new
partitions; between them a sequence may compact (offline, or inline after a write). Each write
draws its log data block format (Avro or Parquet), so file slices mix both block types. Under
commit-time ordering (OverwriteWithLatest, OverwriteNonDefaults) ordering values go down from
commit to commit (the latest write wins all the same); under event-time ordering they grow
(:func:`runner.ordering_value`). Payloads that fill nulls from older versions get
non-null values (their log merge across commits differs from a copy-on-write rewrite by design).

After every commit the table is judged: by hudi-rs for the payloads it merges
(OverwriteWithLatest, Default), by the engine's reader for the others (hudi-rs refuses custom
payloads on slices with logs); at the end everything is compacted and hudi-rs, the snapshot,
the read-optimized view and ``read_hudi`` (Spark) must all equal the model.
``make test`` runs 24 sequences on table version 6 and 8 on each of 8 and 9 (``make
test-long`` 400 on each).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import example
from hypothesis import strategies as st

from engine import SparkRunner, config
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.services.compaction import execute_compaction, schedule_compaction
from tests.hudi_rs import hudi_rs_rows
from tests.property import runner
from tests.property.oracle import COMMIT_TIME_PAYLOADS, DEFAULT, OVERWRITE, PAYLOADS, Oracle

pytestmark = [pytest.mark.spark, pytest.mark.interop]

HUDI_RS_MERGES = (OVERWRITE, DEFAULT)
BLOCK_FORMAT = config.LOGFILE_DATA_BLOCK_FORMAT.key

record = runner.records("abcdef", st.integers(0, 4))
step = st.one_of(
    st.tuples(
        st.sampled_from(["upsert", "upsert", "upsert", "delete", "insert"]),
        st.lists(record, min_size=1, max_size=6),
        st.booleans(),  # inline compaction after this write (max 2 delta commits)
        st.sampled_from(["avro", "parquet"]),  # hoodie.logfile.data.block.format of this write
    ),
    st.just(("compact", [], False, "avro")),
)
sequence = st.tuples(st.sampled_from(PAYLOADS), st.lists(step, min_size=1, max_size=4))
bucket_step = st.one_of(
    step,
    st.tuples(
        st.just("insert_overwrite"),
        st.lists(record, min_size=1, max_size=6),
        st.booleans(),
        st.sampled_from(["avro", "parquet"]),
    ),
)
bucket_sequence = st.tuples(
    st.sampled_from(PAYLOADS), st.lists(bucket_step, min_size=1, max_size=4)
)


def judge_snapshot(path: str, payload: str, oracle: Oracle, context: Any) -> None:
    """hudi-rs judges the payloads it merges; the engine's reader the others."""
    if payload in HUDI_RS_MERGES:
        runner.judge(hudi_rs_rows(path), oracle, context)
    else:
        runner.judge(read_table(path).to_pylist(), oracle, context)


def run_sequence(
    spark: Any,
    payload: str,
    steps: list[tuple[str, list[Any], bool, str]],
    version: str = "6",
    location: Callable[[str], str] | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    payload = runner.versioned_payload(payload, version)
    with runner.scratch_table("mor-property-", location) as path:
        storage = Storage(path)
        options = runner.table_options(
            payload,
            {
                "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                "hoodie.logfile.data.block.max.size": 300,
                **(extra or {}),
            },
            version=version,
        )
        oracle = runner.model(payload)
        fills = payload not in HUDI_RS_MERGES
        for k, (operation, rows, inline, block_format) in enumerate(steps):
            if operation == "compact":
                if not oracle.history:
                    continue
                compaction = schedule_compaction(storage, config.parse_options({}), force=True)
                if compaction is not None:
                    execute_compaction(storage, compaction, runner=SparkRunner().compact)
                    judge_snapshot(path, payload, oracle, ("compact", compaction))
                continue
            if operation in ("delete", "insert") and not oracle.history:
                operation = "upsert"  # a table starts with data
            if operation == "insert" and oracle.rows:
                operation = "upsert"  # insert does no index lookup: keys would repeat
            batch = [
                {
                    **r,
                    "ts": runner.ordering_value(payload, k, r["ts"]),
                    "v": r["v"] or ("w" if fills else None),
                    "n": r["n"] if r["n"] is not None or not fills else 0,
                }
                for r in rows
            ]
            inline_compaction = (
                {"hoodie.compact.inline": True, "hoodie.compact.inline.max.delta.commits": 2}
                if inline
                else {}
            )
            write_options = {**options, **inline_compaction, BLOCK_FORMAT: block_format}
            runner.commit(spark, path, write_options, oracle, batch, operation)
            judge_snapshot(path, payload, oracle, (operation, batch))
        if not oracle.history:
            return  # only compactions: no table was ever written
        compaction = schedule_compaction(storage, config.parse_options({}), force=True)
        if compaction is not None:
            execute_compaction(storage, compaction, runner=SparkRunner().compact)
        runner.judge(hudi_rs_rows(path), oracle)
        ro = read_table(path, {config.QUERY_TYPE.key: "read_optimized"}).to_pylist()
        runner.judge(ro, oracle)
        runner.judge(runner.read_hudi_rows(spark, path), oracle)


def _rewrites(key: str) -> list[tuple[str, list[Any], bool, str]]:
    """Three writes of ``key`` (a base file, then two log records), then a soft delete."""
    row = {"id": key, "dt": "p1", "ts": 0, "v": "x", "n": 1, "_hoodie_is_deleted": False}
    writes = [("upsert", [{**row, "v": v}], False, "avro") for v in ("x", "y", "z")]
    return [*writes, ("upsert", [{**row, "_hoodie_is_deleted": True}], False, "parquet")]


# a slice whose log records carry ordering values that go down, under both commit-time payloads
@example(group=[(payload, _rewrites("a")) for payload in COMMIT_TIME_PAYLOADS])
@runner.sequence_groups(sequence)
def test_mor_random_sequences_with_compaction_hudi_rs_and_model_agree(spark, group) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, run_sequence)


@pytest.mark.parametrize("version", runner.VERSIONS_1X)
@runner.sequence_groups(sequence, runner.SEQUENCES_1X)
def test_mor_random_sequences_with_compaction_hudi_rs_and_model_agree_1x(
    spark, group, version
) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, partial(run_sequence, version=version))


@runner.sequence_groups(sequence, runner.SEQUENCES_METADATA)
def test_mor_random_sequences_with_the_metadata_table(spark, group) -> None:  # type: ignore[no-untyped-def]
    """Both readers list through the metadata table written in each transaction, compactions
    (inline and scheduled) and its own compaction included."""
    run = partial(run_sequence, version="9", extra=runner.METADATA_TABLE)
    runner.run_group(spark, group, run)


@runner.sequence_groups(sequence, runner.SEQUENCES_S3)
def test_mor_random_sequences_on_s3(spark, s3, group) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, partial(run_sequence, location=s3.table_uri))


@runner.sequence_groups(bucket_sequence, runner.SEQUENCES_BUCKET)
def test_mor_random_sequences_on_the_bucket_index(spark, group) -> None:  # type: ignore[no-untyped-def]
    """Inserts and updates of existing buckets become log blocks; compaction folds them;
    partition overwrites replace the buckets' file groups with new base files."""
    runner.run_group(spark, group, partial(run_sequence, extra=runner.BUCKET_OVERWRITE))


@runner.sequence_groups(runner.bloom_sequences(step), runner.SEQUENCES_BLOOM)
def test_mor_random_sequences_on_the_bloom_index(spark, group) -> None:  # type: ignore[no-untyped-def]
    """Updates to log files found through ranges and tiny bloom filters, compaction: the
    model's rows."""
    runner.run_group(spark, group, runner.on_bloom_index(run_sequence))
