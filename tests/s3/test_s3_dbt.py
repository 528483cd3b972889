"""dbt with ``hudi_base_path: s3://bucket/lake`` in the profile: the three materializations and
``ref()`` on tables of the local S3 server, each table read back through hudi-rs."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.fixtures.project import *  # noqa: F403  (the dbt-tests-adapter fixtures)
from dbt.tests.util import run_dbt

from tests.dbt.conftest import RUNTIME_PARAMETERS
from tests.hudi_rs import hudi_rs_rows
from tests.s3.server import S3Server

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED = """id,region,amount,updated_at
1,eu,10,1
2,us,20,1
3,eu,30,1
"""
UPSERT_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', partition_by='region',
          precombine_key='updated_at') }}
select id, region, amount, updated_at from {{ ref('seed_rows') }}
"""
MOR_SQL = """
{{ config(materialized='hudi_mor', unique_key='id', precombine_key='updated_at') }}
select id, region, amount * 2 as amount, updated_at from {{ ref('upserted') }}
"""
OVERWRITE_SQL = """
{{ config(materialized='hudi_insert_overwrite', unique_key='id', partition_by='region',
          precombine_key='updated_at') }}
select id, region, amount + 1 as amount, updated_at from {{ ref('merged') }}
"""
SUMMARY_SQL = """
{{ config(materialized='table') }}
select region, sum(amount) as amount from {{ ref('overwritten') }} group by region
"""


class TestDbtOnS3:
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, spark: Any, s3: S3Server) -> dict[str, Any]:
        return {
            "type": "hudi",
            "method": "session",
            "host": "localhost",
            "threads": 1,
            "hudi_base_path": f"s3://{s3.bucket}/lake",
            "server_side_parameters": dict(RUNTIME_PARAMETERS),
        }

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"seed_rows.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "upserted.sql": UPSERT_SQL,
            "merged.sql": MOR_SQL,
            "overwritten.sql": OVERWRITE_SQL,
            "summary.sql": SUMMARY_SQL,
        }

    def test_three_materializations_and_ref_on_s3(
        self, project: Any, spark: Any, s3: S3Server
    ) -> None:
        schema = project.test_schema
        run_dbt(["seed"])
        results = run_dbt(["run"])
        assert len(results) == 4
        lake = f"s3://{s3.bucket}/lake/{schema}"
        amounts = {"upserted": [10, 20, 30], "merged": [20, 40, 60], "overwritten": [21, 41, 61]}
        for model, expected in amounts.items():
            rows = hudi_rs_rows(f"{lake}/{model}")
            assert sorted(int(r["amount"]) for r in rows) == expected, model
        summary = {
            r["region"]: int(r["amount"])
            for r in spark.sql(f"select * from {schema}.summary").collect()
        }
        assert summary == {"eu": 21 + 61, "us": 41}
        # no S3A connector here: the catalog name says how to read the table instead of guessing
        with pytest.raises(Exception, match=r"ref\(\) or hudi_snapshot\(\)"):
            spark.sql(f"select * from {schema}.upserted").collect()
        run_dbt(["run"])  # a second run upserts into the same S3 tables
        assert len(hudi_rs_rows(f"{lake}/upserted")) == 3
