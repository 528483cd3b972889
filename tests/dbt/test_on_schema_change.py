"""on_schema_change on every Hudi materialization: an added, a widened, a narrowed and a removed
column under each mode, rows checked through hudi-rs.

One project, four models per materialization, all built from the same two SELECTs:

    run 1   id int, region string, qty int, big bigint, legacy string          (ids 1, 2, 3)
    run 2   id int, region string, qty bigint, big int, tier string            (ids 2, 4; 'us')
            qty of id 2 is cast(5000000000 as bigint): wider than the table's int
            big is int now, narrower than the table's bigint; legacy is gone; tier is new

    ignore_*    tier not written; big promoted to bigint exactly; qty stays int (run 2 keeps it
                small); legacy null in the rows written (hoodie.write.set.null.for.missing.columns)
    append_*    tier added, qty widened to bigint (5000000000 exact), big kept bigint,
                legacy kept (null in the rows written)
    sync_*      tier added, qty widened, legacy dropped (big stays bigint in the model)
    refused_*   the full run-2 SELECT under fail, ignore and sync_all_columns, and under
                append_new_columns with legacy turned boolean (Hudi refuses string -> boolean):
                each fails before anything is written (same timeline, same files), naming the
                model, the columns and both types

Run 2 writes only region 'us': the 'eu' file group keeps its run-1 base file, so every reader
reads files of both schemas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.hudi.relation import format_snapshot_view_name
from tests import hudi_rs
from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

MATERIALIZATIONS = {"cow": "hudi_upsert", "mor": "hudi_mor", "io": "hudi_insert_overwrite"}
BIG = 5_000_000_000

RUN_1 = """
select cast(1 as int) as id, 'eu' as region, cast(10 as int) as qty, cast(100 as bigint) as big,
       'a' as legacy
union all select 2, 'us', 20, 200, 'b'
union all select 3, 'eu', 30, 300, 'c'
"""
# every change at once: what append_new_columns takes and the other modes refuse
RUN_2 = f"""
select cast(2 as int) as id, 'us' as region, cast({BIG} as bigint) as qty,
       cast(21 as int) as big, 'gold' as tier
union all select 4, 'us', cast(40 as bigint), cast(41 as int), 'silver'
"""
# ignore: the model adds tier, narrows big and drops legacy; qty keeps its type
RUN_2_IGNORE = """
select cast(2 as int) as id, 'us' as region, cast(22 as int) as qty, cast(21 as int) as big,
       'gold' as tier
union all select 4, 'us', 40, 41, 'silver'
"""
# sync_all_columns: adds tier, widens qty, drops legacy; big keeps the table's bigint
RUN_2_SYNC = f"""
select cast(2 as int) as id, 'us' as region, cast({BIG} as bigint) as qty,
       cast(21 as bigint) as big, 'gold' as tier
union all select 4, 'us', cast(40 as bigint), cast(41 as bigint), 'silver'
"""

# under append_new_columns the refused models also turn legacy (string) into a boolean, a change
# Hudi's rules refuse in every mode
RUN_2_REFUSED = f"""
select *{{% if var('refused_mode', 'fail') == 'append_new_columns' %}}, true as legacy{{% endif %}}
from ({RUN_2}) as run_2
"""

MODEL = """
{{{{ config(materialized='{materialized}', unique_key='id', partition_by='region',
            on_schema_change={mode}{extra}) }}}}
{{% if var('run', 1) == 1 %}}{run_1}{{% else %}}{run_2}{{% endif %}}
"""
SET_NULL = ", hudi_options={'hoodie.write.set.null.for.missing.columns': true}"

KINDS: dict[str, tuple[str, str, str]] = {
    # kind: (on_schema_change expression, extra config, run-2 SELECT)
    "ignore": ("'ignore'", SET_NULL, RUN_2_IGNORE),
    "append": ("'append_new_columns'", "", RUN_2),
    "sync": ("'sync_all_columns'", "", RUN_2_SYNC),
    "refused": ("var('refused_mode', 'fail')", "", RUN_2_REFUSED),
}

RUN_1_ROWS = [(1, "eu", 10, 100, "a"), (2, "us", 20, 200, "b"), (3, "eu", 30, 300, "c")]
RUN_1_COLUMNS = ["id", "region", "qty", "big", "legacy"]
EXPECTED: dict[str, tuple[list[str], list[tuple[Any, ...]], dict[str, pa.DataType]]] = {
    "ignore": (
        RUN_1_COLUMNS,
        [
            (1, "eu", 10, 100, "a"),
            (2, "us", 22, 21, None),
            (3, "eu", 30, 300, "c"),
            (4, "us", 40, 41, None),
        ],
        {"qty": pa.int32(), "big": pa.int64(), "legacy": pa.string()},
    ),
    "append": (
        ["id", "region", "qty", "big", "legacy", "tier"],
        [
            (1, "eu", 10, 100, "a", None),
            (2, "us", BIG, 21, None, "gold"),
            (3, "eu", 30, 300, "c", None),
            (4, "us", 40, 41, None, "silver"),
        ],
        {"qty": pa.int64(), "big": pa.int64(), "legacy": pa.string(), "tier": pa.string()},
    ),
    "sync": (
        ["id", "region", "qty", "big", "tier"],
        [
            (1, "eu", 10, 100, None),
            (2, "us", BIG, 21, "gold"),
            (3, "eu", 30, 300, None),
            (4, "us", 40, 41, "silver"),
        ],
        {"qty": pa.int64(), "big": pa.int64(), "tier": pa.string()},
    ),
    "refused": (RUN_1_COLUMNS, RUN_1_ROWS, {"qty": pa.int32(), "big": pa.int64()}),
}


def _models() -> dict[str, str]:
    models = {}
    for kind, (mode, extra, run_2) in KINDS.items():
        for short, materialized in MATERIALIZATIONS.items():
            models[f"{kind}_{short}.sql"] = MODEL.format(
                materialized=materialized, mode=mode, extra=extra, run_1=RUN_1, run_2=run_2
            )
    return models


def _files(base: str) -> list[tuple[str, int]]:
    """Every file under the base path (timeline included) with its size."""
    root = Path(base)
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*") if p.is_file()
    )


def _hudi_rs_types(base: str) -> dict[str, pa.DataType]:
    batches = hudi_rs.hudi_rs_batches(base)
    schema = pa.Table.from_batches(batches).schema
    return {name: schema.field(name).type for name in schema.names}


def _downstream_sql(schema: str, model: str, short: str) -> str:
    """What ``ref()`` reads: the catalog table, or a hudi_mor model's snapshot view."""
    if short == "mor":
        return f"select * from `{format_snapshot_view_name(schema, model)}`"
    return f"select * from {schema}.{model}"


