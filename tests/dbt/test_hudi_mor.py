"""hudi_mor: deltacommits, downstream ref() reads the merged snapshot (same and fresh process),
compaction, and a view over a merge-on-read model reading its merged snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.hudi.relation import SNAPSHOT_VIEWS, format_snapshot_view_name
from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED_V1 = """id,kind,score,region,ts,_hoodie_is_deleted
1,click,1,eu,100,false
2,view,2,us,100,false
3,click,3,eu,100,false
"""
SEED_V2 = """id,kind,score,region,ts,_hoodie_is_deleted
1,click,10,eu,200,false
2,view,2,us,200,true
3,click,99,eu,50,false
4,buy,4,us,200,false
"""
EVENTS_SQL = """
{{ config(materialized='hudi_mor', unique_key='id', partition_by='region',
          precombine_key='ts', payload='event_time', compaction_delta_commits=3) }}
select id, kind, score, region, ts, _hoodie_is_deleted from {{ ref('events_seed') }}
"""
TOTAL_SQL = """
{{ config(materialized='table') }}
select id, kind, score, region from {{ ref('events') }}
"""
VIEW_SQL = """
{{ config(materialized='view') }}
select id from {{ ref('events') }}
"""
COLUMNS = ["id", "kind", "score", "region"]
# id 3's v2 row is older (ts 50) than the stored one: event_time keeps the stored row
EXPECTED_V1 = [(1, "click", 1, "eu"), (2, "view", 2, "us"), (3, "click", 3, "eu")]
EXPECTED_V2 = [(1, "click", 10, "eu"), (3, "click", 3, "eu"), (4, "buy", 4, "us")]


class TestHudiMor:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"events_seed.csv": SEED_V1}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "events.sql": EVENTS_SQL,
            "events_total.sql": TOTAL_SQL,
            "events_view.sql": VIEW_SQL,
        }

    def test_hudi_mor_upserts_downstream_reads_merged_snapshot(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        run_dbt(["seed"])
        run_dbt(["run", "-s", "events", "events_total"])
        base = base_path_of(spark, schema, "events")
        assert hudi_rs_rows(base, COLUMNS) == EXPECTED_V1
        assert spark_rows(spark, f"select * from {schema}.events_total", COLUMNS) == EXPECTED_V1

        Path(project.project_root, "seeds", "events_seed.csv").write_text(SEED_V2)
        run_dbt(["seed"])
        _, log = run_dbt_and_capture(["run", "-s", "events", "events_total"])
        assert "upsert committed" in log
        assert [a for _, a in completed_instants(base)] == ["deltacommit", "deltacommit"]
        assert hudi_rs_rows(base, COLUMNS) == EXPECTED_V2
        assert spark_rows(spark, f"select * from {schema}.events_total", COLUMNS) == EXPECTED_V2
        compiled = next(Path(project.project_root, "target", "compiled").rglob("events_total.sql"))
        assert f"`{format_snapshot_view_name(schema, 'events')}`" in compiled.read_text()

    def test_hudi_mor_fresh_process_registers_snapshot_view(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        name = format_snapshot_view_name(schema, "events")
        # what a new dbt process starts with: no session view, nothing rendered yet
        spark.catalog.dropTempView(name)
        SNAPSHOT_VIEWS.pop(name, None)
        spark.sql(f"drop table {schema}.events_total")
        run_dbt(["run", "-s", "events_total"])
        assert spark.catalog.tableExists(name)
        assert spark_rows(spark, f"select * from {schema}.events_total", COLUMNS) == EXPECTED_V2

    def test_hudi_mor_view_over_mor_model_reads_the_merged_snapshot(
        self, project: Any, spark: Any
    ) -> None:
        from dbt.adapters.hudi.relation import HUDI_VIEWS, format_hudi_view_name
        from dbt.adapters.hudi.views import ensure_hudi_views

        schema = project.test_schema
        run_dbt(["run", "-s", "events_view"])
        name = format_hudi_view_name(schema, "events_view")
        HUDI_VIEWS[name] = (schema, "events_view")
        ensure_hudi_views([name], {})
        assert spark_rows(spark, f"select * from `{name}`", ["id"]) == [(1,), (3,), (4,)]

    def test_hudi_compact_run_operation_catalog_table_exact(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        base = base_path_of(spark, schema, "events")
        _, log = run_dbt_and_capture(
            ["run-operation", "hudi_compact", "--args", "{relation: events}"]
        )
        assert "compaction committed" in log
        assert [a for _, a in completed_instants(base)] == ["deltacommit", "deltacommit", "commit"]
        # after compaction the read-optimized catalog table is the snapshot too
        assert spark_rows(spark, f"select * from {schema}.events", COLUMNS) == EXPECTED_V2
        assert hudi_rs_rows(base, COLUMNS) == EXPECTED_V2
