"""Merge-on-read upsert benchmark: MOR upsert vs COW upsert vs Spark insert-overwrite.

One run, one SparkSession::

    base tables   ROWS rows in PARTITIONS day partitions (one file group each), written once
                  as a MOR table, a COW table (bulk_insert) and a plain Parquet table (Spark)
    batches       BATCH records each: 90% updates of random existing keys, 10% new keys, all
                  in the TOUCHED most recent partitions (a day-partitioned fact table's updates)
    measured      median of RUNS consecutive upserts of different batches into
                  - the MOR table (log appends)               write_hudi, MERGE_ON_READ
                  - the COW table (base files rewritten)      write_hudi, COPY_ON_WRITE
                  - the Parquet table: Spark's own merge, INSERT OVERWRITE of the touched
                    partitions (read, anti-join the batch keys, union the batch, dynamic
                    partition overwrite)
                  - a MOR table SCALE times larger (SCALE x partitions of the same size),
                    the same batches: the cost must follow the batch, not the table
    also          Avro encoding of the batch: engine.io.avro vs fastavro's schemaless writer

Targets (issue 6): MOR <= 0.35 x COW upsert, <= 0.33 x Spark insert-overwrite, and the SCALE x
table's MOR upsert <= 1.5 x the base table's. Usage::

    python bench/mor_bench.py [--rows 1000000] [--batch 100000] [--runs 3] [--scale 5]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

OPTIONS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "key",
    "hoodie.datasource.write.partitionpath.field": "day",
    "hoodie.datasource.write.precombine.field": "ts",
    # Hudi's defaults (100 MB small files, 120 MB base files) scaled to this table, whose base
    # files hold 20k rows (~350 kB): with the default every file group is "small", and inserts
    # would rewrite a whole group on every upsert (COW and MOR alike)
    "hoodie.parquet.small.file.limit": 128 * 1024,
}


def table_frame(spark: Any, first_day: int, days: int, per_day: int, ts: int) -> Any:
    """``days * per_day`` rows, day d holding keys d*per_day .. (d+1)*per_day - 1."""
    from pyspark.sql import functions as F

    start = first_day * per_day
    ids = spark.range(start, start + days * per_day)
    return ids.select(
        F.format_string("k%010d", F.col("id")).alias("key"),
        F.format_string("d%04d", (F.col("id") / per_day).cast("long")).alias("day"),
        F.lit(ts).cast("long").alias("ts"),
        (F.col("id") % 1000 / 10.0).alias("amount"),
        F.format_string("customer-%06d", F.col("id") % 100_000).alias("customer"),
        F.element_at(
            F.array(*[F.lit(c) for c in ("red", "green", "blue")]),
            (F.col("id") % 3 + 1).cast("int"),
        ).alias("category"),
        (F.col("id") % 50).cast("int").alias("qty"),
    )


def batch_frame(
    spark: Any, *, days: int, per_day: int, touched: int, size: int, run: int, total_days: int
) -> Any:
    """Updates of random keys of the last ``touched`` days plus new keys in those days."""
    from pyspark.sql import functions as F

    updates = int(size * 0.9)
    inserts = size - updates
    first = (days - touched) * per_day
    span = touched * per_day
    upd = spark.range(updates).select(
        (F.lit(first) + (F.rand(seed=run) * span).cast("long")).alias("id")
    )
    ins = spark.range(inserts).select(
        (F.lit(total_days * per_day) + F.lit(run * inserts) + F.col("id")).alias("nid"),
        (F.lit(days - touched) + F.col("id") % touched).alias("d"),
    )
    upd_rows = upd.select(
        F.format_string("k%010d", F.col("id")).alias("key"),
        F.format_string("d%04d", (F.col("id") / per_day).cast("long")).alias("day"),
    )
    ins_rows = ins.select(
        F.format_string("n%010d", F.col("nid")).alias("key"),
        F.format_string("d%04d", F.col("d")).alias("day"),
    )
    rows = upd_rows.unionByName(ins_rows).dropDuplicates(["key"])
    return rows.select(
        "key",
        "day",
        F.lit(100 + run).cast("long").alias("ts"),
        (F.rand(seed=run + 7) * 100).alias("amount"),
        F.lit(f"customer-run{run}").alias("customer"),
        F.lit("updated").alias("category"),
        F.lit(run).cast("int").alias("qty"),
    )


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def spark_insert_overwrite(spark: Any, path: str, batch: Any) -> None:
    """Spark's merge of a batch into a Parquet table: rewrite the touched partitions."""
    from pyspark.sql import functions as F

    days = [r["day"] for r in batch.select("day").distinct().collect()]
    current = spark.read.parquet(path).where(F.col("day").isin(days))
    kept = current.join(batch.select("key"), "key", "left_anti")
    merged = kept.unionByName(batch.select(*current.columns))
    # the output must not be read while written: materialise the merge first
    merged = merged.localCheckpoint()
    merged.write.mode("overwrite").partitionBy("day").parquet(path)


