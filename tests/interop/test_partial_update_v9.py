"""Partial-update payloads in table versions 8 and 9.

Hudi 1.1 writes ``PartialUpdateAvroPayload`` and ``OverwriteNonDefaultsWithLatestAvroPayload``
tables in version 9 as a merge mode (event-time, commit-time) with
``hoodie.table.partial.update.mode=IGNORE_DEFAULTS`` and the class as the legacy payload class;
hudi-rs merges such log records field by field, so both readers must fill an update's null
fields from the stored row, before and after compaction. Hudi 1.0 (version 8) records them as
merge mode CUSTOM with the payload class: hudi-rs reads such a copy-on-write table (its base
files hold merged rows) but refuses to merge its log records, so a merge-on-read table of
version 8 is refused with the reason and the way out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import SparkRunner, config, write_hudi
from engine.errors import ConfigError
from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.services.compaction import execute_compaction, schedule_compaction
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import write_options

# the subject is how partial-update payloads merge, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.driver_writes]

SCHEMA = "id string, dt string, ts long, v string, n long"
WRITES = [
    [("k1", "p", 1, "a", 1), ("k2", "p", 1, "b", 2)],
    [("k1", "p", 2, None, 5)],  # v stays 'a'
    [("k2", "p", 0, "z", None)],  # older ordering value: event time keeps the stored row
]
EXPECTED = {
    config.PARTIAL_UPDATE_PAYLOAD: {"k1": ("a", 5), "k2": ("b", 2)},
    config.OVERWRITE_NON_DEFAULTS_PAYLOAD: {"k1": ("a", 5), "k2": ("z", 2)},
}


def _rows(rows: list[dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
    return {r["id"]: (r["v"], r["n"]) for r in rows}


def _options(payload: str, table_type: str, version: str) -> dict[str, Any]:
    return write_options(
        "partial",
        {
            "hoodie.datasource.write.payload.class": payload,
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.write.table.version": version,
        },
    )


@pytest.mark.parametrize(
    ("payload", "table_type"),
    [
        (config.PARTIAL_UPDATE_PAYLOAD, "MERGE_ON_READ"),
        (config.OVERWRITE_NON_DEFAULTS_PAYLOAD, "MERGE_ON_READ"),
        (config.PARTIAL_UPDATE_PAYLOAD, "COPY_ON_WRITE"),
    ],
)
def test_version_9_partial_update_tables_read_alike_by_hudi_rs_and_us(
    spark: Any, tmp_path: Path, payload: str, table_type: str
) -> None:
    path = str(tmp_path / "t")
    options = _options(payload, table_type, "9")
    for rows in WRITES:
        write_hudi(spark.createDataFrame(rows, SCHEMA), path, options)
    props = read_properties(Storage(path))
    assert props[config.PARTIAL_UPDATE_MODE.key] == "IGNORE_DEFAULTS"
    assert props[config.LEGACY_PAYLOAD_CLASS.key] == payload
    assert config.PAYLOAD_CLASS.key not in props
    expected = EXPECTED[payload]
    assert _rows(hudi_rs_rows(path)) == expected
    assert _rows(read_table(path).to_pylist()) == expected
    if table_type == "MERGE_ON_READ":
        storage = Storage(path)
        plan = schedule_compaction(storage, config.parse_options({}), force=True)
        assert plan is not None
        execute_compaction(storage, plan, runner=SparkRunner().compact)
        assert _rows(hudi_rs_rows(path)) == expected
        ro = read_table(path, {config.QUERY_TYPE.key: "read_optimized"}).to_pylist()
        assert _rows(ro) == expected


def test_version_8_copy_on_write_partial_update_is_written_as_hudi_1_0_does(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    options = _options(config.PARTIAL_UPDATE_PAYLOAD, "COPY_ON_WRITE", "8")
    for rows in WRITES:
        write_hudi(spark.createDataFrame(rows, SCHEMA), path, options)
    props = read_properties(Storage(path))
    assert props[config.RECORD_MERGE_MODE.key] == "CUSTOM"
    assert props[config.PAYLOAD_CLASS.key] == config.PARTIAL_UPDATE_PAYLOAD
    assert props[config.RECORD_MERGE_STRATEGY_ID.key] == "00000000-0000-0000-0000-000000000000"
    expected = EXPECTED[config.PARTIAL_UPDATE_PAYLOAD]
    assert _rows(hudi_rs_rows(path)) == expected
    assert _rows(read_table(path).to_pylist()) == expected


def test_version_8_merge_on_read_partial_update_is_refused_naming_the_reason(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    options = _options(config.PARTIAL_UPDATE_PAYLOAD, "MERGE_ON_READ", "8")
    with pytest.raises(ConfigError, match=r"CUSTOM.*hudi-rs.*table version 9"):
        write_hudi(spark.createDataFrame(WRITES[0], SCHEMA), str(path), options)
    assert not path.exists() or not any(path.rglob("*.parquet"))
