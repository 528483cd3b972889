"""How the property tests run: how many sequences, the table each one writes, every commit applied
to the row model, the judging of read rows, and groups of sequences run concurrently.

``make test`` runs 24 sequences per property test (the same ones every run), ``make test-long``
(``HUDI_TEST_LONG=1``) 400, drawn anew;
``HUDI_PROPERTY_SEQUENCES`` sets the number directly.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import read_hudi, write_hudi
from tests.keyed_table import write_options
from tests.property.oracle import (
    COMMIT_TIME_PAYLOADS,
    DEFAULT,
    NON_DEFAULTS,
    OVERWRITE,
    PARTIAL,
    PAYLOADS,
    Oracle,
    Row,
    actual_set,
)

LONG = bool(os.environ.get("HUDI_TEST_LONG"))
SEQUENCES = int(os.environ.get("HUDI_PROPERTY_SEQUENCES", 400 if LONG else 24))
# Sequences run GROUP at a time on threads sharing the session: Spark jobs of tiny batches are
# latency-bound, so concurrent tables keep the suite fast. Each example is one group.
GROUP = 4
SCHEMA = "id string, dt string, ts long, v string, n long, _hoodie_is_deleted boolean"
FIELDS = ["id", "dt", "ts", "v", "n", "_hoodie_is_deleted"]
COLUMNS = ["id", "dt", "ts", "v", "n", "_hoodie_commit_time"]

Test = TypeVar("Test", bound=Callable[..., None])


def identity(row: Row) -> tuple[str, str]:
    """(record key, partition path) of a record."""
    return row["id"], row["dt"]


def records(ids: Sequence[str], ts: st.SearchStrategy[int | None]) -> st.SearchStrategy[Row]:
    """Incoming records: keys from ``ids`` in three partitions, ordering values from ``ts``, null
    and non-null values, soft deletes now and then."""
    return st.fixed_dictionaries(
        {
            "id": st.sampled_from(list(ids)),
            "dt": st.sampled_from(["p1", "p1", "p2", "p3"]),
            "ts": ts,
            "v": st.one_of(st.sampled_from(["x", "y", "z"]), st.none()),
            "n": st.one_of(st.integers(0, 9), st.none()),
            "_hoodie_is_deleted": st.sampled_from([False, False, False, True, None]),
        }
    )


def sequence_groups(
    sequence: st.SearchStrategy[Any], sequences: int = SEQUENCES
) -> Callable[[Test], Test]:
    """Hypothesis drives the test with ``group``: GROUP sequences drawn from ``sequence``, in
    ``sequences`` // GROUP examples (the same ones every run, unless long)."""

    def drive(test: Test) -> Test:
        driven = given(group=st.lists(sequence, min_size=GROUP, max_size=GROUP))(test)
        configured = settings(
            max_examples=max(1, sequences // GROUP),
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
            derandomize=not LONG,
        )(driven)
        return cast(Test, configured)

    return drive


def run_group(
    spark: Any, group: Sequence[tuple[Any, ...]], run_sequence: Callable[..., None]
) -> None:
    """``run_sequence(spark, *sequence)`` for each sequence of ``group``, concurrently; the first
    failure is raised."""
    with ThreadPoolExecutor(max_workers=GROUP) as pool:
        futures = [pool.submit(run_sequence, spark, *sequence) for sequence in group]
        for future in futures:
            future.result()


# Sequences on the local S3 server (tables on ``s3://``): one group in ``make test`` (every
# request goes through the server, and the local sequences cover the semantics), 40 under
# ``make test-long``.
SEQUENCES_S3 = int(os.environ.get("HUDI_PROPERTY_SEQUENCES_S3", 40 if LONG else GROUP))


@contextmanager
def scratch_table(prefix: str, location: Callable[[str], str] | None = None) -> Iterator[str]:
    """Base path of a table in a temporary folder, removed afterwards; ``location(prefix)``
    gives it instead when set (a fresh table on the S3 server)."""
    if location is not None:
        yield location(prefix.rstrip("-"))
        return
    root = tempfile.mkdtemp(prefix=prefix)
    try:
        yield os.path.join(root, "t")
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Table versions the property tests write, beside 6: ``make test`` runs 24 sequences on 6 and
# 8 on 9 (its write path is version 6's but for the layout, which the first sequences already
# cover; 8 writes 9's layout with another table version); ``make test-long`` runs 400 on each of
# 6, 8 and 9.
VERSIONS_1X = (pytest.param("8", marks=pytest.mark.long), "9")
SEQUENCES_1X = SEQUENCES if LONG else max(GROUP, SEQUENCES // 3)
# the bucket index (version 6, two buckets per partition): a tenth as many sequences again
SEQUENCES_BUCKET = max(GROUP, SEQUENCES // 10)
# Sequences on the bloom indexes: three examples in make test (Hypothesis's first example is the
# simplest one, a sequence that updates no stored key), 100 under make test-long.
SEQUENCES_BLOOM = max(3 * GROUP, SEQUENCES // 4)
BUCKET_INDEX = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 2}
# the bucket-index sequences also draw insert_overwrite, whose batch the model combines
BUCKET_OVERWRITE = {**BUCKET_INDEX, "hoodie.combine.before.insert": True}
# the metadata table written in every transaction (version 9; compacted every two deltacommits
# so sequences reach its compaction): a tenth as many sequences again, at least one group
METADATA_TABLE = {"hoodie.metadata.enable": True, "hoodie.metadata.compact.max.delta.commits": 2}
SEQUENCES_METADATA = max(GROUP, SEQUENCES // 10)
_MERGE_MODE_PAYLOADS = {PARTIAL: DEFAULT, NON_DEFAULTS: OVERWRITE}


def versioned_payload(payload: str, version: str) -> str:
    """The payload a sequence uses in ``version`` (version 8 refuses the partial-update payloads,
    whose Hudi 1.0 merge mode is CUSTOM: their event-time or commit-time counterpart stands in;
    version 9 writes them as Hudi 1.1 does)."""
    return payload if version != "8" else _MERGE_MODE_PAYLOADS.get(payload, payload)


def ordering_value(payload: str, k: int, ts: int) -> int:
    """The ordering value of a record drawn with ``ts`` in a sequence's step ``k``.

    Commit-time payloads go down from step to step: every later commit carries a smaller value,
    and the latest write must still win on every reader (a log record over earlier log records
    and the base row, a delete over a greater record). Event-time payloads grow with ``k``: Java
    0.14 and hudi-rs compare a log delete's ordering value with the base row differently
    (hudi-format.md §6.2), which this property does not model. Inside a step ``ts`` is as
    drawn, so a batch's precombine still compares drawn values."""
    if payload in COMMIT_TIME_PAYLOADS:
        return 1000 - 10 * k + ts
    return 10 * (k + 1) + ts


def table_options(payload: str, *extra: Mapping[str, Any], version: str = "6") -> dict[str, Any]:
    """Write options of a sequence's table: keyed by (id, dt), ordered by ts, merged by
    ``payload``, in table ``version``."""
    return write_options(
        "prop",
        {"hoodie.datasource.write.payload.class": payload, "hoodie.write.table.version": version},
        *extra,
    )


def model(payload: str) -> Oracle:
    """The row model of a sequence's table, merged by ``payload``."""
    return Oracle(payload, "ts", identity, FIELDS)


def commit(
    spark: Any,
    path: str,
    options: Mapping[str, Any],
    oracle: Oracle,
    rows: list[Row],
    operation: str,
) -> str:
    """Write ``rows`` with ``operation`` and apply the commit to the model; returns its instant."""
    df = spark.createDataFrame([tuple(r[c] for c in FIELDS) for r in rows], SCHEMA)
    result = write_hudi(df, path, {**options, "hoodie.datasource.write.operation": operation})
    oracle.apply(rows, operation, result.instant_time)
    return result.instant_time


def judge(rows: list[Row], oracle: Oracle, context: Any = None) -> None:
    """Rows read (meta columns included) must be the model's rows: data and commit times."""
    assert actual_set(rows, COLUMNS) == oracle.expected(COLUMNS), context


def read_hudi_rows(spark: Any, path: str) -> list[Row]:
    """Rows ``read_hudi`` (Spark) reads."""
    return [r.asDict() for r in read_hudi(spark, path).collect()]


# The BLOOM index drawn with tiny filters: 3 keys a row at a 30% false positive rate, rows up to
# 7 keys, so dynamic filters grow rows and take keys in turn, and most absent keys pass a filter
# (the exact check must still find only the stored keys). No small files: every write's inserts
# go to new file groups, so a stored key the lookup missed would be duplicated (in a small file
# the merge would hide the miss).
BLOOM_STRESS = {
    "hoodie.parquet.small.file.limit": "0",
    "hoodie.index.bloom.num_entries": "3",
    "hoodie.index.bloom.fpp": "0.3",
    "hoodie.bloom.index.filter.dynamic.max.entries": "7",
}


def bloom_options(index: str, prune_by_ranges: bool, filter_type: str) -> dict[str, Any]:
    """Options of a write on the bloom index ``index`` (BLOOM or GLOBAL_BLOOM) with tiny
    filters (:data:`BLOOM_STRESS`)."""
    return {
        **BLOOM_STRESS,
        "hoodie.index.type": index,
        "hoodie.bloom.index.prune.by.ranges": str(prune_by_ranges).lower(),
        "hoodie.bloom.index.filter.type": filter_type,
    }


def bloom_sequences(steps: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Sequences of a payload and ``steps`` on the BLOOM index: ranges pruning on or off,
    SIMPLE or DYNAMIC_V0 filters."""
    return st.tuples(
        st.sampled_from(PAYLOADS),
        st.lists(steps, min_size=1, max_size=4),
        st.booleans(),  # hoodie.bloom.index.prune.by.ranges
        st.sampled_from(["SIMPLE", "DYNAMIC_V0"]),
    )


def on_bloom_index(run_sequence: Callable[..., None]) -> Callable[..., None]:
    """``run_sequence(spark, payload, steps)`` with the options of a
    :func:`bloom_sequences` sequence."""

    def run(spark: Any, payload: str, steps: Any, prune_by_ranges: bool, filter_type: str) -> None:
        extra = bloom_options("BLOOM", prune_by_ranges, filter_type)
        run_sequence(spark, payload, steps, extra=extra)

    return run
