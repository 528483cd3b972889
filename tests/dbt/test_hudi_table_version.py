"""hudi_options={'hoodie.write.table.version': '9'}: the three materializations write Hudi 1.1
tables (timeline layout 2), a second run continues them, hudi-rs and downstream models read them.

On the same tables, ``index_type='RECORD_INDEX'`` models (hudi_upsert and hudi_mor) look their
keys up in the metadata table's record index, kept by every run: a key whose partition changes
moves (dbt's unique_key is unique in the table), and the index maps exactly the rows' keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from engine.timeline.timeline import Timeline
from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows, spark_rows
from tests.interop.index_partitions import record_index_matches_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED_V1 = """id,region,amount,ts
1,eu,10,100
2,us,20,100
4,eu,40,100
"""
SEED_V2 = """id,region,amount,ts
1,eu,11,200
3,eu,30,200
"""
OPTIONS = "hudi_options={'hoodie.write.table.version': '9'}"
UPSERT_SQL = f"""
{{{{ config(materialized='hudi_upsert', unique_key='id', partition_by='region',
          precombine_key='ts', {OPTIONS}) }}}}
select id, region, amount, ts from {{{{ ref('orders_seed') }}}}
"""
OVERWRITE_SQL = f"""
{{{{ config(materialized='hudi_insert_overwrite', unique_key='id', partition_by='region',
          {OPTIONS}) }}}}
select id, region, amount, ts from {{{{ ref('orders_seed') }}}}
"""
MOR_SQL = f"""
{{{{ config(materialized='hudi_mor', unique_key='id', partition_by='region',
          precombine_key='ts', {OPTIONS}) }}}}
select id, region, amount, ts from {{{{ ref('orders_seed') }}}}
"""
DOWNSTREAM_SQL = """
{{ config(materialized='table') }}
select id, region, amount from {{ ref('orders_mor') }}
"""
RECORD_INDEX_SQL = """
{{{{ config(materialized='{}', unique_key='id', partition_by='region', precombine_key='ts',
          index_type='RECORD_INDEX', hudi_options={{'hoodie.write.table.version': '9'}}) }}}}
select id, region, amount, ts from {{{{ ref('moves_seed') }}}}
"""
MOVES_V2 = """id,region,amount,ts
1,us,11,200
3,eu,30,200
"""
RECORD_INDEX_MODELS = ("moves_rli_upsert", "moves_rli_mor")
MOVED = [(1, "us", 11), (2, "us", 20), (3, "eu", 30), (4, "eu", 40)]
COLUMNS = ["id", "region", "amount"]
V1 = [(1, "eu", 10), (2, "us", 20), (4, "eu", 40)]
UPSERTED = [(1, "eu", 11), (2, "us", 20), (3, "eu", 30), (4, "eu", 40)]
# insert overwrite replaces the partitions the batch touches (eu: 4 is gone), us stays
OVERWRITTEN = [(1, "eu", 11), (2, "us", 20), (3, "eu", 30)]


def _layout_2(base: str) -> None:
    props = read_properties(Storage(base))
    assert props["hoodie.table.version"] == "9"
    assert props["hoodie.timeline.layout.version"] == "2"
    timeline = Timeline.load(Storage(base))
    assert timeline.commits_timeline()
    assert all(i.completion_time for i in timeline.commits_timeline())


class TestHudiTableVersion9:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"orders_seed.csv": SEED_V1, "moves_seed.csv": SEED_V1}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "orders_upsert.sql": UPSERT_SQL,
            "orders_overwrite.sql": OVERWRITE_SQL,
            "orders_mor.sql": MOR_SQL,
            "orders_downstream.sql": DOWNSTREAM_SQL,
            "moves_rli_upsert.sql": RECORD_INDEX_SQL.format("hudi_upsert"),
            "moves_rli_mor.sql": RECORD_INDEX_SQL.format("hudi_mor"),
        }

    def test_three_materializations_write_and_continue_version_9(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        run_dbt(["seed"])
        run_dbt(["run"])
        bases = {m: base_path_of(spark, schema, m) for m in ("orders_upsert", "orders_overwrite",
                                                              "orders_mor")}  # fmt: skip
        for base in bases.values():
            _layout_2(base)
            assert hudi_rs_rows(base, COLUMNS) == V1

        record_index = [base_path_of(spark, schema, m) for m in RECORD_INDEX_MODELS]
        for base in record_index:
            listed = read_properties(Storage(base))["hoodie.table.metadata.partitions"]
            assert listed == "files,record_index"
            assert hudi_rs_rows(base, COLUMNS) == V1
            record_index_matches_rows(base)

        Path(project.project_root, "seeds", "orders_seed.csv").write_text(SEED_V2)
        Path(project.project_root, "seeds", "moves_seed.csv").write_text(MOVES_V2)
        run_dbt(["seed"])
        run_dbt(["run"])
        assert hudi_rs_rows(bases["orders_upsert"], COLUMNS) == UPSERTED
        assert hudi_rs_rows(bases["orders_overwrite"], COLUMNS) == OVERWRITTEN
        assert hudi_rs_rows(bases["orders_mor"], COLUMNS) == UPSERTED
        for base in bases.values():
            _layout_2(base)
        downstream = spark_rows(spark, f"select * from {schema}.orders_downstream", COLUMNS)
        assert downstream == UPSERTED
        for base in record_index:  # key 1 moved from eu to us, never duplicated
            assert hudi_rs_rows(base, COLUMNS) == MOVED
            record_index_matches_rows(base)
