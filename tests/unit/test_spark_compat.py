"""dbt-spark's file_format='hudi' config → the Hudi write that gives its semantics (pure)."""

from __future__ import annotations

import pytest

from dbt.adapters.hudi.options import parse_model_config
from dbt.adapters.hudi.spark_compat import CompatConfigError, plan_node
from engine import config as hc

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("strategy", "partition_by", "materialization", "operation"),
    [
        ("merge", None, "hudi_upsert", None),
        ("append", None, "hudi_upsert", "insert"),
        ("insert_overwrite", "region", "hudi_insert_overwrite", "insert_overwrite"),
        ("insert_overwrite", None, "hudi_insert_overwrite", "insert_overwrite_table"),
        (None, None, "hudi_upsert", "insert"),  # dbt-spark's default strategy is append
    ],
)
def test_plan_node_incremental_strategies_map_to_hudi_operations(
    strategy: str | None, partition_by: str | None, materialization: str, operation: str | None
) -> None:
    config = {"file_format": "hudi", "unique_key": "id", "partition_by": partition_by}
    if strategy:
        config["incremental_strategy"] = strategy
    plan = plan_node("m", "incremental", config)
    assert (plan.materialization, plan.operation, plan.full_refresh) == (
        materialization,
        operation,
        False,
    )
    assert "incremental_strategy" not in plan.config and "file_format" not in plan.config


def test_plan_node_sql_options_become_hudi_configs_the_engine_accepts() -> None:
    plan = plan_node(
        "m",
        "table",
        {
            "options": {
                "type": "MOR",
                "primaryKey": "id,kind",
                "preCombineField": "ts",
                "payloadClass": hc.EVENT_TIME_PAYLOAD,
                "hoodie.parquet.compression.codec": "snappy",
            }
        },
    )
    assert plan.materialization == "hudi_mor" and plan.full_refresh
    cfg = parse_model_config("m", plan.materialization, plan.config)
    assert cfg.record_key_fields == ("id", "kind")
    assert cfg.ordering_field == "ts"
    assert cfg.payload == "event_time"
    assert cfg.hudi_options[hc.PARQUET_COMPRESSION_CODEC.key] == "snappy"


def test_plan_node_absent_type_continues_the_existing_table_type() -> None:
    config = {"file_format": "hudi", "unique_key": "id", "incremental_strategy": "merge"}
    assert plan_node("m", "incremental", config).materialization == "hudi_upsert"
    plan = plan_node("m", "incremental", config, persisted_table_type="MERGE_ON_READ")
    assert plan.materialization == "hudi_mor"


def test_plan_node_every_problem_reported_at_once() -> None:
    with pytest.raises(CompatConfigError) as e:
        plan_node(
            "orders",
            "incremental",
            {
                "incremental_strategy": "merge",
                "merge_update_columns": ["a"],
                "options": {"type": "bogus", "compression": "zstd", "recordMergerStrategy": "x"},
            },
        )
    text = str(e.value)
    for needle in (
        "'orders'",
        "'bogus'",
        "'compression' is not a Hudi table property",
        "recordMergerStrategy",
        "merge_update_columns",
        "'merge' needs unique_key",
    ):
        assert needle in text, needle
    assert len(e.value.problems) == 5


def test_plan_node_primary_key_contradicting_unique_key_is_an_error() -> None:
    with pytest.raises(CompatConfigError, match="primaryKey='id2' contradicts unique_key='id'"):
        plan_node("m", "table", {"unique_key": "id", "options": {"primaryKey": "id2"}})


def test_plan_node_snapshot_keyed_by_scd_id_copy_on_write_only() -> None:
    plan = plan_node("s", "snapshot", {"unique_key": "id", "strategy": "check"})
    assert plan.config["unique_key"] == "dbt_scd_id"
    assert plan.materialization == "hudi_upsert" and not plan.full_refresh
    with pytest.raises(CompatConfigError, match="copy-on-write"):
        plan_node("s", "snapshot", {"options": {"type": "mor"}})


def test_plan_node_without_a_key_writes_through_the_keyless_materialization() -> None:
    plan = plan_node("seed", "seed", {"file_format": "hudi"})
    assert (plan.materialization, plan.config["unique_key"]) == ("hudi_insert_overwrite", None)
    plan = plan_node("m", "incremental", {"file_format": "hudi"})
    assert (plan.materialization, plan.operation) == ("hudi_insert_overwrite", "insert")
