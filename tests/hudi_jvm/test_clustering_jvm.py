"""Apache Hudi reads and continues tables our engine clustered, and executes a clustering plan
our engine scheduled: Hudi 0.15.0 on table version 6 (copy-on-write), Hudi 1.1.1 on version 9
(merge-on-read, metadata table; ``make test-long``). Every step is judged by Hudi's reader,
hudi-rs, our reader and the oracle (tests/hudi_jvm/judge.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import spark_table
from tests.hudi_jvm.cases import Case
from tests.hudi_jvm.client import HudiJvm
from tests.hudi_jvm.judge import COW, MOR, Judge, keys
from tests.hudi_jvm.scenarios import our_options
from tests.hudi_jvm.steps import hudi_options, hudi_write, ours

# the subject is Apache Hudi continuing our clustering, not where our writes run:
# they take the driver path (tests/conftest.py write_path), as a small batch on a
# local master does
pytestmark = [
    pytest.mark.interop,
    pytest.mark.spark,
    pytest.mark.hudi_jvm,
    pytest.mark.driver_writes,
]

# make test: Hudi 0.15.0 on the default table version; make test-long adds Hudi 1.1.1 on 9
CASES = [Case("0.15.0", 6, COW, "BLOOM", True)] + (
    [Case("1.1.1", 9, MOR, "SIMPLE", True)] if os.environ.get("HUDI_TEST_LONG") else []
)
SMALL = {"hoodie.parquet.small.file.limit": "0"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hudi_continues_a_table_we_clustered(
    spark: Any, hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path, case: Case
) -> None:
    judge = Judge(tmp_path / "t", hudi_jvm(case.release), case.table_type)
    options = {**our_options(case), **SMALL}
    for b in range(3):  # three batches of new file groups
        ours(spark, judge, judge.batch(keys(*range(4 * b, 4 * b + 4)), f"b{b}"), options, "upsert")
    ours(spark, judge, judge.batch(keys(1, 6), "up"), options, "upsert")  # logs on merge-on-read
    judge.check("our writes")
    table = spark_table(str(judge.path))
    assert table.cluster(options, sort_columns=["v", "ts"], strategy="z-order")
    judge.check("our z-order clustering")

    hudi = hudi_options(case, judge.path, "judged")
    hudi_write(judge, judge.batch(keys(1, 5, 20), "hudi"), hudi, "upsert")
    judge.check("Hudi's upsert into clustered file groups")

    ours(spark, judge, judge.batch(keys(21, 22), "b3"), options, "upsert")
    (planned,) = table.cluster(options, sort_columns="id", schedule_only=True)
    conf = ",".join(f"{k}={v}" for k, v in hudi.items() if k.startswith("hoodie.write"))
    with_conf = f", options => '{conf}'" if conf else ""
    judge.hudi.sql(f"CALL run_clustering(path => '{judge.path}', op => 'execute'{with_conf})")
    assert table.pending_clustering() == []
    done = judge.timeline().get(planned)
    assert done is not None and done.is_completed, "Hudi executed our plan"
    judge.check("Hudi's execution of our clustering plan")
    ours(spark, judge, judge.batch(keys(2, 21), "last"), options, "upsert")
    judge.check("our upsert after Hudi's clustering")
