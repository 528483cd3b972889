#!/usr/bin/env python3
"""``make bench-dbt``: the seconds a user waits for ``dbt run`` on a one-model project.

Each contender is a one-model project of 1,000 rows: ``hudi_upsert`` and ``hudi_mor`` on this
adapter, and plain dbt-spark (``type: spark``, ``method: session``, the same Spark settings)
with its own ``incremental`` model (``file_format='parquet'``, ``insert_overwrite``), the
anchor; and dbt-spark with Apache Hudi's Spark bundle (0.15.0, the release the managed Spark
platforms ship, in its own venv from ``make hudi-jvm``): the same model as an ``incremental``
model with ``file_format='hudi'``, ``incremental_strategy='merge'`` and ``unique_key='id'``
(copy-on-write, ordering ``ts``), the bundle given its documented settings (Kryo with Hudi's
registrar, its SQL extension and catalog, shuffle partitions = the cores) and Hudi's defaults
otherwise; its goals: ``hudi_upsert``'s model time <= 0.4x its, the whole run's wall time <=
0.7x (``BENCH_DBT_BUNDLE=0`` leaves it out). Every ``dbt run`` is a fresh process, as users run
it: a first run creates the table (``BENCH_DBT_FIRST`` of them, each in a new project), the next
runs change 100 rows; the contenders' runs are interleaved (first runs, then rounds of next
runs), so a change in the machine's load falls on all of them. Before them the driver JVM's
class-data archive is written if the machine has none (``engine/spark/class_archive.py``: once
per machine and Spark install, timed apart). Reported per contender: the whole run's wall time
and dbt's model time (``execution_time`` in ``run_results.json``), medians of the first runs and
of the next runs, the 1-minute load average beside each, the ratios against dbt-spark and the
goals (model time <= 1.2x, wall <= 0.9x); then where the seconds go, phase by phase (medians),
joined from dbt's own debug log (its JSON file log: parse, each statement) and the adapter's
timing log (``DBT_HUDI_TIMING``, see ``dbt/adapters/hudi/timing.py``: warm-up, the Hudi write's
steps, the engine's jobs).

    BENCH_DBT_RUNS=3 python bench/dbt_latency.py       # next runs per contender (default 3)
    BENCH_DBT_FIRST=3 python bench/dbt_latency.py      # first runs, each a new table (default 3)
    BENCH_DBT_BEFORE=/tmp/old python bench/dbt_latency.py  # also the Hudi models on an older
                                                           # checkout (git archive REV), interleaved
    BENCH_DBT_BEFORE_MODELS=hudi_upsert                    # which models run on it too
    BENCH_DBT_MODELS=hudi_upsert,hudi_upsert_audited       # only these contenders (and the
                                                           # anchor)

``hudi_upsert_audited`` is ``hudi_upsert`` with ``audit_before_publish``: the model's two tests
(``unique`` and ``not_null`` on ``id``, declared for both) run on the staged snapshot before the
commit; the summary compares it with ``hudi_upsert`` (the bound: the tests' own queries
plus 10 %).
    python bench/dbt_latency.py --summarize out.txt       # the tables of a run's output
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import bench_results  # noqa: E402
from dbt.adapters.hudi.timing import read_log, write_parts  # noqa: E402
from engine.spark import class_archive  # noqa: E402

RUNS = int(os.environ.get("BENCH_DBT_RUNS", "3"))
FIRSTS = int(os.environ.get("BENCH_DBT_FIRST", "3"))
MODEL_GOAL = 1.2  # a Hudi model's time against dbt-spark's incremental, first and next runs
WALL_GOAL = 0.9  # the whole dbt run's wall time against the same project on dbt-spark
BEFORE = os.environ.get("BENCH_DBT_BEFORE")
BEFORE_MODELS = os.environ.get("BENCH_DBT_BEFORE_MODELS", "hudi_upsert,hudi_mor").split(",")
ONLY = [m for m in os.environ.get("BENCH_DBT_MODELS", "").split(",") if m]
AUDITED, UNAUDITED = "hudi_upsert_audited", "hudi_upsert"
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
      type: {adapter}
      method: session
      host: localhost
      schema: bench
      threads: 1{extra}
      server_side_parameters:
        spark.sql.warehouse.dir: "{work}/warehouse"
        spark.hadoop.javax.jdo.option.ConnectionURL: "{metastore}"{bundle}
"""
HUDI_BASE_PATH = '\n      hudi_base_path: "{work}/lake"'
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
    AUDITED: (
        "{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='ts', "
        "audit_before_publish=true) }}"
    ),
    "dbt_spark_incremental": (
        "{{ config(materialized='incremental', file_format='parquet', "
        "incremental_strategy='insert_overwrite') }}"
    ),
    "dbt_spark_hudi_merge": (
        "{{ config(materialized='incremental', file_format='hudi', incremental_strategy='merge', "
        "unique_key='id', options={'type': 'cow', 'primaryKey': 'id', 'preCombineField': 'ts'}) }}"
    ),
}
ANCHOR = "dbt_spark_incremental"
# dbt-spark with Apache Hudi's Spark bundle (0.15.0, in its own venv: tests/hudi_jvm/provision.py)
BUNDLE = "dbt_spark_hudi_merge"
BUNDLE_RELEASE = "0.15.0"
WITH_BUNDLE = os.environ.get("BENCH_DBT_BUNDLE", "1") != "0"
BUNDLE_MODEL_GOAL = 0.4  # hudi_upsert's model time against dbt-spark + the bundle's
BUNDLE_WALL_GOAL = 0.7  # and the whole run's wall time
CORES = os.cpu_count() or 1
# the same tests for the audited model and the one it is compared with (dbt run runs neither's)
TESTS_YML = """
version: 2
models:
  - name: {model}
    columns:
      - name: id
        data_tests: [unique, not_null]
"""


