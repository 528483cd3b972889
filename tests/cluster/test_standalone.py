"""The engine's core paths on a standalone Spark cluster: the driver in its own process, the
tasks in executor JVMs and their Python workers, every table judged by hudi-rs."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import EXECUTORS
from tests.cluster.launch import Cluster
from tests.cluster.scenario import (
    ScenarioRun,
    check_copy_on_write,
    check_killed_write,
    check_merge_on_read,
)

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


def test_standalone_tasks_ran_on_executors(
    standalone_scenario: ScenarioRun, cluster: Cluster
) -> None:
    for run in (standalone_scenario.core, standalone_scenario.recovery):
        assert run.report["master"] == cluster.master_url
        assert len(run.report["executors"]) == EXECUTORS, run.report
    executor_logs = list((cluster.work / "worker").glob("app-*/*/stderr"))
    assert len(executor_logs) >= 2, executor_logs  # one app per driver


def test_standalone_copy_on_write_paths(standalone_scenario: ScenarioRun) -> None:
    check_copy_on_write(standalone_scenario)


def test_standalone_merge_on_read_paths(standalone_scenario: ScenarioRun) -> None:
    check_merge_on_read(standalone_scenario)


def test_standalone_killed_write_rolled_back(standalone_scenario: ScenarioRun) -> None:
    check_killed_write(standalone_scenario)
