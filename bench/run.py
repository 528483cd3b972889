#!/usr/bin/env python3
"""``make bench``: what a dbt user gets from the engine's defaults, next to what they would run
instead, measured in one JVM.

Data: the shared ``gen_data.py`` (string key ``id``, ordering ``ts``, 10 ``dt`` partitions, 8
payload columns; batches of 80% updates, 20% new keys). ``BENCH_ROWS`` (default 1,000,000) sets
the table size ``R``; shapes::

    uniform   R rows, R/10-row batch over all 10 partitions
    hot2      R rows, R/10-row batch in the last 2 partitions
    small     R rows, 2,000-row batch in the last partition (a dbt incremental run)
    large     5R rows, R/2-row batch over all partitions (cost must follow the batch)
    recent    R rows whose keys grow with time (``k%09d`` in ``ts`` order, each ``dt`` a
              range of them), R/10-row batch of updates to the newest tenth of the keys and
              new keys, all in the last partition: where key ranges and bloom filters pay
    recent-large  the same on 5R rows with an R/2-row batch
    rli       R rows, R/50-row batch (2 %) over all partitions, version 9 tables
    rli-large 5R rows, the same R/50-row batch (the record index's cost must stay flat)
    rli-xl    20R rows, the same R/50-row batch, merge-on-read only and no anchors: the
              record index's time here against its time on ``rli`` (at most 1.3x)

Contenders per shape, each run on a fresh copy of its prepared table (untimed), one warm-up
round, then ``BENCH_REPS`` (default 3) rounds A B C ... A B C, medians:

    cow / mor                 write_hudi upsert with the options the dbt materializations
                              pass (hudi_upsert / hudi_mor, computed by the adapter's code):
                              the engine's defaults plus dbt's GLOBAL_SIMPLE index of a
                              partitioned model
    cow-simple / mor-simple   the same with index_type='SIMPLE' (Hudi's Spark default)
    cow-bucket / mor-bucket   the same with index_type='BUCKET'
    cow-gzip                  the same with Hudi's own default codec
    cow-tasks / mor-tasks     the same written in Spark tasks on the local master too
                              (hoodie.write.local.enabled=false: no driver-side write)
    cow-bloom / mor-bloom     the same with index_type='BLOOM' (the recent shapes)
    cow-gbloom / mor-gbloom   the same with index_type='GLOBAL_BLOOM' (the recent shapes)
    cow-gsimple9 / mor-gsimple9   dbt's GLOBAL_SIMPLE on a version 9 table (the rli shapes)
    cow-rli / mor-rli         index_type='RECORD_INDEX' on a version 9 table (the rli shapes)
    spark-io                  dbt-spark's incremental insert_overwrite of the touched partitions
                              of a plain Parquet table (the shared anchors.py, same session)
    delta-merge               delta-rs MERGE of the same batch (anchors.py, own process: its
                              peak RSS is its own)

    hudi0.15-* / hudi1.1-*    Apache Hudi's own Spark writer (0.15.0 on table version 6,
                              1.1.1 on its default 9) in its own process, the model's options
                              (bench/hudi_spark.py says which settings and why): ``-cow`` /
                              ``-mor`` with dbt's GLOBAL_SIMPLE, ``-default`` with Hudi's
                              default index, ``-bucket``, ``-rli`` (1.1.1, the rli shapes);
                              on the shapes of ``BENCH_HUDI_SHAPES``, indexes of
                              ``BENCH_HUDI_INDEXES`` (gsimple,default,bucket), releases of
                              ``BENCH_HUDI`` (0.15.0,1.1.1). Goals: our upsert <= 0.25x
                              Hudi's doing the same work, and on the 5M shapes our peak RSS
                              (without Hudi's processes) <= Hudi's (its process and JVM)

plus ``bulk_insert`` (engine defaults) against Spark's plain partitioned Parquet write and
Hudi's bulk_insert (goal: <= 0.5x), snapshot scans (every column into Spark's ``noop`` sink) of
the uniform shape's results: the COW table against Spark scanning the Parquet table, the MOR
table against the COW table, Hudi scanning its own tables beside them; and merge-on-read
compaction after one uniform upsert, ours against Hudi's ``run_compaction``.

Each hudi upsert's seconds are split as ``dbt/adapters/hudi/timing.py`` splits a dbt model's
write (the driver's planning before the first Spark job, the index lookup job, the write job,
the commit after the last job; medians), and every ratio carries both absolute times and the
load beside them. The cold section runs the uniform MOR upsert in fresh processes: the first
write of a new session against the later ones, session start timed apart, with and without the
Python-worker warm-up the dbt adapter runs while dbt parses.

The codec section writes and reads one partition's base file with each codec
(``bench/codecs.py``). Every timed run is verified (row count, distinct keys, rows carrying the
batch's ordering values; Hudi tables through hudi-rs) and carries its peak RSS (this process and
its children: the JVM and Python workers) and the 1-minute load average.
The clustering section (:func:`clustering_section`) writes a 5R-row table in
``BENCH_CLUSTER_BATCHES`` (default 100) small bulk_inserts, clusters it (z-order, linear) into
about ``BENCH_CLUSTER_FILES`` (default 64) files against Spark's repartitionByRange + sort +
Parquet write, and reads a ~1 % filter on each of two columns before and after each.
``BENCH_ONLY=codec,upsert,cold,bulk,scan,compact,clustering``, ``BENCH_SHAPES=uniform,small`` and
``BENCH_VARIANTS=cow-gzip`` select parts; ``BENCH_WORK`` sets
the work directory.

    BENCH_ROWS=200000 BENCH_REPS=2 python bench/run.py      # a quick run, not recorded
    BENCH_ONLY=clustering python bench/run.py               # the clustering section alone
    python bench/run.py --summarize run.log                 # medians of a run's JSON lines
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import bench_results  # noqa: E402
from bench.hudi_spark import (  # noqa: E402
    RELEASE_LABELS,
    RELEASES,
    HudiOnSpark,
    contender_kinds,
    hudi_options,
    ours_of,
)
from engine import config as hc  # noqa: E402
from engine.config import WriteOperation  # noqa: E402

DEFAULT_ROWS = 1_000_000
ROWS = int(os.environ.get("BENCH_ROWS", str(DEFAULT_ROWS)))
REPS = int(os.environ.get("BENCH_REPS", "3"))
ONLY = set(
    os.environ.get("BENCH_ONLY", "codec,upsert,cold,bulk,scan,compact,clustering").split(",")
)
SHAPES_WANTED = os.environ.get(
    "BENCH_SHAPES", "uniform,hot2,small,large,recent,recent-large,rli,rli-large,rli-xl"
).split(",")
WORK = Path(os.environ.get("BENCH_WORK", str(Path(tempfile.gettempdir()) / "dbt-hudi-bench")))
DRIVER_MEMORY = os.environ.get("BENCH_DRIVER_MEMORY", "4g")
# the shapes Apache Hudi on Spark runs on (bench/hudi_spark.py), its goals against ours
HUDI_SHAPES = os.environ.get(
    "BENCH_HUDI_SHAPES", "uniform,hot2,large,recent,recent-large,rli,rli-large"
).split(",")
HUDI_UPSERT_GOAL = 0.25  # our upsert / Hudi's, every shape, both table types
HUDI_BULK_GOAL = 0.5  # our bulk_insert / Hudi's
FIVE_M_SHAPES = ("large", "recent-large", "rli-large")  # our peak RSS <= Hudi's there

# name -> (table rows, batch rows, hot partitions)
SHAPES: dict[str, tuple[int, int, int]] = {
    "uniform": (ROWS, ROWS // 10, 0),
    "hot2": (ROWS, ROWS // 10, 2),
    "small": (ROWS, 2_000, 1),
    "large": (5 * ROWS, ROWS // 2, 0),
    "recent": (ROWS, ROWS // 10, 0),
    "recent-large": (5 * ROWS, ROWS // 2, 0),
    "rli": (ROWS, ROWS // 50, 0),
    "rli-large": (5 * ROWS, ROWS // 50, 0),
    "rli-xl": (20 * ROWS, ROWS // 50, 0),
}
# time-ordered keys: every index side by side (dbt's default, cow / mor, is GLOBAL_SIMPLE)
RECENT_SHAPES = ("recent", "recent-large")
RECENT_VARIANTS = [
    f"{kind}-{index}"
    for kind in ("cow", "mor")
    for index in ("simple", "bloom", "gbloom", "bucket")
]
# the record index against dbt's GLOBAL_SIMPLE on version 9 tables, one 2 % batch (of the 1M
# table) on 1M, 5M and 20M rows: the record index's cost should follow the batch, not the table
RLI_SHAPES = ("rli", "rli-large", "rli-xl")
RLI_VARIANTS = [f"{kind}-{index}" for kind in ("cow", "mor") for index in ("gsimple9", "rli")]
# 20M rows: merge-on-read only (the goals' table type), no Spark or delta-rs anchor
RLI_XL_VARIANTS = ["mor-gsimple9", "mor-rli"]
ANCHORLESS_SHAPES = ("rli-xl",)
# the record index's time on a shape against its time on another, per contender: bound
GROWTH_TARGETS: dict[tuple[str, str], dict[str, float]] = {("rli-xl", "rli"): {"mor-rli": 1.3}}
VARIANT_SHAPES = ("uniform", "hot2", "small", "large")
VARIANTS = [
    v
    for v in os.environ.get(
        "BENCH_VARIANTS", "cow-simple,mor-simple,cow-bucket,mor-bucket,cow-gzip"
    ).split(",")
    if v
]
# the targets: (numerator, denominator) -> ratio bound, per shape
TARGETS: dict[str, dict[tuple[str, str], float]] = {
    "uniform": {
        ("cow", "spark-io"): 0.6,
        ("mor", "spark-io"): 0.33,
        ("mor", "delta-merge"): 1.0,
        ("cow", "delta-merge"): 1.2,
    },
    "hot2": {
        ("cow", "spark-io"): 0.5,
        ("mor", "spark-io"): 0.33,
        ("mor", "delta-merge"): 1.0,
        ("cow", "delta-merge"): 1.2,
    },
    "small": {("cow", "spark-io"): 0.5, ("mor", "spark-io"): 0.5},
    "large": {("cow", "spark-io"): 0.5, ("mor", "spark-io"): 0.25},
    "recent": {},
    "recent-large": {},
    "rli": {},
    "rli-large": {("cow-rli", "cow-gsimple9"): 0.5, ("mor-rli", "mor-gsimple9"): 0.5},
    "rli-xl": {("mor-rli", "mor-gsimple9"): 0.5},
}


def shape_work(shape: str, data: Path) -> Path:
    """A shape's prepared tables, named by its data (rows, batch, hot partitions): a work
    directory reused with another ``BENCH_ROWS`` prepares new tables instead of reusing stale
    ones."""
    return WORK / f"{shape}-{data.name}"


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
        if (meta["rows"], meta["updates"], meta["hot_partitions"]) == (rows, updates, hot):
            return dict(meta)
    cmd = [sys.executable, str(bench_dir / "gen_data.py"), str(out), "--rows", str(rows)]
    cmd += ["--updates", str(updates), "--hot-partitions", str(hot)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return dict(json.loads(meta_file.read_text()))


def time_ordered(uniform: Path, out: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The ``recent`` shapes' data from a uniform dataset of the same sizes: the base rows'
    ``dt`` becomes the range of their key (keys and ``ts`` grow together, so each partition
    holds a time range of keys), and the batch updates keys drawn from the newest tenth and
    inserts keys past the last one, all in the last partition; payloads and ``ts`` are kept."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    if (out / "meta.json").exists():
        return dict(json.loads((out / "meta.json").read_text()))
    out.mkdir(parents=True, exist_ok=True)
    rows, updates, parts = meta["rows"], meta["updates"], meta["partitions"]
    base = pq.read_table(uniform / "base.parquet")
    days = sorted(set(base["dt"].to_pylist()))
    dt = np.array(days)[np.arange(rows, dtype=np.int64) * parts // rows]
    base = base.set_column(base.schema.get_field_index("dt"), "dt", pa.array(dt))
    rng = np.random.default_rng(7)
    n_new = meta["n_insert_new"]
    recent = np.arange(rows - max(rows // 10, updates), rows, dtype=np.int64)
    old = np.sort(rng.choice(recent, size=updates - n_new, replace=False))
    idx = rng.permutation(np.concatenate([old, np.arange(rows, rows + n_new, dtype=np.int64)]))
    ids = pa.array([f"k{i:09d}" for i in idx], pa.string())
    batch = pq.read_table(uniform / "updates.parquet")
    batch = batch.set_column(batch.schema.get_field_index("id"), "id", ids)
    last = pa.array([days[-1]] * updates, pa.string())
    batch = batch.set_column(batch.schema.get_field_index("dt"), "dt", last)
    pq.write_table(base, out / "base.parquet", compression="snappy")
    pq.write_table(batch, out / "updates.parquet", compression="snappy")
    recent_meta = {**meta, "touched_partitions": [days[-1]], "time_ordered": True}
    (out / "meta.json").write_text(json.dumps(recent_meta, indent=1))
    return recent_meta


# ---- options as the dbt materializations pass them ------------------------------------------


def model_options(kind: str, operation: str) -> dict[str, str]:
    """The options the dbt materialization passes (``hudi_upsert`` for ``cow*``, ``hudi_mor``
    for ``mor*``) for a model with ``unique_key='id'``, ``partition_by='dt'``,
    ``precombine_key='ts'``, plus the variant's config; computed by the adapter's own code
    (:meth:`HudiModelConfig.write_options`), so the bench measures what a dbt user gets.

    A partitioned model whose key may change partition gets ``GLOBAL_SIMPLE`` there (dbt's
    ``unique_key`` is unique in the table); ``-simple`` variants set ``index_type='SIMPLE'``
    (keys that stay in their partition), ``-bucket`` ones ``index_type='BUCKET'`` (Hudi's 4
    buckets), ``-bloom`` and ``-gbloom`` ones ``BLOOM`` and ``GLOBAL_BLOOM``, ``-gzip`` ones
    Hudi's own codec, ``-tasks`` ones the write in Spark tasks (no driver-side write);
    ``-gsimple9`` and ``-rli`` write version 9 tables, the latter with
    ``index_type='RECORD_INDEX'``."""
    from dbt.adapters.hudi.options import parse_model_config

    config: dict[str, Any] = {"unique_key": "id", "partition_by": "dt", "precombine_key": "ts"}
    if kind.endswith("-simple"):
        config["index_type"] = "SIMPLE"
    if kind.endswith("-bucket"):
        config["index_type"] = "BUCKET"
    if kind.endswith("-bloom"):
        config["index_type"] = "BLOOM"
    if kind.endswith("-gbloom"):
        config["index_type"] = "GLOBAL_BLOOM"
    if kind.endswith("-gzip"):
        config["hudi_options"] = {hc.PARQUET_COMPRESSION_CODEC.key: "gzip"}
    if kind.endswith("-tasks"):
        config["hudi_options"] = {hc.WRITE_LOCAL_ENABLED.key: "false"}
    if kind.endswith(("-gsimple9", "-rli")):  # dbt's default index, or the record index, on v9
        config["hudi_options"] = {hc.WRITE_TABLE_VERSION.key: "9"}
    if kind.endswith("-rli"):
        config["index_type"] = "RECORD_INDEX"
    materialization = "hudi_mor" if kind.startswith("mor") else "hudi_upsert"
    cfg = parse_model_config("bench", materialization, config)
    return cfg.write_options(
        table_name="bench",
        database=None,
        operation=operation,
        new_table=operation == str(WriteOperation.BULK_INSERT),
    )


# ---- runs -----------------------------------------------------------------------------------


@dataclass
class Contender:
    """One way of doing a shape's work: prepare (untimed), run (timed), verify (untimed)."""

    name: str
    run: Callable[[int], dict[str, Any]]  # rep -> the timed record, verified
    records: list[dict[str, Any]] = field(default_factory=list)

    def median(self, key: str = "seconds") -> float:
        return statistics.median(r[key] for r in self.records)

    @property
    def verified(self) -> bool:
        return bool(self.records) and all(r.get("verified") for r in self.records)


