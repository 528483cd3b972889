"""``DBT_HUDI_TIMING``: where a Hudi model's seconds go, as ``make bench-dbt`` reads them.

A real ``dbt run`` of a ``hudi_upsert`` model (create, then an upsert) with the log on: every
step of the write is logged once per run, in order, the engine's jobs inside the engine write
and the publish steps inside the publish; with the log off nothing is written. The table reads
back through hudi-rs with the upserted rows either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.hudi import timing
from tests.dbt.hudi_checks import base_path_of, hudi_rs_rows

pytestmark = [pytest.mark.dbt, pytest.mark.spark]

MODEL_SQL = """
{{ config(materialized='hudi_upsert', unique_key='id', precombine_key='ts') }}
select id, concat('n', id) as name, {{ var('round') }} as ts from range(1, 4) as t(id)
"""


def _phases(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _within(inner: dict[str, Any], outer: dict[str, Any]) -> bool:
    return bool(outer["start"] <= inner["start"] <= inner["end"] <= outer["end"])


class TestTimingLog:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"timed.sql": MODEL_SQL}

    def test_each_step_of_a_write_is_logged_in_order(
        self, spark: Any, project: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        run_dbt(["run", "--vars", "{round: 1}"])  # untimed: the log stays off
        log = tmp_path / "timing.jsonl"
        monkeypatch.setenv(timing.ENV, str(log))
        run_dbt(["run", "--vars", "{round: 2}"])
        phases = _phases(log)
        names = [p["phase"] for p in phases]
        for step in ("write: staged columns", "write: engine write", "write: publish"):
            assert names.count(step) == 1, names
        write = phases[names.index("write: engine write")]
        publish = phases[names.index("write: publish")]
        assert write["end"] <= publish["start"]
        jobs = [p for p in phases if p["phase"].startswith("engine:")]
        assert jobs and all(_within(j, write) for j in jobs), phases
        steps = [p for p in phases if p["phase"].startswith("publish:")]
        assert steps and all(_within(s, publish) for s in steps), phases
        path = base_path_of(spark, project.test_schema, "timed")
        assert hudi_rs_rows(path, ["id", "ts"]) == [(1, 2), (2, 2), (3, 2)]


def test_phases_are_logged_only_while_the_variable_names_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "timing.jsonl"
    monkeypatch.setenv(timing.ENV, str(log))
    with timing.phase("on"):
        pass
    monkeypatch.delenv(timing.ENV)
    with timing.phase("off"):
        pass
    runner = object()
    assert timing.timed_runner(runner) is runner
    assert [p["phase"] for p in _phases(log)] == ["on"]
