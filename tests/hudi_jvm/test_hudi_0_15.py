"""Apache Hudi 0.15.0 (table version 6) and the engine continue each other's tables
(tests/hudi_jvm/scenarios.py): one JVM for the file's tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hudi_jvm.cases import HUDI_FIRST, OURS_FIRST, Case, cases
from tests.hudi_jvm.client import HudiJvm
from tests.hudi_jvm.scenarios import hudi_continues_ours, we_continue_hudis

# the subject is what Apache Hudi 0.15 makes of our tables and we of its, not where our writes run:
# they take the driver path (tests/conftest.py write_path), as a small batch on a
# local master does
pytestmark = [
    pytest.mark.interop,
    pytest.mark.spark,
    pytest.mark.hudi_jvm,
    pytest.mark.driver_writes,
]

RELEASE = "0.15.0"
SCENARIOS = {OURS_FIRST: hudi_continues_ours, HUDI_FIRST: we_continue_hudis}
RUNS = [(scenario, case) for scenario in SCENARIOS for case in cases(RELEASE, scenario)]


@pytest.mark.parametrize(("scenario", "case"), RUNS, ids=lambda v: getattr(v, "name", v))
def test_hudi_0_15_and_ours_continue_each_other(
    spark: Any, hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path, scenario: str, case: Case
) -> None:
    SCENARIOS[scenario](spark, hudi_jvm(RELEASE), tmp_path / "t", case)
