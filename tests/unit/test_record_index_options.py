"""``hoodie.index.type=RECORD_INDEX``: what it turns on and what it refuses before a write."""

from __future__ import annotations

import pytest

from engine import config
from engine.errors import ConfigError
from engine.metadata.maintained import enabled_partitions
from engine.metadata.sync import check_metadata_options, metadata_enabled
from engine.write.index import INDEXES, KeyIndex, RecordIndex

V9 = {config.TABLE_VERSION.key: "9"}


def _cfg(**options: str) -> config.HoodieConfig:
    return config.parse_options({"hoodie.index.type": "RECORD_INDEX", **options})


def test_record_index_turns_on_the_metadata_table_and_its_partition() -> None:
    cfg = _cfg()
    assert metadata_enabled(cfg, V9)
    assert [p.name for p in enabled_partitions(cfg, V9)] == ["files", "record_index"]
    check_metadata_options(cfg, V9)


def test_record_index_is_a_global_lookup_reading_no_footer() -> None:
    index = KeyIndex.of(_cfg(**{"hoodie.record.index.update.partition.path": "true"}))
    assert isinstance(index, RecordIndex) and INDEXES["RECORD_INDEX"] is RecordIndex
    assert index.is_global and index.looks_up and index.update_partition_path
    assert not index.prune_by_ranges
    assert not KeyIndex.of(_cfg()).update_partition_path  # Hudi's default: updated in place


@pytest.mark.parametrize(
    ("props", "options", "named"),
    [
        ({config.TABLE_VERSION.key: "6"}, {}, "version 6"),
        (None, {}, "version 6"),  # a new table is written in version 6 unless told
        (V9, {"hoodie.metadata.enable": "false"}, "hoodie.metadata.enable"),
        (V9, {"hoodie.metadata.record.index.enable": "false"}, "record.index.enable"),
    ],
)
def test_record_index_without_its_metadata_table_is_refused(
    props: dict[str, str] | None, options: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=r"hoodie\.index\.type=RECORD_INDEX") as error:
        check_metadata_options(_cfg(**options), props)
    assert named in str(error.value)


def test_record_index_on_a_table_without_meta_fields_is_refused() -> None:
    cfg = _cfg(**{"hoodie.populate.meta.fields": "false"})
    with pytest.raises(ConfigError, match="_hoodie_record_key") as error:
        check_metadata_options(cfg, V9)
    assert "hoodie.populate.meta.fields=false" in str(error.value)
