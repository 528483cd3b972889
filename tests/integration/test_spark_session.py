"""The shared SparkSession works, and the engine's session helper returns that same session."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_spark_round_trip_parquet(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = [(i, f"name-{i}", i % 3) for i in range(100)]
    df = spark.createDataFrame(rows, "id long, name string, part int")
    out = str(tmp_path / "t")
    df.write.partitionBy("part").parquet(out)
    back = spark.read.parquet(out)
    assert back.count() == 100
    assert sorted(r.id for r in back.where("part = 1").collect()) == [
        i for i in range(100) if i % 3 == 1
    ]


def test_get_spark_returns_the_running_session(spark) -> None:  # type: ignore[no-untyped-def]
    import threading

    from engine.spark.session import get_spark

    seen: list[object] = []
    worker = threading.Thread(target=lambda: seen.append(get_spark()))
    worker.start()
    worker.join()
    # dbt worker threads see no active session; the builder must still hand back the same one.
    assert seen[0] is spark or seen[0].sparkContext is spark.sparkContext  # type: ignore[attr-defined]
