"""hudi_changes(): a downstream model fed only by an upstream Hudi model's changes, over four
runs (inserts; updates and deletes; a ``dbt build`` process SIGKILLed while the downstream write
is in flight; the rerun, with a record upserted again unchanged upstream, which is no change
downstream). The upstream is a table of version 9, so its change stream ranges on completion
times and the checkpoint is one.

After every run the downstream table equals a full recompute from the upstream snapshot, and
its checkpoint (extraMetadata of its commits) names the upstream write it consumed up to: the
killed run leaves the checkpoint where it was and its files uncommitted, the next run rolls the
failed write back and reads the same changes again, applying each once.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from dbt.tests.util import run_dbt

from engine import read_hudi
from engine.faults import FAULT_COUNTER_ENV, FAULT_PID_ENV, FAULT_POINT_ENV
from engine.fs.storage import Storage
from engine.spark.session import LOCAL_DEFAULTS
from engine.timeline.timeline import Timeline
from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows, rows_of, spark_rows
from tests.faults.harness import run_in_own_group

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEEDS = [
    """id,name,amount,region,updated_at,_hoodie_is_deleted
1,alice,10.5,eu,1,false
2,bob,20.0,us,1,false
3,carol,30.25,eu,1,false
""",
    """id,name,amount,region,updated_at,_hoodie_is_deleted
1,alice,11.5,eu,2,false
2,bob,20.0,us,2,true
4,dave,40.0,us,2,false
""",
    """id,name,amount,region,updated_at,_hoodie_is_deleted
1,alice,11.5,eu,2,false
3,carol,31.0,eu,3,false
5,erin,50.0,eu,3,false
4,dave,40.0,us,3,true
""",
]

ORDERS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', partition_by='region',
          precombine_key='updated_at',
          hudi_options={'hoodie.table.cdc.enabled': 'true',
                        'hoodie.write.table.version': '9'}) }}
select id, name, amount, region, updated_at, _hoodie_is_deleted from {{ ref('orders_seed') }}
"""
# a downstream model of changes only: deletes upstream become deletes here
BIG_ORDERS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', partition_by='region',
          precombine_key='updated_at') }}
select id, name, amount * 100 as cents, region, updated_at,
       change_op = 'd' as _hoodie_is_deleted
from {{ hudi_changes(ref('orders')) }}
"""
COLUMNS = ["id", "name", "cents", "region"]
KILL_TIMEOUT = 300


def recompute(spark: Any, upstream: str) -> list[tuple[Any, ...]]:
    """The downstream computed from scratch: the upstream's snapshot, read by its path (the
    killed process published nothing in this session's catalog)."""
    rows = read_hudi(spark, upstream).selectExpr("*", "amount * 100 as cents").collect()
    return rows_of(rows, COLUMNS)


def downstream_rows(spark: Any, downstream: str) -> list[tuple[Any, ...]]:
    """The downstream's snapshot through read_hudi, by its path."""
    return rows_of(read_hudi(spark, downstream).collect(), COLUMNS)


def checkpoints(base_path: str) -> list[str]:
    """The checkpoint of every completed commit of the downstream table, oldest first."""
    found = []
    for f in sorted(Path(base_path, ".hoodie").glob("*.commit")):
        extra = json.loads(f.read_text())["extraMetadata"]
        found.extend(v for k, v in extra.items() if k.startswith("_dbt_hudi.checkpoint."))
    return found


def latest_completion(base_path: str) -> str:
    """When the upstream's latest write completed (its timeline is layout 2)."""
    done = Timeline.load(Storage(base_path)).commits_timeline()
    completion = done[-1].completion_time
    assert completion is not None and completion > done[-1].instant_time
    return completion


def change_counts(base_path: str) -> tuple[int, int, int]:
    """(inserts, updates, deletes) the downstream's latest commit applied."""
    latest = sorted(Path(base_path, ".hoodie").glob("*.commit"))[-1]
    stats = json.loads(latest.read_text())["partitionToWriteStats"].values()
    flat = [s for group in stats for s in group]
    return (
        sum(s["numInserts"] for s in flat),
        sum(s["numUpdateWrites"] for s in flat),
        sum(s["numDeletes"] for s in flat),
    )


