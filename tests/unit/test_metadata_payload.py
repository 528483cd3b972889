"""Merging the files partition's records: Hudi's rules against a plain-dict oracle (hypothesis),
the cases that matter spelled out, and Java's HashMap sizing that sets the stored order."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.io.java_hashmap import JavaHashMap, java_hashmap_order, table_size_for
from engine.metadata.payload import FileInfo, FilesRecord, MetadataRecordType, merge_file_slice

pytestmark = pytest.mark.unit

EXAMPLES = 500 if os.environ.get("HUDI_TEST_LONG") else 80
FILE = MetadataRecordType.FILE_LIST


def _record(key: str, **files: FileInfo) -> FilesRecord:
    return FilesRecord(key, FILE, dict(files))


def test_a_newer_tombstone_removes_and_sizes_grow() -> None:
    base = [_record("p", a=FileInfo(10), b=FileInfo(20))]
    logs: list[FilesRecord | str] = [
        _record("p", a=FileInfo(0, True), c=FileInfo(5)),
        _record("p", b=FileInfo(15), c=FileInfo(7)),
    ]
    merged = merge_file_slice(base, logs)
    assert merged["p"].listed == {"b": 20, "c": 7}


def test_a_tombstone_without_the_file_survives_the_log_merge_and_removes_it_from_the_base() -> None:
    base = [_record("p", a=FileInfo(10))]
    logs: list[FilesRecord | str] = [_record("p", b=FileInfo(3)), _record("p", a=FileInfo(0, True))]
    assert merge_file_slice(base, logs)["p"].listed == {"b": 3}
    # without a base record the tombstone is kept in the map, never listed
    only_logs = merge_file_slice([], logs)["p"]
    assert only_logs.files["a"].is_deleted and only_logs.listed == {"b": 3}


def test_a_deleted_key_drops_the_base_record_unless_a_newer_record_follows() -> None:
    base = [_record("p", a=FileInfo(1)), _record("q", x=FileInfo(2))]
    assert list(merge_file_slice(base, ["p"])) == ["q"]
    # a record after the delete replaces it in the log merge and then merges with the base
    # record, as Hudi's preCombine (a deleted previous record is dropped) does
    assert merge_file_slice(base, ["p", _record("p", z=FileInfo(4))])["p"].listed == {
        "a": 1,
        "z": 4,
    }


# one step of a slice: a record of key p or q with a few files, or a delete of the key
names = st.sampled_from(["a", "b", "c", "d"])
infos = st.builds(FileInfo, st.integers(1, 100), st.booleans())
steps = st.one_of(
    st.tuples(st.sampled_from(["p", "q"]), st.dictionaries(names, infos, max_size=3)),
    st.sampled_from(["p", "q"]),
)


def _oracle(base: list[FilesRecord], logs: list[object]) -> dict[str, dict[str, int]]:
    """Hudi's meaning, plainly: logs merge newest-wins (tombstones remove, sizes take the larger;
    an unmatched tombstone stays), then the merged logs apply to the base the same way."""

    def combine(old: dict[str, FileInfo], new: dict[str, FileInfo]) -> dict[str, FileInfo]:
        out = dict(old)
        for name, info in new.items():
            if name not in out:
                out[name] = info
            elif info.is_deleted:
                del out[name]
            else:
                out[name] = FileInfo(max(out[name].size, info.size))
        return out

    state: dict[str, dict[str, FileInfo] | None] = {}
    for step in logs:
        if isinstance(step, str):
            state[step] = None
        else:
            key, files = step  # type: ignore[misc]
            before = state.get(key)
            state[key] = dict(files) if before is None else combine(before, files)
    result = {r.key: dict(r.files) for r in base if r.key not in state}
    for r in base:
        if r.key in state and state[r.key] is not None:
            result[r.key] = combine(dict(r.files), state[r.key] or {})
    for key, files in state.items():
        if files is not None and key not in result:
            result[key] = files
    return {k: {n: i.size for n, i in v.items() if not i.is_deleted} for k, v in result.items()}


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    base=st.dictionaries(st.sampled_from(["p", "q"]), st.dictionaries(names, infos, max_size=3)),
    logs=st.lists(steps, max_size=8),
)
def test_merge_agrees_with_the_oracle(
    base: dict[str, dict[str, FileInfo]], logs: list[object]
) -> None:
    base_records = [FilesRecord(k, FILE, v) for k, v in sorted(base.items())]
    log_records: list[FilesRecord | str] = [
        s if isinstance(s, str) else FilesRecord(s[0], FILE, s[1])  # type: ignore[index]
        for s in logs
    ]
    merged = merge_file_slice(base_records, log_records)
    assert {k: r.listed for k, r in merged.items()} == _oracle(base_records, logs)


def test_java_hashmap_sizing() -> None:
    assert [table_size_for(n) for n in (0, 1, 2, 3, 5, 16, 17)] == [1, 1, 2, 4, 8, 16, 32]
    # putAll into an empty map sizes it for s / 0.75 + 1 entries: 3 entries -> 8 buckets
    presized: JavaHashMap[int] = JavaHashMap()
    presized.put_all([("region=eu", 0), ("region=us", 0), ("region=apac", 0)])
    assert presized.keys() == ["region=us", "region=eu", "region=apac"]
    # the same keys put one by one into new HashMap<>(): 16 buckets, another order
    assert java_hashmap_order(["region=eu", "region=us", "region=apac"]) == [
        "region=eu",
        "region=us",
        "region=apac",
    ]
    grown: JavaHashMap[int] = JavaHashMap()
    for i in range(13):  # past 12 entries the table doubles to 32 buckets
        grown.put(f"k{i}", i)
    assert len(grown) == 13 and grown._capacity == 32
