"""The record_index partition's layout, its records' encoding and the cells a write gives,
against Hudi's rules: the file group count ``estimateFileGroupCount`` gives, the file ids, the
instant time as epoch milliseconds, the file id's two encodings, ``reduceByKeys`` (bad input
refused, naming it)."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import config
from engine.errors import ConfigError, HudiError
from engine.metadata.record_index import (
    FileIdEncoding,
    RecordIndexRecord,
    RecordLocation,
    decode_record_index_record,
    encode_record_index_record,
    instant_time_millis,
    stamp_file_name,
)
from engine.metadata.record_index_layout import (
    estimate_file_group_count,
    record_index_file_group_count,
    record_index_file_id,
)
from engine.metadata.record_index_writer import KeyLocation, commit_cells, initialization_cells
from engine.metadata.writer import metadata_schema

EXAMPLES = 300 if os.environ.get("HUDI_TEST_LONG") else 40
_NAME = "_hoodie_file_name"

# the fields of HoodieMetadataRecord a record index record fills (Hudi 1.1's names and order)
_INFO = {
    "type": "record",
    "name": "HoodieRecordIndexInfo",
    "fields": [
        {"name": "partitionName", "type": ["null", "string"], "default": None},
        {"name": "fileIdHighBits", "type": ["null", "long"], "default": None},
        {"name": "fileIdLowBits", "type": ["null", "long"], "default": None},
        {"name": "fileIndex", "type": ["null", "int"], "default": None},
        {"name": "fileId", "type": ["null", "string"], "default": None},
        {"name": "instantTime", "type": ["null", "long"], "default": None},
        {"name": "fileIdEncoding", "type": "int", "default": 0},
        {"name": "position", "type": ["null", "long"], "default": None},
    ],
}
SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "HoodieMetadataRecord",
        "fields": [
            {"name": "_hoodie_file_name", "type": ["null", "string"], "default": None},
            {"name": "key", "type": "string"},
            {"name": "type", "type": "int"},
            {"name": "recordIndexMetadata", "type": ["null", _INFO], "default": None},
        ],
    }
)


def _count(records: int, **overrides: object) -> int:
    return record_index_file_group_count(records, config.parse_options(overrides))


def test_defaults_give_ten_file_groups_until_the_estimate_passes_ten() -> None:
    assert _count(0) == 10
    assert _count(123_032_915) == 10
    # 2 x records // (1 GiB // 48 bytes) passes 10: float32 rounds the count to 8s here
    assert _count(123_032_920) == 11
    assert _count(10**12) == 10_000


def test_the_estimate_follows_the_options() -> None:
    size = config.RECORD_INDEX_MAX_FILE_GROUP_SIZE.key
    growth = config.RECORD_INDEX_GROWTH_FACTOR.key
    assert _count(1000, **{size: 48 * 100, growth: "1.0"}) == 10
    assert _count(5000, **{size: 48 * 100, growth: "1.0"}) == 50
    assert _count(5000, **{size: 48 * 100, growth: "1.5"}) == 75
    fixed = {
        "hoodie.metadata.global.record.level.index.min.filegroup.count": 4,
        "hoodie.metadata.global.record.level.index.max.filegroup.count": 4,
    }
    assert _count(10**9, **fixed) == 4
    assert _count(0, **{config.RECORD_INDEX_MIN_FILE_GROUP_COUNT.key: 1, size: 4800}) == 1


def test_float32_arithmetic_as_java() -> None:
    # 16,777,217 is no float32: Java reads it as 16,777,216 before multiplying
    args = {"min_count": 1, "max_count": 10**9, "growth_factor": 1.0, "max_file_group_size": 48}
    assert estimate_file_group_count(16_777_217, **args) == 16_777_216  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (
            {
                "hoodie.metadata.record.index.min.filegroup.count": 20,
                "hoodie.metadata.record.index.max.filegroup.count": 10,
            },
            "min.filegroup.count=20",
        ),
        ({"hoodie.metadata.record.index.max.filegroup.size": 47}, "max.filegroup.size=47"),
        ({"hoodie.metadata.record.index.growth.factor": "-1"}, "growth.factor"),
        ({"hoodie.metadata.record.index.max.filegroup.count": 0}, "max.filegroup.count"),
    ],
)
def test_unusable_options_are_refused_naming_the_key(
    options: dict[str, object], named: str
) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        record_index_file_group_count(1, config.parse_options(options))


def test_file_group_ids() -> None:
    assert record_index_file_id(0) == "record-index-0000-0"
    assert record_index_file_id(9) == "record-index-0009-0"
    assert record_index_file_id(12345) == "record-index-12345-0"


def test_instant_times_as_hudi_parses_them() -> None:
    assert instant_time_millis("20260307222434124") == 1772922274124
    cst = dt.timezone(dt.timedelta(hours=-6))
    assert instant_time_millis("20260307162434124", cst) == 1772922274124
    # second granularity reads as the second's last millisecond; longer ones as 17 digits
    assert instant_time_millis("20260307222434") == 1772922274999
    assert instant_time_millis("20260307222434124001") == 1772922274124
    for bad in ("00000000000000", "00000000000000002", "2026030722", "2026-03-07T22:24"):
        with pytest.raises(HudiError, match=bad):
            instant_time_millis(bad)


@pytest.mark.parametrize(
    ("file_id", "encoding"),
    [
        ("5c3e0c0b-8f1a-4a6e-9d2b-0f6c2b1e7a10-0", FileIdEncoding.UUID),
        ("5c3e0c0b-8f1a-4a6e-9d2b-0f6c2b1e7a10-17", FileIdEncoding.UUID),
        ("ffffffff-ffff-ffff-ffff-ffffffffffff", FileIdEncoding.UUID),
        ("00000000-0000-0000-0000-000000000000-0", FileIdEncoding.UUID),
        ("my-file-group-1", FileIdEncoding.RAW),
        ("5C3E0C0B-8F1A-4A6E-9D2B-0F6C2B1E7A10-0", FileIdEncoding.RAW),
    ],
)
def test_file_ids_round_trip(file_id: str, encoding: FileIdEncoding) -> None:
    record = RecordIndexRecord("k1", RecordLocation("p=1", file_id, 1772922274124), encoding)
    value = encode_record_index_record(record, SCHEMA)
    assert decode_record_index_record(b"k1", value, SCHEMA) == record


@pytest.mark.parametrize(
    "file_id",
    [
        "my-file-group-1",
        "5C3E0C0B-8F1A-4A6E-9D2B-0F6C2B1E7A10-0",
        "5c3e0c0b-8f1a-4a6e-9d2b-0f6c2b1e7a10-007",
        "5c3e0c0b-8f1a-4a6e-9d2b-0f6c2b1e7a10-x",
        "5c3e0c0b8f1a4a6e9d2b0f6c2b1e7a10-0",
    ],
)
def test_a_file_id_no_uuid_encoding_can_hold_is_refused(file_id: str) -> None:
    record = RecordIndexRecord("k1", RecordLocation("p=1", file_id, 0))
    with pytest.raises(HudiError, match="fileIdEncoding 1"):
        encode_record_index_record(record, SCHEMA)


UUID_A = "5c3e0c0b-8f1a-4a6e-9d2b-0f6c2b1e7a10-0"
UUID_B = "0a1b2c3d-0000-4000-8000-ffffffffffff-1"


def test_a_key_deleted_and_moved_by_one_commit_keeps_its_new_place_only() -> None:
    """reduceByKeys: the delete from the old partition is dropped, the write stays."""
    cells = commit_cells(
        "20250101120000000", 1, SCHEMA,
        inserted={"new": ("p=2", UUID_A)}, moved={"mv": ("p=2", UUID_A)},
        deleted=["mv", "gone"],
    )  # fmt: skip
    assert [c.file_id for c in cells] == ["record-index-0000-0"]
    assert [k for k, _ in cells[0].upserts] == [b"mv", b"new"]
    assert cells[0].deletes == ("gone",)
    assert [(d.record_key, d.partition_path) for d in cells[0].delete_records()] == [
        ("gone", "record_index")
    ]


def test_one_key_written_to_two_places_is_refused_naming_it() -> None:
    with pytest.raises(HudiError, match="'k1'"):
        commit_cells(
            "20250101120000000", 4, SCHEMA,
            inserted={"k1": ("p=1", UUID_A)}, moved={"k1": ("p=2", UUID_B)}, deleted=[],
        )  # fmt: skip


def test_initialization_refuses_a_key_held_twice_and_lists_every_file_group() -> None:
    rows = [KeyLocation("k1", "p=1", UUID_A, "20250101120000000")]
    cells = initialization_cells(rows, 3, SCHEMA)
    assert [c.file_id for c in cells] == [record_index_file_id(i) for i in range(3)]
    assert sum(len(c.upserts) for c in cells) == 1
    with pytest.raises(HudiError, match=r"'k1'.*p=1.*p=2"):
        initialization_cells([*rows, KeyLocation("k1", "p=2", UUID_B, "20250101120000000")], 3,
                             SCHEMA)  # fmt: skip


def test_rows_sort_by_utf8_bytes_as_hfiles_need() -> None:
    keys = ["z", "é", "\U0001d11e", "\uffff", "A"]
    rows = [KeyLocation(k, "", UUID_A, "20250101120000000") for k in keys]
    (cells,) = initialization_cells(rows, 1, SCHEMA)
    assert [k for k, _ in cells.upserts] == sorted(k.encode() for k in keys)


def test_a_raw_file_id_needs_a_schema_that_can_hold_it() -> None:
    old = json.loads(SCHEMA)
    info = old["fields"][3]["type"][1]
    info["fields"] = [f for f in info["fields"] if f["name"] not in ("fileId", "fileIdEncoding")]
    record = RecordIndexRecord("k1", RecordLocation("p=1", "raw-id", 0), FileIdEncoding.RAW)
    with pytest.raises(HudiError, match="'raw-id' of key 'k1'"):
        encode_record_index_record(record, json.dumps(old))
    uuid_record = RecordIndexRecord("k1", RecordLocation("p=1", UUID_A, 7))
    value = encode_record_index_record(uuid_record, json.dumps(old))
    assert decode_record_index_record(b"k1", value, json.dumps(old)) == uuid_record


_META = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key")


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    version=st.sampled_from([8, 9]),
    partition=st.text(max_size=30),
    raw=st.booleans(),
    file_index=st.integers(-1, 2**31 - 1),
    millis=st.integers(-(2**62), 2**62),
    meta=st.dictionaries(st.sampled_from(_META), st.text(max_size=20), max_size=2),
    old_name=st.one_of(st.none(), st.text(max_size=40)),
    new_name=st.text(max_size=60),
)
def test_a_stamp_in_the_bytes_equals_decoding_and_encoding_again(
    version: int, partition: str, raw: bool, file_index: int, millis: int,
    meta: dict[str, str], old_name: str | None, new_name: str,
) -> None:  # fmt: skip
    """What a compaction writes for each mapping: the stored bytes with the file name put in
    equal the record decoded, stamped and encoded again (the oracle), for either file id
    encoding, meta columns set or not, a record stamped before or not."""
    schema = metadata_schema(version)
    uuid_id = "5c3e0c0b-8f1a-4a6e-9d2b-0f6c2b1e7a10"
    file_id = f"{uuid_id}-{file_index}" if file_index >= 0 else uuid_id
    encoding = FileIdEncoding.RAW if raw else FileIdEncoding.UUID
    stored = {**meta, **({"_hoodie_file_name": old_name} if old_name is not None else {})}
    record = RecordIndexRecord("k", RecordLocation(partition, file_id, millis), encoding, stored)
    value = encode_record_index_record(record, schema)
    stamped = RecordIndexRecord("k", record.location, encoding, {**stored, _NAME: new_name})
    assert stamp_file_name(value, schema, new_name) == encode_record_index_record(stamped, schema)


def test_a_stamp_refuses_a_record_of_another_partition_and_skips_other_schemas() -> None:
    schema = metadata_schema(9)
    record = RecordIndexRecord("k", RecordLocation("p", "my-file", 0), FileIdEncoding.RAW)
    value = bytearray(encode_record_index_record(record, schema))
    assert value[6] == 10  # five null meta columns, the empty key, then type 5 (zigzag)
    value[6] = 4  # type 2: a files record
    with pytest.raises(HudiError, match="type 2 is not a record index one"):
        stamp_file_name(bytes(value), schema, "f.hfile")
    with pytest.raises(HudiError, match="does not parse"):
        stamp_file_name(b"\2\20abc", SCHEMA, "f.hfile")  # a file name past the bytes' end
    no_meta = json.loads(SCHEMA)
    no_meta["fields"] = no_meta["fields"][1:]  # no _hoodie_file_name: decoded, encoded again
    assert stamp_file_name(b"\0\n\0", json.dumps(no_meta), "f.hfile") is None
