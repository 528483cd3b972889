"""A standalone Spark cluster and a Spark Connect server, each started once for its module and
killed (with every process they started) when the module ends, whatever its outcome."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from tests.cluster.launch import Cluster, start_cluster, start_connect_server
from tests.cluster.scenario import ScenarioRun, Target, run_scenario

# make test: one executor of one core; make test-long: two, so tasks of one job run in two JVMs
EXECUTORS = 2 if os.environ.get("HUDI_TEST_LONG") else 1


def say(config: pytest.Config, text: str) -> None:
    """Shown past pytest's capture, so a run's log tells what these tests started and cost."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n[tests] {text}", file=sys.stderr)


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[Cluster]:
    """A master and one worker (a core per executor, 2g) from the installed pyspark, on
    127.0.0.1."""
    started = start_cluster(tmp_path_factory.mktemp("cluster"), cores=EXECUTORS)
    say(pytestconfig, f"standalone cluster started at {started.master_url}")
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def connect_server(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[str]:
    """A Spark Connect server (local[2], 1g) from the installed pyspark; its ``sc://`` URL."""
    server, url = start_connect_server(tmp_path_factory.mktemp("connect-server"))
    say(pytestconfig, f"Spark Connect server started at {url}")
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def standalone_scenario(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> ScenarioRun:
    """The scenario (:mod:`tests.cluster.scenario`) with its drivers on the cluster."""
    target = Target(master=cluster.master_url, executors=EXECUTORS)
    run = run_scenario(tmp_path_factory.mktemp("standalone"), target)
    say(pytestconfig, f"standalone scenario: two drivers in {run.seconds:.0f}s")
    return run


@pytest.fixture(scope="module")
def connect_scenario(
    connect_server: str, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> ScenarioRun:
    """The scenario with its drivers as Spark Connect clients of the server."""
    run = run_scenario(tmp_path_factory.mktemp("connect"), Target(remote=connect_server))
    say(pytestconfig, f"Spark Connect scenario: two clients in {run.seconds:.0f}s")
    return run
