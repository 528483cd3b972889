"""The guards' rules on plain values (no JVM), and the README's config table kept complete."""

from __future__ import annotations

import ast
import re
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


def _readme_config_table() -> set[str]:
    """The first column of the README's model config table (``| `key` | ...`` rows)."""
    text = (REPO / "README.md").read_text()
    section = text.split("### Model configs", 1)[1].split("\n#", 1)[0]
    return {
        name
        for cell in re.findall(r"^\| ([^|]+) \|", section, flags=re.MULTILINE)
        for name in re.findall(r"`([a-z_]+)`", cell)
    }


def _configs_read_by_the_adapter() -> set[str]:
    """Every ``config.get("key")`` in the adapter's modules: the configs a model can set."""
    keys = set()
    for module in sorted((REPO / "dbt" / "adapters" / "hudi").glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "config"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                keys.add(node.args[0].value)
    return keys


def test_readme_config_table_lists_every_config_the_adapter_reads() -> None:
    documented = _readme_config_table()
    read = _configs_read_by_the_adapter()
    assert {"unique_key", "hudi_options", "location"} <= read  # the scan finds them
    missing = (read | set(SPARK_CONFIGS)) - documented
    assert not missing, f"model configs missing from README's config table: {sorted(missing)}"
