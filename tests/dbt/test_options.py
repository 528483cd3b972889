"""Model config → engine options: validation reports every problem at once (pure, no JVM)."""

from __future__ import annotations

import pytest

from dbt.adapters.hudi.options import (
    ModelConfigError,
    default_bucket_count,
    estimated_bytes,
    parse_model_config,
)
from engine import config as hc

pytestmark = pytest.mark.unit


def test_parse_model_config_minimal_upsert_defaults() -> None:
    cfg = parse_model_config("orders", "hudi_upsert", {"unique_key": "id"})
    assert cfg.record_key_fields == ("id",)
    assert cfg.partition_fields == ()
    assert cfg.table_type == "COPY_ON_WRITE"
    assert cfg.payload == "overwrite_latest"
    assert cfg.hive_style_partitioning is True
    assert cfg.on_schema_change == "ignore"
    assert cfg.operation(table_exists=False) == "bulk_insert"
    assert cfg.operation(table_exists=True) == "upsert"


def test_parse_model_config_many_errors_all_reported_with_model_name() -> None:
    with pytest.raises(ModelConfigError) as e:
        parse_model_config(
            "orders",
            "hudi_upsert",
            {
                "payload": "newest_wins",
                "on_schema_change": "explode",
                "hive_style_partitioning": "yes",
                "partition_by": ["", "x"],
                "hudi_options": {"hoodie.no.such.key": 1, "hoodie.parquet.max.file.size": "big"},
            },
        )
    text = str(e.value)
    assert "'orders'" in text and "hudi_upsert" in text
    for needle in (
        "unique_key: required",
        "'newest_wins'",
        "'explode'",
        "'yes'",
        "partition_by",
        "hoodie.no.such.key",
        "'big'",
    ):
        assert needle in text, needle
    assert len(e.value.problems) == 7


def test_parse_model_config_list_key_and_partitions_map_to_options() -> None:
    cfg = parse_model_config(
        "events",
        "hudi_mor",
        {
            "unique_key": ["id", "kind"],
            "partition_by": "day",
            "precombine_key": "ts",
            "payload": "event_time",
            "hive_style_partitioning": False,
            "hudi_options": {"hoodie.parquet.compression.codec": "snappy"},
        },
    )
    opts = cfg.write_options(table_name="events", database="analytics", operation="upsert")
    assert opts[hc.RECORDKEY_FIELD.key] == "id,kind"
    assert opts[hc.PARTITIONPATH_FIELD.key] == "day"
    assert opts[hc.WRITE_PRECOMBINE_FIELD.key] == "ts"
    assert opts[hc.WRITE_PAYLOAD_CLASS.key] == hc.EVENT_TIME_PAYLOAD
    assert opts[hc.HIVE_STYLE_PARTITIONING.key] == "false"
    assert opts[hc.WRITE_TABLE_TYPE.key] == "MERGE_ON_READ"
    assert opts[hc.TABLE_NAME.key] == "events"
    assert opts[hc.DATABASE_NAME.key] == "analytics"
    assert opts[hc.PARQUET_COMPRESSION_CODEC.key] == "snappy"
    hc.parse_options(opts)  # every produced key is one the engine accepts


def test_parse_model_config_reserved_and_contradicting_hudi_options_rejected() -> None:
    with pytest.raises(ModelConfigError) as e:
        parse_model_config(
            "t",
            "hudi_upsert",
            {
                "unique_key": "id",
                "hudi_options": {
                    hc.OPERATION.key: "insert",
                    hc.WRITE_TABLE_TYPE.key: "MERGE_ON_READ",
                    hc.RECORDKEY_FIELD.key: "other_id",
                    "spark.sql.shuffle.partitions": 4,
                },
            },
        )
    text = str(e.value)
    assert hc.OPERATION.key in text and "write operation" in text
    assert "hudi_mor" in text
    assert "'other_id'" in text and "unique_key" in text
    assert "spark.sql.shuffle.partitions" in text


def test_parse_model_config_event_time_without_precombine_key_rejected() -> None:
    with pytest.raises(ModelConfigError, match="precombine_key"):
        parse_model_config("t", "hudi_upsert", {"unique_key": "id", "payload": "event_time"})


def test_parse_model_config_mor_only_and_overwrite_only_keys_rejected_elsewhere() -> None:
    with pytest.raises(ModelConfigError) as e:
        parse_model_config(
            "t",
            "hudi_upsert",
            {"unique_key": "id", "compaction_delta_commits": 0, "overwrite_scope": "table"},
        )
    assert len(e.value.problems) == 3  # bad value, mor-only, overwrite-only


