"""Payload semantics: precombine and combine-with-stored, checked case by case and against the
row-at-a-time model in tests/property/oracle.py."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import config
from engine.model import merge
from engine.model.merge import MergeSpec, combine_with_stored, latest_arrival, precombine
from tests.property.oracle import PAYLOADS, Oracle

pytestmark = pytest.mark.unit

K = "_hoodie_record_key"


def rows_by_key(table: pa.Table) -> dict[str, dict]:  # type: ignore[type-arg]
    return {r[K]: r for r in table.to_pylist()}


def test_precombine_greatest_ordering_wins_ties_to_later_arrival() -> None:
    t = pa.table({K: ["a", "a", "a", "b"], "ts": [5, 7, 7, 1], "v": ["x", "y", "z", "b"]})
    out = rows_by_key(precombine(t, MergeSpec(config.OVERWRITE_WITH_LATEST_PAYLOAD, "ts")))
    assert out["a"]["v"] == "z" and out["b"]["v"] == "b"


def test_precombine_without_ordering_field_latest_arrival_wins() -> None:
    t = pa.table({K: ["a", "a"], "v": ["first", "second"]})
    assert rows_by_key(precombine(t, MergeSpec()))["a"]["v"] == "second"


def test_precombine_partial_update_fills_nulls_from_older_versions() -> None:
    t = pa.table(
        {K: ["a", "a", "a"], "ts": [1, 3, 2], "v": ["old", None, "mid"], "w": [1, 2, None]}
    )
    out = rows_by_key(precombine(t, MergeSpec(config.PARTIAL_UPDATE_PAYLOAD, "ts")))
    assert out["a"] == {K: "a", "ts": 3, "v": "mid", "w": 2}


def test_latest_arrival_takes_the_last_record_of_each_key_deletes_included() -> None:
    """Commit-time ordering among log records: arrival decides, not the ordering value."""
    t = pa.table(
        {
            K: ["a", "b", "a", "b", "a"],
            "ts": [1, 9, 2, 0, 0],
            merge.DELETE_RECORD_COLUMN: [False, False, False, True, False],
            merge.ARRIVAL_COLUMN: [0, 1, 2, 3, 4],
        }
    )
    out = rows_by_key(latest_arrival(t))
    assert out["a"][merge.ARRIVAL_COLUMN] == 4 and out["b"][merge.DELETE_RECORD_COLUMN] is True


def test_latest_arrival_fills_nulls_from_records_since_the_last_delete() -> None:
    t = pa.table(
        {
            K: ["a", "a", "a", "a", "b", "b"],
            "v": ["old", None, "mid", None, "b1", None],
            merge.DELETE_RECORD_COLUMN: [False, True, False, False, False, False],
            merge.ARRIVAL_COLUMN: [0, 1, 2, 3, 4, 5],
        }
    )
    out = rows_by_key(latest_arrival(t, fills_nulls=True))
    assert out["a"]["v"] == "mid" and out["a"][merge.ARRIVAL_COLUMN] == 3
    assert out["b"]["v"] == "b1"
    t2 = t.set_column(1, "v", pa.array(["old", None, None, None, "b1", None], pa.string()))
    assert rows_by_key(latest_arrival(t2, fills_nulls=True))["a"]["v"] is None  # not "old"


@pytest.mark.parametrize(
    ("payload", "ordering", "commit_time"),
    [
        (config.OVERWRITE_WITH_LATEST_PAYLOAD, "ts", True),
        (config.OVERWRITE_NON_DEFAULTS_PAYLOAD, "ts", True),
        (config.DEFAULT_PAYLOAD, None, True),
        (config.DEFAULT_PAYLOAD, "ts", False),
        (config.PARTIAL_UPDATE_PAYLOAD, "ts", False),
        (config.PARTIAL_UPDATE_PAYLOAD, None, False),
    ],
)
def test_merge_spec_is_commit_time(payload: str, ordering: str | None, commit_time: bool) -> None:
    assert MergeSpec(payload, ordering).is_commit_time is commit_time


def test_combine_default_payload_keeps_stored_row_with_greater_ordering() -> None:
    stored = pa.table({K: ["a", "b"], "ts": [10, 10], "v": ["s", "s"]})
    incoming = pa.table({K: ["a", "b", "c"], "ts": [5, 20, 1], "v": ["i", "i", "i"]})
    result = combine_with_stored(stored, incoming, MergeSpec(config.DEFAULT_PAYLOAD, "ts"))
    assert rows_by_key(result.unchanged) == {"a": {K: "a", "ts": 10, "v": "s"}}
    assert set(rows_by_key(result.changed)) == {"b", "c"}
    assert (result.num_updates, result.num_inserts, result.num_deletes) == (1, 1, 0)


def test_combine_overwrite_latest_incoming_wins_regardless_of_ordering() -> None:
    stored = pa.table({K: ["a"], "ts": [10], "v": ["s"]})
    incoming = pa.table({K: ["a"], "ts": [5], "v": ["i"]})
    result = combine_with_stored(
        stored, incoming, MergeSpec(config.OVERWRITE_WITH_LATEST_PAYLOAD, "ts")
    )
    assert result.unchanged.num_rows == 0 and rows_by_key(result.changed)["a"]["v"] == "i"


def test_combine_soft_delete_removes_stored_row() -> None:
    stored = pa.table({K: ["a", "b"], "ts": [1, 1], "_hoodie_is_deleted": [False, False]})
    incoming = pa.table({K: ["a", "z"], "ts": [2, 2], "_hoodie_is_deleted": [True, True]})
    result = combine_with_stored(stored, incoming, MergeSpec(config.DEFAULT_PAYLOAD, "ts"))
    assert list(rows_by_key(result.unchanged)) == ["b"]
    assert result.changed.num_rows == 0 and result.num_deletes == 1


def test_combine_hard_delete_without_ordering_always_deletes() -> None:
    stored = pa.table({K: ["a"], "ts": [100]})
    incoming = pa.table({K: ["a"], "ts": pa.array([None], pa.int64()), "__delete_record": [True]})
    result = combine_with_stored(stored, incoming, MergeSpec(config.DEFAULT_PAYLOAD, "ts"))
    assert result.unchanged.num_rows == 0 and result.num_deletes == 1


def test_combine_non_defaults_payload_null_fields_keep_stored_values() -> None:
    stored = pa.table({K: ["a"], "ts": [10], "v": ["s"], "w": [1]})
    incoming = pa.table({K: ["a"], "ts": [1], "v": pa.array([None], pa.string()), "w": [2]})
    result = combine_with_stored(
        stored, incoming, MergeSpec(config.OVERWRITE_NON_DEFAULTS_PAYLOAD, "ts")
    )
    assert rows_by_key(result.changed)["a"] == {K: "a", "ts": 1, "v": "s", "w": 2}


# ---- agreement with the row-at-a-time model -------------------------------------------------

batch_rows = st.lists(
    st.fixed_dictionaries(
        {
            "k": st.sampled_from(["a", "b", "c", "d"]),
            "ts": st.one_of(st.none(), st.integers(0, 5)),
            "v": st.one_of(st.none(), st.sampled_from(["x", "y", "z"])),
            "w": st.one_of(st.none(), st.integers(0, 3)),
            "_hoodie_is_deleted": st.booleans(),
        }
    ),
    max_size=8,
)
FIELDS = ["k", "ts", "v", "w", "_hoodie_is_deleted"]
SCHEMA = pa.schema(
    [
        (K, pa.string()),
        ("k", pa.string()),
        ("ts", pa.int64()),
        ("v", pa.string()),
        ("w", pa.int64()),
        ("_hoodie_is_deleted", pa.bool_()),
    ]
)


def to_table(rows: list[dict]) -> pa.Table:  # type: ignore[type-arg]
    return pa.Table.from_pylist([{K: r["k"], **r} for r in rows], schema=SCHEMA)


@settings(max_examples=150, deadline=None)
@given(payload=st.sampled_from(PAYLOADS), first=batch_rows, second=batch_rows, third=batch_rows)
def test_merge_batches_agrees_with_row_model_and_keeps_stored_rows_in_place(
    payload: str,
    first: list,  # type: ignore[type-arg]
    second: list,  # type: ignore[type-arg]
    third: list,  # type: ignore[type-arg]
) -> None:
    """Three batches merged as a file group is rewritten: the rows are the row model's, and in
    the merge order the surviving stored keys keep their order ahead of the new ones."""
    spec = MergeSpec(payload, "ts")
    oracle = Oracle(payload, "ts", lambda r: (r["k"], ""), FIELDS)
    batches = (("1", first), ("2", second), ("3", third))
    for instant, batch in batches:
        oracle.apply(batch, "upsert", instant)

    with_time = SCHEMA.append(pa.field("_t", pa.string()))
    stored = with_time.empty_table()
    for instant, batch in batches:
        incoming = to_table(batch).append_column("_t", pa.nulls(len(batch), pa.string()))
        result = combine_with_stored(stored, precombine(incoming, spec), spec)
        changed = result.changed.set_column(
            result.changed.schema.get_field_index("_t"),
            "_t",
            pa.array([instant] * result.changed.num_rows, pa.string()),
        )
        before = stored.column(K).to_pylist()
        stored = result.merged_rows(changed)
        assert sorted(stored.column(K).to_pylist()) == sorted(
            [*result.unchanged.column(K).to_pylist(), *changed.column(K).to_pylist()]
        )
        after = stored.column(K).to_pylist()
        survivors = [k for k in before if k in after]
        assert after[: len(survivors)] == survivors
        assert len(survivors) == len(before) - result.num_deletes
        if result.keeps_stored_rows:
            assert after[: len(before)] == before
    actual = sorted((r["k"], r["ts"], r["v"], r["w"], r["_t"]) for r in stored.to_pylist())
    expected = sorted(
        (k, row["ts"], row["v"], row["w"], row["_hoodie_commit_time"])
        for (k, _), row in oracle.rows.items()
    )
    assert actual == expected
