"""A task's rows split by partition path (and bucket), against a dictionary oracle."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.write.grouping import groups_in_arrival_order

_ROWS = st.lists(
    st.tuples(st.sampled_from(["", "a", "b/c", "é", "z"]), st.integers(0, 5)), max_size=60
)


@settings(max_examples=60, deadline=None)
@given(_ROWS, st.booleans())
def test_groups_are_sorted_by_path_and_bucket_and_keep_arrival_order(
    rows: list[tuple[str, int]], bucketed: bool
) -> None:
    table = pa.table(
        {
            "p": [p for p, _ in rows],
            "b": pa.array([b for _, b in rows], pa.int32()),
            "i": list(range(len(rows))),
        }
    )
    oracle: dict[tuple[str, int], list[int]] = {}
    for i, (path, bucket) in enumerate(rows):
        oracle.setdefault((path, bucket if bucketed else 0), []).append(i)
    groups = list(groups_in_arrival_order(table, "p", "b" if bucketed else None))
    assert [(p, b) for p, b, _ in groups] == sorted(oracle)
    assert {(p, b): t.column("i").to_pylist() for p, b, t in groups} == oracle
    for _, _, t in groups:
        assert ("b" in t.column_names) is not bucketed