def test_insert_overwrite_operation_follows_partitions_and_scope() -> None:
    part = parse_model_config(
        "t", "hudi_insert_overwrite", {"unique_key": "id", "partition_by": "p"}
    )
    assert part.operation(table_exists=True) == "insert_overwrite"
    whole = parse_model_config(
        "t",
        "hudi_insert_overwrite",
        {"unique_key": "id", "partition_by": "p", "overwrite_scope": "table"},
    )
    assert whole.operation(table_exists=True) == "insert_overwrite_table"
    flat = parse_model_config("t", "hudi_insert_overwrite", {"unique_key": "id"})
    assert flat.operation(table_exists=True) == "insert_overwrite_table"


def test_check_columns_missing_key_and_non_boolean_delete_marker_reported() -> None:
    cfg = parse_model_config(
        "t", "hudi_upsert", {"unique_key": ["id", "k2"], "precombine_key": "ts"}
    )
    problems = cfg.check_columns({"ID": "bigint", "_hoodie_is_deleted": "string"})
    assert len(problems) == 3
    assert "'k2'" in problems[0] and "'ts'" in problems[1] and "boolean" in problems[2]


def test_index_type_and_buckets_become_the_bucket_index_options() -> None:
    cfg = parse_model_config(
        "m", "hudi_mor", {"unique_key": "id", "index_type": "bucket", "buckets": 8}
    )
    opts = cfg.write_options(table_name="m", database=None, operation="upsert")
    assert opts["hoodie.index.type"] == "BUCKET"
    assert opts["hoodie.bucket.index.num.buckets"] == "8"


def test_index_type_bloom_and_global_bloom_become_hudis_bloom_indexes() -> None:
    for given, index in (("bloom", "BLOOM"), ("Global_Bloom", "GLOBAL_BLOOM")):
        cfg = parse_model_config(
            "m", "hudi_upsert", {"unique_key": "id", "partition_by": "dt", "index_type": given}
        )
        opts = cfg.write_options(table_name="m", database=None, operation="upsert")
        assert opts["hoodie.index.type"] == index
        assert "hoodie.simple.index.update.partition.path" not in opts  # dbt's default: unset


def test_index_config_problems_are_reported() -> None:
    with pytest.raises(ModelConfigError) as err:
        parse_model_config(
            "m",
            "hudi_upsert",
            {
                "unique_key": "id",
                "index_type": "HASH",
                "buckets": 0,
                "hudi_options": {"hoodie.bucket.index.num.buckets": 4},
            },
        )
    text = str(err.value)
    assert (
        "index_type: 'HASH' is not one of SIMPLE, GLOBAL_SIMPLE, BLOOM, GLOBAL_BLOOM, BUCKET"
        in text
    )
    assert "buckets: expected a positive integer, got 0" in text


def test_insert_overwrite_needs_no_unique_key_upsert_and_mor_do() -> None:
    """Without unique_key an insert overwrite writes auto-generated record keys (no record key
    option); hudi_upsert and hudi_mor still refuse at compile time."""
    cfg = parse_model_config("agg", "hudi_insert_overwrite", {"partition_by": "day"})
    opts = cfg.write_options(table_name="agg", database=None, operation="insert_overwrite")
    assert "hoodie.datasource.write.recordkey.field" not in opts
    assert opts["hoodie.datasource.write.partitionpath.field"] == "day"
    for materialization in ("hudi_upsert", "hudi_mor"):
        with pytest.raises(ModelConfigError, match="unique_key: required"):
            parse_model_config("agg", materialization, {"partition_by": "day"})


