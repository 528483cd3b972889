"""Every key generator through every copy-on-write operation, judged by hudi-rs.

Each case runs bulk_insert -> insert -> upsert -> delete on one table, in table versions 6, 8
and 9 (and in version 6 on the bucket index), and checks after every commit that hudi-rs reads
exactly the model's rows (keys, partition paths, data, commit times), then time-travels to every
instant and checks the model's history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from engine import HudiTable, write_hudi
from engine.write.bucket_index import bucket_of_file_id
from tests.hudi_rs import hudi_rs_rows
from tests.property.oracle import OVERWRITE, Oracle, actual_set

# the subject is the keys each key generator makes (the same Spark expressions on either
# path), not where a write runs: writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.driver_writes]

SCHEMA = "id int, name string, dt string, region string, ts long, ms long, v string"
COLUMNS = ["id", "name", "dt", "region", "ts", "ms", "v", "_hoodie_commit_time"]
FIELDS = ["id", "name", "dt", "region", "ts", "ms", "v"]


def _day(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y/%m/%d")


KEYGENS: dict[str, tuple[dict[str, str], Callable[[dict[str, Any]], tuple[str, str]]]] = {
    "simple_plain": (
        {
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
        },
        lambda r: (str(r["id"]), r["dt"] or "__HIVE_DEFAULT_PARTITION__"),
    ),
    "simple_hive": (
        {
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.hive_style_partitioning": "true",
        },
        lambda r: (str(r["id"]), f"dt={r['dt'] or '__HIVE_DEFAULT_PARTITION__'}"),
    ),
    "complex_hive": (
        {
            "hoodie.datasource.write.recordkey.field": "id,name",
            "hoodie.datasource.write.partitionpath.field": "dt,region",
            "hoodie.datasource.write.hive_style_partitioning": "true",
        },
        lambda r: (
            f"id:{r['id']},name:{r['name']}",
            f"dt={r['dt'] or '__HIVE_DEFAULT_PARTITION__'}/region={r['region']}",
        ),
    ),
    "non_partitioned": (
        {
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.keygenerator.type": "NON_PARTITION",
        },
        lambda r: (str(r["id"]), ""),
    ),
    "timestamp_epoch_millis": (
        {
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "ms",
            "hoodie.datasource.write.keygenerator.type": "TIMESTAMP",
            "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
        },
        lambda r: (str(r["id"]), _day(r["ms"])),
    ),
    "urlencoded": (
        {
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.partitionpath.urlencode": "true",
        },
        lambda r: (str(r["id"]), r["region"].replace(":", "%3A")),
    ),
}

DAY_MS = 86_400_000
BASE_MS = 1_700_000_000_000


def make_rows(ids: range, ts: int, tag: str) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "name": f"n{i % 3}",
            "dt": None if i % 7 == 6 else f"2024-01-0{i % 3 + 1}",
            "region": f"r:{i % 2}",
            "ts": ts,
            "ms": BASE_MS + (i % 3) * DAY_MS,
            "v": f"{tag}{i}",
        }
        for i in ids
    ]


# version 8 writes the key generator's table properties as 9 does: make test-long only
@pytest.mark.parametrize("version", ["6", pytest.param("8", marks=pytest.mark.long), "9"])
@pytest.mark.parametrize("keygen", sorted(KEYGENS))
def test_cow_operations_per_keygen_hudi_rs_matches_model(  # type: ignore[no-untyped-def]
    spark, tmp_path, keygen: str, version: str
) -> None:
    run_operations(spark, str(tmp_path / keygen), keygen, {"hoodie.write.table.version": version})


@pytest.mark.parametrize("keygen", sorted(KEYGENS))
def test_cow_operations_per_keygen_on_the_bucket_index(  # type: ignore[no-untyped-def]
    spark, tmp_path, keygen: str
) -> None:
    """The same sequence with hoodie.index.type=BUCKET: every file group is a bucket."""
    path = str(tmp_path / keygen)
    run_operations(
        spark, path, keygen, {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 3}
    )
    timeline = HudiTable(path).timeline()
    for instant in timeline.commits_timeline():
        for stat in timeline.read_commit_metadata(instant).write_stats():
            assert bucket_of_file_id(stat.file_id) in (0, 1, 2), stat.file_id


def run_operations(spark: Any, path: str, keygen: str, extra: dict[str, str]) -> None:
    """bulk_insert, insert, upsert, delete; hudi-rs reads the model's rows after each, and
    time travel to every instant after the last."""
    options, identity = KEYGENS[keygen]
    base = {
        "hoodie.table.name": f"t_{keygen}",
        "hoodie.datasource.write.precombine.field": "ts",
        **extra,
        **options,
    }
    oracle = Oracle(OVERWRITE, "ts", identity, FIELDS)
    steps: list[tuple[str, list[dict[str, Any]]]] = [
        ("bulk_insert", make_rows(range(10), 1, "a")),
        ("insert", make_rows(range(10, 14), 1, "b")),
        ("upsert", make_rows(range(5, 17), 2, "c")),
        ("delete", make_rows(range(4), 3, "d")),
    ]
    for operation, rows in steps:
        df = spark.createDataFrame([tuple(r[c] for c in FIELDS) for r in rows], SCHEMA)
        result = write_hudi(df, path, {**base, "hoodie.datasource.write.operation": operation})
        oracle.apply(rows, operation, result.instant_time)
        assert actual_set(hudi_rs_rows(path), COLUMNS) == oracle.expected(COLUMNS), operation
        assert result.commit_metadata.operation_type == operation.upper()
    for instant, _ in oracle.history:
        assert actual_set(hudi_rs_rows(path, as_of=instant), COLUMNS) == oracle.expected(
            COLUMNS, as_of=instant
        ), instant
