"""Writes into copies of the version 8 and 9 tables Hudi 1.x wrote, judged by hudi-rs.

Each table is continued in its own version: an upsert (one stored record changed, one new
record), a delete, then an insert overwrite of one partition (copy-on-write) or a compaction
(merge-on-read). After every step hudi-rs and the engine's reader return exactly the rows of a
simple model (the table's rows before, changed as the step says); both list through the
metadata table Hudi kept, which the writes keep current (its ``files`` partition lists exactly
the committed files on storage; its ``record_index`` maps exactly the rows' keys to their file
groups; its ``column_stats`` covers every latest base file), the partitions the engine does not
maintain dropped with one warning; the table version and timeline layout are unchanged.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine import SparkRunner, config, write_hudi
from engine.cli import canonical_value
from engine.errors import ConfigError
from engine.fs.properties import parse_properties_text
from engine.fs.storage import Storage
from engine.fs.table_version import ordering_field
from engine.model.schema import META_COLUMNS
from engine.read.arrow import read_table
from engine.services.compaction import execute_compaction, schedule_compaction
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_batches, hudi_rs_rows
from tests.interop.index_partitions import column_stats_match_files, record_index_matches_rows
from tests.interop.test_metadata_write import listing_matches_storage

# the subject is Hudi 1.x's tables continued in their own layout, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.driver_writes]

TABLES = (
    "cow__v8_complexkeygen_hivestyle",
    "cow__v8_simplekeygen_nonhivestyle",
    "cow__v9_txns_simple_meta",
    "cow__v9_txns_simple_overwrite",
    "mor_avro__v9_nonpartitioned_rollback",
    "mor_avro__v9_txns_simple_meta",
    "trips_mor_avro__v8_trips_8i3u1d",
)


def _props(path: Path) -> dict[str, str]:
    return parse_properties_text((path / ".hoodie" / "hoodie.properties").read_text("latin-1"))


def _data(rows: list[dict[str, Any]]) -> list[str]:
    """Rows without meta columns, canonical and sorted: what the model compares."""
    out = []
    for r in rows:
        data = {k: v for k, v in r.items() if k not in (*META_COLUMNS, "_hoodie_operation")}
        out.append(json.dumps(canonical_value(data), sort_keys=True))
    return sorted(out)


KEPT = ("column_stats", "files", "record_index")


def _judge(path: Path, expected: list[dict[str, Any]], step: str) -> None:
    want = _data(expected)
    assert _data(hudi_rs_rows(str(path))) == want, f"hudi-rs after {step}"
    assert _data(read_table(str(path)).to_pylist()) == want, f"engine reader after {step}"
    listed = _props(path).get("hoodie.table.metadata.partitions", "").split(",")
    if "record_index" in listed:
        record_index_matches_rows(str(path))
    if "column_stats" in listed:
        column_stats_match_files(str(path))


def _bumped(value: Any) -> Any:
    return value + 1000 if isinstance(value, int) and not isinstance(value, bool) else f"{value}-n"


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    return f"{value}-changed"


def _write(spark: Any, path: Path, rows: list[dict[str, Any]], operation: str) -> str:
    data_columns = [c for c in rows[0] if c not in META_COLUMNS]
    schema = hudi_rs_batches(str(path))[0].schema
    schema = pa.schema([schema.field(c) for c in data_columns])
    table = pa.Table.from_pylist([{c: r[c] for c in data_columns} for r in rows], schema=schema)
    result = write_hudi(spark.createDataFrame(table), str(path), {config.OPERATION.key: operation})
    return result.instant_time


@pytest.mark.parametrize("name", TABLES)
def test_continue_1x_table_hudi_rs_and_engine_read_the_model(
    spark: Any, corpus_copy: Callable[[str], Path], name: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = corpus_copy(name)
    props = _props(path)
    version = props["hoodie.table.version"]
    had_metadata_table = (path / ".hoodie" / "metadata").exists()
    defs_path = props.get("hoodie.table.index.defs.path")
    # the index definitions the table had (Hudi 1.0 writes none for record_index)
    defined = (
        set(json.loads((path / defs_path).read_text())["indexDefinitions"]) if defs_path else set()
    )
    rows = sorted(
        hudi_rs_rows(str(path)), key=lambda r: (r["_hoodie_record_key"], r["_hoodie_commit_time"])
    )
    assert rows, "corpus table has rows"
    # one table keeps a key in two file groups (Hudi wrote it twice): an update changes both
    copies = Counter(r["_hoodie_record_key"] for r in rows)
    target = next((r for r in rows if copies[r["_hoodie_record_key"]] == 1), rows[0])
    target_key = target["_hoodie_record_key"]
    key_fields = props["hoodie.table.recordkey.fields"].split(",")
    key_field = key_fields[0]
    ordering = ordering_field(props)

    # upsert: change one stored record (greater ordering value), add a new one
    changed = dict(target)
    if ordering is not None:
        changed[ordering] = changed[ordering] + 1
    partition_fields = props.get("hoodie.table.partition.fields", "")
    field = next(
        c
        for c, v in changed.items()
        if c not in (*META_COLUMNS, *key_fields, ordering)
        and c not in partition_fields
        and isinstance(v, (str, bool, int))
    )
    changed[field] = _changed(changed[field])
    added = dict(rows[-1])
    added[key_field] = _bumped(added[key_field])
    listed = props.get("hoodie.table.metadata.partitions", "").split(",")
    dropped = sorted(p for p in listed if p and p not in KEPT)
    kept = sorted(p for p in listed if p in KEPT)
    with caplog.at_level(logging.WARNING, logger="engine.metadata.sync"):
        _write(spark, path, [changed, added], "upsert")
    warnings = [r.getMessage() for r in caplog.records if "metadata table" in r.getMessage()]
    assert len(warnings) == (1 if dropped else 0)
    assert all(name in warnings[0] for name in dropped)
    expected = [changed if r["_hoodie_record_key"] == target_key else r for r in rows]
    expected.append(added)
    _judge(path, expected, "upsert")

    # delete the new record
    _write(spark, path, [added], "delete")
    expected = [r for r in expected if r is not added]
    _judge(path, expected, "delete")

    if props["hoodie.table.type"] == "MERGE_ON_READ":
        storage = Storage(str(path))
        compaction = schedule_compaction(storage, config.parse_options({}), force=True)
        if compaction is not None:
            execute_compaction(storage, compaction, runner=SparkRunner().compact)
        _judge(path, expected, "compaction")
    else:
        # insert overwrite: the partition of the first record holds only the new record now
        replacing = dict(target)
        replacing[key_field] = _bumped(_bumped(replacing[key_field]))
        partition = target["_hoodie_partition_path"]
        _write(spark, path, [replacing], "insert_overwrite")
        expected = [r for r in expected if r["_hoodie_partition_path"] != partition]
        expected.append(replacing)
        _judge(path, expected, "insert_overwrite")

    after = _props(path)
    assert after["hoodie.table.version"] == version
    assert after["hoodie.timeline.layout.version"] == "2"
    assert after.get("hoodie.table.metadata.partitions", "") == ",".join(kept)
    index_defs = {"column_stats", "record_index"} & set(kept) & defined
    if index_defs:
        defs = json.loads((path / after["hoodie.table.index.defs.path"]).read_text())
        assert set(defs["indexDefinitions"]) == index_defs
    else:
        assert "hoodie.table.index.defs.path" not in after
        assert not (path / ".hoodie" / ".index_defs").exists()
    if had_metadata_table:
        listing_matches_storage(str(path))
        mdt = sorted(p.name for p in (path / ".hoodie" / "metadata").iterdir())
        assert mdt == [".hoodie", *kept]
    timeline = Timeline.load(Storage(str(path)))
    assert all(i.completion_time for i in timeline.commits_timeline())


def _first_row(path: Path) -> pa.Table:
    """The table's first row (data columns), typed as the table stores them."""
    rows = hudi_rs_rows(str(path))
    data_columns = [c for c in rows[0] if c not in META_COLUMNS]
    schema = hudi_rs_batches(str(path))[0].schema
    return pa.Table.from_pylist(
        [{c: rows[0][c] for c in data_columns}],
        schema=pa.schema([schema.field(c) for c in data_columns]),
    )


def test_metadata_enable_false_removes_the_metadata_table_hudi_kept(
    spark: Any, corpus_copy: Callable[[str], Path]
) -> None:
    path = corpus_copy("cow__v9_txns_simple_meta")
    table = _first_row(path)
    options = {config.OPERATION.key: "upsert", config.METADATA_ENABLE.key: "false"}
    write_hudi(spark.createDataFrame(table), str(path), options)
    after = _props(path)
    assert not after.get("hoodie.table.metadata.partitions")
    assert not (path / ".hoodie" / "metadata").exists()
    assert _data(hudi_rs_rows(str(path))) == _data(read_table(str(path)).to_pylist())


def test_write_table_version_on_existing_v6_table_is_refused(
    spark: Any, corpus_copy: Callable[[str], Path]
) -> None:
    path = corpus_copy("cow__v6_simplekeygen_nonhivestyle")
    before = sorted(p.name for p in (path / ".hoodie").iterdir())
    table = _first_row(path)
    with pytest.raises(ConfigError, match=r"table version 6.*hoodie\.write\.table\.version'=9"):
        write_hudi(
            spark.createDataFrame(table),
            str(path),
            {config.OPERATION.key: "upsert", "hoodie.write.table.version": "9"},
        )
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == before
