"""The engine continues tables Apache Hudi 1.1 wrote, in table versions 6, 8 and 9
(tests/hudi_jvm/scenarios.py): one JVM for the file's tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hudi_jvm.cases import HUDI_FIRST, Case, cases
from tests.hudi_jvm.client import HudiJvm
from tests.hudi_jvm.scenarios import we_continue_hudis

# the subject is what we make of Apache Hudi's tables, not where our writes run:
# they take the driver path (tests/conftest.py write_path), as a small batch on a
# local master does
pytestmark = [
    pytest.mark.interop,
    pytest.mark.spark,
    pytest.mark.hudi_jvm,
    pytest.mark.driver_writes,
]

RELEASE = "1.1.1"


@pytest.mark.parametrize("case", cases(RELEASE, HUDI_FIRST), ids=lambda c: c.name)
def test_we_continue_hudis_table(
    spark: Any, hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path, case: Case
) -> None:
    we_continue_hudis(spark, hudi_jvm(RELEASE), tmp_path / "t", case)
