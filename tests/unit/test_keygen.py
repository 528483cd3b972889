"""Key generators on Arrow batches: record keys, partition paths, Hudi's placeholders and errors."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import config
from engine.errors import ConfigError, RecordKeyError
from engine.model.keygen import (
    escape_partition_value,
    format_java_date_pattern,
    generate_partition_paths,
    generate_record_keys,
    keygen_spec_from_config,
)

pytestmark = pytest.mark.unit

RK = "hoodie.datasource.write.recordkey.field"
PP = "hoodie.datasource.write.partitionpath.field"


def spec(**options: object):  # type: ignore[no-untyped-def]
    return keygen_spec_from_config(config.parse_options(options))


def keys_and_paths(table: pa.Table, **options: object) -> tuple[list[str], list[str]]:
    s = spec(**options)
    return (
        generate_record_keys(table, s).to_pylist(),
        generate_partition_paths(table, s).to_pylist(),
    )


def test_keygen_spec_inferred_from_fields_matches_hudi_defaults() -> None:
    assert spec(**{RK: "id", PP: "p"}).class_name == config.SIMPLE_KEYGEN
    assert spec(**{RK: "id,name", PP: "p"}).class_name == config.COMPLEX_KEYGEN
    assert spec(**{RK: "id"}).class_name == config.NON_PARTITIONED_KEYGEN


def test_simple_keygen_plain_partition_values_as_text() -> None:
    t = pa.table({"id": [1, 2], "p": ["a", "b"], "d": pa.array([19448, 19449], pa.date32())})
    assert keys_and_paths(t, **{RK: "id", PP: "p"}) == (["1", "2"], ["a", "b"])
    assert keys_and_paths(t, **{RK: "id", PP: "d"})[1] == ["2023-04-01", "2023-04-02"]


def test_simple_keygen_hive_style_prefixes_field_name() -> None:
    t = pa.table({"id": ["k"], "p": [10]})
    opts = {RK: "id", PP: "p", "hoodie.datasource.write.hive_style_partitioning": "true"}
    assert keys_and_paths(t, **opts)[1] == ["p=10"]


def test_simple_keygen_null_record_key_raises_naming_field() -> None:
    t = pa.table({"order_id": ["a", None], "p": ["x", "y"]})
    with pytest.raises(RecordKeyError, match="order_id"):
        keys_and_paths(t, **{RK: "order_id", PP: "p"})


def test_simple_keygen_empty_record_key_raises() -> None:
    t = pa.table({"id": ["a", ""], "p": ["x", "y"]})
    with pytest.raises(RecordKeyError, match="'id'"):
        keys_and_paths(t, **{RK: "id", PP: "p"})


def test_complex_keygen_placeholders_for_null_and_empty_parts() -> None:
    t = pa.table({"id": [1, None, 3], "name": ["Alice", "Bob", ""], "p": ["a", "b", "c"]})
    keys, _ = keys_and_paths(t, **{RK: "id,name", PP: "p"})
    assert keys == ["id:1,name:Alice", "id:__null__,name:Bob", "id:3,name:__empty__"]


def test_complex_keygen_all_parts_null_raises_naming_fields() -> None:
    t = pa.table({"id": [None], "name": [""], "p": ["a"]})
    with pytest.raises(RecordKeyError, match="id,name"):
        keys_and_paths(t, **{RK: "id,name", PP: "p"})


def test_complex_keygen_multi_level_partition_path() -> None:
    t = pa.table({"id": [1], "name": ["x"], "a": [10], "b": [300]})
    opts = {RK: "id,name", PP: "a,b", "hoodie.datasource.write.hive_style_partitioning": "true"}
    assert keys_and_paths(t, **opts)[1] == ["a=10/b=300"]


def test_partition_null_or_empty_value_goes_to_hive_default_partition() -> None:
    t = pa.table({"id": [1, 2, 3], "p": ["x", None, ""]})
    assert keys_and_paths(t, **{RK: "id", PP: "p"})[1] == [
        "x",
        "__HIVE_DEFAULT_PARTITION__",
        "__HIVE_DEFAULT_PARTITION__",
    ]


def test_partition_urlencode_escapes_hive_specials() -> None:
    t = pa.table({"id": [1], "p": ["a/b c:d%"]})
    opts = {RK: "id", PP: "p", "hoodie.datasource.write.partitionpath.urlencode": "true"}
    assert keys_and_paths(t, **opts)[1] == ["a%2Fb c%3Ad%25"]
    assert escape_partition_value("2024-01-01") == "2024-01-01"


def test_non_partitioned_keygen_empty_partition_path() -> None:
    t = pa.table({"id": [1, 2], "p": ["x", "y"]})
    opts = {RK: "id", PP: "p", "hoodie.datasource.write.keygenerator.type": "NON_PARTITION"}
    assert keys_and_paths(t, **opts) == (["1", "2"], ["", ""])


TS = "org.apache.hudi.keygen.TimestampBasedKeyGenerator"


@pytest.mark.parametrize(
    ("ts_type", "value", "out_format", "expected"),
    [
        ("UNIX_TIMESTAMP", 1680350460, "yyyy/MM/dd", "2023/04/01"),
        ("EPOCHMILLISECONDS", 1680350460123, "yyyy-MM-dd HH", "2023-04-01 12"),
        ("EPOCHMILLISECONDS", 1680350460123, "yyyyMMddHHmmss.SSS", "20230401120100.123"),
        ("EPOCHMICROSECONDS", 1680350460123456, "yyyy/MM/dd/HH", "2023/04/01/12"),
    ],
)
def test_timestamp_keygen_epoch_inputs_formatted(
    ts_type: str, value: int, out_format: str, expected: str
) -> None:
    t = pa.table({"id": [1], "ts": [value]})
    opts = {
        RK: "id",
        PP: "ts",
        "hoodie.datasource.write.keygenerator.class": TS,
        "hoodie.keygen.timebased.timestamp.type": ts_type,
        "hoodie.keygen.timebased.output.dateformat": out_format,
    }
    assert keys_and_paths(t, **opts)[1] == [expected]


def test_timestamp_keygen_date_string_matches_corpus_layout() -> None:
    # cow__v6_timebasedkeygen_nonhivestyle: '2023-04-01T12:01:00.123Z' -> 2023/04/01/12
    t = pa.table({"id": [1, 2], "ts_str": ["2023-04-01T12:01:00.123Z", "2023-04-02T23:59:59.000Z"]})
    opts = {
        RK: "id",
        PP: "ts_str",
        "hoodie.datasource.write.keygenerator.class": TS,
        "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH",
    }
    assert keys_and_paths(t, **opts)[1] == ["2023/04/01/12", "2023/04/02/23"]


def test_timestamp_keygen_output_timezone_shifts_hours() -> None:
    t = pa.table({"id": [1], "ts": [1680350460]})
    opts = {
        RK: "id",
        PP: "ts",
        "hoodie.datasource.write.keygenerator.class": TS,
        "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
        "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd-HH",
        "hoodie.keygen.timebased.output.timezone": "America/New_York",
    }
    assert keys_and_paths(t, **opts)[1] == ["2023-04-01-08"]


def test_timestamp_keygen_missing_type_raises_naming_key() -> None:
    with pytest.raises(ConfigError, match=r"hoodie\.keygen\.timebased\.timestamp\.type"):
        spec(
            **{
                RK: "id",
                PP: "ts",
                "hoodie.datasource.write.keygenerator.class": TS,
                "hoodie.keygen.timebased.output.dateformat": "yyyy",
            }
        )


def test_format_java_date_pattern_quotes_and_tokens() -> None:
    assert format_java_date_pattern("yyyy/MM/dd'T'HH") == "%Y/%m/%dT%H"
    with pytest.raises(ConfigError, match="Q"):
        format_java_date_pattern("yyyyQ")
