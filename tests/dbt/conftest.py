"""dbt harness for the hudi adapter: dbt runs in-process on the test run's one SparkSession.

dbt-spark's session cursor calls ``SparkSession.builder.enableHiveSupport()...getOrCreate()``;
because the ``spark`` fixture has already started the process's session, that call returns it
(static settings such as the catalog implementation are fixed by then), so dbt, the engine and
the tests share one JVM, one in-memory catalog and one set of temporary views.
"""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.fixtures.project import *  # noqa: F403  (the dbt-tests-adapter fixtures)

from engine.spark.session import LOCAL_DEFAULTS

# runtime settings only: dbt re-applies them on every statement to the shared session
RUNTIME_PARAMETERS = {
    key: value
    for key, value in LOCAL_DEFAULTS.items()
    if key not in ("spark.ui.enabled", "spark.default.parallelism")
}


@pytest.fixture(scope="class")
def dbt_profile_target(spark: Any) -> dict[str, Any]:
    return {
        "type": "hudi",
        "method": "session",
        "host": "localhost",
        "threads": 1,
        "server_side_parameters": dict(RUNTIME_PARAMETERS),
    }
