"""Short dbt commands exit with dbt's own code, print no JVM error and leave no crash file.

Each command is a fresh process in a fresh project directory, as an orchestrator runs them. The
adapter's warm-up thread can still be inside the JVM or pyarrow when a short command ends; the
exit must stop and join it first (a daemon thread killed in native code aborted 1 run in 3
with ``Fatal Python error: PyGILState_Release``, exit code -6, after dbt printed PASS).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dbt.adapters.hudi.prewarm import EXIT_PHASE

pytestmark = [pytest.mark.dbt, pytest.mark.spark]

PROJECT = "name: quick\nversion: '1.0'\nprofile: quick\nconfig-version: 2\n"
PROFILE = """
quick:
  target: local
  outputs:
    local:
      type: hudi
      method: session
      host: localhost
      schema: quick
      threads: 1
      hudi_base_path: "{work}/lake"
      server_side_parameters:
        spark.master: "local[2]"
        spark.sql.warehouse.dir: "{work}/warehouse"
        spark.hadoop.javax.jdo.option.ConnectionURL: "{metastore}"
"""
BODY = "select id, concat('n-', id) as name, 1 as ts from (select explode(sequence(1, 20)) as id)"
MODELS = {
    "hudi": "{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='ts') }}\n",
    "spark": "{{ config(materialized='incremental', file_format='parquet', "
    "incremental_strategy='insert_overwrite') }}\n",
}
# (command, model): 12 fresh processes in ``make test-long``; ``make test`` runs a Hudi model, a
# ``show`` and two compiles, whose exit meets the warm-up still running (a 1-in-3 abort is missed
# by these 4 with probability (2/3)^4 < 20% a run, by the long run's 12 with < 1%)
_EVERY = [
    *[(["run"], "hudi")] * 3,
    *[(["run"], "spark")] * 3,
    *[(["show", "--inline", "select 1 as x"], "spark")] * 2,
    *[(["compile"], "spark")] * 3,
    (["ls"], "spark"),
]
_SHORT = [_EVERY[0], _EVERY[6], *_EVERY[8:10]]
RUNS = _EVERY if os.environ.get("HUDI_TEST_LONG") else _SHORT
JVM_ERRORS = ("Error occurred during initialization of VM", "Cannot have non-empty directory")


def _project(root: Path, model: str) -> Path:
    project = root / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(PROJECT)
    metastore = f"jdbc:derby:;databaseName={root}/metastore_db;create=true"
    (project / "profiles.yml").write_text(PROFILE.format(work=root, metastore=metastore))
    (project / "models" / "quick.sql").write_text(MODELS[model] + BODY)
    return project


@pytest.mark.parametrize(("index", "command", "model"), [(i, *r) for i, r in enumerate(RUNS)])
def test_a_short_command_exits_with_dbts_code(
    tmp_path: Path, index: int, command: list[str], model: str
) -> None:
    project = _project(tmp_path, model)
    timing = tmp_path / "timing.jsonl"
    dbt = Path(sys.executable).with_name("dbt")
    done = subprocess.run(
        [str(dbt), *command, "--project-dir", str(project), "--profiles-dir", str(project)],
        cwd=project,
        env={**os.environ, "DBT_HUDI_TIMING": str(timing), "DBT_SEND_ANONYMOUS_USAGE_STATS": "0"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Fatal Python error" not in output
    assert not [e for e in JVM_ERRORS if e in output], output
    assert not list(tmp_path.rglob("hs_err_pid*.log"))
    # Spark's own warnings go to logs/spark.log, not the terminal
    assert "WARN SparkSession" not in output
    if command[0] == "compile":
        phases = [json.loads(line)["phase"] for line in timing.read_text().splitlines()]
        assert EXIT_PHASE in phases, phases  # it exited while the warm-up was still running
