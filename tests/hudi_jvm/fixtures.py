"""The fixture that hands tests Apache Hudi's JVMs: one per release per test process, started
on first use and stopped at the end of the session (``make test`` runs every file using it on
one worker, so each release's JVM starts once: tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.hudi_jvm.client import HudiJvm
from tests.hudi_jvm.provision import RELEASES, ProvisionError


@pytest.fixture(scope="session")
def hudi_jvm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], HudiJvm]]:
    """``hudi_jvm("1.1.1")``: the JVM running that Apache Hudi release. A release that cannot be
    set up fails the test, saying what could not be fetched."""
    started: dict[str, HudiJvm] = {}

    def get(version: str) -> HudiJvm:
        if version not in started:
            try:
                work = tmp_path_factory.mktemp(f"hudi-jvm-{version}")
                started[version] = HudiJvm(RELEASES[version], work)
            except ProvisionError as exc:
                pytest.fail(f"Apache Hudi {version}: {exc}", pytrace=False)
        return started[version]

    yield get
    for jvm in started.values():
        jvm.close()
