"""hudi_changes(): a downstream model fed only by an upstream Hudi model's changes, over four
runs (inserts; updates and deletes; a downstream run killed before its commit; the rerun, with
a record upserted again unchanged upstream, which is no change downstream).

After every run the downstream table equals a full recompute from the upstream snapshot, and
its checkpoint (extraMetadata of its commits) names the upstream instant it consumed up to: a run
that fails before its commit leaves the checkpoint where it was, so no change is lost, and
re-reading the same changes applies them once (an upsert by key).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows, spark_rows

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
          hudi_options={'hoodie.table.cdc.enabled': 'true'}) }}
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


def recompute(spark: Any, schema: str) -> list[tuple[Any, ...]]:
    return spark_rows(
        spark,
        f"select id, name, amount * 100 as cents, region from {schema}.orders",
        COLUMNS,
    )


def checkpoints(base_path: str) -> list[str]:
    """The checkpoint of every completed commit of the downstream table, oldest first."""
    timeline = Path(base_path, ".hoodie")
    found = []
    for f in sorted(timeline.glob("*.commit")):
        extra = json.loads(f.read_text())["extraMetadata"]
        found.extend(v for k, v in extra.items() if k.startswith("_dbt_hudi.checkpoint."))
    return found


def latest_commit(base_path: str) -> str:
    return sorted(f.name.split(".")[0] for f in Path(base_path, ".hoodie").glob("*.commit"))[-1]


class TestHudiChanges:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"orders_seed.csv": SEEDS[0]}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"orders.sql": ORDERS_SQL, "big_orders.sql": BIG_ORDERS_SQL}

    def test_downstream_of_changes_equals_recompute_over_four_runs(
        self, project: Any, spark: Any, monkeypatch: Any
    ) -> None:
        schema = project.test_schema
        seed_file = Path(project.project_root, "seeds", "orders_seed.csv")

        # run 1: the first run reads the upstream snapshot
        run_dbt(["seed"])
        run_dbt(["run"])
        upstream, downstream = (base_path_of(spark, schema, m) for m in ("orders", "big_orders"))
        assert spark_rows(spark, f"select * from {schema}.big_orders", COLUMNS) == recompute(
            spark, schema
        )
        assert checkpoints(downstream) == [latest_commit(upstream)]

        # run 2: updates, a delete and an insert arrive as changes
        seed_file.write_text(SEEDS[1])
        run_dbt(["seed"])
        run_dbt(["run"])
        expected = recompute(spark, schema)
        assert [r[0] for r in expected] == [1, 3, 4]
        assert spark_rows(spark, f"select * from {schema}.big_orders", COLUMNS) == expected
        assert hudi_rs_rows(downstream, COLUMNS) == expected
        assert checkpoints(downstream)[-1] == latest_commit(upstream)
        written = dict(hudi_rs_rows(downstream, ["id", "_hoodie_commit_time"]))

        # run 3: the upstream commits, the downstream write dies before its commit point
        seed_file.write_text(SEEDS[2])
        run_dbt(["seed"])
        run_dbt(["run", "--select", "orders"])
        before = checkpoints(downstream)
        import engine.write.transaction

        def die(*args: object, **kwargs: object) -> None:
            raise RuntimeError("downstream writer killed before its commit")

        monkeypatch.setattr(engine.write.transaction, "commit_write", die)
        run_dbt(["run", "--select", "big_orders"], expect_pass=False)
        monkeypatch.undo()
        assert checkpoints(downstream) == before  # the checkpoint did not advance
        assert spark_rows(spark, f"select * from {schema}.big_orders", COLUMNS) == expected

        # run 4: the rerun reads the same changes again, applied once
        run_dbt(["run", "--select", "big_orders"])
        expected = recompute(spark, schema)
        assert [r[0] for r in expected] == [1, 3, 5]
        assert spark_rows(spark, f"select * from {schema}.big_orders", COLUMNS) == expected
        assert hudi_rs_rows(downstream, COLUMNS) == expected
        assert checkpoints(downstream)[-1] == latest_commit(upstream)
        assert len(checkpoints(downstream)) == 3
        # alice was upserted again unchanged upstream: not a change, not rewritten downstream
        assert dict(hudi_rs_rows(downstream, ["id", "_hoodie_commit_time"]))[1] == written[1]
