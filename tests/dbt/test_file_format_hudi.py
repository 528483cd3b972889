"""A dbt-spark project with ``file_format='hudi'`` run unchanged with ``type: hudi``.

One project, two runs against a changing Hudi seed: ``table``, the three incremental strategies
(merge on a merge-on-read table, insert_overwrite, append), Hudi's Spark SQL ``options``, a
non-Hudi model beside them (dbt-spark's own materialization), then a contradicting option.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from engine import HudiTable
from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED_V1 = """id,name,region,amount,updated_at
1,alice,eu,10.5,1
2,bob,us,20.0,1
3,carol,eu,30.25,1
"""
# id 1 updated (eu), id 4 new (eu); region us absent, id 3 absent
SEED_V2 = """id,name,region,amount,updated_at
1,alice,eu,11.5,2
4,dave,eu,40.0,2
"""
PROJECT = {
    "name": "file_format_hudi",
    "seeds": {"+file_format": "hudi", "+options": {"primaryKey": "id"}},
}
SELECT = "select id, name, region, amount, updated_at from {{ ref('customers') }}"
TABLE_SQL = (
    "{{ config(materialized='table', file_format='hudi',"
    " options={'type': 'cow', 'primaryKey': 'id', 'preCombineField': 'updated_at'}) }}\n" + SELECT
)
MERGE_SQL = (
    "{{ config(materialized='incremental', file_format='hudi', incremental_strategy='merge',"
    " unique_key='id', partition_by=['region'],"
    " options={'type': 'mor', 'preCombineField': 'updated_at'}) }}\n" + SELECT
)
MERGE_CONTRADICTING_SQL = MERGE_SQL.replace(
    "'preCombineField': 'updated_at'", "'preCombineField': 'amount'"
)
OVERWRITE_SQL = (
    "{{ config(materialized='incremental', file_format='hudi',"
    " incremental_strategy='insert_overwrite', partition_by='region',"
    " options={'primaryKey': 'id'}) }}\n" + SELECT
)
APPEND_SQL = (
    "{{ config(materialized='incremental', file_format='hudi', unique_key='id') }}\n" + SELECT
)
PARQUET_SQL = (
    "{{ config(materialized='table') }}\n"
    "select region, count(*) as n from {{ ref('cust_merge') }} group by region"
)
COLUMNS = ["id", "name", "region", "amount"]
V1 = [(1, "alice", "eu", 10.5), (2, "bob", "us", 20.0), (3, "carol", "eu", 30.25)]
V2 = [(1, "alice", "eu", 11.5), (4, "dave", "eu", 40.0)]


class TestFileFormatHudi:
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return PROJECT

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"customers.csv": SEED_V1}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "cust_table.sql": TABLE_SQL,
            "cust_merge.sql": MERGE_SQL,
            "cust_overwrite.sql": OVERWRITE_SQL,
            "cust_append.sql": APPEND_SQL,
            "by_region.sql": PARQUET_SQL,
        }

    def test_file_format_hudi_two_runs_strategies_and_reseed(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        run_dbt(["seed"])
        seed_base = base_path_of(spark, schema, "customers")
        assert hudi_rs_rows(seed_base, COLUMNS) == V1
        results = run_dbt(["run"])
        assert len(results) == 5
        bases = {m: base_path_of(spark, schema, m) for m in _HUDI_MODELS}
        for model, base in bases.items():
            assert hudi_rs_rows(base, COLUMNS) == V1, model
        assert HudiTable(bases["cust_merge"]).table_type() == "MERGE_ON_READ"
        props = HudiTable(bases["cust_table"]).properties()
        assert props["hoodie.table.recordkey.fields"] == "id"
        assert props["hoodie.table.precombine.field"] == "updated_at"

        Path(project.project_root, "seeds", "customers.csv").write_text(SEED_V2)
        _, log = run_dbt_and_capture(["seed"])
        assert hudi_rs_rows(seed_base, COLUMNS) == V2  # a re-seed overwrites
        assert [a for _, a in completed_instants(seed_base)] == ["commit"]
        run_dbt(["run"])
        assert hudi_rs_rows(bases["cust_table"], COLUMNS) == V2
        # merge: upsert by id (1 updated, 4 inserted, 2 and 3 kept)
        merged = [V2[0], V1[1], V1[2], V2[1]]
        assert hudi_rs_rows(bases["cust_merge"], COLUMNS) == sorted(merged)
        assert [a for _, a in completed_instants(bases["cust_merge"])] == ["deltacommit"] * 2
        # insert_overwrite: partition eu replaced, us untouched
        assert hudi_rs_rows(bases["cust_overwrite"], COLUMNS) == sorted([V1[1], *V2])
        assert [a for _, a in completed_instants(bases["cust_overwrite"])][-1] == "replacecommit"
        # append: inserts, the old version of id 1 stays
        assert hudi_rs_rows(bases["cust_append"], COLUMNS) == sorted(V1 + V2)
        # dbt-spark's own table reads the merge-on-read snapshot
        assert spark_rows(spark, f"select * from {schema}.by_region", ["region", "n"]) == [
            ("eu", 3),
            ("us", 1),
        ]

        # options persist: a later run contradicting them is an error, the table untouched
        path = Path(project.project_root, "models", "cust_merge.sql")
        before = completed_instants(bases["cust_merge"])
        path.write_text(MERGE_CONTRADICTING_SQL)
        try:
            _, log = run_dbt_and_capture(["run", "-s", "cust_merge"], expect_pass=False)
        finally:
            path.write_text(MERGE_SQL)
        assert "hoodie.table.precombine.field" in log and "'updated_at'" in log, log
        assert completed_instants(bases["cust_merge"]) == before
        assert hudi_rs_rows(bases["cust_merge"], COLUMNS) == sorted(merged)


_HUDI_MODELS = ("cust_table", "cust_merge", "cust_overwrite", "cust_append")
