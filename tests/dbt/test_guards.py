"""Guards: a run that could not finish, would write where it must not, or would ignore part of its
config is refused before anything runs, with one error naming the model and the value, and the
table (files, timeline, rows) is exactly as it was. One project, built once, serves every guard."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows, table_state

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

SEED = """id,name,amount,region,updated_at
1,alice,10.5,eu,1
2,bob,20.0,us,1
3,carol,30.25,eu,1
"""
# the three materializations, each a few rows; {extra} is where a test adds config
UPSERT_SQL = """
{{{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='updated_at'{extra}) }}}}
select id, name, amount, region, updated_at from {{{{ ref('orders_seed') }}}}
"""
MOR_SQL = """
{{{{ config(materialized='hudi_mor', unique_key='id', partition_by='region',
            precombine_key='updated_at'{extra}) }}}}
select id, name, amount, region, updated_at from {{{{ ref('orders_seed') }}}}
"""
OVERWRITE_SQL = """
{{{{ config(materialized='hudi_insert_overwrite', unique_key='region',
            partition_by='region'{extra}) }}}}
select region, count(*) as orders from {{{{ ref('orders_seed') }}}} group by region
"""
MODELS = {"orders": UPSERT_SQL, "orders_mor": MOR_SQL, "by_region": OVERWRITE_SQL}
COLUMNS = {
    "orders": ["id", "name", "amount", "region"],
    "orders_mor": ["id", "name", "amount", "region"],
    "by_region": ["region", "orders"],
}
CONTRACT_YML = """
version: 2
models:
  - name: orders
    config:
      contract: {{enforced: true}}
    columns:
      - name: id
        data_type: bigint
        constraints: [{{type: not_null}}]
      - name: name
        data_type: string
      - name: amount
        data_type: {amount_type}
      - name: region
        data_type: string
      - name: updated_at
        data_type: bigint
