"""``dbt run-operation hudi_health``: the health view of a model's table in dbt's log."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.dbt.hudi_checks import base_path_of, completed_instants

pytestmark = [pytest.mark.dbt, pytest.mark.spark]

EVENTS_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', partition_by='region',
          precombine_key='updated_at') }}
select id, region, updated_at, concat('v', cast({{ var('round', 1) }} as string)) as v
from values (1, 'eu', {{ var('round', 1) }}), (2, 'us', {{ var('round', 1) }})
  as t(id, region, updated_at)
"""


class TestHudiHealth:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"events.sql": EVENTS_SQL}

    def test_hudi_health_prints_facts_and_findings_with_their_fix(
        self, project: Any, spark: Any
    ) -> None:
        for round_ in (1, 2, 3):
            run_dbt(["run", "--vars", f"{{round: {round_}}}"])
        base = base_path_of(spark, project.test_schema, "events")
        instants = completed_instants(base)
        assert [a for _, a in instants] == ["commit"] * 3

        _, log = run_dbt_and_capture(
            ["run-operation", "hudi_health", "--args", "{relation: events}"]
        )
        assert "Hudi health of events:" in log
        assert "healthy: nothing to act on" in log
        assert f"at {base}" in log and "completed_commits" in log
        assert instants[-1][0] in log  # the last commit, among the facts

        # judged with the retention the writers would use, two old slices per partition are due
        _, log = run_dbt_and_capture(
            [
                "run-operation",
                "hudi_health",
                "--args",
                "{relation: events, options: {hoodie.cleaner.commits.retained: 1}}",
            ]
        )
        assert "clean_due" in log and "a clean would delete 2 file(s)" in log
        assert f"dbt-hudi clean {base} --option hoodie.cleaner.commits.retained=1" in log

    def test_hudi_health_of_a_relation_that_is_no_hudi_model_fails(self, project: Any) -> None:
        _, log = run_dbt_and_capture(
            ["run-operation", "hudi_health", "--args", "{relation: no_such_model}"],
            expect_pass=False,
        )
        assert "is not a Hudi model's table" in log