def _events(log: Path) -> list[dict[str, Any]]:
    """dbt's own debug log (``--log-format-file json``): name, message, data and wall time."""
    events = []
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        info = entry["info"]
        ts = datetime.fromisoformat(info["ts"].replace("Z", "+00:00")).timestamp()
        events.append({"name": info["name"], "msg": info["msg"], "data": entry["data"], "ts": ts})
    return events


def _statement_label(sql: str) -> str:
    """``sql: show databases``: the statement's first words, comments left out."""
    body = re.sub(r"/\*.*?\*/", " ", sql, flags=re.S)
    body = re.sub(r"--[^\n]*", " ", body)  # dbt-spark's merge opens with a line comment
    words = " ".join(body.split()[:3]).lower()
    return f"sql: {words}"


def _statements(events: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """Each statement dbt ran: (label, start, end), end when dbt logged its status."""
    found, pending = [], None
    for e in events:
        if e["name"] == "SQLQuery":
            pending = (_statement_label(str(e["data"].get("sql") or e["msg"])), e["ts"])
        elif e["name"] == "SQLQueryStatus" and pending:
            found.append((pending[0], pending[1], e["ts"]))
            pending = None
    return found


def _first(events: list[dict[str, Any]], name: str) -> float:
    return next(e["ts"] for e in events if e["name"] == name)


def _adapter_phases(log: Path) -> list[tuple[str, float, float]]:
    """The adapter's phases (``DBT_HUDI_TIMING``), each engine write's jobs, planning and
    commit in place of its runner calls."""
    if not log.exists():
        return []
    phases = read_log(log)
    found = [p for p in phases if not p[0].startswith("engine:")]
    for _, start, end in [p for p in phases if p[0] == "write: engine write"]:
        found += write_parts(phases, start, end)
    return sorted(found, key=lambda p: p[1])


def breakdown(launch: float, exited: float, log: Path, timing: Path) -> dict[str, float]:
    """Where one run's seconds went, in order: process start, dbt's start and parse, each
    statement, the model's own phases, the run's end and the process's exit. Rows named
    ``(overlapped)`` ran in the warm-up thread beside the others; indented rows are parts of
    the row above them."""
    events = _events(log)
    node_start, node_end = _first(events, "NodeStart"), _first(events, "NodeFinished")
    done = _first(events, "CommandCompleted")
    rows: dict[str, float] = {}
    rows["process start, imports"] = _first(events, "MainReportVersion") - launch
    rows["dbt start, adapter load"] = _first(events, "AdapterRegistered") - (
        _first(events, "MainReportVersion")
    )
    rows["dbt parse"] = _first(events, "FoundStats") - _first(events, "AdapterRegistered")
    statements = _statements(events)
    adapter = _adapter_phases(timing)
    for label, start, end in adapter:
        if label.startswith("warm-up:"):
            _add(rows, f"(overlapped) {label}", end - start)
    before = [s for s in statements if s[2] <= node_start]
    for label, start, end in before:
        _add(rows, label, end - start)
    rows["dbt between statements"] = (node_start - _first(events, "FoundStats")) - sum(
        end - start for _, start, end in before
    )
    rows["model (dbt's execution time)"] = node_end - node_start
    _model_rows(rows, [s for s in statements if s[1] >= node_start], adapter, node_end - node_start)
    rows["run end, artifacts"] = done - node_end
    rows["process exit"] = exited - done
    rows["whole run (wall)"] = exited - launch
    return rows


def _model_rows(
    rows: dict[str, float],
    statements: list[tuple[str, float, float]],
    adapter: list[tuple[str, float, float]],
    model: float,
) -> None:
    """The model's statements and adapter phases (parts of a phase indented under it)."""
    spent = 0.0
    for label, start, end in sorted([*statements, *adapter], key=lambda p: p[1]):
        if label.startswith("warm-up:"):
            continue
        nested = label.startswith(("engine:", "publish:", "write: audit"))
        _add(rows, ("      " if nested else "  ") + label, end - start)
        spent += 0.0 if nested else end - start
    rows["  dbt, Jinja, the rest"] = model - spent


def _add(rows: dict[str, float], label: str, seconds: float) -> None:
    rows[label] = rows.get(label, 0.0) + seconds


def run_once(root: Path, model: str, round_: int, source: str | None) -> dict[str, Any]:
    """One ``dbt run`` in a fresh process: wall, dbt's model time, load, and the breakdown;
    ``source``: a checkout whose adapter and engine the process imports instead."""
    timing = root / "timing.jsonl"
    timing.unlink(missing_ok=True)
    log = root / "logs" / "dbt.log"
    log.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DBT_HUDI_TIMING": str(timing),
    }
    if source:
        env["PYTHONPATH"] = source
    dbt = Path(sys.executable).with_name("dbt")
    if model == BUNDLE:  # the bundle's venv: its dbt, its pyspark, nothing of this checkout
        release = bundle_release()
        env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "DBT_HUDI_TIMING")}
        env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = str(release.python)
        dbt = release.dbt_executable
    command = [
        str(dbt), "run", "-s", model, "--project-dir", str(root), "--profiles-dir", str(root),
        "--vars", f"{{round: {round_}}}", "--log-format-file", "json",
    ]  # fmt: skip
    load = os.getloadavg()[0]
    launch = time.time()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=root)
    exited = time.time()
    if done.returncode != 0:
        raise SystemExit(f"dbt run of {model} failed:\n{done.stdout[-3000:]}")
    results = json.loads((root / "target" / "run_results.json").read_text())
    model_time = float(results["results"][0]["execution_time"])
    rows = breakdown(launch, exited, log, timing)
    record = {"round": round_, "wall": exited - launch, "model": model_time, "load": load}
    print(json.dumps({"run": str(root.parent.name), **record, "rows": rows}), flush=True)
    return {**record, "rows": rows}


