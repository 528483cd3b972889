"""Scan benchmark of the reader (part of ``make bench``).

Two ratios, each the median of a few timed runs after a warm-up:

* ``cow_vs_parquet``: COW snapshot through :func:`engine.read.plan.read_hudi` (planning
  included) over Spark reading the very same Parquet files directly; a count and a full-column
  scan (``noop`` sink). Target <= 1.2.
* ``mor_vs_cow``: MOR snapshot of the same rows (the COW base files plus log files updating a
  tenth of the records in every file group) over the COW snapshot, full-column scan.
  Target <= 3.

The MOR table is derived from the COW table file by file (deltacommits, Avro data blocks written
with the engine's log encoder), so the benchmark needs only the copy-on-write writer.

Use from ``bench/run.py``::

    from read_bench import run_read_bench
    results = run_read_bench(spark, work_dir)          # dict of timings and ratios

or standalone: ``python bench/read_bench.py [--rows N]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from engine import config  # noqa: E402
from engine.fs.properties import read_properties, write_properties  # noqa: E402
from engine.fs.storage import Storage  # noqa: E402
from engine.io.logfile import encode_avro_data_block  # noqa: E402
from engine.model.schema import arrow_to_avro_schema, schema_json  # noqa: E402
from engine.read.plan import plan_query  # noqa: E402
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat  # noqa: E402
from engine.timeline.instant import new_instant_time  # noqa: E402
from engine.timeline.timeline import Timeline  # noqa: E402

TABLE = "bench_read"
UPDATE_FRACTION = 10  # every 10th record of a file group gets a log update


def _median_time(action: Callable[[], Any], runs: int) -> float:
    action()  # warm-up (JIT, file cache, Python workers)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def write_cow_table(spark: Any, path: str, rows: int, partitions: int = 4) -> None:
    from pyspark.sql import functions as F

    from engine import write_hudi

    df = (
        spark.range(rows)
        .withColumn("name", F.concat(F.lit("name-"), F.col("id").cast("string")))
        .withColumn("value", F.rand(7) * 1000)
        .withColumn("ts", F.lit(1).cast("long"))
        .withColumn("part", F.concat(F.lit("p"), (F.col("id") % partitions).cast("string")))
    )
    write_hudi(
        df,
        path,
        {
            config.TABLE_NAME.key: TABLE,
            config.RECORDKEY_FIELD.key: "id",
            config.PARTITIONPATH_FIELD.key: "part",
            config.WRITE_PRECOMBINE_FIELD.key: "ts",
            config.OPERATION.key: "bulk_insert",
        },
    )


def derive_mor_table(cow_path: str, mor_path: str) -> int:
    """Copy a COW table as a MOR table and append one log update per file group.

    Returns:
        The number of records updated through log files.
    """
    shutil.copytree(cow_path, mor_path)
    storage = Storage(mor_path)
    props = read_properties(storage)
    props[config.TABLE_TYPE.key] = "MERGE_ON_READ"
    write_properties(storage, props)
    meta = Path(mor_path) / ".hoodie"
    for f in sorted(meta.iterdir()):
        name = f.name
        if name.endswith(".commit"):
            f.rename(meta / name.replace(".commit", ".deltacommit"))
        elif name.endswith(".commit.requested"):
            f.rename(meta / name.replace(".commit.requested", ".deltacommit.requested"))
        elif name.endswith(".inflight") and name.count(".") == 1:
            f.rename(meta / name.replace(".inflight", ".deltacommit.inflight"))
    timeline = Timeline.load(storage)
    plan = plan_query(storage)
    last = timeline.last_completed()
    instant = new_instant_time(last.instant_time if last else None)
    stats: dict[str, list[HoodieWriteStat]] = {}
    updated = 0
    avro_schema: dict[str, Any] | None = None
    for file_slice in plan.file_slices:
        base = pq.read_table(storage.full_path(file_slice.base_file_path or ""))
        picked = base.take(pa.array(range(0, base.num_rows, UPDATE_FRACTION)))
        n = picked.num_rows
        picked = picked.set_column(
            picked.schema.get_field_index("value"), "value", pc.multiply(picked["value"], -1.0)
        )
        picked = picked.set_column(
            picked.schema.get_field_index("ts"), "ts", pa.array([2] * n, pa.int64())
        )
        for column, value in (
            ("_hoodie_commit_time", instant),
            ("_hoodie_file_name", file_slice.file_id),
        ):
            idx = picked.schema.get_field_index(column)
            picked = picked.set_column(idx, column, pa.array([value] * n, pa.string()))
        seqno = pa.array([f"{instant}_0_{i}" for i in range(n)], pa.string())
        picked = picked.set_column(picked.schema.get_field_index("_hoodie_commit_seqno"),
                                   "_hoodie_commit_seqno", seqno)  # fmt: skip
        if avro_schema is None:
            avro_schema = arrow_to_avro_schema(picked.schema, TABLE, with_meta=True)
        log_name = f".{file_slice.file_id}_{file_slice.base_instant_time}.log.1_0-1-1"
        rel = f"{file_slice.partition_path}/{log_name}"
        data = encode_avro_data_block(picked, avro_schema, instant)
        storage.write_bytes(rel, data)
        updated += n
        stats.setdefault(file_slice.partition_path, []).append(
            HoodieWriteStat(
                file_id=file_slice.file_id,
                path=rel,
                partition_path=file_slice.partition_path,
                prev_commit=file_slice.base_instant_time,
                num_writes=n,
                num_update_writes=n,
                total_write_bytes=len(data),
                file_size_in_bytes=len(data),
                log_version=1,
                log_offset=0,
                base_file=file_slice.base_file,
                log_files=(log_name,),
            )
        )
    schema = schema_json(arrow_to_avro_schema(plan_schema_of(plan), TABLE, with_meta=False))
    metadata = HoodieCommitMetadata(
        partition_to_write_stats=stats,
        extra_metadata={"schema": schema},
        operation_type="UPSERT",
    )
    storage.write_bytes(f".hoodie/{instant}.deltacommit.requested", b"")
    storage.write_bytes(f".hoodie/{instant}.deltacommit.inflight", b"")
    storage.write_atomic(f".hoodie/{instant}.deltacommit", metadata.to_json())
    return updated


def plan_schema_of(plan: Any) -> pa.Schema:
    from engine.read.arrow import plan_schema

    return plan_schema(plan)


def run_read_bench(
    spark: Any, work_dir: str, *, rows: int = 400_000, runs: int = 3
) -> dict[str, Any]:
    """Build the tables under ``work_dir`` and time the scans.

    Returns:
        Timings in seconds and the two ratios (``cow_vs_parquet``, ``mor_vs_cow``).
    """
    from engine.read.plan import read_hudi

    cow = str(Path(work_dir) / "cow")
    mor = str(Path(work_dir) / "mor")
    write_cow_table(spark, cow, rows)
    updated = derive_mor_table(cow, mor)
    storage = Storage(cow)
    files = [storage.uri(s.base_file_path or "") for s in plan_query(storage).file_slices]

    def scan(make_df: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            df = make_df()
            df.count()
            df.write.format("noop").mode("overwrite").save()

        return run

    schema = read_hudi(spark, cow).schema
    parquet_s = _median_time(scan(lambda: spark.read.parquet(*files)), runs)
    parquet_schema_s = _median_time(scan(lambda: spark.read.schema(schema).parquet(*files)), runs)
    cow_s = _median_time(scan(lambda: read_hudi(spark, cow)), runs)
    mor_s = _median_time(scan(lambda: read_hudi(spark, mor)), runs)
    return {
        "rows": rows,
        "base_files": len(files),
        "log_updates": updated,
        "parquet_direct_s": round(parquet_s, 3),
        "parquet_direct_given_schema_s": round(parquet_schema_s, 3),
        "cow_snapshot_s": round(cow_s, 3),
        "mor_snapshot_s": round(mor_s, 3),
        "cow_vs_parquet": round(cow_s / parquet_s, 2),
        "cow_vs_parquet_target": 1.2,
        # the same files with the schema given (no footer inference job): the strictest baseline
        "cow_vs_parquet_given_schema": round(cow_s / parquet_schema_s, 2),
        "mor_vs_cow": round(mor_s / cow_s, 2),
        "mor_vs_cow_target": 3.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Reader scan benchmark")
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    from engine.spark.session import local_session

    with tempfile.TemporaryDirectory(prefix="dbt-hudi-read-bench-") as work:
        spark = local_session(str(Path(work) / "spark"), app_name="dbt-hudi-read-bench")
        try:
            results = run_read_bench(
                spark, str(Path(work) / "tables"), rows=args.rows, runs=args.runs
            )
        finally:
            spark.stop()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
