"""The guards' rules on plain values (no JVM). That every config the adapter reads is documented
is tests/docs/test_reference.py's concern."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbt.adapters.hudi.guards import (
    HUDI_MATERIALIZATIONS,
    SPARK_CONFIGS,
    grants_problem,
    location_problem,
    spark_config_problems,
)
from dbt.adapters.hudi.options import ModelConfigError, parse_model_config

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
REFUSED = sorted(k for k, rule in SPARK_CONFIGS.items() if rule.verdict == "refused")


@pytest.mark.parametrize("materialization", HUDI_MATERIALIZATIONS)
def test_every_refused_spark_config_is_one_problem_naming_key_and_value(
    materialization: str,
) -> None:
    config = {key: f"v_{key}" for key in REFUSED}
    problems = spark_config_problems(materialization, config)
    assert len(problems) == len(REFUSED)
    for key, problem in zip(REFUSED, sorted(problems), strict=True):
        assert problem.startswith(f"{key}: 'v_{key}' is not applied by {materialization}: ")


def test_own_incremental_strategy_accepted_others_refused() -> None:
    def refused(materialization: str, strategy: str) -> bool:
        return bool(spark_config_problems(materialization, {"incremental_strategy": strategy}))

    assert not refused("hudi_upsert", "merge")
    assert not refused("hudi_mor", "MERGE")
    assert not refused("hudi_insert_overwrite", "insert_overwrite")
    for materialization, strategy in (
        ("hudi_upsert", "append"),
        ("hudi_upsert", "insert_overwrite"),
        ("hudi_mor", "microbatch"),
        ("hudi_insert_overwrite", "merge"),
        ("hudi_insert_overwrite", "append"),
    ):
        assert refused(materialization, strategy), (materialization, strategy)


def test_unset_and_empty_and_mapped_configs_pass() -> None:
    empty = {"options": {}, "tblproperties": None, "clustered_by": [], "sql_header": ""}
    assert spark_config_problems("hudi_upsert", empty) == []
    mapped = {"incremental_strategy": "append", "options": {"type": "mor"}}
    assert spark_config_problems("incremental", mapped, mapped=("incremental_strategy",)) == [
        "options: {'type': 'mor'} is not applied by incremental: " + SPARK_CONFIGS["options"].why
    ]


def test_parse_model_config_reports_spark_configs_with_the_other_problems() -> None:
    with pytest.raises(ModelConfigError) as e:
        parse_model_config(
            "orders",
            "hudi_upsert",
            {
                "unique_key": "id",
                "payload": "newest",
                "tblproperties": {"a": "b"},
                "sql_header": "x",
            },
        )
    assert len(e.value.problems) == 3
    text = str(e.value)
    assert "'newest'" in text
    assert "tblproperties: {'a': 'b'} is not applied by hudi_upsert" in text
    assert "sql_header: 'x' is not applied by hudi_upsert" in text


def test_grants_refused_only_when_the_platform_has_no_grant() -> None:
    grants = {"select": ["analyst", "bi"], "insert": []}
    problem = grants_problem(grants, platform_has_grants=False)
    assert problem is not None
    assert problem.startswith("grants: {select: ['analyst', 'bi']} cannot be applied")
    assert "insert" not in problem  # an empty grantee list grants nothing
    assert grants_problem(grants, platform_has_grants=True) is None
    assert grants_problem({}, platform_has_grants=False) is None
    assert grants_problem(None, platform_has_grants=False) is None
    assert grants_problem({"select": []}, platform_has_grants=False) is None
    bad = grants_problem(["select"], platform_has_grants=False)
    assert bad is not None and "expected a mapping" in bad


def test_location_refused_unless_absent_empty_or_a_hudi_table() -> None:
    path = "/lake/analytics/orders"
    assert location_problem(path, []) is None
    assert location_problem(path, [".hoodie", "region=eu"]) is None
    problem = location_problem(path, ["b.csv", "a.csv", "_SUCCESS", "c", "d", "e"])
    assert problem is not None
    assert problem.startswith(f"location: {path} is a non-empty directory that is not a Hudi")
    assert "it holds _SUCCESS, a.csv, b.csv, c, d, ..." in problem
    file_problem = location_problem(path, None)
    assert file_problem is not None and "is a file, not a directory" in file_problem
