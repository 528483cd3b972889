"""Two concurrent audited writers (``hoodie.precommit.validators`` and an audit hook) on one
table keep Hudi's conflict rules, and neither audit sees the other's uncommitted files.

Two threads of one driver write the table at once; their audits overlap in time in a fixed
order:

1. writer A writes its files and enters its audit, where it waits;
2. writer B starts only then (A's files are on storage, its instant inflight), writes its files
   and audits them: its validators and its staged snapshot must hold the committed rows and B's
   own, nothing of A; then B waits in its audit;
3. A, still in its audit, reads its staged snapshot while B's files are on storage and B's
   instant inflight: the committed rows and A's own, nothing of B; A commits;
4. B leaves its audit and commits: on the file groups A changed it fails with
   :class:`~engine.errors.WriteConflictError` and is rolled back (nothing of it visible); on
   disjoint file groups it commits too.

hudi-rs and ``read_hudi`` then read exactly the oracle's rows: the initial rows with the
committed writes applied in commit order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine import spark_table, write_hudi
from engine.errors import WriteConflictError
from engine.fs.storage import Storage
from engine.timeline.timeline import Timeline
from engine.write.precommit import StagedSnapshot
from tests.faults.harness import Rows, assert_no_orphans, assert_reads
from tests.keyed_table import SCHEMA, write_options

pytestmark = [pytest.mark.spark, pytest.mark.interop]

WAIT_SECONDS = 300
SINGLE = "org.apache.hudi.client.validator.SqlQuerySingleResultPreCommitValidator"
SINGLE_QUERIES = "hoodie.precommit.validators.single.value.sql.queries"
INITIAL = [(f"s{i}", "shared", 0, "init") for i in range(3)] + [
    (f"{w}{i}", f"own-{w}", 0, "init") for w in "ab" for i in range(2)
]
Row = tuple[str, str, int, str]


def _writes(overlapping: bool) -> dict[str, list[Row]]:
    """Each writer's batch: it updates a key of its own partition and inserts one there
    (disjoint file groups); when ``overlapping`` it also updates keys of the shared partition
    (one file group both change)."""
    batches = {w: [(f"{w}0", f"own-{w}", 1, w), (f"n-{w}", f"own-{w}", 1, w)] for w in "ab"}
    if overlapping:
        batches["a"] += [("s0", "shared", 1, "a"), ("s1", "shared", 1, "a")]
        batches["b"] += [("s1", "shared", 2, "b"), ("s2", "shared", 2, "b")]
    return batches


def _applied(state: Rows, rows: list[Row]) -> Rows:
    return {**state, **{rid: (dt, ts, v) for rid, dt, ts, v in rows}}


def _validators(expected: Rows, other: str) -> dict[str, str]:
    """Hudi's single-value validator: the staged table holds exactly ``expected``'s keys and no
    row of the writer ``other``."""
    queries = [
        f"select count(*) from <TABLE_NAME>#{len(expected)}",
        f"select count(*) from <TABLE_NAME> where v = '{other}'#0",
    ]
    return {"hoodie.precommit.validators": SINGLE, SINGLE_QUERIES: ";".join(queries)}


@dataclass
class Race:
    """What each writer's audit saw, and the events that order the two audits."""

    a_in_audit: threading.Event = field(default_factory=threading.Event)
    b_in_audit: threading.Event = field(default_factory=threading.Event)
    a_done: threading.Event = field(default_factory=threading.Event)
    staged: dict[str, Rows] = field(default_factory=dict)
    others_pending: dict[str, list[str]] = field(default_factory=dict)
    outcome: dict[str, Any] = field(default_factory=dict)

    def seen(self, name: str, snapshot: StagedSnapshot) -> None:
        """Record ``name``'s staged rows and the other writer's pending instants now."""
        rows = snapshot.after().select("id", "dt", "ts", "v").collect()
        self.staged[name] = {r["id"]: (r["dt"], r["ts"], r["v"]) for r in rows}
        pending = Timeline.load(snapshot.storage).pending()
        self.others_pending[name] = [
            i.instant_time for i in pending if i.instant_time != snapshot.instant_time
        ]

    def hook_a(self, snapshot: StagedSnapshot) -> None:
        self.a_in_audit.set()
        _wait(self.b_in_audit, "writer B to enter its audit")
        self.seen("a", snapshot)

    def hook_b(self, snapshot: StagedSnapshot) -> None:
        self.seen("b", snapshot)
        self.b_in_audit.set()
        _wait(self.a_done, "writer A to finish")


