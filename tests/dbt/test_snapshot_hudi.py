"""``dbt snapshot`` with ``file_format='hudi'``: SCD2 history over three runs, read by hudi-rs.

A timestamp snapshot invalidating hard deletes and a check snapshot recording them as new records
(``hard_deletes='new_record'``); the source changes between runs (an update, a new key, a
delete, the deleted key coming back).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from engine import HudiTable
from tests.dbt.hudi_checks import base_path_of, completed_instants, hudi_rs_rows, spark_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark, pytest.mark.interop]

HEADER = "id,name,updated_at\n"
V1 = (
    HEADER + "1,alice,2024-01-01 00:00:00\n2,bob,2024-01-01 00:00:00\n3,carol,2024-01-01 00:00:00\n"
)
# 1 updated, 3 deleted, 4 new
V2 = (
    HEADER + "1,alice2,2024-01-02 00:00:00\n2,bob,2024-01-01 00:00:00\n4,dave,2024-01-02 00:00:00\n"
)
# 2 updated, 3 back
V3 = (
    HEADER + "1,alice2,2024-01-02 00:00:00\n2,bob2,2024-01-03 00:00:00\n"
    "3,carol,2024-01-03 00:00:00\n4,dave,2024-01-02 00:00:00\n"
)
SNAP_TS = """
{% snapshot snap_ts %}
{{ config(unique_key='id', strategy='timestamp', updated_at='updated_at', file_format='hudi',
          hard_deletes='invalidate') }}
select * from {{ ref('people') }}
{% endsnapshot %}
"""
SNAP_CHECK = """
{% snapshot snap_check %}
{{ config(unique_key='id', strategy='check', check_cols=['name'], file_format='hudi',
          hard_deletes='new_record') }}
select id, name from {{ ref('people') }}
{% endsnapshot %}
"""


def _naive_utc(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Timestamps as naive UTC (hudi-rs returns them zone-aware, Spark naive in UTC)."""
    return [
        tuple(
            v.astimezone(UTC).replace(tzinfo=None) if isinstance(v, datetime) and v.tzinfo else v
            for v in row
        )
        for row in rows
    ]


def _history(rows: list[tuple[Any, ...]]) -> dict[int, list[tuple[Any, ...]]]:
    """Per id, the versions ordered by dbt_valid_from: (name, [is_deleted,] current)."""
    by_id: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r[0], r[1])):
        ident, _valid_from, valid_to, *rest = row
        by_id[ident].append((*rest, valid_to is None))
    return dict(by_id)


TS_COLUMNS = ["id", "dbt_valid_from", "dbt_valid_to", "name"]
CHECK_COLUMNS = ["id", "dbt_valid_from", "dbt_valid_to", "name", "dbt_is_deleted"]
EXPECTED_TS = [
    {1: [("alice", True)], 2: [("bob", True)], 3: [("carol", True)]},
    {
        1: [("alice", False), ("alice2", True)],
        2: [("bob", True)],
        3: [("carol", False)],
        4: [("dave", True)],
    },
    {
        1: [("alice", False), ("alice2", True)],
        2: [("bob", False), ("bob2", True)],
        3: [("carol", False), ("carol", True)],
        4: [("dave", True)],
    },
]
EXPECTED_CHECK = [
    {1: [("alice", "False", True)], 2: [("bob", "False", True)], 3: [("carol", "False", True)]},
    {
        1: [("alice", "False", False), ("alice2", "False", True)],
        2: [("bob", "False", True)],
        3: [("carol", "False", False), ("carol", "True", True)],
        4: [("dave", "False", True)],
    },
    {
        1: [("alice", "False", False), ("alice2", "False", True)],
        2: [("bob", "False", False), ("bob2", "False", True)],
        3: [("carol", "False", False), ("carol", "True", False), ("carol", "False", True)],
        4: [("dave", "False", True)],
    },
]


class TestSnapshotHudi:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"people.csv": V1}

    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {"snap_ts.sql": SNAP_TS, "snap_check.sql": SNAP_CHECK}

    def test_snapshots_three_runs_history_read_by_hudi_rs(self, project: Any, spark: Any) -> None:
        schema = project.test_schema
        for run, seed in enumerate((V1, V2, V3)):
            Path(project.project_root, "seeds", "people.csv").write_text(seed)
            run_dbt(["build"])  # the seed, then the snapshots
            for name, columns, expected in (
                ("snap_ts", TS_COLUMNS, EXPECTED_TS),
                ("snap_check", CHECK_COLUMNS, EXPECTED_CHECK),
            ):
                base = base_path_of(spark, schema, name)
                rows = _naive_utc(hudi_rs_rows(base, columns))
                assert _history(rows) == expected[run], (name, run)
                assert spark_rows(spark, f"select * from {schema}.{name}", columns) == rows
                assert len(completed_instants(base)) >= run + 1
        props = HudiTable(base_path_of(spark, schema, "snap_ts")).properties()
        assert props["hoodie.table.recordkey.fields"] == "dbt_scd_id"
        assert props["hoodie.table.type"] == "COPY_ON_WRITE"
        # the timestamp strategy closes a version at the next version's updated_at
        ts_rows = _naive_utc(hudi_rs_rows(base_path_of(spark, schema, "snap_ts"), TS_COLUMNS))
        closed_alice = [r for r in ts_rows if r[0] == 1 and r[2] is not None]
        assert [str(r[2]) for r in closed_alice] == ["2024-01-02 00:00:00"]