def loadavg() -> float:
    return round(os.getloadavg()[0], 2)


class Bench:
    """The session, the anchors and the prepared tables of one run."""

    def __init__(self, spark: Any, anchors: ModuleType, bench_dir: Path) -> None:
        self.spark = spark
        self.anchors = anchors
        self.bench_dir = bench_dir
        self.keep: dict[str, Path] = {}  # results kept for the scans
        self.hudi = HudiOnSpark(WORK, anchors, DRIVER_MEMORY)

    def timed(
        self, name: str, op: Callable[[], Any], rep: int, meta: dict[str, Any]
    ) -> dict[str, Any]:
        extra = {"rep": rep, "update_rows": meta["updates"]}
        extra["load"] = loadavg()  # at the start, in the JSON line too
        # as anchors.timed, the peak RSS without Hudi's processes (children of this one)
        with self.hudi.ours_sampler() as sampler:
            start = time.perf_counter()
            out = op()
            seconds = time.perf_counter() - start
        if isinstance(out, dict):
            extra.update(out)
        rows = meta["expected_rows_after_upsert"]
        return dict(self.anchors.emit(name, rows, seconds, sampler.peak_mb, **extra))

    # ---- hudi -------------------------------------------------------------------------------

    def hudi_base(self, data: Path, kind: str, shape_dir: Path) -> Path:
        """The base rows bulk-inserted once (untimed) with the contender's options."""
        from engine import write_hudi

        # the codec and index variants upsert the default base (bulk_insert looks nothing up)
        whole = kind.endswith(("-bucket", "-gsimple9", "-rli"))  # their own tables
        table_kind = kind if whole else kind.split("-")[0]
        path = shape_dir / "prepared" / f"hudi-{table_kind}"
        if not (path / ".hoodie" / "hoodie.properties").exists():
            shutil.rmtree(path, ignore_errors=True)
            df = self.spark.read.parquet(str(data / "base.parquet"))
            write_hudi(df, str(path), model_options(table_kind, "bulk_insert"))
        return path

    def hudi_upsert(self, kind: str, shape: str, data: Path, meta: dict[str, Any]) -> Contender:
        base = self.hudi_base(data, kind, shape_work(shape, data))

        def run(rep: int) -> dict[str, Any]:
            table = WORK / "out" / f"{shape}-{kind}-{rep}"
            self.anchors.copytree(str(base), str(table))

            def op() -> dict[str, Any]:
                df = self.spark.read.parquet(str(data / "updates.parquet"))
                result, phases = write_with_phases(df, table, model_options(kind, "upsert"))
                phases.pop(WRITE_SECONDS)
                logs = sum(1 for s in result.write_stats if s.is_delta)
                return {"files_written": len(result.write_stats), "log_files": logs, **phases}

            rec = self.timed(f"hudi-{kind}-upsert-{shape}", op, rep, meta)
            rec.update(verify_hudi(table, meta))
            self.retire(f"{shape}-{kind}", table)
            return rec

        return Contender(kind, run)

    def hudi_spark_upsert(
        self, release: str, kind: str, shape: str, data: Path, meta: dict[str, Any]
    ) -> Contender:
        """Apache Hudi's own upsert of the batch (bench/hudi_spark.py), on a fresh copy of the
        table Hudi bulk-inserted; verified through hudi-rs as ours are."""
        name = f"{RELEASE_LABELS[release]}-{kind}"
        base = self.hudi.base(release, kind, data, shape_work(shape, data), model_options)
        options = hudi_options(release, model_options(ours_of(kind), "upsert"), kind)
        batch = str(data / "updates.parquet")

        def run(rep: int) -> dict[str, Any]:
            table = WORK / "out" / f"{shape}-{name}-{rep}"
            self.anchors.copytree(str(base), str(table))
            request = {"op": "bench_write", "path": str(table), "parquet": batch}
            request["options"] = options
            extra = {"rows": meta["expected_rows_after_upsert"], "rep": rep}
            extra["update_rows"] = meta["updates"]
            rec = self.hudi.timed(release, f"{name}-upsert-{shape}", request, extra)
            rec.update(verify_hudi(table, meta))
            self.retire(f"{shape}-{name}", table)
            return rec

        return Contender(name, run)

    def retire(self, key: str, table: Path) -> None:
        """Keep the latest result of a contender (the scans read them); drop the one before."""
        previous = self.keep.get(key)
        if previous is not None and previous != table:
            shutil.rmtree(previous, ignore_errors=True)
        self.keep[key] = table

    def drop_kept(self, shape: str) -> None:
        """Drop the results kept of ``shape`` once it is measured: only the uniform shape's are
        read again (by the scans), and a run of every shape would otherwise keep a copy of
        each contender's table of each shape (about 11 GB at the default rows)."""
        for key in [k for k in self.keep if k.startswith(f"{shape}-")]:
            shutil.rmtree(self.keep.pop(key), ignore_errors=True)

    # ---- anchors ----------------------------------------------------------------------------

    def spark_io(self, shape: str, data: Path, meta: dict[str, Any]) -> Contender:
        """anchors.py's spark-insert-overwrite-partitions, one repetition at a time."""
        from pyspark.sql import functions as F

        spark, anchors = self.spark, self.anchors
        anchor_args = argparse.Namespace(work=str(shape_work(shape, data)), data=str(data))
        base = anchors.spark_prepared_base(spark, anchor_args)
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")

        def run(rep: int) -> dict[str, Any]:
            tbl = str(WORK / "out" / f"{shape}-spark-{rep}")
            anchors.copytree(base, tbl)
            name = f"bench_{shape}_{rep}".replace("-", "m")
            spark.sql(f"DROP TABLE IF EXISTS {name}")
            spark.sql(f"CREATE TABLE {name} USING parquet LOCATION '{tbl}'")
            spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")

            def op() -> dict[str, Any]:
                u = spark.read.parquet(str(data / "updates.parquet"))
                touched = [row["dt"] for row in u.select("dt").distinct().collect()]
                old = spark.table(name).where(F.col("dt").isin(touched))
                new_rows = anchors.dedupe_latest(old.unionByName(u))
                cols = spark.table(name).columns
                new_rows.select(*cols).write.insertInto(name, overwrite=True)
                return {"touched_partitions": len(touched)}

            rec = self.timed(f"spark-io-{shape}", op, rep, meta)
            spark.catalog.refreshTable(name)
            rec.update(anchors.spark_verify(spark, tbl, meta))
            spark.sql(f"DROP TABLE IF EXISTS {name}")
            self.retire(f"{shape}-spark-io", Path(tbl))
            return rec

        return Contender("spark-io", run)

    def delta_merge(self, shape: str, data: Path, meta: dict[str, Any]) -> Contender:
        """anchors.py deltalake-merge, one repetition per call, in its own process."""

        def run(rep: int) -> dict[str, Any]:
            cmd = [sys.executable, str(self.bench_dir / "anchors.py"), "deltalake-merge"]
            cmd += ["--data", str(data), "--work", str(shape_work(shape, data)), "--reps", "1"]
            load = loadavg()
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
            timed = next(x for x in lines if x["name"] == "deltalake-merge")
            check = next(x for x in lines if x["name"] == "deltalake-merge-check")
            rec = {**timed, "name": f"delta-merge-{shape}", "rep": rep, "load": load}
            rec["verified"] = bool(check["verified"])
            print(json.dumps(rec), flush=True)
            return rec

        return Contender("delta-merge", run)


