"""``view`` models (dbt's default materialization) over Hudi models and Hudi sources.

A project whose staging and mart views select from Hudi models runs unchanged: ``dbt run``,
``dbt build`` (tests on the views), ``dbt show`` and ``dbt docs generate``. In a dbt session a
view reads the latest committed snapshot of the tables beneath it each time it is queried, in
the same process and in a fresh one, whoever committed; chains of views and views over Hudi
sources too. Outside dbt the catalog view fails as the Hudi model's catalog entry does, naming
the base path: never a stale or empty answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.hudi import views
from dbt.adapters.hudi.relation import (
    HUDI_VIEWS,
    SNAPSHOT_VIEWS,
    format_hudi_view_name,
)
from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED = """order_id,amount,region,ts
1,10,eu,1
2,25,us,1
3,40,eu,1
4,55,us,1
"""
ORDERS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='order_id', precombine_key='ts') }}
select order_id, amount, region, ts from {{ ref('orders_seed') }}
"""
ORDERS_MOR_SQL = """
{{ config(materialized='hudi_mor', unique_key='order_id', precombine_key='ts',
          partition_by='region') }}
select order_id, amount, region, ts from {{ ref('orders_seed') }}
"""
BIG_ORDERS_SQL = """
{{ config(materialized='view') }}
select order_id, amount from {{ ref('orders') }} where amount > 20
"""
BIG_MOR_SQL = """
{{ config(materialized='view') }}
select order_id, amount, region from {{ ref('orders_mor') }} where amount > 20
"""
EPHEMERAL_SQL = """
{{ config(materialized='ephemeral') }}
select order_id, amount from {{ ref('big_orders') }} where amount < 50
"""
# a view over a view, an ephemeral model and a merge-on-read model's view
MID_ORDERS_SQL = """
{{ config(materialized='view') }}
select e.order_id, e.amount, m.region from {{ ref('mid_ephemeral') }} e
join {{ ref('big_mor') }} m on e.order_id = m.order_id
"""
MID_TOTAL_SQL = """
{{ config(materialized='table') }}
select count(*) as n, sum(amount) as total from {{ ref('mid_orders') }}
"""
SOURCE_VIEW_SQL = """
{{ config(materialized='view') }}
select order_id from {{ source('lake', 'outside_orders') }} where amount > 20
"""
SCHEMA_YML = """
version: 2
models:
  - name: big_orders
    description: orders over 20
    columns:
      - name: order_id
        tests: [not_null, unique]
      - name: amount
        description: the order's amount
"""
SINGULAR_TEST = "select * from {{ ref('mid_orders') }} where amount <= 20"


def _sources_yml(location: str) -> str:
    return (
        "version: 2\nsources:\n  - name: lake\n    tables:\n"
        f"      - name: outside_orders\n        external:\n"
        f"          location: '{location}'\n          file_format: hudi\n"
    )


def _outside_commit(spark: Any, base_path: str, rows: list[tuple[int, int, str, int]]) -> None:
    """Another pipeline upserts ``rows`` into the Hudi table at ``base_path``."""
    from engine import write_hudi

    frame = spark.createDataFrame(rows, "order_id int, amount int, region string, ts int")
    write_hudi(frame, base_path, {"hoodie.datasource.write.operation": "upsert"})


def _forget_session(spark: Any) -> None:
    """What a new dbt process starts with: no session view, nothing rendered, nothing loaded."""
    for name in [*SNAPSHOT_VIEWS, *HUDI_VIEWS]:
        spark.catalog.dropTempView(name)
    SNAPSHOT_VIEWS.clear()
    HUDI_VIEWS.clear()
    views._DEFINITIONS.clear()


