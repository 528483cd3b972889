"""Clustering from dbt: a hudi_upsert model with ``cluster_every`` clusters itself on its
``cluster_by`` columns every N runs, and ``dbt run-operation hudi_cluster`` clusters it now;
downstream models and hudi-rs read the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

ORDERS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', partition_by='region',
          precombine_key='ts', cluster_every=2, cluster_by=['score', 'id'],
          cluster_layout='hilbert',
          hudi_options={'hoodie.parquet.small.file.limit': '0'}) }}
select id, score, region, ts from {{ ref('orders_seed') }}
"""
TOTAL_SQL = """
{{ config(materialized='table') }}
select id, score, region from {{ ref('orders') }}
"""
COLUMNS = ["id", "score", "region"]


def _seed(rows: list[tuple[int, int, str, int]]) -> str:
    return "id,score,region,ts\n" + "".join(f"{i},{s},{r},{t}\n" for i, s, r, t in rows)


V1 = [(1, 5, "eu", 1), (2, 3, "us", 1)]
V2 = [(3, 9, "eu", 2), (4, 1, "us", 2)]
V3 = [(1, 7, "eu", 3), (5, 2, "eu", 3)]


def _expected(*batches: list[tuple[int, int, str, int]]) -> list[tuple[Any, ...]]:
    rows: dict[int, tuple[Any, ...]] = {}
    for batch in batches:
        rows.update({i: (i, s, r) for i, s, r, _ in batch})
    return sorted(rows.values())


class TestHudiCluster:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"orders_seed.csv": _seed(V1)}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"orders.sql": ORDERS_SQL, "orders_total.sql": TOTAL_SQL}

    def test_model_clusters_itself_then_run_operation(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        seed = Path(project.project_root, "seeds", "orders_seed.csv")
        run_dbt(["seed"])
        run_dbt(["run", "-s", "orders"])
        base = base_path_of(spark, schema, "orders")
        seed.write_text(_seed(V2))
        run_dbt(["seed"])
        run_dbt(["run", "-s", "orders", "orders_total"])
        # two commits: the second run clustered the table inline
        assert [a for _, a in completed_instants(base)] == ["commit", "commit", "replacecommit"]
        assert hudi_rs_rows(base, COLUMNS) == _expected(V1, V2)
        assert spark_rows(spark, f"select * from {schema}.orders_total", COLUMNS) == _expected(
            V1, V2
        )

        seed.write_text(_seed(V3))
        run_dbt(["seed"])
        run_dbt(["run", "-s", "orders"])
        _, log = run_dbt_and_capture(
            ["run-operation", "hudi_cluster", "--args", "{relation: orders, strategy: z-order}"]
        )
        assert "clustering committed" in log
        actions = [a for _, a in completed_instants(base)]
        assert actions[-1] == "replacecommit" and actions.count("replacecommit") == 2
        assert hudi_rs_rows(base, COLUMNS) == _expected(V1, V2, V3)
        assert spark_rows(spark, f"select * from {schema}.orders", COLUMNS) == _expected(V1, V2, V3)
