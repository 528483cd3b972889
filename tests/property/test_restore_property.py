"""Property: random sequences of writes, savepoints, cleans and restores against the row model's
history.

Every write cleans aggressively (one commit retained) and some steps clean again on their own, so
only savepoints keep old slices. Each write's ordering values are above the earlier writes' (an
older one is the payload properties' subject, not this one's). Invariants, judged by hudi-rs after
every step (and by ``read_hudi`` and time travel at the end):

* a restore to a savepointed instant always succeeds, and the table then reads exactly the
  model's rows as of that instant, the later commits gone from the model's history too;
* a restore to an instant whose slices were cleaned is refused with a ``TimelineError`` naming it,
  and nothing on storage changes;
* time travel to every savepoint still standing reads the model's rows as of it;
* writes after a restore continue the table.

Copy-on-write and merge-on-read (inline compaction every two delta commits, so compactions are
rolled back too), table versions 6 and 9: ``make test`` runs 8 sequences of each, ``make
test-long`` 80.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from engine import HudiTable, read_table
from engine.errors import TimelineError
from tests.hudi_rs import hudi_rs_rows
from tests.property import runner
from tests.property.oracle import DEFAULT, OVERWRITE, Oracle, actual_set

# the subject is savepoints, cleans and restores, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.interop, pytest.mark.driver_writes]

SEQUENCES = max(runner.GROUP, runner.SEQUENCES // 5)
AGGRESSIVE = {"hoodie.cleaner.commits.retained": 1}
MOR = {
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.compact.inline": True,
    "hoodie.compact.inline.max.delta.commits": 2,
}

record = runner.records("abcd", st.integers(0, 4))
write = st.tuples(
    st.just("write"),
    st.sampled_from(["upsert", "upsert", "delete"]),
    st.lists(record, min_size=1, max_size=4),
)
step = st.one_of(
    write,
    write,
    write,
    st.tuples(st.just("savepoint")),
    st.tuples(st.just("clean")),
    st.tuples(st.just("restore"), st.integers(1, 4), st.booleans()),
)
# a table starts with a write; then any steps
sequence = st.tuples(
    st.sampled_from([OVERWRITE, DEFAULT]),
    st.tuples(st.just("write"), st.just("upsert"), st.lists(record, min_size=1, max_size=4)),
    st.lists(step, min_size=4, max_size=9),
)


def _listing(path: str) -> list[tuple[str, int]]:
    root = Path(path)
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*") if p.is_file()
    )


def _restore(path: str, oracle: Oracle, back: int, to_savepoint: bool) -> None:
    """Restore to the commit ``back`` commits before the latest (the oldest one when there are
    fewer), or, when asked and there is one, to the latest savepoint before it."""
    table = HudiTable(path)
    savepoints = [s.instant_time for s in table.savepoints()]
    commits = [t for t, _ in oracle.history]
    target = commits[max(0, len(commits) - 1 - back)]
    older = [t for t in savepoints if t <= target]
    if to_savepoint and older:
        target = older[-1]
    before = _listing(path)
    try:
        table.restore(target)
    except TimelineError as e:
        assert target not in savepoints, f"restore to savepoint {target} refused: {e}"
        assert f"Restore to instant {target}" in str(e)
        assert _listing(path) == before, "a refused restore changed the table"
        return
    oracle.restore(target)


def _run_step(
    spark: Any, path: str, options: dict[str, Any], oracle: Oracle, k: int, step: tuple[Any, ...]
) -> None:
    """Step ``k`` of a sequence (its writes' ordering values as the merge-on-read property's:
    :func:`runner.ordering_value`)."""
    kind = step[0]
    if kind == "write":
        rows = [{**r, "ts": runner.ordering_value(oracle.payload, k, r["ts"])} for r in step[2]]
        operation = step[1]
        runner.commit(spark, path, options, oracle, rows, operation)
        return
    table = HudiTable(path)
    if kind == "savepoint":
        latest = oracle.history[-1][0]
        if latest not in [s.instant_time for s in table.savepoints()]:
            table.savepoint(latest)
    elif kind == "clean":
        table.clean(AGGRESSIVE)
    else:
        _restore(path, oracle, step[1], step[2])


def run_sequence(
    spark: Any,
    payload: str,
    first: tuple[Any, ...],
    steps: list[tuple[Any, ...]],
    extra: dict[str, Any],
) -> None:
    with runner.scratch_table("restore-property-") as path:
        options = runner.table_options(payload, AGGRESSIVE, extra)
        oracle = runner.model(payload)
        for k, step in enumerate([first, *steps]):
            _run_step(spark, path, options, oracle, k, step)
            runner.judge(hudi_rs_rows(path), oracle, step)
        runner.judge(runner.read_hudi_rows(spark, path), oracle)
        for sp in HudiTable(path).savepoints():
            rows = read_table(path, {"as.of.instant": sp.instant_time}).to_pylist()
            expected = oracle.expected(runner.COLUMNS, sp.instant_time)
            assert actual_set(rows, runner.COLUMNS) == expected, (
                f"as of savepoint {sp.instant_time}"
            )


@pytest.mark.parametrize("version", ["6", "9"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@runner.sequence_groups(sequence, SEQUENCES)
def test_writes_savepoints_cleans_restores_follow_the_model(
    spark, group, table_type, version
) -> None:  # type: ignore[no-untyped-def]
    extra = {
        "hoodie.write.table.version": version,
        **(MOR if table_type == "MERGE_ON_READ" else {}),
    }
    runner.run_group(spark, group, lambda s, *sequence: run_sequence(s, *sequence, extra=extra))
