"""Config parsing: typed values, aliases, and errors that name the key and the value."""

from __future__ import annotations

import pytest

from engine import config
from engine.errors import ConfigError, HudiError

pytestmark = pytest.mark.unit


def test_parse_options_typed_values_parsed() -> None:
    cfg = config.parse_options(
        {
            "hoodie.datasource.write.recordkey.field": "id,name",
            "hoodie.parquet.max.file.size": 1024,
            "hoodie.datasource.write.hive_style_partitioning": True,
            "hoodie.datasource.write.table.type": "mor",
            "hoodie.datasource.write.operation": "UPSERT",
        }
    )
    assert cfg.get(config.RECORDKEY_FIELD) == ("id", "name")
    assert cfg.get(config.PARQUET_MAX_FILE_SIZE) == 1024
    assert cfg.get(config.HIVE_STYLE_PARTITIONING) is True
    assert cfg.get(config.WRITE_TABLE_TYPE) == "MERGE_ON_READ"
    assert cfg.get(config.OPERATION) == "upsert"


def test_parse_options_absent_key_gives_default() -> None:
    cfg = config.parse_options({})
    assert cfg.get(config.PARQUET_SMALL_FILE_LIMIT) == 100 * 1024 * 1024
    assert cfg.get(config.PAYLOAD_CLASS) == config.OVERWRITE_WITH_LATEST_PAYLOAD
    assert not cfg.is_set(config.PAYLOAD_CLASS)


def test_parse_options_alias_maps_to_canonical_key() -> None:
    cfg = config.parse_options({"hoodie.datasource.write.table.name": "orders"})
    assert cfg.get(config.TABLE_NAME) == "orders"
    assert "hoodie.table.name" in cfg.values


def test_parse_options_short_payload_name_accepted() -> None:
    cfg = config.parse_options(
        {"hoodie.datasource.write.payload.class": "DefaultHoodieRecordPayload"}
    )
    assert cfg.get(config.WRITE_PAYLOAD_CLASS) == config.DEFAULT_PAYLOAD


def test_parse_options_unknown_hoodie_key_raises_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"hoodie\.no\.such\.key.*'x'"):
        config.parse_options({"hoodie.no.such.key": "x"})


def test_parse_options_malformed_int_raises_naming_key_and_value() -> None:
    with pytest.raises(ConfigError) as e:
        config.parse_options({"hoodie.parquet.max.file.size": "12MB"})
    assert "hoodie.parquet.max.file.size" in str(e.value)
    assert "'12MB'" in str(e.value)


def test_parse_options_bad_enum_lists_allowed_values() -> None:
    with pytest.raises(ConfigError, match="COPY_ON_WRITE, MERGE_ON_READ"):
        config.parse_options({"hoodie.datasource.write.table.type": "ICEBERG"})


def test_parse_options_several_problems_reported_at_once() -> None:
    with pytest.raises(HudiError) as e:
        config.parse_options({"hoodie.a.b": 1, "hoodie.combine.before.upsert": "maybe"})
    assert "hoodie.a.b" in str(e.value) and "hoodie.combine.before.upsert" in str(e.value)


def test_parse_options_non_hoodie_keys_kept_verbatim() -> None:
    cfg = config.parse_options({"path": "/x", "as.of.instant": "20240101000000000"})
    assert cfg.extra == {"path": "/x", "as.of.instant": "20240101000000000"}


def test_config_module_is_only_place_with_hoodie_literals() -> None:
    from pathlib import Path

    root = Path(config.__file__).parent
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name != "config.py" and '"hoodie.' in p.read_text()
    ]
    assert offenders == []


def test_every_option_key_starts_with_hoodie_and_has_doc() -> None:
    for opt in config.known_options():
        assert opt.key.startswith("hoodie."), opt.key
        assert opt.doc


def test_log_data_block_format_accepts_avro_and_parquet_and_refuses_hfile() -> None:
    option = config.LOGFILE_DATA_BLOCK_FORMAT
    assert config.parse_options({}).get(option) == "avro"
    assert config.parse_options({option.key: "AVRO"}).get(option) == "avro"
    assert config.parse_options({option.key: "parquet"}).get(option) == "parquet"
    with pytest.raises(ConfigError, match=r"'hfile'.*'hoodie.logfile.data.block.format'.*metadata"):
        config.parse_options({option.key: "hfile"})
    with pytest.raises(ConfigError, match=r"'orc'.*'hoodie.logfile.data.block.format'"):
        config.parse_options({option.key: "orc"})
