"""Apache Hudi 1.1 continues tables the engine wrote, in table versions 6, 8 and 9
(tests/hudi_jvm/scenarios.py): one JVM for the file's tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hudi_jvm.cases import OURS_FIRST, Case, cases
from tests.hudi_jvm.client import HudiJvm
from tests.hudi_jvm.scenarios import hudi_continues_ours

# the subject is what Apache Hudi makes of our tables, not where our writes run:
# they take the driver path (tests/conftest.py write_path), as a small batch on a
# local master does
pytestmark = [
    pytest.mark.interop,
    pytest.mark.spark,
    pytest.mark.hudi_jvm,
    pytest.mark.driver_writes,
]

RELEASE = "1.1.1"


@pytest.mark.parametrize("case", cases(RELEASE, OURS_FIRST), ids=lambda c: c.name)
def test_hudi_continues_our_table(
    spark: Any, hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path, case: Case
) -> None:
    hudi_continues_ours(spark, hudi_jvm(RELEASE), tmp_path / "t", case)
