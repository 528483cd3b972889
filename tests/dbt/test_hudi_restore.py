"""Undo a bad run: a three-model project built twice, the second build "bad" (every model
writes wrong rows), then ``dbt run-operation hudi_restore`` with the bad build's invocation_id.

Checks: every commit carries the invocation_id and the model's unique_id; ``savepoint: true``
savepoints the run's commit (the bad build's savepoint goes with it); ``dry_run`` logs the plan
and changes nothing; the restore brings every table back to its rows after the good build
(hudi-rs and Spark SQL through ``ref()``'s published relation).
"""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture
from dbt_common.invocation import get_invocation_id

from engine import RUN_ID_KEY, RUN_NODE_KEY, HudiTable
from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows, spark_rows, table_state

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

CUSTOMERS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', savepoint=true) }}
select id, {% if var('bad', false) %}'broken'{% else %}name{% endif %} as name
from values (1, 'alice'), (2, 'bob') as t(id, name)
"""
ORDERS_SQL = """
{{ config(materialized='hudi_mor', unique_key='order_id', partition_by='region') }}
select order_id, customer_id, region,
  cast(amount * {{ 100 if var('bad', false) else 1 }} as double) as amount
from values (10, 1, 5.0, 'eu'), (11, 2, 7.5, 'us'), (12, 1, 1.5, 'eu')
  as t(order_id, customer_id, amount, region)
"""
TOTALS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='customer_id') }}
select o.customer_id, c.name, sum(o.amount) as total
from {{ ref('orders') }} o join {{ ref('customers') }} c
  on {% if var('bad', false) %}o.customer_id <> c.id{% else %}o.customer_id = c.id{% endif %}
group by o.customer_id, c.name
"""
MODELS = {
    "customers": ["id", "name"],
    "orders": ["order_id", "amount"],
    "totals": ["customer_id", "name", "total"],
}


class TestHudiRestore:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"customers.sql": CUSTOMERS_SQL, "orders.sql": ORDERS_SQL, "totals.sql": TOTALS_SQL}

    def test_restore_undoes_the_bad_build(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        run_dbt(["build"])
        paths = {m: base_path_of(spark, schema, m) for m in MODELS}
        good = {m: hudi_rs_rows(paths[m], cols) for m, cols in MODELS.items()}
        assert good["totals"] == [(1, "alice", 6.5), (2, "bob", 7.5)]
        (savepoint,) = HudiTable(paths["customers"]).savepoints()
        assert "model.test.customers" in savepoint.comments

        run_dbt(["build", "--vars", "{bad: true}"])
        bad_run = get_invocation_id()
        for model in MODELS:
            table = HudiTable(paths[model])
            assert table.latest_extra_metadata(RUN_ID_KEY) == bad_run
            assert table.latest_extra_metadata(RUN_NODE_KEY) == f"model.test.{model}"
            assert hudi_rs_rows(paths[model], MODELS[model]) != good[model]
        before = {m: table_state(paths[m], MODELS[m]) for m in MODELS}

        args = f"{{invocation_id: {bad_run}, dry_run: true}}"
        _, log = run_dbt_and_capture(["run-operation", "hudi_restore", "--args", args])
        assert f"Restore of dbt invocation {bad_run}" in log and "Dry run" in log
        for model in MODELS:
            assert f"{schema}.{model}: restore to" in log
            assert table_state(paths[model], MODELS[model]) == before[model]

        run_dbt(["run-operation", "hudi_restore", "--args", f"{{invocation_id: {bad_run}}}"])
        for model, cols in MODELS.items():
            assert hudi_rs_rows(paths[model], cols) == good[model]
            assert spark_rows(spark, f"select * from {schema}.{model}", cols) == good[model]
        # the bad build's savepoint went with its commit; the good build's stays
        restored = HudiTable(paths["customers"]).savepoints()
        assert [s.instant_time for s in restored] == [savepoint.instant_time]