def contenders() -> list[tuple[str, str, str | None]]:
    """(label, model, checkout): the Hudi models, each also on ``BENCH_DBT_BEFORE``'s checkout
    when set (its adapter and engine, this bench's harness), then the anchor."""
    hudi = [m for m in MODELS if m not in (ANCHOR, BUNDLE) and (not ONLY or m in ONLY)]
    found: list[tuple[str, str, str | None]] = []
    for model in hudi:
        found.append((model, model, None))
        if BEFORE and model in BEFORE_MODELS:
            found.append((f"{model} (before)", model, BEFORE))
    bundle = [(BUNDLE, BUNDLE, None)] if WITH_BUNDLE else []
    return [*found, (ANCHOR, ANCHOR, None), *bundle]


def bundle_release() -> Any:
    """Apache Hudi's release dbt-spark runs with (its venv and bundle, provisioned once)."""
    from tests.hudi_jvm.provision import RELEASES, ensure

    return ensure(RELEASES[BUNDLE_RELEASE])


def bundle_parameters() -> str:
    """The Spark settings a dbt-spark profile gives Hudi's bundle (its documented ones: the
    bundle, Kryo with Hudi's registrar, its SQL extension and catalog; shuffle partitions =
    the cores), as profile lines under ``server_side_parameters``."""
    jar = bundle_release().jar
    settings = {
        "spark.jars": str(jar),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.sql.shuffle.partitions": str(CORES),
    }
    return "".join(f'\n        {k}: "{v}"' for k, v in settings.items())


def project(label: str, model: str, base: Path) -> Path:
    """The one-model project of ``model`` (its own metastore and lake)."""
    work = base / re.sub(r"\W+", "_", label)
    root = work / "project"
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(PROJECT)
    metastore = f"jdbc:derby:;databaseName={work}/metastore_db;create=true"
    hudi = model not in (ANCHOR, BUNDLE)
    adapter, extra = ("hudi", HUDI_BASE_PATH.format(work=work)) if hudi else ("spark", "")
    bundle = bundle_parameters() if model == BUNDLE else ""
    (root / "profiles.yml").write_text(
        PROFILE.format(work=work, metastore=metastore, adapter=adapter, extra=extra, bundle=bundle)
    )
    (root / "models" / f"{model}.sql").write_text(MODELS[model] + BODY)
    if model in (UNAUDITED, AUDITED):
        (root / "models" / "schema.yml").write_text(TESTS_YML.format(model=model))
    return root


