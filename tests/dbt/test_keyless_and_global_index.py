"""A keyless aggregate, and a key whose partition value changes, over two dbt runs.

- ``hudi_insert_overwrite`` with only ``partition_by``: an aggregate model has no key; Hudi's
  auto-generated record keys are written, and the second run replaces the partitions it touches.
- A partitioned ``hudi_upsert`` (dbt's default: the global index, keys move) and a ``hudi_mor``
  with ``hoodie.simple.index.update.partition.path: false`` (keys are updated in place): customer
  1 changes region between the runs and is never duplicated.
- A ``hudi_mor`` on Hudi's global bloom index (``index_type='global_bloom'``): the moving key is
  found through the footers' key ranges and bloom filters, and moves.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED_V1 = """id,region,day,amount
1,eu,d1,10
2,eu,d1,20
3,us,d2,30
"""
# customer 1 moves to us; d1 is recomputed, d2 left alone
SEED_V2 = """id,region,day,amount
1,us,d1,15
"""
TOTALS_SQL = """
{{ config(materialized='hudi_insert_overwrite', partition_by='day') }}
select day, sum(amount) as total, count(*) as n from {{ ref('customers_seed') }} group by day
"""
MOVES_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', partition_by='region') }}
select id, region, amount from {{ ref('customers_seed') }}
"""
IN_PLACE_SQL = """
{{ config(materialized='hudi_mor', unique_key='id', partition_by='region',
          hudi_options={'hoodie.simple.index.update.partition.path': 'false'}) }}
select id, region, amount from {{ ref('customers_seed') }}
"""
BLOOM_SQL = """
{{ config(materialized='hudi_mor', unique_key='id', partition_by='region',
          index_type='global_bloom') }}
select id, region, amount from {{ ref('customers_seed') }}
"""
AUTO_KEY = re.compile(r"^\d{17}_\d+_\d+$")


class TestKeylessAndGlobalIndex:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"customers_seed.csv": SEED_V1}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "daily_totals.sql": TOTALS_SQL,
            "customers.sql": MOVES_SQL,
            "customers_in_place.sql": IN_PLACE_SQL,
            "customers_bloom.sql": BLOOM_SQL,
        }

    def test_keyless_aggregate_and_keys_changing_partition(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        run_dbt(["seed"])
        run_dbt(["run"])
        totals = base_path_of(spark, schema, "daily_totals")
        moves = base_path_of(spark, schema, "customers")
        in_place = base_path_of(spark, schema, "customers_in_place")
        bloom = base_path_of(spark, schema, "customers_bloom")
        assert hudi_rs_rows(totals, ["day", "total", "n"]) == [("d1", 30, 2), ("d2", 30, 1)]
        first_keys = {k for (k,) in hudi_rs_rows(totals, ["_hoodie_record_key"])}
        assert all(AUTO_KEY.match(k) for k in first_keys)
        assert (
            "hoodie.table.recordkey.fields"
            not in (Path(totals) / ".hoodie" / "hoodie.properties").read_text()
        )

        # seeds replace their table: the second run reads only SEED_V2
        Path(project.project_root, "seeds", "customers_seed.csv").write_text(SEED_V2)
        run_dbt(["seed"])
        run_dbt(["run"])
        assert hudi_rs_rows(totals, ["day", "total", "n"]) == [("d1", 15, 1), ("d2", 30, 1)]
        d1_key = [k for d, k in hudi_rs_rows(totals, ["day", "_hoodie_record_key"]) if d == "d1"]
        assert d1_key[0] not in first_keys and AUTO_KEY.match(d1_key[0])

        cols = ["id", "region", "amount", "_hoodie_partition_path"]
        assert hudi_rs_rows(moves, cols) == [
            (1, "us", 15, "region=us"),
            (2, "eu", 20, "region=eu"),
            (3, "us", 30, "region=us"),
        ]
        assert hudi_rs_rows(in_place, cols) == [
            (1, "us", 15, "region=eu"),
            (2, "eu", 20, "region=eu"),
            (3, "us", 30, "region=us"),
        ]
        assert hudi_rs_rows(bloom, cols) == hudi_rs_rows(moves, cols)
