"""A downstream model reads its upstream Hudi table as it is now, whoever wrote it last.

The steps a user takes: ``dbt run`` builds the Hudi models and their copies; another pipeline,
in its own process, upserts the upstream tables four times with a cleaner that retains one
commit (so every base file dbt's run saw is deleted); then ``dbt run -s <copies>`` runs alone.
Each copy must hold exactly the upstream's latest snapshot, as hudi-rs reads it: copy-on-write,
merge-on-read and a keyless insert-overwrite upstream. The same after the other writer compacts
and cleans through the ``dbt-hudi`` command. The catalog entry dbt publishes never answers
stale: an external session reading it gets an error naming the table and how to read it, and
``dbt docs generate`` lists its columns and its Hudi figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, rows_of

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

ORDERS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='ts') }}
select * from values (1, 'a', 10, 1), (2, 'b', 20, 1), (3, 'c', 30, 1), (4, 'd', 40, 1),
  (5, 'e', 50, 1), (6, 'f', 60, 1), (7, 'g', 70, 1) as t(id, name, amount, ts)
"""
EVENTS_SQL = """
{{ config(materialized='hudi_mor', unique_key='id', precombine_key='ts',
          compaction_delta_commits=10) }}
select * from values (1, 'a', 10, 1), (2, 'b', 20, 1), (3, 'c', 30, 1) as t(id, name, amount, ts)
"""
SALES_SQL = """
{{ config(materialized='hudi_insert_overwrite') }}
select * from values ('d1', 5), ('d2', 6) as t(day, amount)
"""
COPY_SQL = """
{{{{ config(materialized='table') }}}}
select {columns} from {{{{ ref('{upstream}') }}}}
"""
KEYED = ["id", "name", "amount"]
KEYED_SCHEMA = "id int, name string, amount int, ts int"
SALES = ["day", "amount"]
SALES_SCHEMA = "day string, amount int"
RETAIN_ONE = {"hoodie.cleaner.commits.retained": "1", "hoodie.clean.automatic": "true"}


def keyed_writes(path: str, names: str, after_ts: int = 1) -> list[dict[str, Any]]:
    """Four upserts: ids 1-3 updated each time, one new id each time; ordering values grow
    from ``after_ts``."""
    return [
        {
            "path": path,
            "schema": KEYED_SCHEMA,
            "rows": [(i, names[i % len(names)], 100 * k + i, after_ts + k) for i in (1, 2, 3)]
            + [(10 + k, "n", 100 * k, after_ts + k)],
            "options": {"hoodie.datasource.write.operation": "upsert", **RETAIN_ONE},
        }
        for k in range(1, 5)
    ]


def sales_writes(path: str) -> list[dict[str, Any]]:
    """Four whole-table overwrites of the keyless table."""
    return [
        {
            "path": path,
            "schema": SALES_SCHEMA,
            "rows": [(f"d{k}", k), (f"e{k}", 10 * k)],
            "options": {
                "hoodie.datasource.write.operation": "insert_overwrite_table",
                **RETAIN_ONE,
            },
        }
        for k in range(1, 5)
    ]


def expected_keyed(initial: list[tuple[int, str, int]], names: str) -> list[tuple[Any, ...]]:
    rows = {i: (i, n, a) for i, n, a in initial}
    for k in range(1, 5):
        for i in (1, 2, 3):
            rows[i] = (i, names[i % len(names)], 100 * k + i)
        rows[10 + k] = (10 + k, "n", 100 * k)
    return sorted(rows.values())


def run_outside(work: Path, writes: list[dict[str, Any]]) -> None:
    spec = json.dumps({"work": str(work), "writes": writes})
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-m", "tests.dbt.outside_writer", spec],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]