class TestOnSchemaChange:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return _models()

    def test_on_schema_change_modes_on_every_materialization(
        self, project: Any, spark: Any
    ) -> None:
        schema = project.test_schema
        run_dbt(["run", "--vars", "{run: 1}"])
        bases = {
            name: base_path_of(spark, schema, name)
            for name in (f"{k}_{s}" for k in KINDS for s in MATERIALIZATIONS)
        }
        for base in bases.values():
            assert hudi_rs_rows(base, RUN_1_COLUMNS) == RUN_1_ROWS
        refused = [f"refused_{s}" for s in MATERIALIZATIONS]
        before = {name: (completed_instants(bases[name]), _files(bases[name])) for name in refused}

        # run 2: ignore, append and sync models write; refused models fail under 'fail'
        results, log = run_dbt_and_capture(["run", "--vars", "{run: 2}"], expect_pass=False)
        status = {r.node.name: str(r.status) for r in results}
        assert {n for n, s in status.items() if s == "error"} == set(refused), status
        for short in MATERIALIZATIONS:
            assert f"refused_{short}" in log
            # what a run changes in a table's schema, or leaves out, is logged
            for line in (
                "widened qty (int -> bigint)",
                "added tier (string)",
                "big (int) promoted to the table's bigint",
                "legacy (string) not in the model: null in the rows written",
            ):
                assert f"Hudi model 'append_{short}': {line}" in log, (short, line)
            for line in (
                "tier (string) not in the table: not written (on_schema_change='ignore')",
                "big (int) promoted to the table's bigint",
                "legacy (string) not in the model: null in the rows written",
            ):
                assert f"Hudi model 'ignore_{short}': {line}" in log, (short, line)
            assert f"Hudi model 'sync_{short}': removed legacy (string)" in log
        for needle in (
            "on_schema_change='fail'",
            "added: tier",
            "removed: legacy",
            "qty (int -> bigint)",
            "big (bigint -> int)",
        ):
            assert needle in log, needle

        # the same SELECT under ignore (qty would have to narrow; legacy has no value) and
        # sync_all_columns (Hudi cannot narrow big), and a string column turned boolean under
        # append_new_columns: refused before the write, saying why
        for mode, needles in (
            ("ignore", ("'qty'", "bigint", "append_new_columns", "'legacy'")),
            ("sync_all_columns", ("'big'", "cannot narrow", "cast(big as bigint)")),
            ("append_new_columns", ("'legacy' is string in the table and boolean in the model",)),
        ):
            _, log = run_dbt_and_capture(
                ["run", "-s", "refused_*", "--vars", f"{{run: 2, refused_mode: {mode}}}"],
                expect_pass=False,
            )
            assert log.count("Compilation Error") >= len(MATERIALIZATIONS), log
            for needle in needles:
                assert needle in log, (mode, needle)

        for name in refused:  # untouched: same timeline, same files
            assert (completed_instants(bases[name]), _files(bases[name])) == before[name], name

        for kind, (columns, rows, types) in EXPECTED.items():
            for short in MATERIALIZATIONS:
                name = f"{kind}_{short}"
                base = bases[name]
                assert hudi_rs_rows(base, columns) == rows, name
                read_types = _hudi_rs_types(base)
                assert {c: read_types[c] for c in types} == types, name
                assert set(read_types) - set(columns) <= {
                    "_hoodie_commit_time",
                    "_hoodie_commit_seqno",
                    "_hoodie_record_key",
                    "_hoodie_partition_path",
                    "_hoodie_file_name",
                }, (name, read_types)
                assert spark_rows(spark, _downstream_sql(schema, name, short), columns) == rows
