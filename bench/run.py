#!/usr/bin/env python3
"""Copy-on-write upsert benchmark: dbt-hudi's engine next to Spark's insert-overwrite.

For each batch shape (``uniform``: 100k rows over all 10 partitions; ``hot2``: the same volume in
the last 2 partitions) on a 1M-row table made by the shared ``gen_data.py``:

* untimed: bulk_insert the base rows into a Hudi table, and write the Spark parquet table the
  anchor starts from (``anchors.py``'s prepared base);
* one untimed warm-up round of both, then timed, A B A B in one JVM, ``--reps`` times: a COW
  upsert of the batch into a fresh copy of the Hudi table, then dbt-spark's incremental
  ``insert_overwrite`` of the touched partitions on a fresh copy of the parquet table
  (``anchors.py``'s ``spark-insert-overwrite-partitions``);
* both results are verified (row count, distinct keys, rows carrying the new ordering value).

Prints one JSON line per timed run and a summary table: median seconds and the ratio
``hudi / spark`` per batch shape (targets: <= 1.0 uniform, <= 0.5 hot).

    python bench/run.py [--rows 1000000] [--updates 100000] [--reps 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SHAPES = {"uniform": 0, "hot2": 2}
TARGETS = {"uniform": 1.0, "hot2": 0.5}


def shared_bench_dir() -> Path:
    for candidate in (os.environ.get("HUDI_SHARED_DIR"), REPO.parent / "shared"):
        if candidate and (Path(candidate) / "bench" / "gen_data.py").is_file():
            return Path(candidate) / "bench"
    raise SystemExit("shared/bench (gen_data.py, anchors.py) not found; set HUDI_SHARED_DIR")


def load_anchors(bench_dir: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("anchors", bench_dir / "anchors.py")
    if spec is None or spec.loader is None:
        raise SystemExit("cannot load anchors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate(bench_dir: Path, out: Path, rows: int, updates: int, hot: int) -> dict[str, Any]:
    meta_file = out / "meta.json"
    if meta_file.exists():
        meta = json.loads(meta_file.read_text())
        if meta["rows"] == rows and meta["updates"] == updates and meta["hot_partitions"] == hot:
            return dict(meta)
    cmd = [
        sys.executable,
        str(bench_dir / "gen_data.py"),
        str(out),
        "--rows",
        str(rows),
        "--updates",
        str(updates),
        "--hot-partitions",
        str(hot),
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return dict(json.loads(meta_file.read_text()))


HUDI_OPTIONS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    # the anchor writes snappy Parquet; compare like with like
    "hoodie.parquet.compression.codec": "snappy",
}


def hudi_base(spark: Any, data: Path, work: Path) -> Path:
    """The base rows bulk-inserted once per data set (untimed)."""
    from engine import write_hudi

    path = work / "prepared" / "hudi_base"
    if not (path / ".hoodie" / "hoodie.properties").exists():
        shutil.rmtree(path, ignore_errors=True)
        df = spark.read.parquet(str(data / "base.parquet"))
        write_hudi(
            df, str(path), {**HUDI_OPTIONS, "hoodie.datasource.write.operation": "bulk_insert"}
        )
    return path


def verify_hudi(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.compute as pc
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(path)).build()
    batches = table.read(HudiReadOptions().with_projection(["id", "ts"]))
    t = pa.Table.from_batches(batches)
    n = t.num_rows
    fresh = pc.sum(pc.greater_equal(t["ts"], meta["min_update_ts"]).cast("int64")).as_py()
    distinct = pc.count_distinct(t["id"]).as_py()
    ok = n == meta["expected_rows_after_upsert"] and fresh == meta["expected_rows_with_new_ts"]
    return {"verified": bool(ok and distinct == n), "out_rows": n}


def timed_upsert(
    anchors: ModuleType, name: str, op: Any, rep: int, meta: dict[str, Any]
) -> dict[str, Any]:
    """One timed repetition of an upsert of the batch, as anchors.py records its runs."""
    rec = anchors.timed(
        name, meta["expected_rows_after_upsert"], op, rep=rep, update_rows=meta["updates"]
    )
    return dict(rec)


def copy_table(anchors: ModuleType, src: Path, dst: Path) -> None:
    anchors.copytree(str(src), str(dst))


def time_hudi(
    anchors: ModuleType,
    spark: Any,
    data: Path,
    base: Path,
    work: Path,
    rep: int,
    meta: dict[str, Any],
    shape: str,
) -> dict[str, Any]:
    from engine import write_hudi

    table = work / "out" / f"hudi-{shape}-rep{rep}"
    copy_table(anchors, base, table)

    def op() -> dict[str, Any]:
        df = spark.read.parquet(str(data / "updates.parquet"))
        result = write_hudi(
            df, str(table), {**HUDI_OPTIONS, "hoodie.datasource.write.operation": "upsert"}
        )
        return {"files_written": len(result.write_stats)}

    rec = timed_upsert(anchors, f"hudi-cow-upsert-{shape}", op, rep, meta)
    rec.update(verify_hudi(table, meta))
    shutil.rmtree(table, ignore_errors=True)
    return dict(rec)


def time_spark(
    anchors: ModuleType,
    spark: Any,
    data: Path,
    args: argparse.Namespace,
    rep: int,
    meta: dict[str, Any],
    shape: str,
) -> dict[str, Any]:
    """anchors.py's spark-insert-overwrite-partitions, one repetition, in this session."""
    from pyspark.sql import functions as F

    anchor_args = argparse.Namespace(work=str(args.work / shape), data=str(data))
    base = anchors.spark_prepared_base(spark, anchor_args)
    tbl = str(args.work / "out" / f"spark-{shape}-rep{rep}")
    anchors.copytree(base, tbl)
    name = f"target_{shape}_rep{rep}".replace("-", "m")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} USING parquet LOCATION '{tbl}'")
    spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")
    upd_src = str(data / "updates.parquet")

    def op() -> dict[str, Any]:
        u = spark.read.parquet(upd_src)
        touched = [row["dt"] for row in u.select("dt").distinct().collect()]
        old = spark.table(name).where(F.col("dt").isin(touched))
        new_rows = anchors.dedupe_latest(old.unionByName(u))
        cols = spark.table(name).columns
        new_rows.select(*cols).write.insertInto(name, overwrite=True)
        return {"touched_partitions": len(touched)}

    rec = timed_upsert(anchors, f"spark-insert-overwrite-{shape}", op, rep, meta)
    spark.catalog.refreshTable(name)
    rec.update(anchors.spark_verify(spark, tbl, meta))
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    shutil.rmtree(tbl, ignore_errors=True)
    return dict(rec)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--updates", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--shapes", default="uniform,hot2")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "dbt-hudi-bench")
    ap.add_argument("--driver-memory", default="4g")
    args = ap.parse_args()
    args.work = args.work.resolve()
    bench_dir = shared_bench_dir()
    anchors = load_anchors(bench_dir)
    shapes = [s for s in args.shapes.split(",") if s]

    datasets = {}
    for shape in shapes:
        out = args.work / "data" / f"{shape}-{args.rows}-{args.updates}"
        datasets[shape] = (out, generate(bench_dir, out, args.rows, args.updates, SHAPES[shape]))

    from engine.spark.session import local_session

    t0 = time.perf_counter()
    spark = local_session(
        str(args.work / "spark"),
        extra_conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.driver.memory": args.driver_memory,
            "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
            "spark.local.dir": str(args.work / "spark-local"),
        },
    )
    spark.range(1).collect()
    print(
        json.dumps({"name": "spark-session-start", "seconds": round(time.perf_counter() - t0, 3)}),
        flush=True,
    )

    results: dict[str, dict[str, list[float]]] = {}
    checks: list[bool] = []
    for shape in shapes:
        data, meta = datasets[shape]
        base = hudi_base(spark, data, args.work / shape)
        anchors.spark_prepared_base(
            spark, argparse.Namespace(work=str(args.work / shape), data=str(data))
        )
        times: dict[str, list[float]] = {"hudi": [], "spark": []}
        # one untimed round first (rep -1): both paths compared warm, as users run them
        time_hudi(anchors, spark, data, base, args.work, -1, meta, shape)
        time_spark(anchors, spark, data, args, -1, meta, shape)
        for rep in range(args.reps):
            for kind in ("hudi", "spark"):
                if kind == "hudi":
                    rec = time_hudi(anchors, spark, data, base, args.work, rep, meta, shape)
                else:
                    rec = time_spark(anchors, spark, data, args, rep, meta, shape)
                times[kind].append(rec["seconds"])
                checks.append(bool(rec.get("verified")))
        results[shape] = times

    print()
    print(
        f"COW upsert vs Spark insert-overwrite of touched partitions "
        f"({args.rows:,} rows, {args.updates:,}-row batch, median of {args.reps}, same JVM)"
    )
    print("| batch | hudi COW upsert s | spark insert-overwrite s | ratio | target |")
    print("|---|---|---|---|---|")
    for shape, times in results.items():
        h, s = statistics.median(times["hudi"]), statistics.median(times["spark"])
        print(f"| {shape} | {h:.2f} | {s:.2f} | {h / s:.2f}x | <= {TARGETS[shape]}x |")
    print(f"\nchecks: {len(checks)} run, {checks.count(False)} failed")
    spark.stop()
    if not all(checks):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
