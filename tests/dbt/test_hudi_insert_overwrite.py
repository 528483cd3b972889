"""hudi_insert_overwrite: replacecommits of touched partitions or of the whole table, on the
default index and on Hudi's bucket index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from engine.write.bucket_index import bucket_id, bucket_of_file_id
from tests import hudi_rs
from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED_V1 = """id,day,amount
1,d1,10
2,d1,20
3,d2,30
4,d3,40
"""
# d1 recomputed (id 2 gone, id 5 new), d2/d3 absent: a partition overwrite keeps them
SEED_V2 = """id,day,amount
1,d1,11
5,d1,50
"""
BY_DAY_SQL = """
{{ config(materialized='hudi_insert_overwrite', unique_key='id', partition_by='day') }}
select id, day, amount from {{ ref('sales_seed') }}
"""
WHOLE_SQL = """
{{ config(materialized='hudi_insert_overwrite', unique_key='id') }}
select id, day, amount from {{ ref('sales_seed') }}
"""
BUCKET_SQL = """
{{ config(materialized='hudi_insert_overwrite', unique_key='id', partition_by='day',
          index_type='BUCKET', buckets=2) }}
select id, day, amount from {{ ref('sales_seed') }}
"""
COLUMNS = ["id", "day", "amount"]
EXPECTED_V1 = [(1, "d1", 10), (2, "d1", 20), (3, "d2", 30), (4, "d3", 40)]


class TestHudiInsertOverwrite:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"sales_seed.csv": SEED_V1}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sales_by_day.sql": BY_DAY_SQL,
            "sales_whole.sql": WHOLE_SQL,
            "sales_by_day_bucket.sql": BUCKET_SQL,
        }

    def test_hudi_insert_overwrite_partitions_and_table(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        run_dbt(["seed"])
        run_dbt(["run"])
        by_day = base_path_of(spark, schema, "sales_by_day")
        whole = base_path_of(spark, schema, "sales_whole")
        bucket = base_path_of(spark, schema, "sales_by_day_bucket")
        for base in (by_day, whole, bucket):
            assert hudi_rs_rows(base, COLUMNS) == EXPECTED_V1

        Path(project.project_root, "seeds", "sales_seed.csv").write_text(SEED_V2)
        run_dbt(["seed"])
        _, log = run_dbt_and_capture(["run"])
        assert "insert_overwrite committed" in log and "insert_overwrite_table committed" in log
        expected_by_day = [(1, "d1", 11), (3, "d2", 30), (4, "d3", 40), (5, "d1", 50)]
        assert hudi_rs_rows(by_day, COLUMNS) == expected_by_day
        assert spark_rows(spark, f"select * from {schema}.sales_by_day", COLUMNS) == expected_by_day
        expected_whole = [(1, "d1", 11), (5, "d1", 50)]
        assert hudi_rs_rows(whole, COLUMNS) == expected_whole
        assert spark_rows(spark, f"select * from {schema}.sales_whole", COLUMNS) == expected_whole
        # the bucket-index table: partition d1 overwritten by new file groups named by bucket
        assert hudi_rs_rows(bucket, COLUMNS) == expected_by_day
        for row in hudi_rs.hudi_rs_rows(bucket):
            key, file_name = row["_hoodie_record_key"], row["_hoodie_file_name"]
            assert bucket_of_file_id(file_name) == bucket_id(key, ("id",), 2), row
        for base in (by_day, whole, bucket):
            assert [a for _, a in completed_instants(base)][-1] == "replacecommit"
