"""The pieces every write job shares: the row checks, the write-stat coding a task returns, the
choice of a file group's handle and the one write task splitting its records into units."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa
import pytest

from engine.errors import HudiError, NullOrderingValueError, RecordKeyError
from engine.fs.filenames import TaskInfo
from engine.io.bloom_filter import BloomFilterSpec
from engine.io.parquet import avro_schema_with_meta, commit_schema_of, table_arrow_schema
from engine.model.keygen import KeyGenSpec
from engine.model.merge import MergeSpec
from engine.model.ordering import null_ordering_error
from engine.model.row_checks import (
    BAD_KEY_COLUMN,
    NULL_ORDERING_COLUMN,
    checked_rows,
    refuse,
    task_error_text,
)
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.timeline.commit_metadata import HoodieWriteStat, WrittenKeys
from engine.write.append import AppendHandle, AppendSlice
from engine.write.bucketing import Bucket
from engine.write.handles import CreateHandle, MergeHandle, WriteContext
from engine.write.routing import ROUTE_COLUMN, UnitWriter, choose_handle
from engine.write.write_status import decode_keys, decode_stats, encode_keys, encode_stats

pytestmark = pytest.mark.unit

SPEC = KeyGenSpec("simple", "org.apache.hudi.keygen.SimpleKeyGenerator", ("id",), ("p",))


def _flagged(bad: list[bool], null_ordering: list[bool]) -> pa.Table:
    n = len(bad)
    return pa.table(
        {
            "v": list(range(n)),
            RECORD_KEY_COLUMN: [f"k{i}" for i in range(n)],
            PARTITION_PATH_COLUMN: [f"p={i % 2}" for i in range(n)],
            BAD_KEY_COLUMN: bad,
            NULL_ORDERING_COLUMN: null_ordering,
        }
    )


def test_row_checks_pass_clean_rows_without_their_flags() -> None:
    rows = checked_rows(_flagged([False, False], [False, False]), SPEC)
    assert rows.column_names == ["v", RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN]
    assert rows.num_rows == 2


def test_row_checks_refuse_a_bad_key_before_a_null_ordering_value() -> None:
    with pytest.raises(RecordKeyError, match="recordKey value for field 'id' cannot be null"):
        checked_rows(_flagged([False, True, False], [True, False, False]), SPEC)


def test_row_checks_name_the_first_record_with_a_null_ordering_value() -> None:
    with pytest.raises(NullOrderingValueError) as caught:
        checked_rows(_flagged([False, False, False], [False, True, True]), SPEC).to_batches()
    assert str(caught.value) == str(null_ordering_error("k1", "p=1"))
    assert str(caught.value) == "Ordering value is null for record key 'k1' (partition 'p=1')"


def test_a_refusal_reads_in_a_task_failure_as_its_error_name_and_text() -> None:
    with pytest.raises(NullOrderingValueError) as caught:
        refuse(SPEC, bad_key=False, null_ordering=("a", "p=0"))
    assert task_error_text(caught.value) == (
        "NullOrderingValueError: Ordering value is null for record key 'a' (partition 'p=0')"
    )
    refuse(SPEC, bad_key=False, null_ordering=None)  # nothing to refuse


def test_write_stats_travel_with_their_written_keys() -> None:
    stat = HoodieWriteStat.of_file(
        file_id="f-0",
        path="p=1/f-0_0-1-2_001.parquet",
        partition_path="p=1",
        prev_commit="null",
        size=10,
        elapsed_ms=1,
        created=True,
        num_writes=2,
        num_inserts=2,
    )
    keyed = HoodieWriteStat.of_file(
        file_id="f-1",
        path="p=1/f-1_0-1-2_001.parquet",
        partition_path="p=1",
        prev_commit="null",
        size=11,
        elapsed_ms=1,
        created=True,
        num_writes=1,
    )
    keyed = replace(keyed, written_keys=WrittenKeys(("a",), ("b",)))
    rows = encode_stats([stat, keyed]).to_pylist()
    rows += encode_keys(pa.table({RECORD_KEY_COLUMN: ["x", "y", "x"]}), "p=1").to_pylist()
    assert decode_stats(rows) == [stat, keyed]
    keys = decode_keys(rows)
    assert sorted(keys.column(RECORD_KEY_COLUMN).to_pylist()) == ["x", "y"]
    assert set(keys.column(PARTITION_PATH_COLUMN).to_pylist()) == {"p=1"}
    assert decode_keys(encode_stats([stat]).to_pylist()).num_rows == 0


def test_a_file_group_gets_an_append_a_merge_or_a_create() -> None:
    new = Bucket(0, "f-0", "p=1")
    stored = Bucket(1, "f-1", "p=1", "f-1_0-1-2_001.parquet", "001")
    file_slice = AppendSlice("p=1", "f-1", "001")
    assert isinstance(choose_handle(new), CreateHandle)
    assert isinstance(choose_handle(stored), MergeHandle)
    appended = choose_handle(stored, file_slice)
    assert isinstance(appended, AppendHandle)
    assert appended.bucket_number == 1 and appended.file_slice == file_slice


def _context(base: Path) -> WriteContext:
    data = pa.table({"id": ["a"], "p": ["1"]})
    commit_schema = commit_schema_of(data.schema, "t")
    return WriteContext(
        base_path=str(base),
        instant_time="001",
        operation="upsert",
        arrow_schema=table_arrow_schema(commit_schema),
        avro_schema_with_meta=avro_schema_with_meta(commit_schema),
        merge_spec=MergeSpec(),
        combine=True,
        bloom=BloomFilterSpec(),
    )


@dataclass(frozen=True)
class _Recorder(UnitWriter):
    """A unit writer that writes nothing and records the units it was given."""

    seen: list[tuple[str, int, list[int], int]] = field(default_factory=list)
    task_numbers = 100

    def write_unit(
        self,
        partition: str,
        route: int,
        records: pa.Table,
        number: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> tuple[list[HoodieWriteStat], int]:
        assert ROUTE_COLUMN not in records.column_names
        self.seen.append((partition, route, records.column("v").to_pylist(), number))
        return [], 2


def test_a_write_task_writes_its_units_in_order_each_in_arrival_order(tmp_path: Path) -> None:
    batch = pa.record_batch(
        {
            "v": [1, 2, 3, 4, 5],
            PARTITION_PATH_COLUMN: ["b", "a", "b", "a", "b"],
            ROUTE_COLUMN: pa.array([7, 3, 1, 3, 7], pa.int32()),
        }
    )
    writer = _Recorder()
    rows = list(writer.write_task([batch], 3, _context(tmp_path), TaskInfo()))
    assert writer.seen == [("a", 3, [2, 4], 300), ("b", 1, [3], 302), ("b", 7, [1, 5], 304)]
    assert decode_stats(r for batch in rows for r in batch.to_pylist()) == []


def test_a_write_task_refuses_records_routed_to_no_unit(tmp_path: Path) -> None:
    batch = pa.record_batch(
        {"v": [1], PARTITION_PATH_COLUMN: ["a"], ROUTE_COLUMN: pa.array([None], pa.int32())}
    )
    with pytest.raises(HudiError, match="routed to no file group"):
        list(_Recorder().write_task([batch], 0, _context(tmp_path), TaskInfo()))
