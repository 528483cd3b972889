"""audit_before_publish and hudi_audit: a model's data tests, and Hudi's validators, gate its
commit in ``dbt build``.

The project sets ``+audit_before_publish: true`` for every model. The model's tests are of every
kind dbt has: generic ``not_null``, ``unique``, ``accepted_values`` and ``relationships`` (to
another model), a custom generic test of the project (``tests/generic``), a generic test of a
local package (``packages.yml``, installed by ``dbt deps``) and a singular test that ``ref()``s
the model. The second run breaks six of them: the model fails naming each failed test, its
downstream model is skipped, the table (read with hudi-rs) is as the first run left it, and the
failures table of the ``store_failures`` test holds the staged rows that failed (dbt skipped
its own run of the test). The third run breaks only a ``warn`` test: it warns and publishes,
and dbt's own test run stores that test's failures as usual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED_V1 = """id,name,email,amount,status,updated_at,customer_id
1,alice,a@x,10.5,open,1,1
2,bob,b@x,20.0,closed,1,2
3,carol,c@x,30.0,open,1,1
"""
# breaks not_null(name), unique(email), the singular test (amount < 0), relationships
# (customer 9), the project's at_most(amount, 1000) and the package's lowercase(email)
SEED_V2 = """id,name,email,amount,status,updated_at,customer_id
1,,a@x,10.5,open,2,1
2,bob,a@x,-5.0,closed,2,2
4,dave,D@x,4000.0,open,2,9
"""
# breaks only accepted_values(status), a warn test
SEED_V3 = """id,name,email,amount,status,updated_at,customer_id
4,dave,d@x,40.0,lost,3,1
"""
CUSTOMERS_SEED = """id,region
1,eu
2,us
"""

# the relationships test reads customers' published table: built first
ORDERS_SQL = """
-- depends_on: {{ ref('customers') }}
{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='updated_at') }}
select id, name, email, amount, status, updated_at, customer_id from {{ ref('orders_seed') }}
"""
CUSTOMERS_SQL = """
{{ config(materialized='table') }}
select id, region from {{ ref('customers_seed') }}
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
        data_tests:
          - unique:
              config:
                store_failures: true
          - audit_pkg.lowercase
      - name: amount
        data_tests:
          - at_most:
              arguments:
                value: 1000
      - name: customer_id
        data_tests:
          - relationships:
              arguments:
                to: ref('customers')
                field: id
      - name: status
        data_tests:
          - accepted_values:
              arguments:
                values: [open, closed]
              config:
                severity: warn
                store_failures: true
"""
AT_MOST = """
{% test at_most(model, column_name, value) %}
select * from {{ model }} where {{ column_name }} > {{ value }}
{% endtest %}
"""
PACKAGE_PROJECT = """
name: audit_pkg
version: '1.0'
config-version: 2
macro-paths: ["macros"]
"""
LOWERCASE = """
{% test lowercase(model, column_name) %}
select * from {{ model }} where {{ column_name }} != lower({{ column_name }})
{% endtest %}
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
        return {"orders_seed.csv": SEED_V1, "customers_seed.csv": CUSTOMERS_SEED}

    @pytest.fixture(scope="class")
    def packages(self, project_root: Any) -> dict[str, Any]:
        """A local package defining a generic test, installed by ``dbt deps``."""
        package = Path(project_root, "audit_pkg")
        Path(package, "macros").mkdir(parents=True, exist_ok=True)
        Path(package, "dbt_project.yml").write_text(PACKAGE_PROJECT)
        Path(package, "macros", "lowercase.sql").write_text(LOWERCASE)
        return {"packages": [{"local": "audit_pkg"}]}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "orders.sql": ORDERS_SQL,
            "customers.sql": CUSTOMERS_SQL,
            "orders_checked.sql": CHECKED_SQL,
            "orders_summary.sql": SUMMARY_SQL,
            "schema.yml": SCHEMA_YML,
        }

    @pytest.fixture(scope="class")
    def tests(self) -> dict[str, str]:
        return {"no_negative_amount.sql": NO_NEGATIVE_AMOUNT, "generic": {"at_most.sql": AT_MOST}}

    def test_failing_tests_refuse_the_commit_warn_tests_publish(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        failures_schema = f"{schema}_dbt_test__audit"
        run_dbt(["deps"])
        run_dbt(["seed"])
        results = run_dbt(["build", "--exclude", "resource_type:seed"])
        assert all(r.status in ("success", "pass") for r in results)
        tests = {r.node.name for r in results if r.node.resource_type == "test"}
        assert len(tests) == 9 and "audit_pkg_lowercase_orders_email" in tests, tests
        # dbt's own run of the store_failures test stored its (no) failures
        assert (
            spark_rows(
                spark, f"select * from {failures_schema}.unique_orders_email", ["unique_field"]
            )
            == []
        )
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
        assert "audit_before_publish refused model 'orders': 6 of 9 data tests failed" in log
        for failed in (
            "not_null_orders_name",
            "unique_orders_email",
            "no_negative_amount",
            "relationships_orders_customer_id__id__ref_customers_",
            "at_most_orders_amount__1000",
            "audit_pkg_lowercase_orders_email",
        ):
            assert f"Failure in test {failed} " in log, failed
        assert "Failure in test accepted_values" not in log
        # the audit stored the store_failures test's failing staged rows (dbt skipped the test)
        assert f"Stored the failures of unique_orders_email in {failures_schema}." in log
        assert spark_rows(
            spark,
            f"select * from {failures_schema}.unique_orders_email",
            ["unique_field", "n_records"],
        ) == [("a@x", 2)]
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
        # dbt's own run of the warn test (after the commit) stored its failures as usual
        stored = [r for r in results if r.node.name.startswith("accepted_values_orders_status")]
        assert len(stored) == 1 and str(stored[0].status) == "warn"
        name = stored[0].node.alias
        assert spark_rows(
            spark, f"select * from {failures_schema}.{name}", ["value_field", "n_records"]
        ) == [("lost", 1)]
        assert spark_rows(spark, f"select * from {schema}.orders_summary", ["orders"]) == [(4,)]
        assert len(commits(base)) == len(first) + 1
