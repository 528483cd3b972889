"""Property: random sequences of upserts and deletes with clusterings, compactions (merge-on-read),
cleans, savepoints and restores between them, against the row model; judged by hudi-rs after
every step (and by ``read_hudi`` at the end).

A clustering changes no row: the model is not touched, and every row keeps its
``_hoodie_commit_time`` (the model's column). A compaction and a clean change no row either. A
restore goes back to the latest savepoint (of a write's commit), across the clusterings after
it: the table then reads the model as of that commit. Clusterings sort along a curve drawn per
step and take every small file group (``hoodie.parquet.small.file.limit`` is 0 so each write adds
file groups for the clustering to gather). Copy-on-write and merge-on-read, table versions 6 and
9; ``make test`` runs one group of sequences of each, ``make test-long`` ten.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st

from engine import HudiTable, TableType
from tests.hudi_rs import hudi_rs_rows
from tests.property import runner
from tests.property.oracle import OVERWRITE, Oracle

# the subject is clustering between writes, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.interop, pytest.mark.driver_writes]

SEQUENCES = runner.GROUP * (10 if runner.LONG else 1)

record = runner.records("abcdef", st.integers(0, 4))
write = st.tuples(
    st.just("write"),
    st.sampled_from(["upsert", "upsert", "delete"]),
    st.lists(record, min_size=1, max_size=4),
)
cluster = st.tuples(
    st.just("cluster"),
    st.sampled_from(["linear", "z-order", "hilbert"]),
    st.sampled_from(["n", "v,n", "dt,ts"]),
)
service = st.sampled_from(
    [("compact",), ("clean",), ("savepoint",), ("restore",), ("savepoint",), ("restore",)]
)
sequence = st.tuples(
    st.tuples(st.just("write"), st.just("upsert"), st.lists(record, min_size=2, max_size=5)),
    st.lists(st.one_of(write, cluster, cluster, service), min_size=2, max_size=6),
)
# the cleaner keeps one commit: replaced file groups go as soon as a clean may take them
CLEAN = {"hoodie.cleaner.commits.retained": 1}


def run_service(spark: Any, path: str, oracle: Oracle, step: tuple[Any, ...]) -> None:
    """A table service step: none changes the rows but a restore, which the model follows."""
    table = HudiTable(path, runner=runner_of(spark))
    kind = step[0]
    if kind == "cluster":
        table.cluster(
            {
                "hoodie.layout.optimize.strategy": step[1],
                "hoodie.clustering.plan.strategy.sort.columns": step[2],
            }
        )
    elif kind == "compact" and table.table_type() == TableType.MERGE_ON_READ:
        table.compact()
    elif kind == "clean":
        table.clean(CLEAN)
    elif kind == "savepoint":
        latest = oracle.history[-1][0]
        if latest not in [s.instant_time for s in table.savepoints()]:
            table.savepoint(latest)
    elif kind == "restore":
        savepoints = [s.instant_time for s in table.savepoints()]
        if savepoints:
            table.restore(savepoints[-1])
            oracle.restore(savepoints[-1])


def run_sequence(
    spark: Any, first: tuple[Any, ...], steps: list[Any], extra: dict[str, Any]
) -> None:
    with runner.scratch_table("clustering-property-") as path:
        options = runner.table_options(OVERWRITE, {"hoodie.parquet.small.file.limit": 0}, extra)
        oracle = runner.model(OVERWRITE)
        for k, step in enumerate([first, *steps, ("cluster", "z-order", "n")]):
            if step[0] == "write":
                rows = [{**r, "ts": runner.ordering_value(OVERWRITE, k, r["ts"])} for r in step[2]]
                runner.commit(spark, path, options, oracle, rows, step[1])
            else:
                run_service(spark, path, oracle, step)
            runner.judge(hudi_rs_rows(path), oracle, step)
        runner.judge(runner.read_hudi_rows(spark, path), oracle)


def runner_of(spark: Any) -> Any:
    from engine import SparkRunner

    return SparkRunner(spark)


@pytest.mark.parametrize(
    ("table_type", "version"),
    [("COPY_ON_WRITE", "6"), ("MERGE_ON_READ", "9")],
)
@runner.sequence_groups(sequence, SEQUENCES)
def test_clustering_between_writes_keeps_the_model(spark, group, table_type, version) -> None:  # type: ignore[no-untyped-def]
    extra = {
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.table.type": table_type,
    }
    runner.run_group(spark, group, lambda s, *seq: run_sequence(s, *seq, extra=extra))


def _row(key: str, dt: str, ts: int, n: int) -> dict[str, Any]:
    return {"id": key, "dt": dt, "ts": ts, "v": "x", "n": n, "_hoodie_is_deleted": False}


# the derandomized draws of make test favour short write-only sequences: this one runs every
# service around clusterings (a restore to a savepoint taken before two of them)
SERVICES_AROUND_CLUSTERING = [
    ("write", "upsert", [_row("a", "p1", 1, 1), _row("b", "p1", 1, 2), _row("c", "p2", 1, 3)]),
    ("savepoint",),
    ("write", "upsert", [_row("a", "p1", 2, 4), _row("d", "p1", 2, 5)]),
    ("cluster", "z-order", "v,n"),
    ("compact",),
    ("write", "delete", [_row("b", "p1", 3, 0)]),
    ("clean",),
    ("cluster", "linear", "n"),
    ("restore",),
    ("write", "upsert", [_row("e", "p1", 4, 6)]),
    ("clean",),
]


@pytest.mark.parametrize(
    ("table_type", "version"),
    [("COPY_ON_WRITE", "6"), ("MERGE_ON_READ", "9")],
)
def test_services_around_clustering_keep_the_model(spark, table_type, version) -> None:  # type: ignore[no-untyped-def]
    extra = {
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.table.type": table_type,
    }
    first, *steps = SERVICES_AROUND_CLUSTERING
    run_sequence(spark, first, steps, extra=extra)