def verify_hudi(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Row count, distinct keys and the batch's rows, read back through hudi-rs."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(path)).build()
    t = pa.Table.from_batches(table.read(HudiReadOptions().with_projection(["id", "ts"])))
    n = t.num_rows
    fresh = pc.sum(pc.greater_equal(t["ts"], meta["min_update_ts"]).cast("int64")).as_py()
    distinct = pc.count_distinct(t["id"]).as_py()
    ok = n == meta["expected_rows_after_upsert"] and fresh == meta["expected_rows_with_new_ts"]
    result = {"verified": bool(ok and distinct == n), "out_rows": n}
    print(json.dumps({"check": str(path.name), **result}), flush=True)
    return result


PHASE_PREFIX = "phase: "
WRITE_SECONDS = "write seconds"  # table.write alone (no imports, no table handle)


def write_with_phases(df: Any, path: Path, options: dict[str, str]) -> tuple[Any, dict[str, float]]:
    """``write_hudi`` with its seconds split the way ``dbt/adapters/hudi/timing.py`` splits a
    dbt model's write: the driver's planning before the first Spark job, each job (the index
    lookup, the write), the commit after the last; returned as ``phase: <name>`` fields."""
    from dbt.adapters.hudi import timing
    from engine import spark_table

    log = WORK / "phases.jsonl"
    log.unlink(missing_ok=True)
    os.environ[timing.ENV] = str(log)
    try:
        table = spark_table(str(path), df.sparkSession, options)
        table.runner = timing.timed_runner(table.runner)
        start = time.time()
        result = table.write(df, options)
        end = time.time()
    finally:
        del os.environ[timing.ENV]
    parts: dict[str, float] = {}
    for name, begin, finish in timing.write_parts(timing.read_log(log), start, end):
        key = PHASE_PREFIX + name.removeprefix("engine: ")
        parts[key] = round(parts.get(key, 0.0) + finish - begin, 3)
    parts[PHASE_PREFIX + "driver between jobs"] = round(end - start - sum(parts.values()), 3)
    parts[WRITE_SECONDS] = round(end - start, 3)
    return result, parts


def rounds(contenders: list[Contender]) -> None:
    """One warm-up round, then REPS rounds A B C ... (records kept for the timed rounds)."""
    for c in contenders:
        c.run(-1)
    for rep in range(REPS):
        for c in contenders:
            c.records.append(c.run(rep))


# ---- sections -------------------------------------------------------------------------------


def upsert_section(bench: Bench, datasets: dict[str, tuple[Path, dict[str, Any]]]) -> list[str]:
    lines = [
        "## Upserts (median seconds, peak RSS MB, load average at the run's start)",
        "",
        "| shape | contender | s | peak RSS MB | load | / spark-io | / delta-merge |",
        "|---|---|---|---|---|---|---|",
    ]
    targets: list[str] = []
    measured: dict[str, dict[str, Contender]] = {}
    for shape, (data, meta) in datasets.items():
        kinds = shape_kinds(shape)
        contenders = [bench.hudi_upsert(k, shape, data, meta) for k in kinds]
        if shape not in ANCHORLESS_SHAPES:
            contenders += [bench.spark_io(shape, data, meta), bench.delta_merge(shape, data, meta)]
        hudi = hudi_contenders(bench, shape, data, meta)
        contenders += hudi
        rounds(contenders)
        by_name = measured[shape] = {c.name: c for c in contenders}
        record_shape(shape, contenders)
        if shape != "uniform":
            bench.drop_kept(shape)
        lines += [contender_line(shape, c, by_name) for c in contenders]
        timed = kinds if shape in RLI_SHAPES else ["cow", "mor"]  # the rli shapes have no cow/mor
        lines += phase_lines(shape, [by_name[k] for k in timed] + hudi)
        for (num, den), bound in TARGETS[shape].items():
            targets.append(target_line(shape, by_name[num], by_name[den], bound))
        targets += hudi_targets(shape, by_name, hudi)
        if shape == "large":
            hudi_rss = max(
                by_name["cow"].median("peak_rss_mb"), by_name["mor"].median("peak_rss_mb")
            )
            spark_rss = by_name["spark-io"].median("peak_rss_mb")
            state = "met" if hudi_rss <= spark_rss else "NOT met"
            targets.append(
                f"| large | peak RSS hudi / spark-io | {hudi_rss / spark_rss:.2f}x | "
                f"{hudi_rss:.0f} / {spark_rss:.0f} MB | <= 1.0x | {state} |"
            )
    return [*lines, "", *TARGET_HEADER, *targets, *growth_lines(measured)]


def shape_kinds(shape: str) -> list[str]:
    """The hudi contenders of a shape (see the module notes)."""
    if shape in ANCHORLESS_SHAPES:
        return list(RLI_XL_VARIANTS)
    if shape in RLI_SHAPES:
        return list(RLI_VARIANTS)
    kinds = ["cow", "mor"]
    if shape in VARIANT_SHAPES:
        kinds += VARIANTS
    if shape in RECENT_SHAPES:
        kinds += RECENT_VARIANTS
    return kinds


def contender_line(shape: str, c: Contender, by_name: dict[str, Contender]) -> str:
    """A contender's median, peak RSS and load, and its ratio to each anchor the shape has."""
    s = c.median()
    ratios = [
        f"{s / by_name[anchor].median():.2f}x" if anchor in by_name else "-"
        for anchor in ("spark-io", "delta-merge")
    ]
    return (
        f"| {shape} | {c.name}{'' if c.verified else ' (NOT VERIFIED)'} | {s:.2f} | "
        f"{c.median('peak_rss_mb'):.0f} | {c.median('load'):.1f} | {' | '.join(ratios)} |"
    )


def growth_lines(measured: dict[str, dict[str, Contender]]) -> list[str]:
    """A contender's time on a larger table against its time on a smaller one, with the same
    batch (:data:`GROWTH_TARGETS`): how its cost grows with the table, both times beside."""
    lines = []
    for (large, small), bounds in GROWTH_TARGETS.items():
        if large not in measured or small not in measured:
            continue
        for name, bound in bounds.items():
            ours, base = measured[large][name], measured[small][name]
            line = target_line(f"{large} / {small}", ours, base, bound)
            lines.append(line.replace(f"{name} / {name}", f"{name}: {large} / {small}"))
    return lines


def hudi_contenders(bench: Bench, shape: str, data: Path, meta: dict[str, Any]) -> list[Contender]:
    """Apache Hudi on Spark's upserts of ``shape`` (each release, each index), when asked."""
    if shape not in HUDI_SHAPES:
        return []
    return [
        bench.hudi_spark_upsert(release, kind, shape, data, meta)
        for release in RELEASES
        for kind in contender_kinds(shape, release, RLI_SHAPES)
    ]


def hudi_targets(shape: str, by_name: dict[str, Contender], hudi: list[Contender]) -> list[str]:
    """Ours against Hudi on Spark doing the same work (the same index and table type), and on
    the 5M shapes our peak RSS against Hudi's."""
    lines = []
    for anchor in hudi:
        ours = by_name.get(ours_of(anchor.name.split("-", 1)[1]))
        if ours is None:
            continue
        lines.append(target_line(shape, ours, anchor, HUDI_UPSERT_GOAL))
        if shape in FIVE_M_SHAPES:
            lines.append(rss_line(shape, ours, anchor))
    return lines


def rss_line(shape: str, ours: Contender, anchor: Contender) -> str:
    """Our peak RSS (this process and its JVM) against the anchor's (its process and JVM)."""
    mine, theirs = ours.median("peak_rss_mb"), anchor.median("peak_rss_mb")
    state = "met" if mine <= theirs else "NOT met"
    return (
        f"| {shape} | peak RSS {ours.name} / {anchor.name} | {mine / theirs:.2f}x | "
        f"{mine:.0f} / {theirs:.0f} MB | <= 1.0x | {state} |"
    )


def recorded() -> bool:
    """Whether this run's figures go into bench/results.json: only a run at the default table
    size, the one the user guide plots (a ``BENCH_ROWS`` quick run would replace them)."""
    if ROWS != DEFAULT_ROWS:
        print(f"bench/results.json left as it is: BENCH_ROWS={ROWS:,}, not {DEFAULT_ROWS:,}")
    return ROWS == DEFAULT_ROWS


def record_shape(shape: str, contenders: list[Contender]) -> None:
    """The shape's medians into bench/results.json, which the user guide plots."""
    if not recorded():
        return
    rows, batch, _ = SHAPES[shape]
    bench_results.record(
        "upsert",
        shape,
        {
            "rows": rows,
            "batch": batch,
            "reps": REPS,
            "load": round(statistics.median(r["load"] for c in contenders for r in c.records), 1),
            "seconds": {c.name: round(c.median(), 2) for c in contenders},
        },
    )


TARGET_HEADER = [
    "| shape | ratio | measured | ours / anchor: median s (load) | target | |",
    "|---|---|---|---|---|---|",
]


def target_line(shape: str, ours: Contender, anchor: Contender, bound: float) -> str:
    """A ratio against its bound, both absolute times and the load of each beside it."""
    ratio = ours.median() / anchor.median()
    times = (
        f"{ours.median():.2f} s ({ours.median('load'):.1f}) / "
        f"{anchor.median():.2f} s ({anchor.median('load'):.1f})"
    )
    name = f"{ours.name} / {anchor.name}"
    if math.isinf(bound):  # no goal: the ratio for the record
        return f"| {shape} | {name} | {ratio:.2f}x | {times} | - | |"
    state = "met" if ratio <= bound else "NOT met"
    return f"| {shape} | {name} | {ratio:.2f}x | {times} | <= {bound}x | {state} |"


def phase_lines(shape: str, contenders: list[Contender]) -> list[str]:
    """Where an upsert's seconds go (medians): planning, each Spark job, commit."""
    lines = []
    for c in contenders:
        names = list(dict.fromkeys(k for r in c.records for k in r if k.startswith(PHASE_PREFIX)))
        medians = {n: statistics.median(r.get(n, 0.0) for r in c.records) for n in names}
        parts = ", ".join(f"{n.removeprefix(PHASE_PREFIX)} {v:.2f}" for n, v in medians.items())
        lines.append(f"| {shape} | {c.name}: where the seconds go | {parts} | | | | |")
    return lines


def bulk_section(bench: Bench, data: Path, meta: dict[str, Any]) -> list[str]:
    """bulk_insert with the engine's defaults against Spark's plain partitioned Parquet write."""
    from engine import write_hudi

    spark = bench.spark
    rows_meta = {**meta, "expected_rows_after_upsert": meta["rows"], "updates": 0}
    rows_meta["min_update_ts"], rows_meta["expected_rows_with_new_ts"] = 0, meta["rows"]

    def hudi(rep: int) -> dict[str, Any]:
        table = WORK / "out" / f"bulk-hudi-{rep}"
        shutil.rmtree(table, ignore_errors=True)

        def op() -> None:
            df = spark.read.parquet(str(data / "base.parquet"))
            write_hudi(df, str(table), model_options("cow", "bulk_insert"))

        rec = bench.timed("hudi-bulk-insert", op, rep, rows_meta)
        rec.update(verify_hudi(table, rows_meta))
        shutil.rmtree(table, ignore_errors=True)
        return rec

    def plain(rep: int) -> dict[str, Any]:
        out = WORK / "out" / f"bulk-spark-{rep}"
        shutil.rmtree(out, ignore_errors=True)

        def op() -> None:
            df = spark.read.parquet(str(data / "base.parquet"))
            df.write.mode("overwrite").partitionBy("dt").parquet(str(out))

        rec = bench.timed("spark-parquet-write", op, rep, rows_meta)
        rec.update(bench.anchors.spark_verify(spark, str(out), rows_meta))
        shutil.rmtree(out, ignore_errors=True)
        return rec

    contenders = [Contender("hudi-bulk-insert", hudi), Contender("spark-parquet-write", plain)]
    contenders += [hudi_spark_bulk(bench, release, data, rows_meta) for release in RELEASES]
    rounds(contenders)
    h, s = contenders[0], contenders[1]
    goals = [target_line("uniform", h, c, HUDI_BULK_GOAL) for c in contenders[2:]]
    return [
        "## bulk_insert (median seconds)",
        "",
        "| contender | s | peak RSS MB | load |",
        "|---|---|---|---|",
        *(
            f"| {c.name}{'' if c.verified else ' (NOT VERIFIED)'} | {c.median():.2f} | "
            f"{c.median('peak_rss_mb'):.0f} | {c.median('load'):.1f} |"
            for c in contenders
        ),
        "",
        *TARGET_HEADER,
        target_line("uniform", h, s, 1.0),
        *goals,
    ]


def hudi_spark_bulk(bench: Bench, release: str, data: Path, meta: dict[str, Any]) -> Contender:
    """Apache Hudi's bulk_insert of the base rows into a new table (the model's options,
    Hudi's defaults otherwise: its row writer, its sort mode), verified through hudi-rs."""
    name = f"{RELEASE_LABELS[release]}-bulk-insert"
    options = hudi_options(release, model_options("cow", "bulk_insert"), "cow")

    def run(rep: int) -> dict[str, Any]:
        table = WORK / "out" / f"bulk-{name}-{rep}"
        shutil.rmtree(table, ignore_errors=True)
        request = {"op": "bench_write", "path": str(table), "options": options}
        request["parquet"] = str(data / "base.parquet")
        extra = {"rows": meta["rows"], "rep": rep}
        rec = bench.hudi.timed(release, name, request, extra)
        rec.update(verify_hudi(table, meta))
        shutil.rmtree(table, ignore_errors=True)
        return rec

    return Contender(name, run)


def scan_section(bench: Bench, meta: dict[str, Any]) -> list[str]:
    """Snapshot scans of the uniform shape's results, every column into the noop sink."""
    from engine import read_hudi

    spark = bench.spark
    scan_meta = {**meta}

    def scan(name: str, frame: Callable[[], Any]) -> Contender:
        def run(rep: int) -> dict[str, Any]:
            def op() -> None:
                frame().write.format("noop").mode("overwrite").save()

            rec = bench.timed(name, op, rep, scan_meta)
            rec["verified"] = frame().count() == meta["expected_rows_after_upsert"]
            return rec

        return Contender(name, run)

    cow, mor = bench.keep["uniform-cow"], bench.keep["uniform-mor"]
    parquet = bench.keep["uniform-spark-io"]
    contenders = [
        scan("spark-parquet-scan", lambda: spark.read.parquet(str(parquet))),
        scan("cow-snapshot", lambda: read_hudi(spark, str(cow))),
        scan("mor-snapshot", lambda: read_hudi(spark, str(mor))),
    ]
    contenders += hudi_spark_scans(bench, meta)
    rounds(contenders)
    sp, c, m = contenders[:3]
    return [
        "## Snapshot scans of the uniform results (median seconds)",
        "",
        "| contender | s | peak RSS MB | load |",
        "|---|---|---|---|",
        *(
            f"| {x.name}{'' if x.verified else ' (NOT VERIFIED)'} | {x.median():.2f} | "
            f"{x.median('peak_rss_mb'):.0f} | {x.median('load'):.1f} |"
            for x in contenders
        ),
        "",
        *TARGET_HEADER,
        target_line("uniform", c, sp, 1.2),
        target_line("uniform", m, c, 3.0),
        *(target_line("uniform", c if "cow" in x.name else m, x, math.inf) for x in contenders[3:]),
    ]


# ---- clustering -------------------------------------------------------------------------------

# the table: 5R rows (5M at the default BENCH_ROWS) written in CLUSTER_BATCHES bulk_inserts,
# clustered into about CLUSTER_FILES files
CLUSTER_ROWS = 5 * ROWS
CLUSTER_BATCHES = int(os.environ.get("BENCH_CLUSTER_BATCHES", "100"))
CLUSTER_FILES = int(os.environ.get("BENCH_CLUSTER_FILES", "64"))
CLUSTER_COLUMNS = ("c_int1", "c_int2")
# about 1 % of each column's uniform range (gen_data.py: c_int1 in [0, 1e6), c_int2 in
# [-2^40, 2^40))
CLUSTER_FILTERS = {
    "c_int1": ("<", 10_000),
    "c_int2": ("<", -(2**40) + 2**41 // 100),
}
# what a user sets for column stats: the engine's default table version (6) keeps no
# column_stats partition (Hudi reads them on 8 and 9), and Hudi's writer default is off
COLUMN_STATS_KEYS = {
    hc.WRITE_TABLE_VERSION.key: "9",
    hc.METADATA_ENABLE.key: "true",
    hc.COLUMN_STATS_ENABLE.key: "true",
}
CLUSTER_LAYOUTS = ("before", "z-order", "linear")


def cluster_model_options(operation: str, new_table: bool) -> dict[str, str]:
    """A dbt ``hudi_upsert`` model with ``unique_key='id'``, ``precombine_key='ts'``, no
    partitioning, and the column stats keys (adapter's own code, as :func:`model_options`)."""
    from dbt.adapters.hudi.options import parse_model_config

    config = {"unique_key": "id", "precombine_key": "ts", "hudi_options": COLUMN_STATS_KEYS}
    cfg = parse_model_config("bench_clustered", "hudi_upsert", config)
    return cfg.write_options(
        table_name="bench_clustered", database=None, operation=operation, new_table=new_table
    )


def small_batches(data: Path, out: Path, batches: int) -> list[Path]:
    """``base.parquet`` cut into ``batches`` Parquet files in row order (untimed)."""
    import pyarrow.parquet as pq

    files = [out / f"batch-{k:04d}.parquet" for k in range(batches)]
    if all(f.exists() for f in files):
        return files
    out.mkdir(parents=True, exist_ok=True)
    base = pq.read_table(data / "base.parquet")
    size = -(-base.num_rows // batches)
    for k, f in enumerate(files):
        pq.write_table(base.slice(k * size, size), f, compression="snappy")
    return files


def filtered_oracle(data: Path) -> dict[str, tuple[int, int, int, int]]:
    """Per filtered column, the filtered rows' count and sums of ts, c_int1, c_int2 (pyarrow
    over the generated data: what every read must return)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    base = pq.read_table(data / "base.parquet", columns=["ts", *CLUSTER_COLUMNS])
    out = {}
    for column, (_, bound) in CLUSTER_FILTERS.items():
        rows = base.filter(pc.less(base[column], bound))
        sums = [pc.sum(rows[c]).as_py() or 0 for c in ("ts", *CLUSTER_COLUMNS)]
        out[column] = (rows.num_rows, *sums)
    return out


def clustering_data(bench_dir: Path) -> Path:
    """The clustering table's rows: the ``large`` shape's base data (5R rows), shared."""
    rows, updates, hot = SHAPES["large"]
    out = WORK / "data" / f"{rows}-{updates}-hot{hot}"
    generate(bench_dir, out, rows, updates, hot)
    return out


class ClusteringBench:
    """The clustering section's tables: the batches' table once (untimed), its clusterings."""

    def __init__(self, bench: Bench, data: Path) -> None:
        self.bench, self.data = bench, data
        self.work = WORK / f"clustering-{data.name}-{CLUSTER_BATCHES}"
        self.prepared = self.work / "prepared"
        self.tables: dict[str, Path] = {"before": self.prepared}
        self.target_bytes = 0

    def prepare(self) -> None:
        """The table written by CLUSTER_BATCHES bulk_inserts (new small files each, as a
        stream of small appends leaves them: upserts would pack inserts into small files)."""
        from engine import write_hudi

        spark = self.bench.spark
        if not (self.prepared / ".hoodie" / "hoodie.properties").exists():
            shutil.rmtree(self.prepared, ignore_errors=True)
            for k, batch in enumerate(
                small_batches(self.data, self.work / "batches", CLUSTER_BATCHES)
            ):
                df = spark.read.parquet(str(batch))
                write_hudi(df, str(self.prepared), cluster_model_options("bulk_insert", k == 0))
        data_bytes = sum(p.stat().st_size for p in self.prepared.glob("*.parquet") if p.is_file())
        self.target_bytes = data_bytes // CLUSTER_FILES + 1

    def cluster_options(self) -> dict[str, str]:
        return {hc.CLUSTERING_TARGET_FILE_MAX_BYTES.key: str(self.target_bytes)}

    def clustering(self, strategy: str) -> Contender:
        """Clustering the prepared table (a fresh copy each round) along ``strategy``."""
        from engine import spark_table

        def run(rep: int) -> dict[str, Any]:
            table = WORK / "out" / f"clustered-{strategy}-{rep}"
            self.bench.anchors.copytree(str(self.prepared), str(table))
            handle = spark_table(str(table), self.bench.spark)

            def op() -> dict[str, Any]:
                done = handle.cluster(
                    self.cluster_options(), sort_columns=CLUSTER_COLUMNS, strategy=strategy
                )
                return {"instants": done}

            rec = dict(
                self.bench.anchors.timed(
                    f"cluster-{strategy}", CLUSTER_ROWS, op, rep=rep, load=loadavg()
                )
            )
            rows = handle.plan_read().files_read
            rec["files_after"] = rows
            rec["verified"] = bool(rec["instants"]) and verify_rows(table, CLUSTER_ROWS)
            previous = self.tables.get(strategy)
            if previous is not None and previous != self.prepared:
                shutil.rmtree(previous, ignore_errors=True)
            self.tables[strategy] = table
            return rec

        return Contender(f"cluster {strategy}", run)

    def anchor(self) -> Contender:
        """Spark's own layout optimisation of the same rows: repartitionByRange on the two
        columns into as many files, sortWithinPartitions, a Parquet write."""
        spark = self.bench.spark

        def run(rep: int) -> dict[str, Any]:
            out = WORK / "out" / f"range-sort-{rep}"
            shutil.rmtree(out, ignore_errors=True)

            def op() -> None:
                df = spark.read.parquet(
                    *(
                        str(b)
                        for b in small_batches(self.data, self.work / "batches", CLUSTER_BATCHES)
                    )
                )
                df = df.repartitionByRange(CLUSTER_FILES, *CLUSTER_COLUMNS)
                df.sortWithinPartitions(*CLUSTER_COLUMNS).write.mode("overwrite").parquet(str(out))

            rec = dict(
                self.bench.anchors.timed(
                    "spark-range-sort-write", CLUSTER_ROWS, op, rep=rep, load=loadavg()
                )
            )
            rec["verified"] = spark.read.parquet(str(out)).count() == CLUSTER_ROWS
            shutil.rmtree(out, ignore_errors=True)
            return rec

        return Contender("spark range+sort write", run)

    def query(self, layout: str, column: str, expected: tuple[int, int, int, int]) -> Contender:
        """The selective filter on ``column`` read through ``read_hudi`` (filters known at
        planning: data skipping by column stats), aggregated to its checksum."""
        from pyspark.sql import functions as F

        from engine import read_hudi, spark_table
        from engine.read.filter import ReadFilter

        op_name, bound = CLUSTER_FILTERS[column]
        filters = [ReadFilter(column, op_name, bound)]
        spark = self.bench.spark

        def run(rep: int) -> dict[str, Any]:
            path = str(self.tables[layout])
            found: list[tuple[int, int, int, int]] = []

            def op() -> None:
                frame = read_hudi(spark, path, {}, filters)
                sums = [F.sum(c) for c in ("ts", *CLUSTER_COLUMNS)]
                row = frame.agg(F.count(F.lit(1)), *sums).collect()[0]
                found.append(tuple(int(v or 0) for v in row))  # type: ignore[arg-type]

            rec = dict(
                self.bench.anchors.timed(
                    f"query-{layout}-{column}", expected[0], op, rep=rep, load=loadavg()
                )
            )
            plan = spark_table(path, spark).plan_read({}, filters)
            rec.update(files_read=plan.files_read, files=plan.files_read + plan.skipped_slices)
            rec["verified"] = found == [expected]
            return rec

        return Contender(f"{layout} {column}", run)


def verify_rows(path: Path, rows: int) -> bool:
    """Every row still there once, read back through hudi-rs (row count, distinct keys)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(path)).build()
    t = pa.Table.from_batches(table.read(HudiReadOptions().with_projection(["id"])))
    return bool(t.num_rows == rows and pc.count_distinct(t["id"]).as_py() == rows)


def clustering_section(bench: Bench, data: Path) -> list[str]:
    """Clustering's promise, measured: a table of many small files (CLUSTER_BATCHES
    bulk_inserts of a 5R-row table, no partitioning), a selective filter (~1 % of the rows) on
    each of two columns before clustering, after z-order and after linear clustering on both,
    read through ``read_hudi`` with the filter known at planning (files skipped by the metadata
    table's column stats, counted by ``HudiTable.plan_read``); every read's row count and sums
    checked against pyarrow over the generated data.

    Column stats are not on by default: the engine's default table version (6) keeps no
    column_stats partition and Hudi's writer default is off, so the table sets the keys a user
    sets (COLUMN_STATS_KEYS, printed). Clustering writes about CLUSTER_FILES files
    (``hoodie.clustering.plan.strategy.target.file.max.bytes`` = data bytes / CLUSTER_FILES,
    printed). Its cost is set against Spark's repartitionByRange + sortWithinPartitions +
    Parquet write of the same rows into as many files."""
    cb = ClusteringBench(bench, data)
    cb.prepare()
    costs = [cb.clustering("z-order"), cb.clustering("linear"), cb.anchor()]
    rounds(costs)
    oracle = filtered_oracle(data)
    queries = {
        (layout, column): cb.query(layout, column, oracle[column])
        for layout in CLUSTER_LAYOUTS
        for column in CLUSTER_COLUMNS
    }
    rounds(list(queries.values()))
    record_clustering(costs, queries, cb.target_bytes)
    keys = ", ".join(f"{k}={v}" for k, v in COLUMN_STATS_KEYS.items())
    lines = [
        f"## Clustering: {CLUSTER_ROWS:,} rows in {CLUSTER_BATCHES} bulk_inserts, "
        f"filters of ~1 % on {' and '.join(CLUSTER_COLUMNS)} (median s)",
        "",
        f"column stats: {keys}; clustering: {hc.CLUSTERING_TARGET_FILE_MAX_BYTES.key}="
        f"{cb.target_bytes} (about {CLUSTER_FILES} files)",
        "",
        "| layout | filter | rows | files read / files | s | load |",
        "|---|---|---|---|---|---|",
    ]
    for (layout, column), c in queries.items():
        op_name, bound = CLUSTER_FILTERS[column]
        lines.append(
            f"| {layout}{'' if c.verified else ' (NOT VERIFIED)'} | {column} {op_name} {bound} "
            f"| {oracle[column][0]:,} | {c.median('files_read'):.0f} / {c.median('files'):.0f} "
            f"| {c.median():.3f} | {c.median('load'):.1f} |"
        )
    lines += ["", "| contender | s | files | peak RSS MB | load |", "|---|---|---|---|---|"]
    for c in costs:
        files = f"{c.median('files_after'):.0f}" if "files_after" in c.records[0] else ""
        lines.append(
            f"| {c.name}{'' if c.verified else ' (NOT VERIFIED)'} | {c.median():.2f} | {files} "
            f"| {c.median('peak_rss_mb'):.0f} | {c.median('load'):.1f} |"
        )
    header = ["| column | ratio | measured | ours / other: median s (load) | target | |"]
    return [*lines, "", *header, TARGET_HEADER[1], *clustering_targets(costs, queries)]


def clustering_targets(
    costs: list[Contender], queries: dict[tuple[str, str], Contender]
) -> list[str]:
    """The issue's goal per column (z-order against before: files read <= 10 %, time >= 3x
    faster), and clustering's cost against the anchor (no bound: the ratio is the figure)."""
    out = []
    for column in CLUSTER_COLUMNS:
        before, after = queries[("before", column)], queries[("z-order", column)]
        files = after.median("files_read") / max(before.median("files_read"), 1)
        state = "met" if files <= 0.10 else "NOT met"
        out.append(
            f"| {column} | files read z-order / before | {files:.2f}x | "
            f"{after.median('files_read'):.0f} / {before.median('files_read'):.0f} files | "
            f"<= 0.1x | {state} |"
        )
        speed = before.median() / after.median()
        state = "met" if speed >= 3.0 else "NOT met"
        out.append(
            f"| {column} | speed-up before / z-order | {speed:.2f}x | "
            f"{before.median():.3f} s ({before.median('load'):.1f}) / "
            f"{after.median():.3f} s ({after.median('load'):.1f}) | >= 3x | {state} |"
        )
    anchor = costs[-1]
    for c in costs[:-1]:
        out.append(
            f"| all | {c.name} / {anchor.name} | {c.median() / anchor.median():.2f}x | "
            f"{c.median():.2f} s ({c.median('load'):.1f}) / "
            f"{anchor.median():.2f} s ({anchor.median('load'):.1f}) | (cost) | |"
        )
    return out


def record_clustering(
    costs: list[Contender], queries: dict[tuple[str, str], Contender], target_bytes: int
) -> None:
    """The section's medians into bench/results.json."""
    if not recorded():
        return
    every = [*costs, *queries.values()]
    bench_results.record(
        "clustering",
        "two-columns",
        {
            "rows": CLUSTER_ROWS,
            "batches": CLUSTER_BATCHES,
            "target_file_bytes": target_bytes,
            "reps": REPS,
            "load": round(statistics.median(r["load"] for c in every for r in c.records), 1),
            "seconds": {c.name: round(c.median(), 3) for c in every},
            "files_read": {c.name: c.median("files_read") for c in queries.values()},
        },
    )


def hudi_spark_scans(bench: Bench, meta: dict[str, Any]) -> list[Contender]:
    """Apache Hudi's snapshot scans of the tables its uniform upserts left (every column into
    the noop sink, in its process); the count is read apart and checked."""
    found = []
    for release in RELEASES:
        for kind in ("cow", "mor"):
            name = f"{RELEASE_LABELS[release]}-{kind}"
            table = bench.keep.get(f"uniform-{name}")
            if table is not None:
                found.append(hudi_spark_scan(bench, release, f"{name}-snapshot", table, meta))
    return found


def hudi_spark_scan(
    bench: Bench, release: str, name: str, table: Path, meta: dict[str, Any]
) -> Contender:
    def run(rep: int) -> dict[str, Any]:
        request = {"op": "bench_scan", "path": str(table)}
        rec = bench.hudi.timed(release, name, request, {"rows": meta["rows"], "rep": rep})
        rec["verified"] = rec.get("count") == meta["expected_rows_after_upsert"]
        return rec

    return Contender(name, run)


# the upsert before a compaction: no small file group takes the inserts, so that every updated
# file group gets a log file to compact (with the default, the one small file group of each
# partition takes the inserts and the updates with them, into a new base file)
LOGS_FOR_COMPACTION = {hc.MERGE_SMALL_FILE_GROUP_CANDIDATES_LIMIT.key: "0"}


def completed_commits(table: Path) -> int:
    """Completed ``commit`` actions on the table's timeline (a compaction's on merge-on-read;
    under ``timeline/`` from table version 8, the completion time in the name): a compaction
    ran when their count grew."""
    hoodie = table / ".hoodie"
    return len([*hoodie.glob("*.commit"), *hoodie.glob("timeline/*.commit")])


def compaction_section(bench: Bench, data: Path, meta: dict[str, Any]) -> list[str]:
    """Merge-on-read compaction after one upsert of the uniform batch into log files: ours
    against Hudi's ``run_compaction`` (scheduled and run at once), each on a fresh copy of its
    table with the upsert applied (untimed), verified through hudi-rs and by a completed
    compaction on the timeline."""
    from engine import spark_table, write_hudi

    shape_dir = shape_work("uniform", data)
    mor = bench.hudi_base(data, "mor", shape_dir)
    batch = data / "updates.parquet"

    def ours(rep: int) -> dict[str, Any]:
        table = WORK / "out" / f"compact-mor-{rep}"
        bench.anchors.copytree(str(mor), str(table))
        df = bench.spark.read.parquet(str(batch))
        write_hudi(df, str(table), {**model_options("mor", "upsert"), **LOGS_FOR_COMPACTION})
        os.sync()
        before = completed_commits(table)

        def op() -> dict[str, Any]:
            return {"compacted": len(spark_table(str(table), bench.spark).compact())}

        rec = bench.timed("mor-compaction", op, rep, meta)
        rec.update(verify_hudi(table, meta))
        rec["verified"] = rec["verified"] and completed_commits(table) > before
        shutil.rmtree(table, ignore_errors=True)
        return rec

    contenders = [Contender("mor-compaction", ours)]
    contenders += [
        hudi_spark_compaction(bench, release, data, shape_dir, meta) for release in RELEASES
    ]
    rounds(contenders)
    return [
        f"## Merge-on-read compaction after one {meta['updates']:,}-row upsert (median seconds)",
        "",
        *TARGET_HEADER,
        *(target_line("uniform", contenders[0], c, math.inf) for c in contenders[1:]),
        *phase_lines("uniform", contenders),
    ]


def hudi_spark_compaction(
    bench: Bench, release: str, data: Path, shape_dir: Path, meta: dict[str, Any]
) -> Contender:
    name = f"{RELEASE_LABELS[release]}-mor-compaction"
    base = bench.hudi.base(release, "mor", data, shape_dir, model_options)
    options = hudi_options(release, model_options("mor", "upsert"), "mor")
    options.update(LOGS_FOR_COMPACTION)

    def run(rep: int) -> dict[str, Any]:
        table = WORK / "out" / f"compact-{name}-{rep}"
        bench.anchors.copytree(str(base), str(table))
        bench.hudi.write(release, table, data / "updates.parquet", options)
        os.sync()
        before = completed_commits(table)
        due = "hoodie.compact.inline.max.delta.commits=1"
        statement = (
            f"CALL run_compaction(op => 'scheduleandexecute', path => '{table}', "
            f"options => '{due}')"
        )
        request = {"op": "bench_sql", "statement": statement}
        rec = bench.hudi.timed(release, name, request, {"rows": meta["rows"], "rep": rep})
        rec.update(verify_hudi(table, meta))
        rec["verified"] = rec["verified"] and completed_commits(table) > before
        shutil.rmtree(table, ignore_errors=True)
        return rec

    return Contender(name, run)


def summarize(log: Path) -> None:
    """Medians and ratios from the JSON lines of a run (also of one cut short)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for line in log.read_text().splitlines():
        if line.startswith("{") and '"seconds"' in line:
            rec = json.loads(line)
            if rec.get("rep", 0) >= 0 and rec["name"] != "spark-session-start":
                runs.setdefault(rec["name"], []).append(rec)
    print("| run | n | median s | peak RSS MB | load | / spark-io | / delta-merge |")
    print("|---|---|---|---|---|---|---|")
    for name, recs in runs.items():
        shape = name.rsplit("-", 1)[-1]
        med = statistics.median(r["seconds"] for r in recs)
        ratios = []
        for anchor in (f"spark-io-{shape}", f"delta-merge-{shape}"):
            other = runs.get(anchor)
            ratios.append(
                f"{med / statistics.median(r['seconds'] for r in other):.2f}x" if other else "-"
            )
        rss = statistics.median(r["peak_rss_mb"] for r in recs)
        load = statistics.median(r.get("load", 0) for r in recs)
        print(
            f"| {name} | {len(recs)} | {med:.2f} | {rss:.0f} | {load:.1f} | {' | '.join(ratios)} |"
        )


def bench_session(name: str) -> Any:
    """The bench's local session (its own work directory under ``WORK``), started."""
    from engine.spark.session import local_session

    spark = local_session(
        str(WORK / name),
        extra_conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.driver.memory": DRIVER_MEMORY,
            "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
            "spark.local.dir": str(WORK / "spark-local"),
        },
    )
    spark.range(1).collect()
    return spark


COLD_WRITES = 3


def cold_process(base: Path, data: Path, warm_up: bool) -> None:
    """``run.py --cold``: in this fresh process, start a session (timed apart), optionally warm
    it as the dbt adapter does while dbt parses (timed apart), then upsert the
    batch COLD_WRITES times, each into a fresh copy of ``base``: the first write is the cold
    one. Prints one JSON line; every write verified through hudi-rs."""
    from dbt.adapters.hudi import timing  # noqa: F401  (imported before any write is timed)

    meta = json.loads((data / "meta.json").read_text())
    t0 = time.perf_counter()
    spark = bench_session(f"spark-cold-{os.getpid()}")
    session = time.perf_counter() - t0
    warmed = 0.0
    if warm_up:
        from engine import warm_arrow_scan, warm_python_workers, warm_write_path

        t0 = time.perf_counter()
        # what the dbt adapter's warm-up runs while dbt parses (dbt/adapters/hudi/prewarm.py):
        # the driver-side write on a local master, else the Python workers
        if warm_write_path(spark):
            warm_arrow_scan(spark)
        else:
            warm_python_workers(spark)
        warmed = time.perf_counter() - t0
    writes, phases, verified = [], [], True
    for i in range(COLD_WRITES):
        table = WORK / "out" / f"cold-{os.getpid()}-{i}"
        shutil.copytree(base, table)
        os.sync()
        df = spark.read.parquet(str(data / "updates.parquet"))
        parts = write_with_phases(df, table, model_options("mor", "upsert"))[1]
        writes.append(parts.pop(WRITE_SECONDS))
        phases.append(parts)
        verified = verified and bool(verify_hudi(table, meta)["verified"])
        shutil.rmtree(table, ignore_errors=True)
    spark.stop()
    shutil.rmtree(WORK / f"spark-cold-{os.getpid()}", ignore_errors=True)
    line = {
        "session": session,
        "warm_up": warmed,
        "writes": writes,
        "phases": phases,
        "verified": verified,
    }
    print(json.dumps(line), flush=True)


def cold_section(bench: Bench, data: Path, meta: dict[str, Any]) -> list[str]:
    """The first MOR upsert of a new process against the later ones, session start apart:
    without a warm-up and with the one the dbt adapter runs while dbt parses; fresh processes,
    the two kinds interleaved, REPS of each."""
    base = bench.hudi_base(data, "mor", shape_work("uniform", data))
    runs: dict[str, list[dict[str, Any]]] = {"cold": [], "after warm-up": []}
    for _ in range(REPS):
        for kind, flag in (("cold", "0"), ("after warm-up", "1")):
            load = loadavg()
            cmd = [sys.executable, __file__, "--cold", str(base), str(data), flag]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            line = json.loads(next(x for x in out.splitlines() if x.startswith('{"session"')))
            runs[kind].append({**line, "load": load})
    lines = [
        f"## Cold and warm: the first MOR upsert of a new process ({meta['updates']:,}-row batch)",
        "",
        "| process | session start s | warm-up s | first write s | later writes s | first / later "
        "| target | load | verified |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, recs in runs.items():
        first = statistics.median(r["writes"][0] for r in recs)
        later = statistics.median(w for r in recs for w in r["writes"][1:])
        ratio = first / later
        lines.append(
            f"| {kind} | {statistics.median(r['session'] for r in recs):.2f} "
            f"| {statistics.median(r['warm_up'] for r in recs):.2f} | {first:.2f} | {later:.2f} "
            f"| {ratio:.2f}x | <= 1.5x {'met' if ratio <= 1.5 else 'NOT met'} "
            f"| {statistics.median(r['load'] for r in recs):.1f} "
            f"| {'yes' if all(r['verified'] for r in recs) else 'NOT VERIFIED'} |"
        )
    for kind, recs in runs.items():
        for label, index in (("first write", 0), ("second write", 1)):
            names = list(dict.fromkeys(k for r in recs for k in r["phases"][index]))
            parts = ", ".join(
                f"{n.removeprefix(PHASE_PREFIX)} "
                f"{statistics.median(r['phases'][index].get(n, 0.0) for r in recs):.2f}"
                for n in names
            )
            lines.append(f"| {kind}, {label}: where the seconds go | {parts} |||||||")
    return lines


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--summarize":
        summarize(Path(sys.argv[2]))
        return
    if len(sys.argv) == 5 and sys.argv[1] == "--cold":
        cold_process(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] == "1")
        return
    bench_dir = shared_bench_dir()
    anchors = load_anchors(bench_dir)
    WORK.mkdir(parents=True, exist_ok=True)
    # the shapes' data only for the sections that read it (BENCH_ONLY=clustering needs none)
    shaped = ONLY & {"codec", "upsert", "cold", "bulk", "scan"}
    wanted = [s for s in SHAPES_WANTED if s in SHAPES] if shaped else []
    if "scan" in ONLY and "uniform" not in wanted and shaped:
        wanted.insert(0, "uniform")
    datasets = {}
    for shape in wanted:
        rows, updates, hot = SHAPES[shape]
        out = WORK / "data" / f"{rows}-{updates}-hot{hot}"
        datasets[shape] = (out, generate(bench_dir, out, rows, updates, hot))
        if shape in RECENT_SHAPES:
            recent = WORK / "data" / f"{rows}-{updates}-recent"
            datasets[shape] = (recent, time_ordered(out, recent, datasets[shape][1]))

    t0 = time.perf_counter()
    spark = bench_session("spark")
    start = {"name": "spark-session-start", "seconds": round(time.perf_counter() - t0, 3)}
    print(json.dumps({**start, "load": loadavg()}), flush=True)
    bench = Bench(spark, anchors, bench_dir)
    report = [f"# make bench: {ROWS:,}-row table, median of {REPS}, one JVM, A B A B", ""]
    if "codec" in ONLY:
        data = (datasets.get("uniform") or next(iter(datasets.values())))[0]
        codecs = [sys.executable, str(REPO / "bench" / "codecs.py"), str(data)]
        out = subprocess.run(codecs, check=True, capture_output=True, text=True).stdout
        report += ["## Parquet codecs (one partition's base file, engine writer)", ""]
        report += [line for line in out.splitlines() if not line.startswith("{")] + [""]
    if "upsert" in ONLY or "scan" in ONLY:
        upserts = datasets if "upsert" in ONLY else {"uniform": datasets["uniform"]}
        report += [*upsert_section(bench, upserts), ""]
    if "cold" in ONLY:
        data, meta = datasets.get("uniform") or next(iter(datasets.values()))
        report += [*cold_section(bench, data, meta), ""]
    if "bulk" in ONLY:
        data, meta = datasets.get("uniform") or next(iter(datasets.values()))
        report += [*bulk_section(bench, data, meta), ""]
    if "scan" in ONLY:
        report += [*scan_section(bench, datasets["uniform"][1]), ""]
    if "compact" in ONLY:
        data, meta = datasets.get("uniform") or next(iter(datasets.values()))
        report += [*compaction_section(bench, data, meta), ""]
    if "clustering" in ONLY:
        report += [*clustering_section(bench, clustering_data(bench_dir)), ""]
    bench.hudi.close()
    spark.stop()
    text = "\n".join(report)
    print("\n" + text)
    (WORK / "report.md").write_text(text + "\n")
    if "NOT VERIFIED" in text:
        raise SystemExit("some results were not verified (see NOT VERIFIED above)")


if __name__ == "__main__":
    main()