@pytest.fixture(scope="class")
def outside_table(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> str:
    """A Hudi table another pipeline writes (a dbt source)."""
    from engine import write_hudi

    path = str(tmp_path_factory.mktemp("lake") / "outside_orders")
    frame = spark.createDataFrame(
        [(1, 10, "eu", 1), (2, 30, "us", 1)], "order_id int, amount int, region string, ts int"
    )
    write_hudi(
        frame,
        path,
        {
            "hoodie.table.name": "outside_orders",
            "hoodie.datasource.write.recordkey.field": "order_id",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "upsert",
        },
    )
    return path


class TestViewsOverHudi:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"orders_seed.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self, outside_table: str) -> dict[str, str]:
        return {
            "orders.sql": ORDERS_SQL,
            "orders_mor.sql": ORDERS_MOR_SQL,
            "big_orders.sql": BIG_ORDERS_SQL,
            "big_mor.sql": BIG_MOR_SQL,
            "mid_ephemeral.sql": EPHEMERAL_SQL,
            "mid_orders.sql": MID_ORDERS_SQL,
            "mid_total.sql": MID_TOTAL_SQL,
            "source_orders.sql": SOURCE_VIEW_SQL,
            "schema.yml": SCHEMA_YML,
            "sources.yml": _sources_yml(outside_table),
        }

    @pytest.fixture(scope="class")
    def tests(self) -> dict[str, str]:
        return {"mid_orders_over_20.sql": SINGULAR_TEST}

    def test_views_over_hudi_models_build_and_read_the_latest_commit(
        self, project: Any, spark: Any, outside_table: str
    ) -> None:
        schema = project.test_schema
        run_dbt(["build"])  # seeds, Hudi models, the views and their tests, the table
        assert spark_rows(spark, f"select * from {schema}.mid_total", ["n", "total"]) == [(2, 65)]
        # the ref() of a view over Hudi models is its session view, live in this session
        assert _view_rows(spark, schema, "big_orders") == [(2, 25), (3, 40), (4, 55)]
        assert _view_rows(spark, schema, "source_orders", ["order_id"]) == [(2,)]

        # other pipelines commit to both Hudi models and the source
        orders = base_path_of(spark, schema, "orders")
        _outside_commit(spark, orders, [(1, 30, "eu", 2), (3, 5, "eu", 2)])
        _outside_commit(spark, base_path_of(spark, schema, "orders_mor"), [(1, 30, "eu", 2)])
        _outside_commit(spark, outside_table, [(3, 90, "eu", 2)])
        assert hudi_rs_rows(orders, ["order_id", "amount"]) == [(1, 30), (2, 25), (3, 5), (4, 55)]
        run_dbt(["run", "-s", "mid_total"])
        assert spark_rows(spark, f"select * from {schema}.mid_total", ["n", "total"]) == [(2, 55)]
        assert _view_rows(spark, schema, "big_orders") == [(1, 30), (2, 25), (4, 55)]
        assert _view_rows(spark, schema, "source_orders", ["order_id"]) == [(2,), (3,)]

        # a fresh process: the session views come from the catalog alone
        _forget_session(spark)
        _outside_commit(spark, orders, [(2, 21, "us", 3)])
        run_dbt(["run", "-s", "mid_total"])
        assert spark_rows(spark, f"select * from {schema}.mid_total", ["n", "total"]) == [(2, 51)]
        shown = run_dbt(["show", "--select", "big_orders"])[0].agate_table
        assert sorted(tuple(r) for r in shown.rows) == [(1, 30), (2, 21), (4, 55)]
        inline = "select count(*) as n from {{ ref('mid_orders') }}"
        assert [tuple(r) for r in run_dbt(["show", "--inline", inline])[0].agate_table.rows] == [
            (2,)
        ]

    def test_catalog_view_refuses_reads_outside_dbt_naming_the_base_path(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        orders = base_path_of(spark, schema, "orders")
        table = spark.catalog.getTable(f"{schema}.big_orders")
        assert table.tableType == "VIEW"
        for sql in (
            f"select * from {schema}.big_orders",
            f"select * from {schema}.big_orders where amount > 30",  # no constant folding
            f"select count(*) from {schema}.mid_orders",
            f"select * from {schema}.orders where order_id = 1",
        ):
            with pytest.raises(Exception, match="is a Hudi table at") as raised:
                spark.sql(sql).collect()
            assert "engine.read_hudi" in str(raised.value)
        with pytest.raises(Exception, match="is a Hudi table at") as raised:
            spark.sql(f"select * from {schema}.source_orders").collect()
        assert orders not in str(raised.value)  # the source's own path is named
        with pytest.raises(Exception, match="is a Hudi table at") as raised:
            spark.sql(f"select * from {schema}.big_orders").collect()
        assert orders in str(raised.value)

    def test_docs_and_ls_show_the_views_as_views(self, project: Any) -> None:
        run_dbt(["docs", "generate"])
        catalog = json.loads(Path(project.project_root, "target", "catalog.json").read_text())
        node = catalog["nodes"]["model.test.big_orders"]
        assert node["metadata"]["type"].lower() == "view"
        assert set(node["columns"]) == {"order_id", "amount"}
        _, log = run_dbt_and_capture(
            ["ls", "-s", "big_orders", "--output", "json", "--output-keys", "config"]
        )
        assert '"materialized": "view"' in log

    def test_session_names_render_for_ref_and_catalog_names_for_ddl(self, project: Any) -> None:
        schema = project.test_schema
        compiled = next(Path(project.project_root, "target", "run").rglob("mid_orders.sql"))
        text = compiled.read_text()
        assert f"create or replace view {schema}.mid_orders" in text
        assert f"`{schema}`.`big_mor`" in text  # the catalog view's text: catalog names
        assert "'dbt_hudi.session_view'" in text  # the session view's definition, kept
        downstream = next(Path(project.project_root, "target", "compiled").rglob("mid_total.sql"))
        assert f"`{format_hudi_view_name(schema, 'mid_orders')}`" in downstream.read_text()


def _view_rows(
    spark: Any, schema: str, identifier: str, columns: list[str] | None = None
) -> list[tuple[Any, ...]]:
    """The rows of a view model read as ``ref()`` reads it in a dbt session."""
    from dbt.adapters.hudi.views import ensure_hudi_views

    name = format_hudi_view_name(schema, identifier)
    HUDI_VIEWS[name] = (schema, identifier)  # as rendering ref() records it
    ensure_hudi_views([name], {})
    columns = columns or ["order_id", "amount"]
    return spark_rows(spark, f"select * from `{name}`", columns)
