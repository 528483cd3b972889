"""Property: random sequences of batches under every payload read back as the row model says.

Batches carry duplicate keys, out-of-order ordering values, ``_hoodie_is_deleted`` rows,
deletes by key, and keys landing in new partitions (null ordering values are refused by upserts,
tests/integration/test_null_ordering.py). After every commit hudi-rs must read
exactly the model's rows (data and commit times); after the last one ``read_hudi`` (Spark) must
agree too. ``make test`` runs 24 sequences on table version 6 and 8 on each of 8 and 9,
``make test-long`` 400 on each; a tenth of them again on the bucket index, with
``insert_overwrite`` drawn too, and a tenth on the BLOOM index with tiny filters (most absent
keys pass them; ranges pruning on or off, SIMPLE or DYNAMIC_V0 filters).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import strategies as st

from tests.hudi_rs import hudi_rs_rows
from tests.property import runner
from tests.property.oracle import PAYLOADS

pytestmark = [pytest.mark.spark, pytest.mark.interop]

record = runner.records("abcde", st.integers(0, 4))
batch = st.tuples(
    st.sampled_from(["upsert", "upsert", "upsert", "delete"]),
    st.lists(record, min_size=1, max_size=6),
)
sequence = st.tuples(st.sampled_from(PAYLOADS), st.lists(batch, min_size=1, max_size=3))
bucket_batch = st.tuples(
    st.sampled_from(["upsert", "upsert", "delete", "insert_overwrite"]),
    st.lists(record, min_size=1, max_size=6),
)
bucket_sequence = st.tuples(
    st.sampled_from(PAYLOADS), st.lists(bucket_batch, min_size=1, max_size=3)
)


def run_sequence(
    spark: Any,
    payload: str,
    batches: list[tuple[str, list[dict[str, Any]]]],
    version: str = "6",
    location: Callable[[str], str] | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    payload = runner.versioned_payload(payload, version)
    with runner.scratch_table("cow-property-", location) as path:
        options = runner.table_options(payload, extra or {}, version=version)
        oracle = runner.model(payload)
        for operation, rows in batches:
            if operation == "delete" and not oracle.history:
                operation = "upsert"  # a table starts with data
            runner.commit(spark, path, options, oracle, rows, operation)
            runner.judge(hudi_rs_rows(path), oracle, (operation, rows))
        runner.judge(runner.read_hudi_rows(spark, path), oracle)


@runner.sequence_groups(sequence)
def test_cow_random_sequences_hudi_rs_read_hudi_and_model_agree(spark, group) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, run_sequence)


@pytest.mark.parametrize("version", runner.VERSIONS_1X)
@runner.sequence_groups(sequence, runner.SEQUENCES_1X)
def test_cow_random_sequences_hudi_rs_read_hudi_and_model_agree_1x(spark, group, version) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, partial(run_sequence, version=version))


@runner.sequence_groups(sequence, runner.SEQUENCES_METADATA)
def test_cow_random_sequences_with_the_metadata_table(spark, group) -> None:  # type: ignore[no-untyped-def]
    """Both readers list through the metadata table written in each transaction."""
    run = partial(run_sequence, version="9", extra=runner.METADATA_TABLE)
    runner.run_group(spark, group, run)


@runner.sequence_groups(sequence, runner.SEQUENCES_S3)
def test_cow_random_sequences_on_s3(spark, s3, group) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, partial(run_sequence, location=s3.table_uri))


@runner.sequence_groups(bucket_sequence, runner.SEQUENCES_BUCKET)
def test_cow_random_sequences_on_the_bucket_index(spark, group) -> None:  # type: ignore[no-untyped-def]
    """Upserts, deletes and partition overwrites (new file groups per bucket)."""
    runner.run_group(spark, group, partial(run_sequence, extra=runner.BUCKET_OVERWRITE))


@runner.sequence_groups(runner.bloom_sequences(batch), runner.SEQUENCES_BLOOM)
def test_cow_random_sequences_on_the_bloom_index(spark, group) -> None:  # type: ignore[no-untyped-def]
    """Updates found through key ranges, bloom filters that pass absent keys, then the exact
    check: the model's rows, never a false positive turned into an update."""
    runner.run_group(spark, group, runner.on_bloom_index(run_sequence))
