"""hudi_mor's default index: a new table keyed within its partitions gets Hudi's bucket index
(persisted, file ids carrying Java's bucket of every key); a model naming an index keeps it;
a table written with SIMPLE before the default changed is continued on SIMPLE. hudi-rs reads
every table after every run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from engine.write.bucket_index import bucket_id, bucket_of_file_id
from tests import hudi_rs
from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEEDS = [
    "id,v,ts\n" + "".join(f"{i},a{i},1\n" for i in range(12)),
    "id,v,ts\n" + "".join(f"{i},b{i},2\n" for i in range(8, 20)),  # 4 updates, 8 inserts
    "id,v,ts\n" + "".join(f"{i},c{i},3\n" for i in range(0, 24, 3)),  # updates and inserts
]
MODEL = """
{{{{ config(materialized='hudi_mor', unique_key='id', precombine_key='ts'{extra}) }}}}
select cast(id as string) as id, v, ts from {{{{ ref('rows_seed') }}}}
"""
LEGACY = """
{{ config(materialized='hudi_mor', unique_key='id', precombine_key='ts',
          index_type=var('legacy_index', none)) }}
select cast(id as string) as id, v, ts from {{ ref('rows_seed') }}
"""


def expected_after(runs: int) -> list[tuple[str, str]]:
    rows: dict[str, str] = {}
    for seed in SEEDS[:runs]:
        for line in seed.splitlines()[1:]:
            key, value, _ = line.split(",")
            rows[key] = value
    return sorted(rows.items())


class TestHudiMorDefaultIndex:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"rows_seed.csv": SEEDS[0]}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "by_default.sql": MODEL.format(extra=""),
            "pinned.sql": MODEL.format(extra=", index_type='SIMPLE'"),
            "legacy.sql": LEGACY,
        }

    def test_bucket_by_default_explicit_index_wins_simple_tables_continue(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        for run in range(1, len(SEEDS) + 1):
            Path(project.project_root, "seeds", "rows_seed.csv").write_text(SEEDS[run - 1])
            run_dbt(["seed"])
            # the first run writes 'legacy' with SIMPLE, as before the default changed
            args = ["--vars", "{legacy_index: SIMPLE}"] if run == 1 else []
            run_dbt(["run", *args])
            for model in ("by_default", "pinned", "legacy"):
                base = base_path_of(spark, schema, model)
                assert hudi_rs_rows(base, ["id", "v"]) == expected_after(run), (model, run)
            default = base_path_of(spark, schema, "by_default")
            props = read_properties(Storage(default))
            assert props["hoodie.index.type"] == "BUCKET"
            assert props["hoodie.bucket.index.num.buckets"] == "4"
            for row in hudi_rs.hudi_rs_rows(default):
                key, file_name = row["_hoodie_record_key"], row["_hoodie_file_name"]
                assert bucket_of_file_id(file_name) == bucket_id(key, ("id",), 4), row
            for model in ("pinned", "legacy"):
                props = read_properties(Storage(base_path_of(spark, schema, model)))
                assert "hoodie.index.type" not in props, model  # SIMPLE: nothing persisted
