"""audit_before_publish and hudi_audit: a model's data tests, and Hudi's validators, gate its
commit in ``dbt build``.

The project sets ``+audit_before_publish: true`` for every model. The second run breaks
``not_null``, ``unique`` and a singular test: the model fails naming each failed test, its
downstream model is skipped, and the table (read with hudi-rs) is as the first run left it.
The third run breaks only a ``warn`` test: it warns and publishes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED_V1 = """id,name,email,amount,status,updated_at
1,alice,a@x,10.5,open,1
2,bob,b@x,20.0,closed,1
3,carol,c@x,30.0,open,1
"""
# breaks not_null(name), unique(email) and the singular test (amount < 0)
SEED_V2 = """id,name,email,amount,status,updated_at
1,,a@x,10.5,open,2
2,bob,a@x,-5.0,closed,2
4,dave,d@x,40.0,open,2
"""
# breaks only accepted_values(status), a warn test
SEED_V3 = """id,name,email,amount,status,updated_at
4,dave,d@x,40.0,lost,3
"""

ORDERS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='updated_at') }}
select id, name, email, amount, status, updated_at from {{ ref('orders_seed') }}
"""
CHECKED_SQL = """
{{ config(materialized='hudi_mor', unique_key='id', precombine_key='updated_at',
          audit_before_publish=false,
          hudi_audit={'single_value': ['select count(*) from <TABLE_NAME> where amount < 0#0']}) }}
select id, amount, updated_at from {{ ref('orders_seed') }}
"""
SUMMARY_SQL = """
{{ config(materialized='table') }}
select count(*) as orders, sum(amount) as amount from {{ ref('orders') }}
"""
SCHEMA_YML = """
version: 2
models:
  - name: orders
    columns:
      - name: id
        data_tests: [unique, not_null]
      - name: name
        data_tests: [not_null]
      - name: email
        data_tests: [unique]
      - name: status
        data_tests:
          - accepted_values:
              arguments:
                values: [open, closed]
              config:
                severity: warn
"""
NO_NEGATIVE_AMOUNT = """
select * from {{ ref('orders') }} where amount < 0
"""
COLUMNS = ["id", "name", "email", "amount", "status"]
V1 = [
    (1, "alice", "a@x", 10.5, "open"),
    (2, "bob", "b@x", 20.0, "closed"),
    (3, "carol", "c@x", 30.0, "open"),
]


def commits(base: str) -> list[tuple[str, str]]:
    return [(t, a) for t, a in completed_instants(base) if a in ("commit", "deltacommit")]


class TestAuditBeforePublish:
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"models": {"+audit_before_publish": True}}

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"orders_seed.csv": SEED_V1}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "orders.sql": ORDERS_SQL,
            "orders_checked.sql": CHECKED_SQL,
            "orders_summary.sql": SUMMARY_SQL,
            "schema.yml": SCHEMA_YML,
        }

    @pytest.fixture(scope="class")
    def tests(self) -> dict[str, str]:
        return {"no_negative_amount.sql": NO_NEGATIVE_AMOUNT}

    def test_failing_tests_refuse_the_commit_warn_tests_publish(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        run_dbt(["seed"])
        results = run_dbt(["build", "--exclude", "resource_type:seed"])
        assert all(r.status in ("success", "pass") for r in results)
        base = base_path_of(spark, schema, "orders")
        checked = base_path_of(spark, schema, "orders_checked")
        assert hudi_rs_rows(base, COLUMNS) == V1
        first, first_checked = commits(base), commits(checked)

        Path(project.project_root, "seeds", "orders_seed.csv").write_text(SEED_V2)
        run_dbt(["seed"])
        results, log = run_dbt_and_capture(
            ["build", "--exclude", "resource_type:seed"], expect_pass=False
        )
        status = {r.node.name: str(r.status) for r in results}
        assert status["orders"] == "error" and status["orders_checked"] == "error"
        assert status["orders_summary"] == "skipped"
        assert "audit_before_publish refused model 'orders': 3 of 6 data tests failed" in log
        for failed in ("not_null_orders_name", "unique_orders_email", "no_negative_amount"):
            assert f"Failure in test {failed}" in log
        assert "SqlQuerySingleResultPreCommitValidator failed" in log
        assert "expected 0, found 1" in log
        # nothing published: hudi-rs and the snapshot view read the first run's rows
        assert hudi_rs_rows(base, COLUMNS) == V1
        assert spark_rows(spark, f"select * from {schema}.orders_summary", ["orders"]) == [(3,)]
        assert commits(base) == first and commits(checked) == first_checked

        Path(project.project_root, "seeds", "orders_seed.csv").write_text(SEED_V3)
        run_dbt(["seed"])
        results, log = run_dbt_and_capture(["build", "--exclude", "resource_type:seed"])
        status = {r.node.name: str(r.status) for r in results}
        assert status["orders"] == "success" and status["orders_summary"] == "success"
        assert "Warning in test accepted_values_orders_status" in log
        assert hudi_rs_rows(base, COLUMNS) == [*V1, (4, "dave", "d@x", 40.0, "lost")]
        assert spark_rows(spark, f"select * from {schema}.orders_summary", ["orders"]) == [(4,)]
        assert len(commits(base)) == len(first) + 1
