"""dbt-spark with Apache Hudi's bundle, the configuration dbt-spark projects with
``file_format='hudi'`` run today, on the adapter's tables and the adapter on theirs.

dbt-spark 1.11 (``method: session``) runs in Hudi 0.15.0's own venv (pyspark 3.5.1 and the Spark
bundle, tests/hudi_jvm/provision.py), a process of its own with its own Derby metastore; the
adapter runs in this process on the suite's session. One scenario, three dbt runs:

1. the adapter builds ``events`` (``hudi_upsert``, partitioned) at a known base path;
2. dbt-spark registers that base path in its metastore (``create table ... using hudi location``,
   as a table another pipeline writes is registered), reads it through ``source()`` into
   ``events_read``, runs an ``incremental`` ``merge`` model ``events`` INTO it (its relation is the
   registered table, so dbt-spark merges), and creates ``spark_made`` (``incremental`` ``merge``,
   ``location_root``: its first run is Hudi's CTAS);
3. the adapter upserts into ``events`` after dbt-spark's merge (Hudi's merge created a metadata
   table, which the adapter's version 6 write removes with a warning, as Hudi's writer does with
   the metadata table off) and continues ``spark_made`` (``hudi_upsert`` with ``location`` at its
   base path).

After each step hudi-rs and the engine's reader must read exactly the rows the test expects.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from dbt.tests.fixtures.project import *  # noqa: F403  (the dbt-tests-adapter fixtures)
from dbt.tests.util import run_dbt

from engine import HudiTable, read_table
from tests.dbt.conftest import dbt_profile_target  # noqa: F401  (the adapter's profile)
from tests.hudi_jvm.provision import RELEASES, ProvisionError, Release, ensure
from tests.hudi_rs import hudi_rs_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop, pytest.mark.hudi_jvm]

RELEASE = "0.15.0"
Rows = dict[str, tuple[str, int, str]]  # id -> (dt, ts, v)


def _values(rows: Rows) -> str:
    """A SELECT of ``rows`` (id, dt, ts, v) for a model."""
    return "\nunion all ".join(
        f"select '{k}' as id, '{dt}' as dt, cast({ts} as bigint) as ts, '{v}' as v"
        for k, (dt, ts, v) in sorted(rows.items())
    )


# ---- the adapter's project (this process) --------------------------------------------------

OURS_ROUND_1: Rows = {"k1": ("p1", 1, "ours-k1"), "k2": ("p0", 1, "ours-k2"),
                      "k3": ("p1", 1, "ours-k3"), "k4": ("p0", 1, "ours-k4")}  # fmt: skip
OURS_ROUND_2: Rows = {"k2": ("p0", 30, "ours2-k2"), "k5": ("p1", 30, "ours2-k5")}
OURS_ON_SPARKS: Rows = {"s1": ("p1", 40, "ours-s1"), "s4": ("p0", 40, "ours-s4")}

OUR_EVENTS = (
    "{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='ts',"
    " partition_by='dt', location=var('events_path')) }}\n"
    "{% if var('round') == 1 %}\n" + _values(OURS_ROUND_1) + "\n{% else %}\n"
    + _values(OURS_ROUND_2) + "\n{% endif %}\n"
)  # fmt: skip
OUR_SPARK_MADE = (
    "{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='ts',"
    " partition_by='dt', location=var('spark_made_path')) }}\n" + _values(OURS_ON_SPARKS)
)

# ---- the dbt-spark project (Hudi 0.15.0's venv) --------------------------------------------

SPARK_UPDATES: Rows = {"k1": ("p1", 10, "spark-k1"), "k3": ("p1", 10, "spark-k3"),
                       "k6": ("p0", 10, "spark-k6")}  # fmt: skip
SPARK_MADE: Rows = {"s1": ("p1", 20, "spark-s1"), "s2": ("p0", 20, "spark-s2"),
                    "s3": ("p1", 20, "spark-s3")}  # fmt: skip
HUDI_OPTIONS = "options={'type': 'cow', 'primaryKey': 'id', 'preCombineField': 'ts'}"
SPARK_MODELS = {
    # a table another pipeline writes, read through source()
    "events_read.sql": "{{ config(materialized='table', file_format='parquet') }}\n"
    "select id, dt, ts, v from {{ source('ours', 'events') }}",
    # merged INTO the adapter's table: the relation is the one registered at its base path;
    # the updates take their partitions from what source() read (a key never moves)
    "events.sql": (
        "{{ config(materialized='incremental', file_format='hudi', incremental_strategy='merge',"
        f" unique_key='id', partition_by=['dt'], {HUDI_OPTIONS}) }}}}\n"
        "select r.id, r.dt, u.ts, u.v from {{ ref('events_read') }} r join (\n"
        + _values({k: v for k, v in SPARK_UPDATES.items() if k in OURS_ROUND_1})
        + "\n) u on r.id = u.id\nunion all "
        + _values({k: v for k, v in SPARK_UPDATES.items() if k not in OURS_ROUND_1})
    ),
    # a table dbt-spark creates (Hudi's CTAS) for the adapter to continue
    "spark_made.sql": (
        "{{ config(materialized='incremental', file_format='hudi', incremental_strategy='merge',"
        f" unique_key='id', partition_by=['dt'], location_root=var('spark_root'), {HUDI_OPTIONS})"
        " }}\n" + _values(SPARK_MADE)
    ),
}
SPARK_SOURCES = {
    "version": 2,
    "sources": [{"name": "ours", "schema": "{{ target.schema }}", "tables": [{"name": "events"}]}],
}
# how a dbt-spark project sees a Hudi table another pipeline wrote: registered by its location
# (Hudi takes the schema, key and ordering field from the table's hoodie.properties). Under the
# database the table was written in: Hudi refuses another one than hoodie.database.name
# (HoodieCatalogTable.initHoodieTable), so dbt-spark's target schema is the adapter's.
REGISTER = [
    "create database if not exists {{ target.schema }}",
    "create table if not exists {{ target.schema }}.events using hudi"
    " location '{{ var(\"events_path\") }}'",
]


def _bundle_parameters(release: Release, work: Path) -> dict[str, str]:
    """The Spark settings a dbt-spark profile gives the Hudi bundle (static: the session is new).
    The catalog is in memory: the run is one process, and a Derby metastore's first start costs
    it most of a minute."""
    return {
        "spark.sql.catalogImplementation": "in-memory",
        "spark.master": "local[2]",
        "spark.jars": str(release.jar),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.sql.warehouse.dir": str(work / "warehouse"),
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
    }


def write_spark_project(
    release: Release, work: Path, schema: str, variables: dict[str, str]
) -> Path:
    """The dbt-spark project and its profile (``type: spark``, ``method: session``) writing to
    ``schema``."""
    project = work / "spark_project"
    (project / "models").mkdir(parents=True)
    for name, sql in SPARK_MODELS.items():
        (project / "models" / name).write_text(sql)
    (project / "models" / "sources.yml").write_text(yaml.safe_dump(SPARK_SOURCES))
    config = {
        "name": "spark_bundle", "version": "1.0", "profile": "spark_bundle",
        "config-version": 2, "vars": variables, "on-run-start": REGISTER,
    }  # fmt: skip
    (project / "dbt_project.yml").write_text(yaml.safe_dump(config))
    target = {
        "type": "spark", "method": "session", "host": "NA", "schema": schema,
        "threads": 1, "server_side_parameters": _bundle_parameters(release, work),
    }  # fmt: skip
    profile = {"spark_bundle": {"target": "dev", "outputs": {"dev": target}}}
    (project / "profiles.yml").write_text(yaml.safe_dump(profile))
    return project


def run_dbt_spark(release: Release, project: Path) -> str:
    """``dbt run`` of dbt-spark in the release's venv; its output, or a failure showing it.
    ``--no-populate-cache``: the relations are listed when a model asks, after the on-run-start
    hook registered the adapter's table."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "DBT_"))}
    env.pop("PYTHONPATH", None)
    env["PYSPARK_PYTHON"] = str(release.python)
    command = [str(release.dbt_executable), "--no-populate-cache", "run"]
    command += ["--project-dir", str(project), "--profiles-dir", str(project)]
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, (
        f"dbt-spark with Hudi {release.version} failed ({project / 'logs' / 'dbt.log'}):\n"
        f"{done.stdout[-5000:]}"
    )
    return done.stdout


