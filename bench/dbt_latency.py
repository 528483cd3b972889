#!/usr/bin/env python3
"""``make bench-dbt``: the seconds a user waits for ``dbt run`` on a one-model project.

Each contender is a one-model project of 1,000 rows: ``hudi_upsert``, ``hudi_mor`` and dbt-spark's
own ``incremental`` (``file_format='parquet'``, ``insert_overwrite``), same adapter and profile.
Every ``dbt run`` is a fresh process, as users run it: the first run creates the table, the next
runs change 100 rows. Reported per contender: the whole run's wall time and dbt's model time
(``execution_time`` in ``run_results.json``), first run and the median of the next runs, with the
1-minute load average beside each; then the ratios against dbt-spark's incremental model.

    BENCH_DBT_RUNS=3 python bench/dbt_latency.py       # next runs per contender (default 3)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = int(os.environ.get("BENCH_DBT_RUNS", "3"))
ROWS = 1_000
CHANGED = 100
PROJECT = """
name: latency
version: '1.0'
profile: latency
config-version: 2
"""
PROFILE = """
latency:
  target: local
  outputs:
    local:
      type: hudi
      method: session
      host: localhost
      schema: bench
      threads: 1
      hudi_base_path: "{work}/lake"
      server_side_parameters:
        spark.sql.warehouse.dir: "{work}/warehouse"
        spark.hadoop.javax.jdo.option.ConnectionURL: "{metastore}"
"""
# {{ var('round') }} changes CHANGED rows per run; the rest stay as they are
BODY = f"""
select id, concat('name-', id) as name,
       case when id <= {CHANGED} then {{{{ var('round') }}}} else 0 end as amount,
       {{{{ var('round') }}}} as ts
from (select explode(sequence(1, {ROWS})) as id)
"""
MODELS = {
    "hudi_upsert": "{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='ts') }}",
    "hudi_mor": "{{ config(materialized='hudi_mor', unique_key='id', precombine_key='ts') }}",
    "spark_incremental": (
        "{{ config(materialized='incremental', file_format='parquet', "
        "incremental_strategy='insert_overwrite') }}"
    ),
}


def run_once(root: Path, work: Path, model: str, round_: int) -> dict[str, float]:
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
    dbt = Path(sys.executable).with_name("dbt")
    command = [
        str(dbt), "run", "-s", model, "--project-dir", str(root), "--profiles-dir", str(root),
        "--vars", f"{{round: {round_}}}",
    ]  # fmt: skip
    load = os.getloadavg()[0]
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=root)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"dbt run of {model} failed:\n{done.stdout[-3000:]}")
    results = json.loads((root / "target" / "run_results.json").read_text())
    model_time = float(results["results"][0]["execution_time"])
    return {"wall": wall, "model": model_time, "load": load}


def measure(model: str, base: Path) -> dict[str, object]:
    work = base / model
    root = work / "project"
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(PROJECT)
    metastore = f"jdbc:derby:;databaseName={work}/metastore_db;create=true"
    (root / "profiles.yml").write_text(PROFILE.format(work=work, metastore=metastore))
    (root / "models" / f"{model}.sql").write_text(MODELS[model] + BODY)
    first = run_once(root, work, model, 1)
    nexts = [run_once(root, work, model, r) for r in range(2, RUNS + 2)]
    return {
        "model": model,
        "first_wall": first["wall"],
        "first_model": first["model"],
        "next_wall": statistics.median(n["wall"] for n in nexts),
        "next_model": statistics.median(n["model"] for n in nexts),
        "load": statistics.median([first["load"], *(n["load"] for n in nexts)]),
    }


def main() -> int:
    base = Path(tempfile.mkdtemp(prefix="dbt-hudi-bench-dbt-"))
    try:
        rows = [measure(model, base) for model in MODELS]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    anchor = rows[-1]
    print(f"one-model project, {ROWS} rows, {CHANGED} changed per next run; fresh dbt processes")
    print(
        "| model | first run wall / model | next runs wall / model (median of "
        f"{RUNS}) | model time vs dbt-spark (first, next) | wall vs dbt-spark (next) | load |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['first_wall']:.1f} s / {r['first_model']:.1f} s "
            f"| {r['next_wall']:.1f} s / {r['next_model']:.1f} s "
            f"| {r['first_model'] / anchor['first_model']:.2f}x, "  # type: ignore[operator]
            f"{r['next_model'] / anchor['next_model']:.2f}x "  # type: ignore[operator]
            f"| {r['next_wall'] / anchor['next_wall']:.2f}x | {r['load']:.2f} |"  # type: ignore[operator]
        )
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