def measure(base: Path) -> dict[str, dict[str, Any]]:
    """FIRSTS first runs of every contender (each a fresh project, so a new table), then rounds
    of next runs on the last of them; contenders interleaved."""
    every = contenders()
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in every}
    roots: dict[str, Path] = {}
    for i in range(FIRSTS):
        roots = {label: project(label, model, base / f"first-{i}") for label, model, _ in every}
        for label, model, source in every:
            runs[label].append(run_once(roots[label], model, 1, source))
    for round_ in range(2, RUNS + 2):
        for label, model, source in every:
            runs[label].append(run_once(roots[label], model, round_, source))
    return {label: summarize(label_runs) for label, label_runs in runs.items()}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians of the first runs (round 1) and of the next runs: figures and breakdown."""
    firsts = [r for r in runs if r["round"] == 1] or [NO_RUN]
    nexts = [r for r in runs if r["round"] > 1] or [NO_RUN]
    return {
        "first_wall": statistics.median(f["wall"] for f in firsts),
        "first_model": statistics.median(f["model"] for f in firsts),
        "first_load": statistics.median(f["load"] for f in firsts),
        "first_runs": sum(r["round"] == 1 for r in runs),
        "next_wall": statistics.median(n["wall"] for n in nexts),
        "next_model": statistics.median(n["model"] for n in nexts),
        "next_load": statistics.median(n["load"] for n in nexts),
        "next_runs": sum(r["round"] > 1 for r in runs),
        "first_rows": _median_rows(firsts),
        "next_rows": _median_rows(nexts),
    }


def _median_rows(runs: list[dict[str, Any]]) -> dict[str, float]:
    labels = list(dict.fromkeys(label for r in runs for label in r["rows"]))
    return {label: statistics.median(r["rows"].get(label, 0.0) for r in runs) for label in labels}


def print_summary(results: dict[str, dict[str, Any]]) -> None:
    anchor = results.get(ANCHOR) or summarize([NO_RUN])  # a run cut short before it
    print(f"one-model project, {ROWS} rows, {CHANGED} changed per next run; fresh dbt processes;")
    firsts = sorted({r["first_runs"] for r in results.values()})
    counts = sorted({r["next_runs"] for r in results.values()})
    print(
        f"contenders interleaved; medians of {firsts} first runs (each a new table) and "
        f"{counts} next runs; load = 1-minute load average"
    )
    print(
        "| model | first run wall / model | next runs wall / model | model time vs dbt-spark "
        "(first, next) | wall vs dbt-spark (first, next) | load (first, next) | goals |"
    )
    print("|---|---|---|---|---|---|---|")
    for model, r in results.items():
        ratios = {
            k: r[k] / anchor[k] for k in ("first_model", "next_model", "first_wall", "next_wall")
        }
        goals = ""
        if model not in (ANCHOR, BUNDLE):
            model_met = max(ratios["first_model"], ratios["next_model"]) <= MODEL_GOAL
            wall_met = max(ratios["first_wall"], ratios["next_wall"]) <= WALL_GOAL
            goals = (
                f"model <= {MODEL_GOAL}x {'met' if model_met else 'NOT met'}; "
                f"wall <= {WALL_GOAL}x {'met' if wall_met else 'NOT met'}"
            )
        print(
            f"| {model} | {r['first_wall']:.1f} s / {r['first_model']:.1f} s "
            f"| {r['next_wall']:.1f} s / {r['next_model']:.1f} s "
            f"| {ratios['first_model']:.2f}x, {ratios['next_model']:.2f}x "
            f"| {ratios['first_wall']:.2f}x, {ratios['next_wall']:.2f}x "
            f"| {r['first_load']:.2f}, {r['next_load']:.2f} | {goals} |"
        )


def print_bundle_goals(results: dict[str, dict[str, Any]]) -> None:
    """``hudi_upsert`` against dbt-spark with Hudi's bundle (``incremental``, ``merge``): model
    time and the whole run's wall time, first and next runs, both absolute and with the load."""
    if BUNDLE not in results or UNAUDITED not in results:
        return
    ours, theirs = results[UNAUDITED], results[BUNDLE]
    print(f"\n{UNAUDITED} vs dbt-spark + Apache Hudi {BUNDLE_RELEASE}'s bundle ({BUNDLE}):")
    print("| runs | measure | ours / theirs | ours s (load) | theirs s (load) | goal | |")
    print("|---|---|---|---|---|---|---|")
    for which in ("first", "next"):
        for measure, goal in (("model", BUNDLE_MODEL_GOAL), ("wall", BUNDLE_WALL_GOAL)):
            mine, other = ours[f"{which}_{measure}"], theirs[f"{which}_{measure}"]
            state = "met" if mine / other <= goal else "NOT met"
            print(
                f"| {which} | {measure} | {mine / other:.2f}x "
                f"| {mine:.2f} ({ours[f'{which}_load']:.2f}) "
                f"| {other:.2f} ({theirs[f'{which}_load']:.2f}) | <= {goal}x | {state} |"
            )


