"""A Spark driver process for the cluster and Spark Connect tests: runs steps, reports JSON.

Usage: ``python -m tests.cluster.driver SPEC_FILE`` where the spec is::

    {"master": "spark://127.0.0.1:7077" | null,   a standalone master, or Spark Connect
                                                  through SPARK_REMOTE when null
     "executors": 1,                              how many executors on the master
     "work": DIR, "result": FILE,
     "steps": [{"kind": "write", "table": PATH, "rows": [[id, dt, ts, v], ...], "options": {}},
               {"kind": "read", "table": PATH, "options": {...}},
               {"kind": "compact" | "clean", "table": PATH, "options": {...}},
               {"kind": "copy", "table": PATH, "to": PATH}, ...]}

and any step may say ``"label"`` (echoed in its result) and ``"fault"``: a kill point
(:mod:`engine.faults`) armed for that step only. An option value ``"@<label>"`` stands for the
instant time the step of that label committed.

The test process owns the one embedded SparkSession of the run, so a session on a cluster or a
Connect server needs a process of its own: this one. After every step the results so far are
written to ``result`` (a step killed by a kill point leaves those of the steps before it).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

SCHEMA = "id string, dt string, ts long, v string"


def _session(spec: dict[str, Any]) -> Any:
    if spec.get("master") is None:
        from engine import get_spark

        return get_spark()
    from engine.spark.session import local_session
    from tests.cluster.launch import executor_conf

    return local_session(
        spec["work"],
        master=spec["master"],
        app_name="dbt-hudi-cluster-tests",
        extra_conf=executor_conf(spec["master"], spec.get("executors", 1)),
    )


def _describe(spark: Any) -> dict[str, Any]:
    """Where the steps ran: Spark Connect, or the cluster's master and its executors."""
    from engine.spark.session import is_connect

    if is_connect():
        return {"connect": True, "executors": []}
    context = spark.sparkContext
    ids = str(context._jsc.sc().getExecutorIds().mkString(","))
    return {
        "connect": False,
        "master": context.master,
        "executors": sorted(filter(None, ids.split(","))),
    }


def _rows(df: Any) -> list[list[Any]]:
    columns = ["id", "dt", "ts", "v", "_hoodie_commit_time"]
    return sorted([list(r) for r in df.select(*columns).collect()])


def _resolve(options: dict[str, str], done: list[dict[str, Any]]) -> dict[str, str]:
    instants = {s.get("label"): s.get("instant_time") for s in done}
    return {k: instants[v[1:]] if v.startswith("@") else v for k, v in options.items()}


def _run_step(spark: Any, step: dict[str, Any], done: list[dict[str, Any]]) -> dict[str, Any]:
    from engine import read_hudi, spark_table, write_hudi

    kind, table = step["kind"], step["table"]
    options = _resolve(step.get("options") or {}, done)
    if kind == "write":
        df = spark.createDataFrame([tuple(r) for r in step["rows"]], SCHEMA)
        result = write_hudi(df, table, options)
        return {"instant_time": result.instant_time, "rolled_back": result.rolled_back}
    if kind == "read":
        return {"rows": _rows(read_hudi(spark, table, options))}
    if kind == "compact":
        return {"compacted": spark_table(table, spark).compact(options)}
    if kind == "clean":
        cleaned = spark_table(table, spark).clean(options)
        deleted = cleaned.total_deleted if cleaned is not None else 0
        return {"instant_time": cleaned and cleaned.instant_time, "deleted": deleted}
    if kind == "copy":
        shutil.copytree(table, step["to"])
        return {}
    raise SystemExit(f"unknown step kind {kind!r}")


def main(argv: list[str]) -> int:
    from engine.faults import FAULT_PID_ENV, FAULT_POINT_ENV

    spec = json.loads(Path(argv[1]).read_text())
    os.environ[FAULT_PID_ENV] = str(os.getpid())
    started = time.monotonic()
    spark = _session(spec)
    report: dict[str, Any] = {"session_seconds": round(time.monotonic() - started, 1)}
    report["steps"] = []
    result = Path(spec["result"])
    for step in spec["steps"]:
        begun = time.monotonic()
        os.environ[FAULT_POINT_ENV] = step.get("fault") or ""
        outcome = {"label": step.get("label"), **_run_step(spark, step, report["steps"])}
        outcome["seconds"] = round(time.monotonic() - begun, 1)
        report["steps"].append(outcome)
        report.update(_describe(spark))  # the executors that ran the steps so far
        result.write_text(json.dumps(report))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
