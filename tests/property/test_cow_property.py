"""Property: random sequences of batches under every payload read back as the row model says.

Batches carry duplicate keys, out-of-order and null ordering values, ``_hoodie_is_deleted``
rows, deletes by key, and keys landing in new partitions. After every commit hudi-rs must read
exactly the model's rows (data and commit times); after the last one ``read_hudi`` (Spark) must
agree too. ``make test`` runs 40 sequences, ``make test-long`` 400.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import read_hudi, write_hudi
from tests.property.oracle import PAYLOADS, Oracle, actual_set, hudi_rs_rows

pytestmark = [pytest.mark.spark, pytest.mark.interop]

LONG = bool(os.environ.get("HUDI_TEST_LONG"))
SEQUENCES = int(os.environ.get("HUDI_PROPERTY_SEQUENCES", 400 if LONG else 40))
# Sequences run GROUP at a time on threads sharing the session: Spark jobs of tiny batches are
# latency-bound, so concurrent tables keep the suite fast. Each example is one group.
GROUP = 4
SCHEMA = "id string, dt string, ts long, v string, n long, _hoodie_is_deleted boolean"
FIELDS = ["id", "dt", "ts", "v", "n", "_hoodie_is_deleted"]
COLUMNS = ["id", "dt", "ts", "v", "n", "_hoodie_commit_time"]

record = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["a", "b", "c", "d", "e"]),
        "dt": st.sampled_from(["p1", "p1", "p2", "p3"]),
        "ts": st.one_of(st.integers(0, 4), st.none()),
        "v": st.one_of(st.sampled_from(["x", "y", "z"]), st.none()),
        "n": st.one_of(st.integers(0, 9), st.none()),
        "_hoodie_is_deleted": st.sampled_from([False, False, False, True, None]),
    }
)
batch = st.tuples(
    st.sampled_from(["upsert", "upsert", "upsert", "delete"]),
    st.lists(record, min_size=1, max_size=6),
)
sequence = st.tuples(st.sampled_from(PAYLOADS), st.lists(batch, min_size=1, max_size=3))
_counter = itertools.count()


def identity(row: dict[str, Any]) -> tuple[str, str]:
    return row["id"], row["dt"]


def run_sequence(spark: Any, payload: str, batches: list[tuple[str, list[dict[str, Any]]]]) -> None:
    root = tempfile.mkdtemp(prefix="cow-property-")
    path = os.path.join(root, f"t{next(_counter)}")
    try:
        options = {
            "hoodie.table.name": "prop",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.payload.class": payload,
        }
        oracle = Oracle(payload, "ts", identity, FIELDS)
        for operation, rows in batches:
            if operation == "delete" and not oracle.history:
                operation = "upsert"  # a table starts with data
            df = spark.createDataFrame([tuple(r[c] for c in FIELDS) for r in rows], SCHEMA)
            result = write_hudi(
                df, path, {**options, "hoodie.datasource.write.operation": operation}
            )
            oracle.apply(rows, operation, result.instant_time)
            assert actual_set(hudi_rs_rows(path), COLUMNS) == oracle.expected(COLUMNS), (
                operation,
                rows,
            )
        spark_rows = [r.asDict() for r in read_hudi(spark, path).collect()]
        assert actual_set(spark_rows, COLUMNS) == oracle.expected(COLUMNS)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@settings(
    max_examples=max(1, SEQUENCES // GROUP),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=not LONG,
)
@given(group=st.lists(sequence, min_size=GROUP, max_size=GROUP))
def test_cow_random_sequences_hudi_rs_read_hudi_and_model_agree(spark, group) -> None:  # type: ignore[no-untyped-def]
    with ThreadPoolExecutor(max_workers=GROUP) as pool:
        futures = [pool.submit(run_sequence, spark, payload, batches) for payload, batches in group]
        for future in futures:
            future.result()
