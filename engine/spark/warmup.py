"""Python workers warmed before the first write: a new process's first write pays no worker start.

A write's Spark tasks run the engine in Python workers (``mapInArrow``). Spark starts them on the
first Python job of a session and keeps them for later tasks (``spark.python.worker.reuse``,
on by default): the first job pays the interpreter start and the engine's imports (pyarrow,
fastavro, numpy and the write path) once per worker, seconds on a small machine, and the JVM's
Arrow path is cold. :func:`warm_python_workers` runs one tiny job with one task per core that
imports what a write task imports, so that cost is paid while the caller does something else
(the dbt adapter runs it in a background thread while dbt parses the project and reads the
catalog).

Warm workers are not all a first write pays: the JVM's shuffle, Arrow and Parquet paths are
still cold and the driver has not imported the write path yet (measured by ``make bench``'s
cold section: the first upsert of a new process costs several times the later ones even with
warm workers). On a local master, :func:`warm_write_path` therefore writes a throwaway
four-row merge-on-read table twice (a bulk_insert, then an upsert whose updates become log
blocks) in a temporary directory and deletes it: the first real write runs as a later one.
Elsewhere (a cluster, Spark Connect) a temporary directory of the driver is no place the
executors can write, and their JVMs are warm already.

Four rows leave the JVM's own hot loops interpreted: the first real batch's collection as Arrow
(a Parquet scan, key expressions, the Arrow writer) then runs while the JIT compiles them, and
the compiler's threads take the cores the write's threads want next. On a local master
:func:`warm_arrow_scan` collects a Parquet scan of 30,000 rows of the common column types the
same way. Measured on two cores (fresh processes, three pairs interleaved): the first 100k-row
upsert after the warm-up took 1.68-1.74 s with it and 2.13-2.51 s without (the later ones
1.19-1.48 s); the step itself takes 0.8-1.0 s, while dbt parses.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from engine.faults import passed_by

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["warm_arrow_scan", "warm_python_workers", "warm_write_path"]

# the modules a write, compaction or read task unpickles its function from
TASK_MODULES = (
    "engine.spark.jobs",
    "engine.spark.partition_write",
    "engine.spark.bulk_write",
    "engine.spark.bucket_write",
    "engine.spark.profile",
    "engine.spark.compaction",
    "engine.spark.reader",
)
_LOCAL_MASTER = re.compile(r"^local\[(\d+|\*)(?:,\d+)?\]$")
_MAX_TASKS = 64


def _task_slots(spark: SparkSession) -> int:
    """One task per core of a local master; else the session's shuffle partitions (capped)."""
    import os

    master = spark.conf.get("spark.master", "") or ""
    match = _LOCAL_MASTER.match(master)
    if master == "local":
        return 1
    if match:
        return os.cpu_count() or 1 if match.group(1) == "*" else int(match.group(1))
    partitions = spark.conf.get("spark.sql.shuffle.partitions", "2") or "2"
    return max(1, min(_MAX_TASKS, int(partitions)))


def _import_task_modules(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import importlib

    for name in TASK_MODULES:
        importlib.import_module(name)
    yield from batches


def warm_python_workers(spark: SparkSession) -> int:
    """Run one task per core that imports the engine's task modules; returns the task count."""
    slots = _task_slots(spark)
    frame = spark.range(0, slots, 1, slots).mapInArrow(_import_task_modules, "id long")
    frame.collect()
    return slots


def _local_master(spark: SparkSession) -> bool:
    master = spark.conf.get("spark.master", "") or ""
    return master == "local" or bool(_LOCAL_MASTER.match(master))


def warm_write_path(spark: SparkSession) -> bool:
    """On a local master, write a throwaway merge-on-read table twice (bulk_insert, then an
    upsert) in a temporary directory that is then deleted; ``False`` (nothing run) elsewhere."""
    if not _local_master(spark):
        return False
    from engine import config as hc
    from engine.spark.api import write_hudi

    options = {
        hc.TABLE_NAME.key: "dbt_hudi_warm_up",
        hc.RECORDKEY_FIELD.key: "id",
        hc.PARTITIONPATH_FIELD.key: "p",
        hc.WRITE_PRECOMBINE_FIELD.key: "ts",
        hc.WRITE_TABLE_TYPE.key: "MERGE_ON_READ",
    }
    rows = spark.range(0, 4, 1, 1).selectExpr("id", "cast(id % 2 as string) as p", "id as ts")
    with passed_by(), tempfile.TemporaryDirectory(prefix="dbt-hudi-warm-up-") as tmp:
        path = f"{tmp}/table"
        write_hudi(rows, path, {**options, hc.OPERATION.key: "bulk_insert"})
        updates = rows.selectExpr("id", "p", "ts + 1 as ts")
        write_hudi(updates, path, {**options, hc.OPERATION.key: "upsert"})
    return True


ARROW_SCAN_ROWS = 30_000


def warm_arrow_scan(spark: SparkSession) -> bool:
    """On a local master, collect a Parquet scan of :data:`ARROW_SCAN_ROWS` rows (integers,
    doubles, strings, with string expressions like a record key's) as Arrow, as a driver-side
    write collects its batch; ``False`` (nothing run) elsewhere."""
    if not _local_master(spark):
        return False
    import numpy as np
    import pyarrow.parquet as pq

    n = ARROW_SCAN_ROWS
    rows = pa.table(
        {
            "i": pa.array(np.arange(n, dtype=np.int32)),
            "l": pa.array(np.arange(n, dtype=np.int64)),
            "d": pa.array(np.arange(n, dtype=np.float64)),
            "s": pa.array([f"value-{i}" for i in range(n)]),
        }
    )
    with tempfile.TemporaryDirectory(prefix="dbt-hudi-warm-up-") as tmp:
        pq.write_table(rows, f"{tmp}/rows.parquet")
        scan = spark.read.parquet(tmp).selectExpr(
            "*", "cast(l as string) as k", "concat('p=', s) as p", "s is null as flag"
        )
        scan.toArrow()
    return True


def train_class_archive() -> None:
    """A session that loads what a dbt run's JVM loads (the Hive catalog, a Parquet write and
    read), then exits: its JVM writes the class-data archive
    (:func:`engine.spark.class_archive.prepare` runs it as ``python -m engine.spark.warmup
    class-archive``)."""
    from engine.spark.session import local_session

    with tempfile.TemporaryDirectory(prefix="dbt-hudi-class-archive-") as work:
        spark = local_session(work, hive=True, app_name="dbt-hudi-class-archive")
        spark.sql("SHOW DATABASES").collect()
        path = f"{work}/train"
        spark.range(100).selectExpr("id", "cast(id as string) as name").write.parquet(path)
        spark.read.parquet(path).groupBy("name").count().collect()


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["class-archive"]:
        train_class_archive()
