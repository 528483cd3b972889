"""Hudi tables another pipeline writes, read from dbt: ``source()`` with ``external.file_format:
hudi``, ``USING hudi`` views in hooks and run-operations, ``dbt show`` on a source.

The tables are copies of Apache Hudi's table version 9 corpus tables (copy-on-write and
merge-on-read); between two runs "the other pipeline" upserts a row into each, and the second run
must read it.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.conftest import SHARED
from tests.dbt.hudi_checks import spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

TABLES = {"cow_txns": "cow__v9_txns_simple_meta", "mor_txns": "mor_avro__v9_txns_simple_meta"}
NEW_TXN = "TXN-900"


@pytest.fixture(scope="class")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Writable copies of the corpus tables, unzipped outside the repository."""
    if SHARED is None:
        pytest.skip("the Apache Hudi corpus (shared/corpus) is not on this machine")
    root = tmp_path_factory.mktemp("lake")
    paths = {}
    for name, corpus in TABLES.items():
        with zipfile.ZipFile(SHARED / "corpus" / "tables" / f"{corpus}.zip") as zf:
            zf.extractall(root / name)
        hits = sorted((p.parent for p in (root / name).rglob(".hoodie") if p.is_dir()), key=str)
        paths[name] = min(hits, key=lambda p: len(p.parts))
    yield paths


def _ids(path: Path) -> list[tuple[str]]:
    from tests.dbt.hudi_checks import hudi_rs_rows

    return hudi_rs_rows(str(path), ["txn_id"])


def _other_pipeline_upserts(spark: Any, path: Path) -> None:
    """Another writer commits one new transaction (a copy of an existing one, new key)."""
    from pyspark.sql import functions as F

    from engine import META_COLUMNS, read_hudi, write_hudi

    df = read_hudi(spark, str(path))
    row = df.drop(*[c for c in df.columns if c in META_COLUMNS]).limit(1)
    write_hudi(
        row.withColumn("txn_id", F.lit(NEW_TXN)),
        str(path),
        {"hoodie.datasource.write.operation": "upsert"},
    )


class TestHudiSources:
    @pytest.fixture(scope="class")
    def models(self, lake: dict[str, Path]) -> dict[str, str]:
        tables = "\n".join(
            f"      - name: {name}\n        external:\n"
            f"          location: '{path}'\n          file_format: hudi"
            for name, path in lake.items()
        )
        return {
            "sources.yml": f"version: 2\nsources:\n  - name: lake\n    tables:\n{tables}\n",
            "txns.sql": (
                "select 'cow' as t, txn_id from {{ source('lake', 'cow_txns') }}\n"
                "union all select 'mor' as t, txn_id from {{ source('lake', 'mor_txns') }}"
            ),
            "hooked.sql": "select count(*) as n from hook_txns",
        }

    @pytest.fixture(scope="class")
    def macros(self) -> dict[str, str]:
        return {
            "count_hudi.sql": (
                "{% macro count_hudi(path) %}\n"
                '  {% do run_query("create or replace temporary view op_txns using hudi'
                ' options (path \'" ~ path ~ "\')") %}\n'
                "  {% set n = run_query('select count(*) from op_txns').columns[0].values()[0] %}\n"
                "  {% do log('HUDI_COUNT=' ~ n, info=True) %}\n"
                "{% endmacro %}\n"
            )
        }

    @pytest.fixture(scope="class")
    def project_config_update(self, lake: dict[str, Path]) -> dict[str, Any]:
        return {
            "models": {"+materialized": "table"},
            "on-run-start": [
                "create or replace temporary view hook_txns using hudi"
                f" options (path '{lake['cow_txns']}')"
            ],
        }

    def test_sources_and_using_hudi_read_latest_snapshot(
        self, project: Any, spark: Any, lake: dict[str, Path]
    ) -> None:
        schema = project.test_schema
        cow, mor = _ids(lake["cow_txns"]), _ids(lake["mor_txns"])
        assert len(cow) == len(mor) == 12
        run_dbt(["run"])
        expected = sorted([("cow", i) for (i,) in cow] + [("mor", i) for (i,) in mor])
        assert spark_rows(spark, f"select * from {schema}.txns", ["t", "txn_id"]) == expected
        assert spark_rows(spark, f"select * from {schema}.hooked", ["n"]) == [(12,)]

        for path in lake.values():
            _other_pipeline_upserts(spark, path)
        assert len(_ids(lake["cow_txns"])) == len(_ids(lake["mor_txns"])) == 13
        run_dbt(["run"])
        expected += [("cow", NEW_TXN), ("mor", NEW_TXN)]
        assert spark_rows(spark, f"select * from {schema}.txns", ["t", "txn_id"]) == sorted(
            expected
        )
        assert spark_rows(spark, f"select * from {schema}.hooked", ["n"]) == [(13,)]

        _, log = run_dbt_and_capture(
            ["run-operation", "count_hudi", "--args", f"{{path: '{lake['mor_txns']}'}}"]
        )
        assert "HUDI_COUNT=13" in log
        _, log = run_dbt_and_capture(
            [
                "show",
                "--inline",
                "select txn_id from {{ source('lake', 'mor_txns') }} where txn_id = '"
                + NEW_TXN
                + "'",
            ]
        )
        assert NEW_TXN in log
