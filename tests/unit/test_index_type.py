"""``hoodie.index.type`` parses into an ``IndexType``, the one place index kinds are named; the
write's ``KeyIndex`` classes and the option agree with it."""

from __future__ import annotations

import pytest

from engine import config
from engine.errors import ConfigError
from engine.index import IndexType
from engine.write.index import INDEXES, KeyIndex

# Hudi's index kinds, written out as the oracle: (global, bucket, bloom, log files, metadata table)
EXPECTED = {
    "SIMPLE": (False, False, False, False, False),
    "GLOBAL_SIMPLE": (True, False, False, False, False),
    "BLOOM": (False, False, True, False, False),
    "GLOBAL_BLOOM": (True, False, True, False, False),
    "BUCKET": (False, True, False, True, False),
    "RECORD_INDEX": (True, False, False, True, True),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_index_type_says_what_it_is(name: str) -> None:
    kind = IndexType(name)
    answers = (
        kind.is_global,
        kind.is_bucket,
        kind.uses_bloom,
        kind.indexes_log_files,
        kind.in_metadata_table,
    )
    assert answers == EXPECTED[name]
    assert kind.looks_up_keys is not kind.is_bucket


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_option_parses_any_case_into_the_type_and_its_key_index_agrees(name: str) -> None:
    cfg = config.parse_options({config.INDEX_TYPE.key: name.lower()})
    kind = cfg.get(config.INDEX_TYPE)
    assert kind is IndexType(name) and config.format_value(kind) == name
    index = KeyIndex.of(cfg)
    assert type(index) is INDEXES[kind] and index.index_type is kind
    assert (index.is_global, index.uses_bloom, index.can_index_log_files) == (
        kind.is_global,
        kind.uses_bloom,
        kind.indexes_log_files,
    )
    assert index.tags_in_write_job is kind.is_bucket


def test_every_type_has_its_key_index_and_the_default_is_simple() -> None:
    assert set(INDEXES) == set(IndexType) and set(IndexType.names()) == set(EXPECTED)
    assert config.HoodieConfig({}).get(config.INDEX_TYPE) is IndexType.SIMPLE


def test_an_unknown_index_type_is_refused_naming_the_key_and_value() -> None:
    with pytest.raises(ConfigError, match=r"'HASH'.*hoodie\.index\.type"):
        config.parse_options({config.INDEX_TYPE.key: "HASH"})
