"""The engine's core paths on a standalone Spark cluster: the driver in its own process, the
tasks in executor JVMs and their Python workers, every table judged by hudi-rs."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import EXECUTORS, say
from tests.cluster.launch import Cluster
from tests.cluster.scenario import (
    ScenarioRun,
    Target,
    check_copy_on_write,
    check_killed_write,
    check_merge_on_read,
    run_scenario,
)

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


@pytest.fixture(scope="module")
def scenario(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> ScenarioRun:
    target = Target(master=cluster.master_url, executors=EXECUTORS)
    run = run_scenario(tmp_path_factory.mktemp("standalone"), target)
    say(pytestconfig, f"standalone scenario: two drivers in {run.seconds:.0f}s")
    return run


def test_standalone_tasks_ran_on_executors(scenario: ScenarioRun, cluster: Cluster) -> None:
    for run in (scenario.core, scenario.recovery):
        assert run.report["master"] == cluster.master_url
        assert len(run.report["executors"]) == EXECUTORS, run.report
    executor_logs = list((cluster.work / "worker").glob("app-*/*/stderr"))
    assert len(executor_logs) >= 2, executor_logs  # one app per driver


def test_standalone_copy_on_write_paths(scenario: ScenarioRun) -> None:
    check_copy_on_write(scenario)


def test_standalone_merge_on_read_paths(scenario: ScenarioRun) -> None:
    check_merge_on_read(scenario)


def test_standalone_killed_write_rolled_back(scenario: ScenarioRun) -> None:
    check_killed_write(scenario)
