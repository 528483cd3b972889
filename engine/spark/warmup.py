"""Python workers warmed before the first write: a new process's first write pays no worker start.

A write's Spark tasks run the engine in Python workers (``mapInArrow``). Spark starts them on the
first Python job of a session and keeps them for later tasks (``spark.python.worker.reuse``,
on by default): the first job pays the interpreter start and the engine's imports (pyarrow,
fastavro, numpy and the write path) once per worker, seconds on a small machine, and the JVM's
Arrow path is cold. :func:`warm_python_workers` runs one tiny job with one task per core that
imports what a write task imports, so that cost is paid while the caller does something else
(the dbt adapter runs it in a background thread while dbt parses the project and reads the
catalog).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["warm_python_workers"]

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
