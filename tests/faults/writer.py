"""A writer process for fault injection: runs steps on one table until a kill point fires.

Usage: ``python -m tests.faults.writer SPEC_JSON`` where the spec is
``{"table": PATH, "work": DIR, "steps": [{"kind": ..., ...}, ...]}`` and a step is one of::

    {"kind": "write", "rows": [[id, dt, ts, v], ...], "options": {...}}   Spark (local[1])
    {"kind": "clean", "options": {...}}                                  no Spark
    {"kind": "compact"}                           pending compactions, in-process runner
    {"kind": "cluster", "options": {...}}         plan and run a clustering, in-process runner
    {"kind": "cluster", "options": {...}, "spark": true}   the same, its groups in Spark tasks
    {"kind": "rollback"}                          roll back failed writes
    {"kind": "archive", "options": {...}}
    {"kind": "restore", "to": INSTANT}            restore the table to INSTANT

Only writes start a JVM. The process names itself in ``HUDI_FAULT_PID`` before Spark starts,
so Spark's Python workers inherit it and a kill point hit inside a task kills this process.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

SCHEMA = "id string, dt string, ts long, v string"


def _spark(state: dict[str, Any], work: str) -> Any:
    """The process's one local session (started by the first step that needs it)."""
    if "spark" not in state:
        from engine.spark.session import local_session

        state["spark"] = local_session(
            work, master="local[1]", extra_conf={"spark.driver.memory": "1g"}
        )
    return state["spark"]


def _run_step(step: dict[str, Any], table: str, work: str, state: dict[str, Any]) -> None:
    from engine.config import parse_options
    from engine.fs.storage import Storage
    from engine.services.lock import TableLock
    from engine.timeline.timeline import Timeline

    storage = Storage(table)
    cfg = parse_options(step.get("options") or {})
    kind = step["kind"]
    if kind == "write":
        from engine import write_hudi

        df = _spark(state, work).createDataFrame([tuple(r) for r in step["rows"]], SCHEMA)
        write_hudi(df, table, step["options"])
    elif kind == "clean":
        from engine.services.clean import clean

        with TableLock(storage, cfg).hold():
            clean(storage, cfg)
    elif kind == "compact":
        from engine.services.compaction import run_operations_locally, run_pending_compactions

        with TableLock(storage, cfg).hold():
            run_pending_compactions(storage, runner=run_operations_locally)
    elif kind == "cluster":
        from engine.services.clustering import (
            execute_clustering,
            run_groups_locally,
            schedule_clustering,
        )

        runner = run_groups_locally
        if step.get("spark"):
            from engine.spark.runner import SparkRunner

            runner = SparkRunner(_spark(state, work)).cluster
        with TableLock(storage, cfg).hold():
            scheduled = schedule_clustering(storage, cfg, force=True)
            if scheduled is not None:
                execute_clustering(storage, scheduled[0], cfg, runner=runner)
    elif kind == "rollback":
        from engine.services.rollback import rollback_failed_writes

        with TableLock(storage, cfg).hold():
            rollback_failed_writes(storage, Timeline.load(storage))
    elif kind == "archive":
        from engine.services.archival import archive

        with TableLock(storage, cfg).hold():
            archive(storage, cfg)
    elif kind == "restore":
        from engine import HudiTable

        HudiTable(table).restore(step["to"])
    else:
        raise SystemExit(f"unknown step kind {kind!r}")


def main(argv: list[str]) -> int:
    from engine.faults import FAULT_PID_ENV

    os.environ[FAULT_PID_ENV] = str(os.getpid())
    spec = json.loads(argv[1])
    state: dict[str, Any] = {}
    for step in spec["steps"]:
        _run_step(step, spec["table"], spec["work"], state)
    print("completed without a kill")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
