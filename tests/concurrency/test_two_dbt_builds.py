"""Two ``dbt build`` processes at once on the same project and the same Hudi tables.

Each process has its own Spark (and its own embedded metastore: Derby allows one process per
database) and writes the shared tables under one ``hudi_base_path``. Each must finish, or fail
with a clear conflict error; no row a successful build committed may be lost; and the downstream
model each build makes must read a whole committed snapshot, never a half state.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hudi_rs import hudi_rs_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

PROJECT = """
name: two_builds
version: '1.0'
profile: two_builds
config-version: 2
"""
PROFILE = """
two_builds:
  target: local
  outputs:
    local:
      type: hudi
      method: session
      host: localhost
      schema: lake
      threads: 1
      hudi_base_path: "{{ env_var('TWO_BUILDS_LAKE') }}"
      server_side_parameters:
        spark.master: "local[1]"
        spark.driver.memory: "1g"
        spark.ui.enabled: "false"
        spark.sql.shuffle.partitions: "2"
        spark.sql.warehouse.dir: "{{ env_var('TWO_BUILDS_WORK') }}/warehouse"
        spark.hadoop.javax.jdo.option.ConnectionURL: "{{ env_var('TWO_BUILDS_METASTORE') }}"
"""
# writer a upserts ids 1-5, writer b ids 4-8: ids 4 and 5 are written by both
ORDERS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id') }}
{% set first = 1 if var('writer') == 'a' else 4 %}
select id, '{{ var("writer") }}' as writer
from (select explode(sequence({{ first }}, {{ first + 4 }})) as id)
"""
SUMMARY_SQL = """
{{ config(materialized='table') }}
select count(*) as n, count(distinct id) as ids from {{ ref('orders') }}
"""
CONFLICT_WORDS = ("conflict", "Conflict")


def write_project(root: Path) -> None:
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(PROJECT)
    (root / "profiles.yml").write_text(PROFILE)
    (root / "models" / "orders.sql").write_text(ORDERS_SQL)
    (root / "models" / "summary.sql").write_text(SUMMARY_SQL)


def start_build(root: Path, lake: Path, writer: str) -> subprocess.Popen[str]:
    work = root / f"work_{writer}"
    work.mkdir()
    env = {
        **os.environ,
        "TWO_BUILDS_LAKE": str(lake),
        "TWO_BUILDS_WORK": str(work),
        "TWO_BUILDS_METASTORE": f"jdbc:derby:;databaseName={work}/metastore_db;create=true",
        "PYSPARK_PYTHON": sys.executable,
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
    dbt = Path(sys.executable).with_name("dbt")
    command = [
        str(dbt), "build", "--project-dir", str(root), "--profiles-dir", str(root),
        "--target-path", str(work / "target"), "--log-path", str(work / "logs"),
        "--vars", f"{{writer: {writer}}}",
    ]  # fmt: skip
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def summary_rows(root: Path, writer: str) -> list[tuple[int, int]]:
    """The summary table this build wrote (its own warehouse's parquet files)."""
    import pyarrow.parquet as pq

    table = pq.read_table(root / f"work_{writer}" / "warehouse" / "lake.db" / "summary")
    return list(zip(table.column("n").to_pylist(), table.column("ids").to_pylist(), strict=True))


def test_two_dbt_builds_at_once_lose_nothing(tmp_path: Path) -> None:
    root, lake = tmp_path / "project", tmp_path / "lake"
    write_project(root)
    builds = {w: start_build(root, lake, w) for w in ("a", "b")}
    outputs = {w: p.communicate(timeout=900)[0] for w, p in builds.items()}
    ok = {w for w, p in builds.items() if p.returncode == 0}
    for w in set(builds) - ok:
        assert any(word in outputs[w] for word in CONFLICT_WORDS), outputs[w][-3000:]
    assert ok, outputs

    rows = {int(r["id"]): r["writer"] for r in hudi_rs_rows(str(lake / "lake" / "orders"))}
    written = {"a": set(range(1, 6)), "b": set(range(4, 9))}
    for w in ok:  # every row a successful build committed is there
        assert written[w] <= set(rows), (w, rows)
    for w in ok:  # each writer's own keys hold its value, the shared keys one of the two
        assert all(rows[i] == w for i in written[w] - written[{"a": "b", "b": "a"}[w]])
    assert all(rows[i] in ok for i in (4, 5))
    for w in ok:  # the downstream read a whole snapshot: one build's rows, or both builds'
        [(n, ids)] = summary_rows(root, w)
        assert n == ids and ids in (5, 8), (w, n, ids)