"""


def _model(name: str, extra: str = "") -> str:
    return MODELS[name].format(extra=extra)


class TestGuards:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"orders_seed.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {f"{name}.sql": _model(name) for name in MODELS}

    @pytest.fixture(scope="class")
    def built(self, project: Any, spark: Any) -> dict[str, str]:
        """The three tables, written once; their base paths."""
        run_dbt(["seed"])
        run_dbt(["run"])
        return {name: base_path_of(spark, project.test_schema, name) for name in MODELS}

    @contextmanager
    def _configured(self, project: Any, changes: dict[str, str]) -> Iterator[None]:
        """Models (or yml files) replaced for one run, restored after."""
        paths = {Path(project.project_root, "models", n): text for n, text in changes.items()}
        before = {p: p.read_text() if p.exists() else None for p in paths}
        for p, text in paths.items():
            p.write_text(text)
        try:
            yield
        finally:
            for p, text in before.items():
                if text is None:
                    p.unlink()
                else:
                    p.write_text(text)

    def _refused(
        self, project: Any, built: dict[str, str], changes: dict[str, str], select: list[str]
    ) -> str:
        """Run ``select`` with ``changes``; it must fail and leave every table as it was."""
        states = {n: table_state(p, COLUMNS[n]) for n, p in built.items()}
        with self._configured(project, changes):
            _results, log = run_dbt_and_capture(["run", "-s", *select], expect_pass=False)
        for name, path in built.items():
            assert table_state(path, COLUMNS[name]) == states[name], name
        return log

    def test_grants_refused_before_the_write_on_every_materialization(
        self, project: Any, built: dict[str, str]
    ) -> None:
        # Spark's SQL has no GRANT (with any catalog): dbt would apply grants after the commit
        grants = ", grants={'select': ['analyst']}"
        log = self._refused(
            project,
            built,
            {f"{n}.sql": _model(n, grants) for n in MODELS},
            list(MODELS),
        )
        for name in MODELS:
            assert f"model '{name}' was not run, nothing was written" in log, name
        assert "grants: {select: ['analyst']} cannot be applied" in log
        assert "has no GRANT" in log
        assert log.count("has no GRANT") == 3

    def test_contract_mismatch_refused_with_dbts_message(
        self, project: Any, built: dict[str, str]
    ) -> None:
        log = self._refused(
            project,
            built,
            {"contract.yml": CONTRACT_YML.format(amount_type="int")},
            ["orders"],
        )
        assert "This model has an enforced contract that failed." in log
        assert "Compilation Error in model orders" in log
        # dbt's table of mismatches: the column, the SELECT's type, the contract's type
        row = next(line for line in log.splitlines() if line.strip().startswith("| amount"))
        assert [c.strip() for c in row.strip().strip("|").split("|")] == [
            "amount",
            "double",
            "int",
            "data type mismatch",
        ]

    def test_ignored_dbt_spark_configs_refused_each_named(
        self, project: Any, built: dict[str, str]
    ) -> None:
        changes = {
            "orders.sql": _model(
                "orders",
                ", incremental_strategy='append', merge_update_columns=['name'], clustered_by='id'",
            ),
            "orders_mor.sql": _model(
                "orders_mor", ", options={'type': 'mor'}, tblproperties={'a': 'b'}"
            ),
            "by_region.sql": _model("by_region", ", incremental_strategy='merge'"),
        }
        log = self._refused(project, built, changes, list(MODELS))
        for needle in (
            "incremental_strategy: 'append' is not applied by hudi_upsert",
            "merge_update_columns: ['name'] is not applied by hudi_upsert",
            "clustered_by: 'id' is not applied by hudi_upsert",
            "options: {'type': 'mor'} is not applied by hudi_mor",
            "tblproperties: {'a': 'b'} is not applied by hudi_mor",
            "incremental_strategy: 'merge' is not applied by hudi_insert_overwrite",
            "model 'orders'",
            "model 'orders_mor'",
            "model 'by_region'",
        ):
            assert needle in log, needle

    def test_location_not_a_hudi_table_refused_directory_untouched(
        self, project: Any, built: dict[str, str], tmp_path: Path
    ) -> None:
        landing = tmp_path / "landing"
        landing.mkdir()
        (landing / "export.csv").write_text("id\n1\n")
        extra = f", location='{landing}'"
        log = self._refused(
            project, built, {"by_region.sql": _model("by_region", extra)}, ["by_region"]
        )
        assert "model 'by_region'" in log
        assert f"location: {landing} is a non-empty directory that is not a Hudi table" in log
        assert "export.csv" in log
        assert sorted(p.name for p in landing.iterdir()) == ["export.csv"]
        # --full-refresh is refused the same way (it would move the directory aside)
        with self._configured(project, {"by_region.sql": _model("by_region", extra)}):
            _r, log = run_dbt_and_capture(
                ["run", "-s", "by_region", "--full-refresh"], expect_pass=False
            )
        assert f"location: {landing} is a non-empty directory" in log
        assert sorted(p.name for p in landing.iterdir()) == ["export.csv"]

    def test_what_the_guards_accept_runs(
        self, project: Any, spark: Any, built: dict[str, str]
    ) -> None:
        """The materialization's own strategy, empty grants and a contract the SELECT meets."""
        changes = {
            "orders.sql": _model("orders", ", incremental_strategy='merge', grants={}"),
            "by_region.sql": _model("by_region", ", incremental_strategy='insert_overwrite'"),
            "contract.yml": CONTRACT_YML.format(amount_type="double"),
        }
        with self._configured(project, changes):
            results, log = run_dbt_and_capture(["run", "-s", "orders", "by_region"])
        assert len(results) == 2
        assert (
            "Model 'orders': constraints are not enforced on Hudi tables, the data is not "
            "checked against them: not_null on id"
        ) in log
        assert hudi_rs_rows(built["orders"], COLUMNS["orders"]) == [
            (1, "alice", 10.5, "eu"),
            (2, "bob", 20.0, "us"),
            (3, "carol", 30.25, "eu"),
        ]