def encode_comparison(rows: int) -> dict[str, float]:
    """Seconds to Avro-encode ``rows`` log records: columnar encoder vs fastavro."""
    import fastavro
    import pyarrow as pa

    from engine.io import avro as avro_codec
    from engine.io.parquet import avro_schema_with_meta, commit_schema_of

    n = rows
    table = pa.table(
        {
            "_hoodie_commit_time": ["20250101000000000"] * n,
            "_hoodie_commit_seqno": [f"20250101000000000_0_{i}" for i in range(n)],
            "_hoodie_record_key": [f"k{i:010d}" for i in range(n)],
            "_hoodie_partition_path": ["d0001"] * n,
            "_hoodie_file_name": ["file-0"] * n,
            "key": [f"k{i:010d}" for i in range(n)],
            "day": ["d0001"] * n,
            "ts": pa.array(range(n), pa.int64()),
            "amount": pa.array([i / 7 for i in range(n)], pa.float64()),
            "customer": [f"customer-{i % 1000:06d}" for i in range(n)],
            "category": ["red"] * n,
            "qty": pa.array([i % 50 for i in range(n)], pa.int32()),
        }
    )
    data_schema = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie")])
    schema = json.loads(avro_schema_with_meta(commit_schema_of(data_schema.schema, "bench")))
    ours = timed(lambda: avro_codec.encode_length_prefixed(table, schema))
    parsed = fastavro.parse_schema(schema)
    records = table.to_pylist()

    def baseline() -> None:
        out = io.BytesIO()
        for record in records:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, record)
            out.write(struct.pack(">i", buf.tell()))
            out.write(buf.getvalue())

    return {"engine_avro_s": ours, "fastavro_schemaless_s": timed(baseline)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scale", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--touched", type=int, default=10)
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--json", action="store_true", help="print only the JSON summary")
    args = parser.parse_args(argv)

    from engine import write_hudi
    from engine.spark.session import local_session

    work = args.work_dir or tempfile.mkdtemp(prefix="mor-bench-")
    spark = local_session(os.path.join(work, "spark"), app_name="mor-bench")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    per_day = args.rows // args.partitions
    days = args.partitions
    big_days = days * args.scale
    say: Callable[[str], None] = (
        (lambda _m: None) if args.json else (lambda m: print(m, flush=True))
    )

    def load(path: str, table_type: str, n_days: int, first_day: int = 0) -> None:
        frame = table_frame(spark, first_day, n_days, per_day, ts=1)
        write_hudi(
            frame,
            path,
            {
                **OPTIONS,
                "hoodie.datasource.write.table.type": table_type,
                "hoodie.datasource.write.operation": "bulk_insert",
            },
        )

    mor, cow, big = (os.path.join(work, n) for n in ("mor", "cow", "mor_big"))
    plain = os.path.join(work, "parquet")
    setup = {}
    setup["mor"] = timed(lambda: load(mor, "MERGE_ON_READ", days))
    setup["cow"] = timed(lambda: load(cow, "COPY_ON_WRITE", days))
    # the larger table: older days before the same recent ones, so batches hit equal data
    setup["mor_big"] = timed(lambda: load(big, "MERGE_ON_READ", big_days))
    setup["parquet"] = timed(
        lambda: table_frame(spark, 0, days, per_day, ts=1).write.partitionBy("day").parquet(plain)
    )
    say(f"setup (s): {json.dumps({k: round(v, 1) for k, v in setup.items()})}")

    results: dict[str, list[float]] = {
        "mor": [],
        "cow": [],
        "spark_insert_overwrite": [],
        "mor_5x": [],
    }
    for run in range(args.runs):
        kwargs = {"per_day": per_day, "touched": args.touched, "size": args.batch, "run": run}
        batch = batch_frame(spark, days=days, total_days=big_days, **kwargs).cache()
        batch_big = batch_frame(spark, days=big_days, total_days=big_days, **kwargs).cache()
        batch.count()
        batch_big.count()
        upsert = {**OPTIONS, "hoodie.datasource.write.operation": "upsert"}
        results["mor"].append(timed(partial(write_hudi, batch, mor, upsert)))
        results["cow"].append(timed(partial(write_hudi, batch, cow, upsert)))
        results["spark_insert_overwrite"].append(
            timed(partial(spark_insert_overwrite, spark, plain, batch))
        )
        results["mor_5x"].append(timed(partial(write_hudi, batch_big, big, upsert)))
        say(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in results.items()))
        batch.unpersist()
        batch_big.unpersist()

    median = {k: statistics.median(v) for k, v in results.items()}
    ratios = {
        "mor_vs_cow": median["mor"] / median["cow"],
        "mor_vs_spark_insert_overwrite": median["mor"] / median["spark_insert_overwrite"],
        "mor_5x_vs_mor": median["mor_5x"] / median["mor"],
    }
    targets = {"mor_vs_cow": 0.35, "mor_vs_spark_insert_overwrite": 0.33, "mor_5x_vs_mor": 1.5}
    summary = {
        "rows": args.rows,
        "batch": args.batch,
        "runs": args.runs,
        "scale": args.scale,
        "median_s": {k: round(v, 3) for k, v in median.items()},
        "all_s": {k: [round(x, 3) for x in v] for k, v in results.items()},
        "ratios": {k: round(v, 3) for k, v in ratios.items()},
        "targets_met": {k: ratios[k] <= t for k, t in targets.items()},
        "avro_encode_batch": {k: round(v, 3) for k, v in encode_comparison(args.batch).items()},
    }
    say("median (s): " + json.dumps(summary["median_s"]))
    say(
        "ratios: "
        + json.dumps(summary["ratios"])
        + "  targets met: "
        + json.dumps(summary["targets_met"])
    )
    say("avro encode of one batch (s): " + json.dumps(summary["avro_encode_batch"]))
    print(json.dumps(summary))
    spark.stop()
    if args.work_dir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
