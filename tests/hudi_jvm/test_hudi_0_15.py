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

pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.hudi_jvm]

RELEASE = "0.15.0"


@pytest.mark.parametrize("case", cases(RELEASE, OURS_FIRST), ids=lambda c: c.name)
def test_hudi_continues_our_table(
    spark: Any, hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path, case: Case
) -> None:
    hudi_continues_ours(spark, hudi_jvm(RELEASE), tmp_path / "t", case)


@pytest.mark.parametrize("case", cases(RELEASE, HUDI_FIRST), ids=lambda c: c.name)
def test_we_continue_hudis_table(
    spark: Any, hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path, case: Case
) -> None:
    we_continue_hudis(spark, hudi_jvm(RELEASE), tmp_path / "t", case)
