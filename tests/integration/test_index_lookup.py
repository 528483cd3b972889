"""The index lookup of a write: consistent with the records written, and Hudi's simple-index
answer for keys the table holds twice."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from engine import write_hudi
from engine.spark import profile
from engine.write import pipeline

OPTIONS = {
    "hoodie.table.name": "consistency",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _hudi_rs(path: str) -> pa.Table:
    hudi_table = HudiTableBuilder.from_base_uri(path).build()
    return pa.Table.from_batches(hudi_table.read(HudiReadOptions().with_projection(["id", "ts"])))


def test_random_keys_update_existing_rows_without_duplicates(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    base = spark.range(1000).select(
        F.concat(F.lit("k"), F.col("id").cast("string")).alias("id"),
        F.lit("p").alias("part"),
        F.lit(1).alias("ts"),
    )
    write_hudi(base, path, {**OPTIONS, "hoodie.datasource.write.operation": "bulk_insert"})
    # every evaluation draws other keys: the index and the write must see the same draw
    draw = F.udf(lambda _: f"k{random.randrange(1000)}", "string").asNondeterministic()
    batch = spark.range(8).select(
        draw(F.col("id")).alias("id"),
        F.lit("p").alias("part"),
        F.lit(2).alias("ts"),
    )
    write_hudi(batch, path, {**OPTIONS, "hoodie.datasource.write.operation": "upsert"})
    table = _hudi_rs(path)
    assert table.num_rows == 1000
    assert pc.count_distinct(table["id"]).as_py() == 1000
    assert 1 <= pc.sum(pc.equal(table["ts"], 2).cast("int64")).as_py() <= 8


def test_key_stored_in_two_file_groups_is_updated_in_both(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Inserts do no index lookup, so a key inserted twice lives in two file groups; an upsert
    tags it with both locations (Hudi's left outer join) and a new key still gets a bucket."""
    path = str(tmp_path / "t")
    options = {**OPTIONS, "hoodie.parquet.small.file.limit": "0"}
    row = "id string, part string, ts int"
    for ts in (1, 2):
        df = spark.createDataFrame([("dup", "p", ts)], row)
        write_hudi(df, path, {**options, "hoodie.datasource.write.operation": "insert"})
    upsert = spark.createDataFrame([("dup", "p", 5), ("new", "p", 5)], row)
    result = write_hudi(upsert, path, {**options, "hoodie.datasource.write.operation": "upsert"})
    table = _hudi_rs(path).sort_by("id")
    assert table.to_pylist() == [
        {"id": "dup", "ts": 5},
        {"id": "dup", "ts": 5},
        {"id": "new", "ts": 5},
    ]
    assert sorted(s.num_update_writes for s in result.write_stats) == [0, 1, 1]
    assert sum(s.num_inserts for s in result.write_stats) == 1


def test_a_batch_with_a_udf_is_evaluated_once(spark: SparkSession, tmp_path: Path) -> None:
    """A dbt model's query (here a UDF) runs once per write, not once per Spark job."""
    path = str(tmp_path / "t")
    calls = spark.sparkContext.accumulator(0)

    def tag(i):  # type: ignore[no-untyped-def]  (hints would make it a pandas UDF)
        calls.add(1)
        return f"k{i}"

    key = F.udf(tag, "string")
    batch = spark.range(30).select(
        key(F.col("id")).alias("id"), F.lit("p").alias("part"), F.lit(1).alias("ts")
    )
    write_hudi(batch, path, {**OPTIONS, "hoodie.datasource.write.operation": "upsert"})
    write_hudi(batch, path, {**OPTIONS, "hoodie.datasource.write.operation": "upsert"})
    assert calls.value == 60
    assert _hudi_rs(path).num_rows == 30


def test_keys_are_looked_up_again_after_a_commit_by_another_writer(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookup runs before the instant is requested; a commit landing in between (here
    inserting the very key the batch updates) makes the write look its keys up again. (The
    two-job write; the one-job write looks keys up after its instant is requested.)"""
    monkeypatch.setattr(pipeline, "one_job_plan", lambda *args, **kwargs: None)
    path = str(tmp_path / "t")
    row = "id string, part string, ts int"
    upsert = {**OPTIONS, "hoodie.datasource.write.operation": "upsert"}
    write_hudi(spark.createDataFrame([("a", "p", 1), ("b", "p", 1)], row), path, upsert)
    original = profile.profile_batch
    lookups: list[object] = []

    def lookup_then_other_writer(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = original(*args, **kwargs)
        lookups.append(args[2])
        if len(lookups) == 1:
            monkeypatch.setattr(profile, "profile_batch", original)
            write_hudi(spark.createDataFrame([("k", "p", 1)], row), path, upsert)
            monkeypatch.setattr(profile, "profile_batch", lookup_then_other_writer)
        return result

    monkeypatch.setattr(profile, "profile_batch", lookup_then_other_writer)
    write_hudi(spark.createDataFrame([("k", "p", 2)], row), path, upsert)
    assert sorted(_hudi_rs(path).to_pylist(), key=lambda r: r["id"]) == [
        {"id": "a", "ts": 1},
        {"id": "b", "ts": 1},
        {"id": "k", "ts": 2},
    ]
    assert len(lookups) == 2  # the first lookup missed "k"; the second found it
