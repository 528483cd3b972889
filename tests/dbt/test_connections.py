"""Connection methods: Hudi models need the SparkSession in the dbt process."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.hudi.connections import HudiCredentials
from dbt.adapters.hudi.impl import HudiAdapter

pytestmark = pytest.mark.unit


def test_credentials_type_is_hudi_and_session_has_session() -> None:
    creds = HudiCredentials(method="session", host="localhost", schema="s")  # type: ignore[arg-type]
    assert creds.type == "hudi"
    assert creds.has_session
    assert creds.server_side_parameters["spark.sql.ansi.enabled"] == "false"


@pytest.mark.parametrize("method", ["thrift", "http", "odbc"])
def test_hudi_require_session_remote_method_error_names_working_methods(method: str) -> None:
    fake = SimpleNamespace(_credentials=SimpleNamespace(method=method, has_session=False))
    with pytest.raises(DbtRuntimeError) as e:
        HudiAdapter.hudi_require_session(fake)  # type: ignore[arg-type]
    text = str(e.value)
    assert f"method: {method}" in text
    assert "method: session" in text and "Spark Connect" in text


class TestDbtSharesTheTestSession:
    """dbt's session cursor must reuse the ``spark`` fixture's session, not start another."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"probe.sql": "{{ config(materialized='table') }} select * from dbt_hudi_probe"}

    @pytest.mark.dbt
    @pytest.mark.spark
    def test_dbt_session_is_fixture_session_sees_its_temp_view(
        self, project: object, spark: Any
    ) -> None:
        from dbt.tests.util import run_dbt

        from dbt.adapters.hudi.publish import get_session

        spark.range(3).createOrReplaceTempView("dbt_hudi_probe")
        run_dbt(["run"])
        schema = project.test_schema  # type: ignore[attr-defined]
        assert spark.table(f"{schema}.probe").count() == 3
        assert get_session({}).sparkContext is spark.sparkContext