def by_id(rows: list[dict[str, Any]]) -> Rows:
    out: Rows = {}
    for r in rows:
        assert r["id"] not in out, f"key {r['id']} read twice"
        out[r["id"]] = (r["dt"], r["ts"], r["v"])
    return out


def check(path: Path, expected: Rows, step: str) -> None:
    """hudi-rs and the engine's reader read exactly ``expected``."""
    for reader, rows in (
        ("hudi-rs", hudi_rs_rows(path)),
        ("engine", read_table(str(path)).to_pylist()),
    ):
        assert by_id(rows) == expected, f"after {step}: {reader}"


@pytest.fixture(scope="class")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bundle_lake")


@pytest.fixture(scope="class")
def release() -> Release:
    try:
        return ensure(RELEASES[RELEASE])
    except ProvisionError as exc:
        pytest.fail(f"Apache Hudi {RELEASE} with dbt-spark: {exc}", pytrace=False)


class TestDbtSparkWithHudiBundle:
    @pytest.fixture(scope="class")
    def project_config_update(self, lake: Path) -> dict[str, Any]:
        return {
            "vars": {
                "round": 1,
                "events_path": str(lake / "events"),
                "spark_made_path": str(lake / "spark" / "spark_made"),
            }
        }

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        # the model continuing dbt-spark's table has its name: a write under another
        # hoodie.table.name is refused (by Hudi's writer too)
        return {"events.sql": OUR_EVENTS, "spark_made.sql": OUR_SPARK_MADE}

    def test_dbt_spark_and_ours_continue_each_other(
        self, project: Any, release: Release, lake: Path
    ) -> None:
        events, spark_made = lake / "events", lake / "spark" / "spark_made"
        run_dbt(["run", "--select", "events"])
        expected = dict(OURS_ROUND_1)
        check(events, expected, "our hudi_upsert")

        variables = {"events_path": str(events), "spark_root": str(lake / "spark")}
        schema = project.test_schema
        spark_project = write_spark_project(release, lake, schema, variables)
        run_dbt_spark(release, spark_project)
        read = pq.read_table(lake / "warehouse" / f"{schema}.db" / "events_read").to_pylist()
        assert by_id(read) == OURS_ROUND_1, "dbt-spark's source() read our table"
        expected.update(SPARK_UPDATES)
        check(events, expected, "dbt-spark's merge into our table")
        assert (events / ".hoodie" / "metadata").is_dir(), "Hudi 0.15's merge wrote one"
        check(spark_made, SPARK_MADE, "dbt-spark's CTAS")
        assert HudiTable(str(spark_made)).properties()["hoodie.table.recordkey.fields"] == "id"

        run_dbt(["run", "--vars", "{round: 2}"])
        expected.update(OURS_ROUND_2)
        check(events, expected, "our upsert after dbt-spark's merge")
        assert not (events / ".hoodie" / "metadata").exists(), "removed as Hudi's writer does"
        check(spark_made, {**SPARK_MADE, **OURS_ON_SPARKS}, "our upsert into dbt-spark's table")
