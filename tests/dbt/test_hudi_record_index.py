"""index_type='RECORD_INDEX': hudi_upsert and hudi_mor models on version 9 tables look their
keys up in the metadata table's record index, kept by every run; a key whose partition changes
moves (dbt's unique_key is unique in the table), and hudi-rs reads exactly the model's rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows
from tests.interop.index_partitions import record_index_matches_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED_V1 = """id,region,amount,ts
1,eu,10,100
2,us,20,100
"""
SEED_V2 = """id,region,amount,ts
1,us,11,200
3,eu,30,200
"""
CONFIG = (
    "unique_key='id', partition_by='region', precombine_key='ts', index_type='RECORD_INDEX', "
    "hudi_options={'hoodie.write.table.version': '9'}"
)
SQL = "select id, region, amount, ts from {{ ref('orders_seed') }}"
COLUMNS = ["id", "region", "amount"]


class TestHudiRecordIndex:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"orders_seed.csv": SEED_V1}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            f"orders_{m}.sql": f"{{{{ config(materialized='hudi_{m}', {CONFIG}) }}}}\n{SQL}\n"
            for m in ("upsert", "mor")
        }

    def test_record_index_models_move_keys_and_keep_the_index(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        run_dbt(["seed"])
        run_dbt(["run"])
        bases = [base_path_of(spark, schema, f"orders_{m}") for m in ("upsert", "mor")]
        for base in bases:
            listed = read_properties(Storage(base))["hoodie.table.metadata.partitions"]
            assert listed == "files,record_index"
            assert hudi_rs_rows(base, COLUMNS) == [(1, "eu", 10), (2, "us", 20)]
            record_index_matches_rows(base)

        Path(project.project_root, "seeds", "orders_seed.csv").write_text(SEED_V2)
        run_dbt(["seed"])
        run_dbt(["run"])
        for base in bases:  # key 1 moved from eu to us, never duplicated
            assert hudi_rs_rows(base, COLUMNS) == [(1, "us", 11), (2, "us", 20), (3, "eu", 30)]
            record_index_matches_rows(base)
