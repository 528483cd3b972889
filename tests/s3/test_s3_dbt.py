"""dbt with ``hudi_base_path: s3://bucket/lake`` in the profile: the three materializations and
``ref()`` on tables of the local S3 server, each table read back through hudi-rs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.fixtures.project import *  # noqa: F403  (the dbt-tests-adapter fixtures)
from dbt.tests.util import run_dbt

from tests.dbt.conftest import RUNTIME_PARAMETERS
from tests.hudi_rs import hudi_rs_rows
from tests.s3.server import REGION, S3Server

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


def s3_profile(base_path: str, conf: dict[str, str]) -> dict[str, Any]:
    """A ``method: session`` profile with its tables under ``base_path`` and ``conf`` beside the
    test session's runtime settings."""
    return {
        "type": "hudi",
        "method": "session",
        "host": "localhost",
        "threads": 1,
        "hudi_base_path": base_path,
        "server_side_parameters": {**RUNTIME_PARAMETERS, **conf},
    }


class SeededProject:
    """A dbt test project with the seed rows every class here reads."""

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"seed_rows.csv": SEED}


class TestDbtOnS3(SeededProject):
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, spark: Any, s3: S3Server) -> dict[str, Any]:
        return s3_profile(f"s3://{s3.bucket}/lake", {})

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
        # the catalog entry says how to read the table instead of answering from a file list
        with pytest.raises(Exception, match=r"engine.read_hudi\(spark, 's3://"):
            spark.sql(f"select * from {schema}.upserted").collect()
        if os.environ.get("HUDI_TEST_LONG"):
            run_dbt(["run"])  # a second run upserts into the same S3 tables
            assert len(hudi_rs_rows(f"{lake}/upserted")) == 3


MERGED_SUMMARY_SQL = """
{{ config(materialized='table') }}
select region, sum(amount) as amount from {{ ref('merged') }} group by region
"""
NO_ENV = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
)


class TestDbtOnS3WithCredentialsInSparkConf(SeededProject):
    """The S3 endpoint and credentials are given only as ``spark.hadoop.fs.s3a.*`` in the
    profile: every adapter path that opens the table (write, publish, ``ref()``'s snapshot view,
    run-operations, the catalog's figures) must take them from the session."""

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, spark: Any, s3: S3Server) -> Iterator[dict[str, Any]]:
        conf = {f"spark.hadoop.{k}": v for k, v in s3.s3a_options.items()}
        conf["spark.hadoop.fs.s3a.endpoint.region"] = REGION
        yield s3_profile(f"s3://{s3.bucket}/conf_lake", conf)
        for key in conf:  # the session is shared with later tests
            spark.conf.unset(key)

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "upserted.sql": UPSERT_SQL,
            "merged.sql": MOR_SQL,
            "summary.sql": MERGED_SUMMARY_SQL,
        }

    def test_ref_catalog_and_services_without_aws_environment(
        self, project: Any, spark: Any, s3: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
    ) -> None:
        schema = project.test_schema
        with monkeypatch.context() as m:
            for key in NO_ENV:
                m.delenv(key, raising=False)
            m.setenv("HOME", str(tmp_path))  # no ~/.aws profile either
            run_dbt(["seed"])
            assert len(run_dbt(["run"])) == 3
            run_dbt(["run-operation", "hudi_clean", "--args", "{relation: upserted}"])
            run_dbt(["docs", "generate"])
            with pytest.raises(Exception, match="is a Hudi table at s3://"):
                spark.sql(f"select * from {schema}.upserted").collect()
        lake = f"s3://{s3.bucket}/conf_lake/{schema}"
        assert sorted(int(r["amount"]) for r in hudi_rs_rows(f"{lake}/upserted")) == [10, 20, 30]
        assert sorted(int(r["amount"]) for r in hudi_rs_rows(f"{lake}/merged")) == [20, 40, 60]
        summary = {
            r["region"]: int(r["amount"])
            for r in spark.sql(f"select * from {schema}.summary").collect()
        }
        assert summary == {"eu": 20 + 60, "us": 40}
        catalog = json.loads(Path(project.project_root, "target", "catalog.json").read_text())
        assert catalog["nodes"]["model.test.upserted"]["stats"]["hudi_rows"]["value"] == 3
