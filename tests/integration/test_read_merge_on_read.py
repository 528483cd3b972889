"""Merge-on-read reads of hand-built tables: log visibility, rollbacks, corruption, deletes.

Tables are built file by file with the engine's byte-exact encoders (base Parquet, Avro data,
delete and command blocks, JSON commit metadata), then read by our Arrow reader and, where Java
and hudi-rs agree, by hudi-rs too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import config
from engine.fs.properties import write_properties
from engine.fs.storage import Storage
from engine.io.delete_block import DeleteRecord
from engine.io.logfile import (
    encode_avro_data_block,
    encode_command_block,
    encode_delete_block,
)
from engine.model.schema import arrow_to_avro_schema, schema_json
from engine.read.arrow import read_table
from engine.read.log_scanner import collect_log_blocks
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.timeline import Timeline
from engine.view.fs_view import Visibility
from tests.hudi_rs import hudi_rs_rows

T1, T2, T3, T4, T5, T6 = (f"2024020100000{i}000" for i in range(1, 7))
FILE_ID = "c0ffee00-1111-2222-3333-444455556666-0"
NAME = "mor_probe"
DATA = pa.schema([("id", pa.string()), ("v", pa.string()), ("ts", pa.int64())])
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
        "_hoodie_partition_path", "_hoodie_file_name"]  # fmt: skip


class MorTable:
    """A non-partitioned MOR table (record key ``id``, ordering field ``ts``) built by hand."""

    def __init__(self, root: Path, payload: str = config.OVERWRITE_WITH_LATEST_PAYLOAD) -> None:
        self.root = root
        self.storage = Storage(str(root))
        write_properties(
            self.storage,
            {
                config.TABLE_NAME.key: NAME,
                config.TABLE_TYPE.key: "MERGE_ON_READ",
                config.TABLE_VERSION.key: "6",
                config.TIMELINE_LAYOUT_VERSION.key: "1",
                config.RECORDKEY_FIELDS.key: "id",
                config.PRECOMBINE_FIELD.key: "ts",
                config.PAYLOAD_CLASS.key: payload,
                config.KEYGENERATOR_CLASS.key: config.NON_PARTITIONED_KEYGEN,
            },
        )
        self.storage.write_bytes(".hoodie_partition_metadata", b"commitTime=0\npartitionDepth=0\n")
        self.schema = arrow_to_avro_schema(DATA, NAME, with_meta=True)
        self.commit_schema = schema_json(arrow_to_avro_schema(DATA, NAME, with_meta=False))
        self.base_name = f"{FILE_ID}_0-1-1_{T1}.parquet"
        self.log_name = f".{FILE_ID}_{T1}.log.1_0-1-1"
        self.log = b""

    def rows(self, instant: str, rows: list[tuple[str, str, int]], file_name: str) -> pa.Table:
        cols: dict[str, list[Any]] = {c: [] for c in META}
        for i, (key, _, _) in enumerate(rows):
            cols["_hoodie_commit_time"].append(instant)
            cols["_hoodie_commit_seqno"].append(f"{instant}_0_{i}")
            cols["_hoodie_record_key"].append(key)
            cols["_hoodie_partition_path"].append("")
            cols["_hoodie_file_name"].append(file_name)
        meta = [pa.array(cols[c], pa.string()) for c in META]
        data = [pa.array([r[i] for r in rows], f.type) for i, f in enumerate(DATA)]
        schema = pa.schema([*(pa.field(c, pa.string()) for c in META), *DATA])
        return pa.Table.from_arrays(meta + data, schema=schema)

    def commit(self, instant: str, path: str, *, completed: bool = True) -> None:
        stat = HoodieWriteStat(file_id=FILE_ID, path=path, partition_path="", prev_commit=T1)
        metadata = HoodieCommitMetadata(
            partition_to_write_stats={"": [stat]},
            extra_metadata={"schema": self.commit_schema},
            operation_type="UPSERT",
        )
        self.storage.write_bytes(f".hoodie/{instant}.deltacommit.requested", b"")
        self.storage.write_bytes(f".hoodie/{instant}.deltacommit.inflight", b"")
        if completed:
            self.storage.write_bytes(f".hoodie/{instant}.deltacommit", metadata.to_json())

    def insert_base(self, rows: list[tuple[str, str, int]]) -> None:
        with self.storage.open_output(self.base_name) as f:
            pq.write_table(self.rows(T1, rows, self.base_name), f)
        self.commit(T1, self.base_name)

    def append(self, block: bytes) -> None:
        self.log += block
        self.storage.write_bytes(self.log_name, self.log, overwrite=True)

    def update(
        self, instant: str, rows: list[tuple[str, str, int]], *, completed: bool = True
    ) -> None:
        self.append(encode_avro_data_block(self.rows(instant, rows, FILE_ID), self.schema, instant))
        self.commit(instant, self.log_name, completed=completed)

    def delete(self, instant: str, keys: list[tuple[str, Any]]) -> None:
        records = [DeleteRecord(k, "", ordering_value=o) for k, o in keys]
        self.append(encode_delete_block(records, instant, self.schema, ordering_field="ts"))
        self.commit(instant, self.log_name)

    def read(self, **options: str) -> dict[str, tuple[str, int]]:
        rows = read_table(str(self.root), options).to_pylist()
        return {r["id"]: (r["v"], r["ts"]) for r in rows}

    def read_hudi_rs(self) -> dict[str, tuple[str, int]]:
        rows = hudi_rs_rows(self.root)
        return {r["id"]: (r["v"], r["ts"]) for r in rows}


@pytest.fixture
def table(tmp_path: Path) -> MorTable:
    t = MorTable(tmp_path / NAME)
    t.insert_base([("1", "a", 10), ("2", "b", 10), ("3", "c", 10)])
    return t


@pytest.mark.interop
def test_read_table_mor_update_and_delete_match_hudi_rs(table: MorTable) -> None:
    table.update(T2, [("1", "a2", 20), ("4", "d", 20)])
    table.delete(T3, [("2", None)])
    expected = {"1": ("a2", 20), "3": ("c", 10), "4": ("d", 20)}
    assert table.read() == expected
    assert table.read_hudi_rs() == expected
    assert table.read(**{config.AS_OF_INSTANT: T2})["2"] == ("b", 10)


@pytest.mark.interop
def test_read_table_mor_uncommitted_block_invisible(table: MorTable) -> None:
    table.update(T2, [("1", "a2", 20)])
    table.update(T3, [("1", "a3", 30)], completed=False)
    assert table.read()["1"] == ("a2", 20)
    assert table.read_hudi_rs()["1"] == ("a2", 20)


@pytest.mark.interop
def test_read_table_mor_corrupt_trailing_block_skipped(table: MorTable) -> None:
    table.update(T2, [("1", "a2", 20)])
    torn = encode_avro_data_block(table.rows(T3, [("1", "a3", 30)], FILE_ID), table.schema, T3)
    table.append(torn[: len(torn) // 2])  # a torn append: only the last block is damaged
    table.commit(T3, table.log_name)
    assert table.read()["1"] == ("a2", 20)
    assert table.read_hudi_rs()["1"] == ("a2", 20)


@pytest.mark.unit
def test_collect_log_blocks_rollback_command_drops_target_blocks(table: MorTable) -> None:
    table.update(T2, [("1", "a2", 20)])
    table.update(T3, [("1", "a3", 30)])
    table.append(encode_command_block(T4, T3))
    table.commit(T4, table.log_name)
    vis = Visibility.of(Timeline.load(table.storage))
    blocks = collect_log_blocks(table.storage, [table.log_name], vis)
    assert [b.instant_time for b in blocks] == [T2]
    assert table.read()["1"] == ("a2", 20)


@pytest.mark.unit
def test_read_table_mor_time_travel_stops_at_newer_block(table: MorTable) -> None:
    table.update(T2, [("1", "a2", 20)])
    table.update(T3, [("1", "a3", 30)])
    assert table.read(**{config.AS_OF_INSTANT: T2})["1"] == ("a2", 20)
    assert table.read(**{config.AS_OF_INSTANT: T1})["1"] == ("a", 10)


@pytest.mark.unit
def test_read_table_mor_incremental_keeps_changes_in_range(table: MorTable) -> None:
    table.update(T2, [("1", "a2", 20)])
    table.update(T3, [("2", "b3", 30)])
    incremental = {
        config.QUERY_TYPE.key: "incremental",
        config.READ_BEGIN_INSTANTTIME.key: T2,
        config.READ_END_INSTANTTIME.key: T3,
    }
    assert table.read(**incremental) == {"2": ("b3", 30)}
    incremental[config.READ_BEGIN_INSTANTTIME.key] = T1
    assert table.read(**incremental) == {"1": ("a2", 20), "2": ("b3", 30)}


@pytest.mark.unit
def test_read_table_mor_smaller_ordering_in_later_block_wins_under_commit_time(
    table: MorTable,
) -> None:
    # OverwriteWithLatestAvroPayload is commit-time ordering: the latest block wins, as Hudi 1.x
    # and hudi-rs 0.5.0 read it (Java 0.14's log scanner kept the greater ts, ("a2", 20))
    table.update(T2, [("1", "a2", 20)])
    table.update(T3, [("1", "a3", 5)])
    assert table.read()["1"] == ("a3", 5)


@pytest.mark.unit
def test_read_table_mor_smaller_ordering_in_later_block_loses_under_event_time(
    tmp_path: Path,
) -> None:
    t = MorTable(tmp_path / NAME, payload=config.DEFAULT_PAYLOAD)
    t.insert_base([("1", "a", 10)])
    t.update(T2, [("1", "a2", 20)])
    t.update(T3, [("1", "a3", 15)])
    assert t.read()["1"] == ("a2", 20)


@pytest.mark.unit
def test_read_table_mor_later_delete_wins_under_commit_time(table: MorTable) -> None:
    table.update(T2, [("1", "a2", 20), ("2", "b2", 20)])
    table.delete(T3, [("1", 15), ("2", 25)])
    rows = table.read()
    assert "1" not in rows and "2" not in rows  # the latest write, whatever its ordering value


@pytest.mark.unit
def test_read_table_mor_delete_with_smaller_ordering_than_log_record_is_dropped(
    tmp_path: Path,
) -> None:
    t = MorTable(tmp_path / NAME, payload=config.DEFAULT_PAYLOAD)
    t.insert_base([("1", "a", 10), ("2", "b", 10)])
    t.update(T2, [("1", "a2", 20), ("2", "b2", 20)])
    t.delete(T3, [("1", 15), ("2", 25)])
    rows = t.read()
    assert rows["1"] == ("a2", 20)  # event time: LongWrapper(15) < 20, the delete is obsolete
    assert "2" not in rows


@pytest.mark.unit
def test_read_table_mor_record_after_delete_wins_whatever_its_ordering(table: MorTable) -> None:
    table.delete(T2, [("1", 50)])
    table.update(T3, [("1", "back", 5)])
    assert table.read()["1"] == ("back", 5)


@pytest.mark.unit
def test_read_table_mor_event_time_payload_keeps_newer_base_row(tmp_path: Path) -> None:
    t = MorTable(tmp_path / NAME, payload=config.DEFAULT_PAYLOAD)
    t.insert_base([("1", "a", 10), ("2", "b", 10)])
    t.update(T2, [("1", "older", 5), ("2", "newer", 20)])
    assert t.read() == {"1": ("a", 10), "2": ("newer", 20)}