def print_audit_cost(results: dict[str, dict[str, Any]]) -> None:
    """The audited model against the unaudited one: the model time it adds, the part of it the
    audit's tests took (reading the staged snapshot and the tests' queries), and the rest as a
    share of the unaudited model time (the bound: 10 %)."""
    if AUDITED not in results or UNAUDITED not in results:
        return
    print(f"\n{AUDITED} vs {UNAUDITED} (model time, medians):")
    for which in ("first", "next"):
        audited, plain = results[AUDITED], results[UNAUDITED]
        added = audited[f"{which}_model"] - plain[f"{which}_model"]
        tests = audited[f"{which}_rows"].get("      write: audit tests", 0.0)
        rest = (added - tests) / plain[f"{which}_model"]
        print(
            f"- {which} runs: +{added:.2f} s, of which the audit's tests {tests:.2f} s; "
            f"beyond them {rest:+.1%} of {UNAUDITED}'s {plain[f'{which}_model']:.2f} s "
            f"({'within' if rest <= 0.10 else 'NOT within'} 10 %)"
        )


def print_breakdown(results: dict[str, dict[str, Any]], which: str) -> None:
    """One table: a row per phase, a column per contender (seconds)."""
    models = list(results)
    labels = list(dict.fromkeys(k for m in models for k in results[m][f"{which}_rows"]))
    print(f"\nwhere the seconds go, {which} runs (medians):")
    print("| phase | " + " | ".join(models) + " |")
    print("|---|" + "---|" * len(models))
    for label in labels:
        cells = [results[m][f"{which}_rows"].get(label) for m in models]
        shown = " | ".join("" if c is None else f"{c:.2f}" for c in cells)
        depth = (len(label) - len(label.lstrip())) // 2
        print(f"| {'· ' * depth}{label.strip()} | {shown} |")


NO_RUN: dict[str, Any] = {
    "round": 0,
    "wall": math.nan,
    "model": math.nan,
    "load": math.nan,
    "rows": {},
}


def from_log(log: Path) -> dict[str, dict[str, Any]]:
    """The summaries of the runs a bench's output holds (also of one cut short), by contender."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for line in log.read_text().splitlines():
        if line.startswith('{"run"'):
            record = json.loads(line)
            runs.setdefault(record["run"], []).append(record)
    return {label: summarize(sorted(r, key=lambda x: x["round"])) for label, r in runs.items()}


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--summarize":
        results = from_log(Path(sys.argv[2]))
        print_summary(results)
        print_bundle_goals(results)
        print_audit_cost(results)
        print_breakdown(results, "first")
        print_breakdown(results, "next")
        return 0
    started = time.monotonic()
    archive = class_archive.prepare()
    # written once per machine and Spark install; a user's first run writes it as it exits
    print(f"class-data archive: {archive} ({time.monotonic() - started:.1f} s)", flush=True)
    base = Path(tempfile.mkdtemp(prefix="dbt-hudi-bench-dbt-"))
    try:
        results = measure(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print_summary(results)
    print_bundle_goals(results)
    print_audit_cost(results)
    print_breakdown(results, "first")
    print_breakdown(results, "next")
    record(results)
    return 0


def record(results: dict[str, dict[str, Any]]) -> None:
    """The medians into bench/results.json, which the user guide plots."""
    keys = ("first_wall", "first_model", "next_wall", "next_model")
    bench_results.record(
        "dbt",
        "one-model project",
        {
            "rows": ROWS,
            "changed": CHANGED,
            "runs": {"first": FIRSTS, "next": RUNS},
            "load": round(statistics.median(r["next_load"] for r in results.values()), 1),
            "seconds": {m: {k: round(r[k], 2) for k in keys} for m, r in results.items()},
        },
    )


if __name__ == "__main__":
    sys.exit(main())
