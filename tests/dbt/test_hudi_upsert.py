"""hudi_upsert: create, upsert with deletes, downstream ref(), bad config, full refresh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED_V1 = """id,name,amount,region,updated_at,_hoodie_is_deleted
1,alice,10.5,eu,1,false
2,bob,20.0,us,1,false
3,carol,30.25,eu,1,false
"""
# 1 updated, 2 deleted, 4 inserted; 3 absent (an upsert keeps it)
SEED_V2 = """id,name,amount,region,updated_at,_hoodie_is_deleted
1,alice,11.5,eu,2,false
2,bob,20.0,us,2,true
4,dave,40.0,us,2,false
"""

ORDERS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', partition_by='region',
          precombine_key='updated_at',
          pre_hook="create table if not exists {{ this.schema }}.hook_log (n bigint) using parquet",
          post_hook="insert into {{ this.schema }}.hook_log select count(*) from {{ this }}",
          persist_docs={'relation': true, 'columns': true}) }}
select id, name, amount, region, updated_at, _hoodie_is_deleted from {{ ref('orders_seed') }}
"""
SUMMARY_SQL = """
{{ config(materialized='table') }}
select region, count(*) as orders, sum(amount) as amount from {{ ref('orders') }} group by region
"""
BAD_ORDERS_SQL = """
{{ config(materialized='hudi_upsert', payload='newest', on_schema_change='explode',
          hudi_options={'hoodie.not.a.key': 1}) }}
select id, name, amount, region, updated_at from {{ ref('orders_seed') }}
"""
SCHEMA_YML = """
version: 2
models:
  - name: orders
    description: Orders by id
    columns:
      - name: id
        description: The order's key
        data_tests: [unique, not_null]
"""
COLUMNS = ["id", "name", "amount", "region"]


class TestHudiUpsert:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"orders_seed.csv": SEED_V1}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "orders.sql": ORDERS_SQL,
            "orders_summary.sql": SUMMARY_SQL,
            "schema.yml": SCHEMA_YML,
        }

    def test_hudi_upsert_two_runs_rows_match_seed_and_hudi_rs(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        run_dbt(["seed"])
        results, log = run_dbt_and_capture(["run"])
        assert len(results) == 2
        assert "bulk_insert committed" in log and "3 inserted" in log
        base = base_path_of(spark, schema, "orders")
        expected_v1 = [(1, "alice", 10.5, "eu"), (2, "bob", 20.0, "us"), (3, "carol", 30.25, "eu")]
        assert spark_rows(spark, f"select * from {schema}.orders", COLUMNS) == expected_v1
        assert hudi_rs_rows(base, COLUMNS) == expected_v1
        assert spark_rows(
            spark, f"select * from {schema}.orders_summary", ["region", "orders"]
        ) == [
            ("eu", 2),
            ("us", 1),
        ]

        Path(project.project_root, "seeds", "orders_seed.csv").write_text(SEED_V2)
        run_dbt(["seed"])
        results, log = run_dbt_and_capture(["build", "--exclude", "resource_type:seed"])
        assert all(r.status in ("success", "pass") for r in results)
        assert "upsert committed" in log
        expected_v2 = [(1, "alice", 11.5, "eu"), (3, "carol", 30.25, "eu"), (4, "dave", 40.0, "us")]
        assert spark_rows(spark, f"select * from {schema}.orders", COLUMNS) == expected_v2
        assert hudi_rs_rows(base, COLUMNS) == expected_v2
        assert spark_rows(
            spark, f"select * from {schema}.orders_summary", ["region", "orders", "amount"]
        ) == [("eu", 2, 41.75), ("us", 1, 40.0)]
        assert [a for _, a in completed_instants(base)] == ["commit", "commit"]
        # hooks ran around each write, the post-hook seeing the committed rows
        assert spark_rows(spark, f"select * from {schema}.hook_log", ["n"]) == [(3,), (3,)]
        described = spark.sql(f"describe table extended {schema}.orders").collect()
        assert {r["col_name"]: r["comment"] for r in described}["id"] == "The order's key"
        assert {r["col_name"]: r["data_type"] for r in described}["Comment"] == "Orders by id"

    def test_hudi_upsert_bad_config_compile_error_table_untouched(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        base = base_path_of(spark, schema, "orders")
        before = completed_instants(base)
        rows_before = hudi_rs_rows(base, COLUMNS)
        path = Path(project.project_root, "models", "orders.sql")
        good = path.read_text()
        path.write_text(BAD_ORDERS_SQL)
        try:
            _results, log = run_dbt_and_capture(["run", "-s", "orders"], expect_pass=False)
        finally:
            path.write_text(good)
        assert "Compilation Error" in log
        for needle in (
            "'orders'",
            "unique_key: required",
            "'newest'",
            "'explode'",
            "hoodie.not.a.key",
        ):
            assert needle in log, needle
        assert completed_instants(base) == before
        assert hudi_rs_rows(base, COLUMNS) == rows_before

    def test_hudi_upsert_docs_generate_lists_columns(self, project: Any) -> None:
        catalog = run_dbt(["docs", "generate"])
        node = catalog.nodes["model.test.orders"]
        assert node.metadata.type == "table"
        assert {"id", "name", "amount", "region", "updated_at"} <= set(node.columns)

    def test_hudi_clean_run_operation_rows_unchanged(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        base = base_path_of(spark, schema, "orders")
        rows_before = hudi_rs_rows(base, COLUMNS)
        _, log = run_dbt_and_capture(
            [
                "run-operation",
                "hudi_clean",
                "--args",
                "{relation: orders, options: {hoodie.cleaner.policy: KEEP_LATEST_FILE_VERSIONS,"
                " hoodie.cleaner.fileversions.retained: 1}}",
            ]
        )
        assert "clean committed" in log and "file(s) deleted" in log
        assert [a for _, a in completed_instants(base)] == ["commit", "commit", "clean"]
        assert hudi_rs_rows(base, COLUMNS) == rows_before
        assert spark_rows(spark, f"select * from {schema}.orders", COLUMNS) == rows_before

    def test_hudi_upsert_full_refresh_rebuilds_table(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        base = base_path_of(spark, schema, "orders")
        assert len(completed_instants(base)) == 3
        _results, log = run_dbt_and_capture(["run", "-s", "orders", "--full-refresh"])
        assert "bulk_insert committed" in log
        instants = completed_instants(base)
        assert len(instants) == 1
        # the seed now holds v2 (with id 2 marked deleted): a fresh table has no 3 and no 2
        expected = [(1, "alice", 11.5, "eu"), (4, "dave", 40.0, "us")]
        assert spark_rows(spark, f"select * from {schema}.orders", COLUMNS) == expected
        assert hudi_rs_rows(base, COLUMNS) == expected
