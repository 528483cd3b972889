"""Apache Hudi's metadata table validation (the checks of its HoodieMetadataTableValidator, run in
Hudi 1.1.1's JVM: tests/hudi_jvm/server.py) on a version 9 merge-on-read table our engine wrote
with every metadata partition it keeps (files, column_stats, record_index): it passes, and once a
base file no longer holds what the metadata table says of it, it names the file and the key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from engine import spark_table
from tests.hudi_jvm.cases import Case
from tests.hudi_jvm.client import HudiJvm
from tests.hudi_jvm.judge import COW, MOR, Judge, keys
from tests.hudi_jvm.scenarios import our_options
from tests.hudi_jvm.steps import ours

# the subject is Apache Hudi's validation of our metadata table, not where our writes run:
# they take the driver path (tests/conftest.py write_path), as a small batch on a
# local master does
pytestmark = [
    pytest.mark.interop,
    pytest.mark.spark,
    pytest.mark.hudi_jvm,
    pytest.mark.driver_writes,
]

CASE = Case("1.1.1", 9, MOR, "RECORD_INDEX", True)
OPERATION = "hoodie.datasource.write.operation"


def _latest_base_file(path: Path) -> Path:
    """The base file the latest instant wrote (names end in ``_<instant>.parquet``)."""
    files = [f for f in path.rglob("*.parquet") if ".hoodie" not in f.parts]
    return max(files, key=lambda f: (f.stem.rsplit("_", 1)[-1], f.name))


def _rename_a_key(base_file: Path, new_key: str) -> str:
    """Rewrites ``base_file`` with its first record under ``new_key`` (footer metadata kept):
    a file the metadata table no longer describes. Returns the key that was renamed."""
    table = pq.read_table(base_file)
    old_key = str(table.column("_hoodie_record_key")[0])
    for column in ("_hoodie_record_key", "id"):
        values = table.column(column)
        renamed = pc.if_else(pc.equal(values, old_key), new_key, values)
        table = table.set_column(table.schema.get_field_index(column), column, renamed)
    pq.write_table(table, base_file)
    return old_key


def test_hudis_metadata_validation_passes_on_ours_and_names_a_changed_file(
    spark: Any, hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path
) -> None:
    jvm = hudi_jvm(CASE.release)
    judge = Judge(tmp_path / "t", jvm, CASE.table_type)
    options = {**our_options(CASE), "hoodie.metadata.index.column.stats.enable": "true"}
    ours(spark, judge, judge.batch(keys(*range(6)), "bulk"), options, "bulk_insert")
    ours(spark, judge, judge.batch(keys(1, 2, 6), "up1"), options, "upsert")
    ours(spark, judge, judge.batch(keys(3), "del"), options, "delete")
    assert spark_table(str(judge.path)).compact(options), "our compaction ran"
    ours(spark, judge, judge.batch(keys(2, 7), "up2"), options, "upsert")

    judged = jvm.validate_metadata(judge.path)
    assert judged["passed"], "; ".join(judged["failures"])
    compared = judged["compared"]
    assert compared["latest file slices"] >= 2 and compared["all file groups"] >= 2, compared
    # the ranges of 7 columns in base and log files; the live keys (8 written, 1 deleted)
    assert compared["column stats"] > 7 * 2 and compared["record index count and content"] == 7

    changed = _latest_base_file(judge.path)
    old_key = _rename_a_key(changed, "k99")
    judged = jvm.validate_metadata(judge.path)
    assert not judged["passed"], "Hudi's checks found the changed base file"
    failures = " | ".join(judged["failures"])
    assert "column stats" in failures and changed.name in failures, failures
    assert "record index content" in failures and "k99" in failures and old_key in failures


def test_hudis_metadata_validation_checks_bloom_filters_where_kept(
    hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path
) -> None:
    """The bloom filter check, on a table whose metadata table keeps ``bloom_filters``: the
    engine keeps no such partition, so Hudi writes this one (the check's own calibration)."""
    jvm = hudi_jvm(CASE.release)
    judge = Judge(tmp_path / "t", jvm, COW)
    hudi = {
        **Case("1.1.1", 9, COW, "BLOOM", True).table_options("blooms"),
        "hoodie.metadata.index.bloom.filter.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
    }
    jvm.write(judge.path, judge.batch(keys(*range(4)), "bulk"), {**hudi, OPERATION: "bulk_insert"})
    jvm.write(judge.path, judge.batch(keys(1, 5), "up"), {**hudi, OPERATION: "upsert"})
    judged = jvm.validate_metadata(judge.path)
    assert judged["passed"], "; ".join(judged["failures"])
    assert judged["compared"]["bloom filters"] > 0 and judged["compared"]["column stats"] > 0