def killed_build(project: Any, spark: Any, work: Path) -> str:
    """``dbt build`` in its own process (its own JVM and catalog, the same Hudi base paths),
    SIGKILLed by the engine's kill point after every data file of its second Hudi write (the
    downstream model; the first is the upstream) is on storage and before the commit.
    Returns the process output."""
    profiles = yaml.safe_load(Path(project.profiles_dir, "profiles.yml").read_text())
    target = profiles["test"]["outputs"]["default"]
    warehouse = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    target["hudi_base_path"] = "/" + warehouse.lstrip("/")
    target["server_side_parameters"] = {
        **LOCAL_DEFAULTS,
        "spark.master": "local[1]",
        "spark.driver.memory": "1g",
        "spark.sql.warehouse.dir": str(work / "warehouse"),
        "spark.sql.catalogImplementation": "in-memory",  # no metastore to start
    }
    (work / "profiles").mkdir(parents=True)
    (work / "profiles" / "profiles.yml").write_text(yaml.safe_dump(profiles))
    env = {k: v for k, v in os.environ.items() if k not in ("DBT_PROFILES_DIR", FAULT_PID_ENV)}
    env |= {
        FAULT_POINT_ENV: "write.before_commit:2",
        FAULT_COUNTER_ENV: str(work / "hits"),
        "PYSPARK_PYTHON": sys.executable,
    }
    dbt = str(Path(sys.executable).parent / "dbt")
    args = ["build", "--project-dir", str(project.project_root)]
    args += ["--profiles-dir", str(work / "profiles"), "--log-path", str(work / "logs")]
    log = work / "dbt.log"
    # the shell names its pid (kept by exec) as the writer, leader of its own group
    argv = ["sh", "-c", f'{FAULT_PID_ENV}=$$ exec "$0" "$@"', dbt, *args]
    returncode = run_in_own_group(argv, cwd=work, env=env, log=log, timeout=KILL_TIMEOUT)
    text = log.read_text(errors="replace")
    assert returncode == -signal.SIGKILL, f"dbt was not killed ({returncode}):\n{text}"
    return text


class TestHudiChanges:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"orders_seed.csv": SEEDS[0]}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"orders.sql": ORDERS_SQL, "big_orders.sql": BIG_ORDERS_SQL}

    # size: four runs, each followed by what must hold after it; apart they read worse
    def test_downstream_of_changes_equals_recompute_over_four_runs(
        self, project: Any, spark: Any, tmp_path: Path
    ) -> None:
        schema = project.test_schema
        seed_file = Path(project.project_root, "seeds", "orders_seed.csv")

        # run 1: the first run reads the upstream snapshot
        run_dbt(["seed"])
        run_dbt(["run"])
        upstream, downstream = (base_path_of(spark, schema, m) for m in ("orders", "big_orders"))
        assert spark_rows(spark, f"select * from {schema}.big_orders", COLUMNS) == recompute(
            spark, upstream
        )
        assert checkpoints(downstream) == [latest_completion(upstream)]

        # run 2: updates, a delete and an insert arrive as changes
        seed_file.write_text(SEEDS[1])
        run_dbt(["seed"])
        run_dbt(["run"])
        expected = recompute(spark, upstream)
        assert [r[0] for r in expected] == [1, 3, 4]
        assert spark_rows(spark, f"select * from {schema}.big_orders", COLUMNS) == expected
        assert hudi_rs_rows(downstream, COLUMNS) == expected
        assert checkpoints(downstream)[-1] == latest_completion(upstream)
        written = dict(hudi_rs_rows(downstream, ["id", "_hoodie_commit_time"]))
        before = checkpoints(downstream)

        # run 3: a dbt process commits the upstream, then dies with the downstream write in
        # flight: its files written, its instant pending, the checkpoint where it was
        seed_file.write_text(SEEDS[2])
        started = time.monotonic()
        killed_build(project, spark, tmp_path / "killed")
        print(f"\n[hudi_changes] killed dbt build took {time.monotonic() - started:.1f}s")
        assert recompute(spark, upstream) != expected  # the upstream committed
        pending = Timeline.load(Storage(downstream)).pending()
        assert len(pending) == 1, pending
        failed = pending[0].instant_time
        assert list(Path(downstream).rglob(f"*_{failed}.parquet"))  # killed mid-write
        assert checkpoints(downstream) == before
        assert downstream_rows(spark, downstream) == expected
        assert hudi_rs_rows(downstream, COLUMNS) == expected

        # run 4: the rerun rolls the killed write back, reads the same changes, applies each once
        run_dbt(["run", "--select", "big_orders"])
        assert not list(Path(downstream).rglob(f"*_{failed}.parquet"))
        assert not Timeline.load(Storage(downstream)).pending()
        expected = recompute(spark, upstream)
        assert [r[0] for r in expected] == [1, 3, 5]
        assert spark_rows(spark, f"select * from {schema}.big_orders", COLUMNS) == expected
        assert hudi_rs_rows(downstream, COLUMNS) == expected
        assert checkpoints(downstream)[-1] == latest_completion(upstream)
        assert len(checkpoints(downstream)) == 3
        assert change_counts(downstream) == (1, 1, 1)  # erin, carol, dave: once each
        # alice was upserted again unchanged upstream: not a change, not rewritten downstream
        assert dict(hudi_rs_rows(downstream, ["id", "_hoodie_commit_time"]))[1] == written[1]