def dbt_hudi(*args: str) -> str:
    command = Path(sys.executable).with_name("dbt-hudi")
    done = subprocess.run([str(command), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


class TestFreshDownstreamReads:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "orders.sql": ORDERS_SQL,
            "events.sql": EVENTS_SQL,
            "sales.sql": SALES_SQL,
            "orders_copy.sql": COPY_SQL.format(columns=", ".join(KEYED), upstream="orders"),
            "events_copy.sql": COPY_SQL.format(columns=", ".join(KEYED), upstream="events"),
            "sales_copy.sql": COPY_SQL.format(columns=", ".join(SALES), upstream="sales"),
        }

    def test_copies_read_what_another_process_wrote_and_cleaned(
        self, project: Any, spark: Any, tmp_path: Path
    ) -> None:
        schema = project.test_schema
        _, log = run_dbt_and_capture(["run"])
        done = [line for line in log.splitlines() if "OK created" in line]
        assert any(f"model {schema}.orders " in line for line in done), done
        assert not any("hudi_snapshot__" in line for line in done), done  # the model, not its view
        orders, events, sales = (
            base_path_of(spark, schema, n) for n in ("orders", "events", "sales")
        )
        run_outside(
            tmp_path,
            keyed_writes(orders, "xyz") + keyed_writes(events, "pq") + sales_writes(sales),
        )
        for path in (orders, sales):  # every base file dbt's run saw is gone
            assert "clean" in [a for _, a in completed_instants(path)]

        run_dbt(["run", "-s", "orders_copy", "events_copy", "sales_copy"])

        initial = [(i, "abcdefg"[i - 1], 10 * i) for i in range(1, 8)]
        expected_orders = expected_keyed(initial, "xyz")
        assert hudi_rs_rows(orders, KEYED) == expected_orders
        assert copy_rows(spark, schema, "orders_copy", KEYED) == expected_orders
        expected_events = expected_keyed(initial[:3], "pq")
        assert hudi_rs_rows(events, KEYED) == expected_events
        assert copy_rows(spark, schema, "events_copy", KEYED) == expected_events
        assert hudi_rs_rows(sales, SALES) == [("d4", 4), ("e4", 40)]
        assert copy_rows(spark, schema, "sales_copy", SALES) == [("d4", 4), ("e4", 40)]

    def test_copy_reads_after_outside_compaction_and_clean(
        self, project: Any, spark: Any, tmp_path: Path
    ) -> None:
        schema = project.test_schema
        events = base_path_of(spark, schema, "events")
        run_outside(tmp_path, keyed_writes(events, "uv", after_ts=10)[:2])
        dbt_hudi("compact", events)
        # one version per file group: the slice dbt's snapshot view last read is deleted
        dbt_hudi(
            "clean",
            events,
            "--option",
            "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
            "--option",
            "hoodie.cleaner.fileversions.retained=1",
        )
        actions = [a for _, a in completed_instants(events)]
        assert actions[-2:] == ["commit", "clean"]

        run_dbt(["run", "-s", "events_copy"])

        expected = hudi_rs_rows(events, KEYED)
        assert (1, "v", 201) in expected  # the outside writes are there
        assert copy_rows(spark, schema, "events_copy", KEYED) == expected

    def test_external_session_gets_an_error_naming_how_to_read(
        self, project: Any, spark: Any
    ) -> None:
        from pyspark.errors import SparkRuntimeException

        from engine import read_hudi

        schema = project.test_schema
        orders = base_path_of(spark, schema, "orders")
        external = spark.newSession()  # plain pyspark: no dbt, no session views of dbt's
        for query in (f"select * from {schema}.orders", f"select count(*) from {schema}.orders"):
            with pytest.raises(SparkRuntimeException) as raised:
                external.sql(query).collect()
            assert orders in str(raised.value) and "engine.read_hudi" in str(raised.value)
        # what the error says to do reads the latest snapshot
        rows = rows_of(read_hudi(external, orders).collect(), KEYED)
        assert rows == hudi_rs_rows(orders, KEYED)

    def test_docs_generate_lists_columns_and_hudi_figures(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        run_dbt(["docs", "generate"])
        catalog = json.loads(Path(project.project_root, "target", "catalog.json").read_text())
        node = catalog["nodes"]["model.test.orders"]
        assert {"id", "name", "amount", "ts", "_hoodie_record_key"} <= set(node["columns"])
        stats = node["stats"]
        orders = base_path_of(spark, schema, "orders")
        assert stats["hudi_rows"]["value"] == len(hudi_rs_rows(orders, KEYED))
        assert stats["hudi_table_type"]["value"] == "COPY_ON_WRITE"
        last_time, last_action = completed_instants(orders)[-1]
        assert stats["hudi_last_instant"]["value"] == f"{last_time} ({last_action})"
        assert stats["hudi_files"]["value"] >= 1 and stats["hudi_bytes"]["value"] > 0
        events = catalog["nodes"]["model.test.events"]["stats"]
        assert events["hudi_table_type"]["value"] == "MERGE_ON_READ"
        assert events["hudi_rows"]["value"] == len(
            hudi_rs_rows(base_path_of(spark, schema, "events"), KEYED)
        )


def copy_rows(spark: Any, schema: str, name: str, columns: list[str]) -> list[tuple[Any, ...]]:
    return rows_of(spark.table(f"{schema}.{name}").collect(), columns)
