"""The shuffle slots of a write land where ``engine.spark.partitioning`` says they do."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from engine.spark.partitioning import murmur3_hash_int, partition_of, slot_values


def test_murmur3_matches_spark_hash(spark: SparkSession) -> None:
    values = [*range(-300, 300), 2**31 - 1, -(2**31), 123_456_789]
    df = spark.createDataFrame([(v,) for v in values], "v int")
    rows = df.select("v", F.hash("v").alias("h")).collect()
    assert {r["v"]: r["h"] for r in rows} == {v: murmur3_hash_int(v) for v in values}


@pytest.mark.parametrize(("count", "partitions"), [(1, 1), (2, 2), (7, 7), (40, 40), (9, 4)])
def test_slots_land_on_their_partition(spark: SparkSession, count: int, partitions: int) -> None:
    slots = slot_values(count, partitions)
    assert len(set(slots)) == count
    df = spark.createDataFrame([(v,) for v in slots], "v int").repartition(partitions, "v")
    placed = df.rdd.mapPartitionsWithIndex(lambda i, rows: [(i, r["v"]) for r in rows]).collect()
    assert sorted(placed) == sorted((j % partitions, v) for j, v in enumerate(slots))
    assert all(partition_of(v, partitions) == i for i, v in placed)