def test_partitioned_upsert_and_mor_default_to_the_global_index_explicit_index_wins() -> None:
    """dbt's unique_key is unique in the table: partitioned upsert/MOR models look keys up in
    every partition and move a key whose partition changes; Hudi's SIMPLE stays the engine
    default, and a model that names an index (or turns the move off) keeps it."""
    for materialization in ("hudi_upsert", "hudi_mor"):
        cfg = parse_model_config("m", materialization, {"unique_key": "id", "partition_by": "p"})
        opts = cfg.write_options(table_name="m", database=None, operation="upsert")
        assert opts[hc.INDEX_TYPE.key] == "GLOBAL_SIMPLE"
        assert opts[hc.SIMPLE_INDEX_UPDATE_PARTITION_PATH.key] == "true"
    flat = parse_model_config("m", "hudi_upsert", {"unique_key": "id"})
    assert hc.INDEX_TYPE.key not in flat.write_options(
        table_name="m", database=None, operation="upsert"
    )
    for extra in (
        {"hudi_options": {hc.INDEX_TYPE.key: "SIMPLE"}},
        {"payload": "event_time", "precombine_key": "ts"},
    ):
        cfg = parse_model_config(
            "m", "hudi_upsert", {"unique_key": "id", "partition_by": "p", **extra}
        )
        opts = cfg.write_options(table_name="m", database=None, operation="upsert")
        assert opts.get(hc.INDEX_TYPE.key, "SIMPLE") == "SIMPLE", extra
    in_place = parse_model_config(
        "m",
        "hudi_upsert",
        {
            "unique_key": "id",
            "partition_by": "p",
            "hudi_options": {hc.SIMPLE_INDEX_UPDATE_PARTITION_PATH.key: "false"},
        },
    )
    opts = in_place.write_options(table_name="m", database=None, operation="upsert")
    assert opts[hc.INDEX_TYPE.key] == "GLOBAL_SIMPLE"
    assert opts[hc.SIMPLE_INDEX_UPDATE_PARTITION_PATH.key] == "false"


def test_a_new_mor_table_keyed_in_its_partitions_defaults_to_the_bucket_index() -> None:
    """hudi_mor tables whose keys cannot change partition get Hudi's bucket index when the
    write creates them; a continued table keeps the index it was written with."""
    cases = {
        (): "BUCKET",  # unpartitioned
        ("p",): "BUCKET",  # partitioned by a unique_key column: a key never moves
        ("q",): "GLOBAL_SIMPLE",  # a key may change partition: looked up in the table
    }
    for partition_by, index in cases.items():
        cfg = parse_model_config(
            "m", "hudi_mor", {"unique_key": ["id", "p"], "partition_by": list(partition_by)}
        )
        created = cfg.write_options(
            table_name="m", database=None, operation="bulk_insert", new_table=True
        )
        assert created.get(hc.INDEX_TYPE.key) == index, partition_by
        if index == "BUCKET":
            assert created[hc.BUCKET_INDEX_NUM_BUCKETS.key] == "4"
        # continued: no bucket default (a table written with SIMPLE stays so) ...
        continued = cfg.write_options(table_name="m", database=None, operation="upsert")
        assert continued.get(hc.INDEX_TYPE.key) != "BUCKET"
        # ... and a bucket table's persisted index applies, not another default
        persisted = cfg.write_options(
            table_name="m", database=None, operation="upsert", table_index="BUCKET"
        )
        assert hc.INDEX_TYPE.key not in persisted
    for other in (
        parse_model_config("m", "hudi_upsert", {"unique_key": "id"}),
        parse_model_config("m", "hudi_mor", {"unique_key": "id", "index_type": "SIMPLE"}),
        parse_model_config(
            "m", "hudi_mor", {"unique_key": "id", "hudi_options": {hc.INDEX_TYPE.key: "SIMPLE"}}
        ),
    ):
        opts = other.write_options(
            table_name="m", database=None, operation="bulk_insert", new_table=True
        )
        assert opts.get(hc.INDEX_TYPE.key, "SIMPLE") == "SIMPLE"
    explicit = parse_model_config(
        "m", "hudi_mor", {"unique_key": "id", "index_type": "BUCKET", "buckets": 2}
    )
    opts = explicit.write_options(
        table_name="m", database=None, operation="bulk_insert", new_table=True
    )
    assert opts[hc.BUCKET_INDEX_NUM_BUCKETS.key] == "2"


def test_the_default_bucket_count_follows_the_first_batch() -> None:
    mib = 1024 * 1024
    sizes = {None: 4, 0: 4, 10 * mib: 4, 600 * mib: 5, 64 * 1024 * mib: 256, 1 << 63: 4}
    assert {size: default_bucket_count(size) for size in sizes} == sizes
    plan = "== Optimized Logical Plan ==\nRelation [id#1] parquet, Statistics(sizeInBytes=1.5 GiB)"
    assert estimated_bytes(plan) == 1536 * mib
    assert estimated_bytes("Project, Statistics(sizeInBytes=812.0 B)") == 812
    assert estimated_bytes("no statistics") is None
    cfg = parse_model_config("m", "hudi_mor", {"unique_key": "id"})
    opts = cfg.write_options(
        table_name="m",
        database=None,
        operation="bulk_insert",
        new_table=True,
        batch_bytes=estimated_bytes(plan),
    )
    assert opts[hc.BUCKET_INDEX_NUM_BUCKETS.key] == "12"


