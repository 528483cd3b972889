"""Property: random merge-on-read sequences under every payload, compaction interleaved, read back
as the row model says.

Batches carry duplicate keys, ``_hoodie_is_deleted`` rows, deletes by key and keys landing in new
partitions; between them a sequence may compact (offline, or inline after a write). Ordering
values grow from commit to commit (hudi-format.md §6.2: Java and hudi-rs merge log blocks of
different commits differently when a later commit carries a smaller ordering value). Payloads
that fill nulls from older versions get non-null values (their log merge across commits differs
from a copy-on-write rewrite by design).

After every commit the table is judged: by hudi-rs for the payloads it merges
(OverwriteWithLatest, Default), by the engine's reader for the others (hudi-rs refuses custom
payloads on slices with logs); at the end everything is compacted and hudi-rs, the snapshot,
the read-optimized view and ``read_hudi`` (Spark) must all equal the model.
``make test`` runs 40 sequences, ``make test-long`` 400.
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

from engine import config, read_hudi, write_hudi
from engine.compaction import execute_compaction, schedule_compaction
from engine.read_arrow import read_table
from engine.storage import Storage
from tests.property.oracle import DEFAULT, OVERWRITE, PAYLOADS, Oracle, actual_set, hudi_rs_rows

pytestmark = [pytest.mark.spark, pytest.mark.interop]

LONG = bool(os.environ.get("HUDI_TEST_LONG"))
SEQUENCES = int(os.environ.get("HUDI_PROPERTY_SEQUENCES", 400 if LONG else 40))
GROUP = 4  # sequences of one example run concurrently on the shared session
SCHEMA = "id string, dt string, ts long, v string, n long, _hoodie_is_deleted boolean"
FIELDS = ["id", "dt", "ts", "v", "n", "_hoodie_is_deleted"]
COLUMNS = ["id", "dt", "ts", "v", "n", "_hoodie_commit_time"]
HUDI_RS_MERGES = (OVERWRITE, DEFAULT)

record = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["a", "b", "c", "d", "e", "f"]),
        "dt": st.sampled_from(["p1", "p1", "p2", "p3"]),
        "ts": st.integers(0, 4),
        "v": st.one_of(st.sampled_from(["x", "y", "z"]), st.none()),
        "n": st.one_of(st.integers(0, 9), st.none()),
        "_hoodie_is_deleted": st.sampled_from([False, False, False, True, None]),
    }
)
step = st.one_of(
    st.tuples(
        st.sampled_from(["upsert", "upsert", "upsert", "delete", "insert"]),
        st.lists(record, min_size=1, max_size=6),
        st.booleans(),  # inline compaction after this write (max 2 delta commits)
    ),
    st.just(("compact", [], False)),
)
sequence = st.tuples(st.sampled_from(PAYLOADS), st.lists(step, min_size=1, max_size=4))
_counter = itertools.count()


def identity(row: dict[str, Any]) -> tuple[str, str]:
    return row["id"], row["dt"]


def judge(path: str, payload: str, oracle: Oracle, context: Any) -> None:
    if payload in HUDI_RS_MERGES:
        actual = actual_set(hudi_rs_rows(path), COLUMNS)
    else:
        actual = actual_set(read_table(path).to_pylist(), COLUMNS)
    assert actual == oracle.expected(COLUMNS), context


def run_sequence(spark: Any, payload: str, steps: list[tuple[str, list[Any], bool]]) -> None:
    root = tempfile.mkdtemp(prefix="mor-property-")
    path = os.path.join(root, f"t{next(_counter)}")
    storage = Storage(path)
    try:
        options = {
            "hoodie.table.name": "prop",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.payload.class": payload,
            "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.logfile.data.block.max.size": 300,
        }
        oracle = Oracle(payload, "ts", identity, FIELDS)
        fills = payload not in HUDI_RS_MERGES
        for k, (operation, rows, inline) in enumerate(steps):
            if operation == "compact":
                if not oracle.history:
                    continue
                compaction = schedule_compaction(storage, config.parse_options({}), force=True)
                if compaction is not None:
                    execute_compaction(storage, compaction)
                    judge(path, payload, oracle, ("compact", compaction))
                continue
            if operation in ("delete", "insert") and not oracle.history:
                operation = "upsert"  # a table starts with data
            if operation == "insert" and oracle.rows:
                operation = "upsert"  # insert does no index lookup: keys would repeat
            batch = [
                {
                    **r,
                    "ts": 10 * (k + 1) + r["ts"],
                    "v": r["v"] or ("w" if fills else None),
                    "n": r["n"] if r["n"] is not None or not fills else 0,
                }
                for r in rows
            ]
            df = spark.createDataFrame([tuple(r[c] for c in FIELDS) for r in batch], SCHEMA)
            extra = (
                {"hoodie.compact.inline": True, "hoodie.compact.inline.max.delta.commits": 2}
                if inline
                else {}
            )
            result = write_hudi(
                df, path, {**options, "hoodie.datasource.write.operation": operation, **extra}
            )
            oracle.apply(batch, operation, result.instant_time)
            judge(path, payload, oracle, (operation, batch))
        if not oracle.history:
            return  # only compactions: no table was ever written
        compaction = schedule_compaction(storage, config.parse_options({}), force=True)
        if compaction is not None:
            execute_compaction(storage, compaction)
        expected = oracle.expected(COLUMNS)
        assert actual_set(hudi_rs_rows(path), COLUMNS) == expected
        ro = read_table(path, {config.QUERY_TYPE.key: "read_optimized"}).to_pylist()
        assert actual_set(ro, COLUMNS) == expected
        spark_rows = [r.asDict() for r in read_hudi(spark, path).collect()]
        assert actual_set(spark_rows, COLUMNS) == expected
    finally:
        shutil.rmtree(root, ignore_errors=True)


@settings(
    max_examples=max(1, SEQUENCES // GROUP),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=not LONG,
)
@given(group=st.lists(sequence, min_size=GROUP, max_size=GROUP))
def test_mor_random_sequences_with_compaction_hudi_rs_and_model_agree(spark, group) -> None:  # type: ignore[no-untyped-def]
    with ThreadPoolExecutor(max_workers=GROUP) as pool:
        futures = [pool.submit(run_sequence, spark, payload, steps) for payload, steps in group]
        for future in futures:
            future.result()