def _wait(event: threading.Event, what: str) -> None:
    if not event.wait(WAIT_SECONDS):
        raise TimeoutError(f"waited {WAIT_SECONDS}s for {what}")


def _thread(race: Race, name: str, write: Callable[[], Any], then: threading.Event) -> Any:
    def run() -> None:
        try:
            race.outcome[name] = write()
        except BaseException as e:  # the main thread asserts on it
            race.outcome[name] = e
        finally:
            then.set()

    thread = threading.Thread(target=run, name=f"audited-writer-{name}", daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("table", "overlapping"),
    [
        pytest.param({"hoodie.write.table.version": "6"}, True, id="cow-v6-same-file-group"),
        pytest.param(
            {
                "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                "hoodie.write.table.version": "9",
                "hoodie.metadata.enable": "true",
            },
            True,
            id="mor-v9-same-file-group",
        ),
        pytest.param(
            {
                "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                "hoodie.write.table.version": "9",
                "hoodie.metadata.enable": "true",
            },
            False,
            id="mor-v9-disjoint",
        ),
    ],
)
def test_audits_overlap_conflicts_keep_hudi_rules_and_see_nothing_uncommitted(
    spark: Any, tmp_path: Path, table: dict[str, str], overlapping: bool
) -> None:
    path = str(tmp_path / "t")
    base = write_options("audited_writers", table)
    write_hudi(spark.createDataFrame(INITIAL, SCHEMA), path, base)
    initial: Rows = _applied({}, INITIAL)
    batches = _writes(overlapping)
    own = {w: _applied(initial, batches[w]) for w in "ab"}  # each audit's expected snapshot

    race = Race()

    def write(name: str, other: str, hook: Callable[[StagedSnapshot], None]) -> Any:
        options = {**base, **_validators(own[name], other)}
        df = spark.createDataFrame(batches[name], SCHEMA)
        return spark_table(path, spark).write(df, options, audit=[hook])

    writer_a = _thread(race, "a", lambda: write("a", "b", race.hook_a), race.a_done)
    deadline = time.monotonic() + WAIT_SECONDS
    while not race.a_in_audit.wait(0.2):  # A failing before its audit ends the test at once
        assert not race.a_done.is_set(), f"writer A ended before its audit: {race.outcome}"
        assert time.monotonic() < deadline, "writer A did not reach its audit"
    # B ending before its audit (an error) releases A too: the asserts below then say why
    writer_b = _thread(race, "b", lambda: write("b", "a", race.hook_b), race.b_in_audit)
    for thread in (writer_a, writer_b):
        thread.join(2 * WAIT_SECONDS)
        assert not thread.is_alive(), f"{thread.name} did not finish"

    a_result, b_result = race.outcome["a"], race.outcome["b"]
    assert not isinstance(a_result, BaseException), a_result
    # each audit saw the committed rows and its own, while the other's files were inflight
    assert race.staged == own, race.outcome
    assert len(race.others_pending["a"]) == 1 and len(race.others_pending["b"]) == 1
    expected = own["a"]
    if overlapping:
        assert isinstance(b_result, WriteConflictError), b_result
        message = str(b_result)
        assert a_result.instant_time in message and "rolled back" in message
    else:
        assert not isinstance(b_result, BaseException), b_result
        expected = _applied(expected, batches["b"])
    assert_reads(spark, path, expected, "two audited writers")
    timeline = Timeline.load(Storage(path))
    written = {i.instant_time for i in timeline.commits_timeline()}
    assert race.others_pending["b"] == [a_result.instant_time]
    b_instant = race.others_pending["a"][0]
    assert a_result.instant_time in written and (b_instant in written) is not overlapping
    assert_no_orphans(path)