def test_hudi_audit_becomes_hudis_validator_keys_and_audit_before_publish_parses() -> None:
    cfg = parse_model_config(
        "orders",
        "hudi_upsert",
        {
            "unique_key": "id",
            "audit_before_publish": True,
            "hudi_audit": {
                "single_value": ["select count(*) from <TABLE_NAME> where id is null#0", "q#1;"],
                "inequality": "select count(*) from <TABLE_NAME>",
            },
        },
    )
    assert cfg.audit_before_publish is True
    opts = cfg.write_options(table_name="orders", database=None, operation="upsert")
    assert opts[hc.PRECOMMIT_VALIDATORS.key] == (
        "org.apache.hudi.client.validator.SqlQuerySingleResultPreCommitValidator,"
        "org.apache.hudi.client.validator.SqlQueryInequalityPreCommitValidator"
    )
    assert opts[hc.PRECOMMIT_SINGLE_VALUE_SQL_QUERIES.key] == (
        "select count(*) from <TABLE_NAME> where id is null#0;q#1"
    )
    assert opts[hc.PRECOMMIT_INEQUALITY_SQL_QUERIES.key] == "select count(*) from <TABLE_NAME>"
    plain = parse_model_config("o", "hudi_upsert", {"unique_key": "id"})
    assert plain.audit_before_publish is False and not plain.audit_options


def test_hudi_audit_problems_reported() -> None:
    with pytest.raises(ModelConfigError) as e:
        parse_model_config(
            "orders",
            "hudi_upsert",
            {
                "unique_key": "id",
                "audit_before_publish": "maybe",
                "hudi_audit": {"single_value": "select 1", "sometimes": "x", "equality": []},
                "hudi_options": {"hoodie.precommit.validators": ""},
            },
        )
    text = str(e.value)
    assert "audit_before_publish" in text
    assert "'sometimes' is not one of single_value, equality, inequality" in text
    assert "equality: expected a query or a list of queries" in text
    assert "Invalid query format 'select 1'" in text
    assert "also set in hudi_options" in text


@pytest.mark.parametrize(
    ("store_failures", "store_failures_as", "flag", "expected"),
    [
        (None, None, False, None),
        (None, None, True, "table"),  # --store-failures
        (True, None, False, "table"),
        (True, "view", False, "view"),
        (False, "table", True, None),  # the test's own config wins over the flag
        (True, "ephemeral", False, None),  # dbt stores nothing either
    ],
)
def test_audit_stores_failures_as_dbts_test_materialization_decides(
    store_failures: bool | None, store_failures_as: str | None, flag: bool, expected: str | None
) -> None:
    from argparse import Namespace
    from types import SimpleNamespace

    from dbt.flags import get_flags, set_flags

    from dbt.adapters.hudi.audit import _stores_failures_as

    config = SimpleNamespace(store_failures=store_failures, store_failures_as=store_failures_as)
    before = get_flags()
    set_flags(Namespace(STORE_FAILURES=flag))
    try:
        assert _stores_failures_as(config) == expected
    finally:
        set_flags(before)


def test_audit_test_query_wraps_the_staged_rows_as_dbts_test_materialization() -> None:
    from dbt.adapters.hudi.audit import ModelTest

    test = ModelTest(
        unique_id="test.p.unique_orders_id",
        name="unique_orders_id",
        path="models/schema.yml",
        severity="error",
        sql="select id from hudi_snapshot__s__orders join hudi_snapshot__s__orders_x using (id)",
        limit=5,
    )
    staged = test.staged_sql("hudi_snapshot__s__orders", "hudi_staged__1__s__orders")
    assert staged == (
        "select id from `hudi_staged__1__s__orders` join hudi_snapshot__s__orders_x using (id)"
        "\n  limit 5"
    )
    assert test.query("hudi_snapshot__s__orders", "hudi_staged__1__s__orders") == (
        "select count(*) as failures, count(*) != 0 as should_warn, count(*) != 0 as "
        f"should_error\nfrom (\n{staged}\n) dbt_internal_test"
    )
