"""Property: random sequences of upserts and deletes with clusterings between them, against the
row model; judged by hudi-rs after every step (and by ``read_hudi`` at the end).

A clustering changes no row: the model is not touched, and every row keeps its
``_hoodie_commit_time`` (the model's column). Clusterings sort along a curve drawn per step and
take every small file group (``hoodie.parquet.small.file.limit`` is 0 so each write adds file
groups for the clustering to gather). Copy-on-write and merge-on-read, table versions 6 and 9;
``make test`` runs one group of sequences of each, ``make test-long`` ten.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st

from engine import HudiTable
from tests.hudi_rs import hudi_rs_rows
from tests.property import runner
from tests.property.oracle import OVERWRITE

pytestmark = [pytest.mark.spark, pytest.mark.interop]

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
sequence = st.tuples(
    st.tuples(st.just("write"), st.just("upsert"), st.lists(record, min_size=2, max_size=5)),
    st.lists(st.one_of(write, cluster), min_size=2, max_size=5),
)


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
                HudiTable(path, runner=runner_of(spark)).cluster(
                    {
                        "hoodie.layout.optimize.strategy": step[1],
                        "hoodie.clustering.plan.strategy.sort.columns": step[2],
                    }
                )
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
