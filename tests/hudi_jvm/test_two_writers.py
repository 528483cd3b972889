"""Apache Hudi's Spark writer and ours on one table at the same time, round after round.

Hudi writes with optimistic concurrency control (``FileSystemBasedLockProvider``, lazy
failed-writes cleaning with heartbeats), ours with its file lock; both lock ``.hoodie/lock``.
Each round the two upsert at once, in one of two interleavings that make their instants
overlap for certain:

- ``ours inside Hudi's``: Hudi's write starts (in a thread); once its instant is pending ours
  starts, finds that instant alive (its heartbeat is fresh) and must leave it, and writes;
- ``Hudi inside ours``: ours requests its instant and writes its files, then waits before its
  commit while Hudi's whole write runs; then ours commits.

Rounds alternate between overlapping keys (both update keys of partition ``p0``, one file
group: exactly one of the two commits, the other fails with a write conflict, Hudi's
``HoodieWriteConflictException`` or our ``WriteConflictError``) and disjoint ones (ours in
``p0``, Hudi's in ``p1``: both commit). After each round every reader (Hudi's, hudi-rs, ours)
must agree with an oracle that applies exactly the committed batches in instant order (both
batches of a round carry one ordering value, so the later commit wins a key in every merge
mode): no commit lost, no key stored twice, nothing of a failed write visible. ``make test``
runs two rounds per release (an interleaving each, one with overlapping keys, one with
disjoint), ``HUDI_TEST_LONG=1`` sixteen (each interleaving with each key set, four times).
The lock tests drive Hudi's lock provider itself against ours.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine import config, write_hudi
from engine.errors import LockTimeoutError, WriteConflictError
from engine.fs.storage import Storage
from engine.services.lock import LOCK_FILE, LOCK_RECORD, TableLock
from engine.timeline.instant import COMMIT_ACTIONS
from engine.write import transaction
from engine.write.transaction import WriteTransaction
from tests.hudi_jvm.client import HudiJvm, HudiJvmError
from tests.hudi_jvm.judge import COW, SCHEMA, SPARK_SCHEMA, Judge, keys

# the subject is the two writers' locks and conflicts, not where our writes run:
# they take the driver path (tests/conftest.py write_path), as a small batch on a
# local master does
pytestmark = [
    pytest.mark.interop,
    pytest.mark.spark,
    pytest.mark.hudi_jvm,
    pytest.mark.driver_writes,
]

# (Apache Hudi release, table version): 0.15 writes version 6, 1.1 version 9 (its default)
RELEASES = (("0.15.0", 6), ("1.1.1", 9))
OURS_INSIDE, HUDI_INSIDE = "ours inside Hudi's", "Hudi inside ours"
_EVERY = [(OURS_INSIDE, True), (OURS_INSIDE, False), (HUDI_INSIDE, True), (HUDI_INSIDE, False)]
# (interleaving, overlapping keys) of each round
PLANS = (
    {release: _EVERY * 4 for release, _ in RELEASES}
    if os.environ.get("HUDI_TEST_LONG")
    else {
        "0.15.0": [(OURS_INSIDE, True), (HUDI_INSIDE, False)],
        "1.1.1": [(HUDI_INSIDE, True), (OURS_INSIDE, False)],
    }
)
_PENDING_WAIT_SECONDS = 60
# both sides: a failed writer's heartbeat expires within seconds (Hudi: interval x misses; ours
# one interval more), so the next writer rolls its instant back
HEARTBEAT = {
    "hoodie.client.heartbeat.interval_in_ms": "2000",
    "hoodie.client.heartbeat.tolerable.misses": "2",
}
_EXPIRED_AFTER_SECONDS = 2 * 3 + 1
# both sides keep the same metadata table partitions: Hudi 1.1 builds partition_stats with
# column_stats, and ours does not keep partition_stats (nor drops it beside other writers)
SAME_METADATA = {"hoodie.metadata.index.column.stats.enable": "false"}

TABLE = {
    "hoodie.table.name": "two_writers",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": COW,
    "hoodie.index.type": "SIMPLE",
}
HUDI_OCC = {
    "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
    "hoodie.write.lock.provider": config.FILE_SYSTEM_LOCK_PROVIDER,
    "hoodie.cleaner.policy.failed.writes": "LAZY",
    # Hudi's lock manager sleeps this long after each refused tryLock (5 s by default)
    "hoodie.write.lock.client.wait_time_ms_between_retry": "200",
    "hoodie.write.lock.wait_time_ms_between_retry": "100",
    "hoodie.write.lock.client.num_retries": "600",
}
OUR_OCC = {
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.write.lock.provider": config.FILE_SYSTEM_LOCK_PROVIDER,
    "hoodie.write.lock.wait_time_ms": "120000",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}


def hudi_options(release: str, version: int) -> dict[str, str]:
    if release == "0.15.0":  # version 6 without a metadata table on either side
        return {**TABLE, **HUDI_OCC, **HEARTBEAT, "hoodie.metadata.enable": "false"}
    options = {**TABLE, **HUDI_OCC, **HEARTBEAT, **SAME_METADATA}
    return {**options, "hoodie.write.table.version": str(version)}


def our_options(version: int) -> dict[str, str]:
    options = {**TABLE, **OUR_OCC, **HEARTBEAT, "hoodie.write.table.version": str(version)}
    options.update(SAME_METADATA)
    if version >= 8:
        options["hoodie.metadata.enable"] = "true"
    return options


# ---- the lock: Hudi's provider and ours exclude each other -----------------------------------


def _our_lock(path: Path, wait_ms: int = 300, **options: Any) -> TableLock:
    return TableLock(
        Storage(str(path)),
        config.parse_options({"hoodie.write.lock.wait_time_ms": wait_ms, **options}),
    )


@pytest.mark.parametrize(("release", "version"), RELEASES, ids=[r for r, _ in RELEASES])
def test_hudi_lock_provider_and_ours_exclude_each_other(
    hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path, release: str, version: int
) -> None:
    jvm, path = hudi_jvm(release), tmp_path / "t"
    (path / ".hoodie").mkdir(parents=True)
    # Hudi holds it: an empty file, no holder named; ours waits and never breaks it for that
    assert jvm.lock(path, "try")["held"]
    assert (path / LOCK_FILE).is_file() and (path / LOCK_FILE).read_bytes() == b""
    os.utime(path / LOCK_FILE, (time.time() - 3600, time.time() - 3600))  # long held
    with pytest.raises(LockTimeoutError, match="Apache Hudi's FileSystemBasedLockProvider"):
        _our_lock(path).acquire()
    assert (path / LOCK_FILE).is_file(), "ours broke a live Hudi lock"
    jvm.lock(path, "unlock")
    # ours holds it: Hudi's tryLock is refused, and so is the create Hudi makes after finding
    # no lock (Hadoop's local create opens the file truncating it, not exclusively)
    ours = _our_lock(path)
    with ours.hold():
        record = (path / LOCK_RECORD).read_bytes()
        assert not jvm.lock(path, "try")["held"]
        opened = jvm.lock(path, "create")
        assert not opened["created"], opened
        assert (path / LOCK_RECORD).read_bytes() == record, "Hudi overwrote our lock"
    assert not (path / LOCK_FILE).exists()
    # what a lock *file* of ours would have met: Hudi's create truncates it and succeeds
    (path / LOCK_FILE).write_bytes(record)
    assert jvm.lock(path, "create")["created"]
    assert (path / LOCK_FILE).read_bytes() == b""
    (path / LOCK_FILE).unlink()


@pytest.mark.parametrize(("release", "version"), RELEASES, ids=[r for r, _ in RELEASES])
def test_expired_locks_are_broken_by_their_age_on_both_sides(
    hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path, release: str, version: int
) -> None:
    """With ``hoodie.write.lock.filesystem.expire`` set, a lock older than that is broken: ours
    breaks Hudi's by its modification time; Hudi 0.15 deletes ours (recursively), Hudi 1.x
    cannot delete a directory and keeps waiting."""
    jvm, path = hudi_jvm(release), tmp_path / "t"
    (path / ".hoodie").mkdir(parents=True)
    expire = {"hoodie.write.lock.filesystem.expire": "1"}
    assert jvm.lock(path, "try", expire)["held"]
    old = time.time() - 120
    os.utime(path / LOCK_FILE, (old, old))
    taken = _our_lock(path, **expire)
    with taken.hold():
        assert json.loads((path / LOCK_RECORD).read_bytes())["token"] == taken.token
    stale = _our_lock(path, **expire)
    stale.acquire()  # a holder that never releases
    os.utime(path / LOCK_FILE, (old, old))
    held = jvm.lock(path, "try")["held"]
    assert held == (release == "0.15.0")
    assert (path / LOCK_FILE).is_file() == held


def test_our_writer_refuses_a_lock_it_cannot_join(tmp_path: Path) -> None:
    elsewhere = {"hoodie.write.lock.filesystem.path": str(tmp_path / "locks")}
    with pytest.raises(config.ConfigError, match=r"hoodie\.write\.lock\.filesystem\.path"):
        _our_lock(tmp_path / "t", **elsewhere)
    zookeeper = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"
    with pytest.raises(config.ConfigError, match=r"hoodie\.write\.lock\.provider"):
        _our_lock(tmp_path / "t", **{"hoodie.write.lock.provider": zookeeper})
    same = {"hoodie.write.lock.filesystem.path": f"file://{tmp_path / 't' / '.hoodie'}/"}
    _our_lock(tmp_path / "t", **same).hold().__enter__()


# ---- two writers at once, round after round ---------------------------------------------------


@dataclass
class Outcome:
    """What one writer's attempt in a round came to."""

    batch: pa.Table
    instant_time: str | None = None
    error: BaseException | None = None

    @property
    def committed(self) -> bool:
        return self.error is None and self.instant_time is not None


@dataclass
class Rounds:
    spark: Any
    judge: Judge
    hudi: dict[str, str]
    ours: dict[str, str]
    next_key: int = 100
    conflicts: dict[str, int] = field(default_factory=lambda: {"ours": 0, "Hudi's": 0})

    def batches(self, overlap: bool) -> tuple[pa.Table, pa.Table]:
        """Ours and Hudi's batch of a round, one ordering value for both; each adds a new key
        of its own partition (p0 ours, p1 Hudi's)."""
        existing = sorted(self.judge.oracle)
        p0 = [k for k in existing if self.judge.oracle[k][0] == "p0"]
        p1 = [k for k in existing if self.judge.oracle[k][0] == "p1"]
        new_p0, new_p1 = keys(self.next_key, self.next_key + 1)
        self.next_key += 2
        ours = [*p0[:2], new_p0]
        theirs = [*(p0[1:3] if overlap else []), *p1[:2], new_p1]
        self.judge.ts += 1
        return self._rows(ours, "ours"), self._rows(theirs, "hudi")

    def _rows(self, ids: list[str], tag: str) -> pa.Table:
        rows = [
            {"id": i, "dt": self.judge.oracle.get(i, (f"p{int(i[1:]) % 2}", 0, ""))[0],
             "ts": self.judge.ts, "v": f"{tag}-{self.judge.ts}-{i}"}
            for i in ids
        ]  # fmt: skip
        return pa.Table.from_pylist(rows, schema=SCHEMA)

    def write_ours(self, outcome: Outcome) -> None:
        frame = self.spark.createDataFrame(outcome.batch.to_pylist(), SPARK_SCHEMA)
        options = {**self.ours, "hoodie.datasource.write.operation": "upsert"}
        try:
            outcome.instant_time = write_hudi(frame, str(self.judge.path), options).instant_time
        except WriteConflictError as exc:
            outcome.error = exc

    def write_hudis(self, outcome: Outcome) -> None:
        options = {**self.hudi, "hoodie.datasource.write.operation": "upsert"}
        try:
            self.judge.hudi.write(self.judge.path, outcome.batch, options)
        except HudiJvmError as exc:
            outcome.error = exc
        else:
            outcome.instant_time = "committed"  # which instant: known once both ended


def _pending_writes(judge: Judge) -> set[str]:
    return {i.instant_time for i in judge.timeline().pending(COMMIT_ACTIONS)}


def _wait_for_pending(judge: Judge, before: set[str], done: threading.Event) -> None:
    """Until a new pending write instant (Hudi's) appears."""
    deadline = time.monotonic() + _PENDING_WAIT_SECONDS
    while not _pending_writes(judge) - before:
        assert not done.is_set(), "Hudi's write ended before its instant was seen pending"
        assert time.monotonic() < deadline, "Hudi's write never requested an instant"
        time.sleep(0.02)


@dataclass
class Interleaving:
    """Our writer's hooks for the two interleavings: ``held`` is a lock our writer uses
    instead of its own (ours inside Hudi's); ``reached``/``go`` pause it before its commit
    (Hudi inside ours; ``go`` is set unless a round clears it)."""

    held: TableLock | None = None
    reached: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def interleaving(monkeypatch: pytest.MonkeyPatch) -> Iterator[Interleaving]:
    hooks = Interleaving()
    hooks.go.set()
    commit = WriteTransaction._commit

    def paused(self: WriteTransaction, job: Any, stats: Any) -> None:
        hooks.reached.set()
        assert hooks.go.wait(300), "the test never let our commit go on"
        commit(self, job, stats)

    def table_lock(storage: Storage, cfg: config.HoodieConfig) -> TableLock:
        return hooks.held if hooks.held is not None else TableLock(storage, cfg)

    monkeypatch.setattr(WriteTransaction, "_commit", paused)
    monkeypatch.setattr(transaction, "TableLock", table_lock)
    yield hooks
    hooks.go.set()


def _ours_inside_hudis(rounds: Rounds, ours: Outcome, theirs: Outcome, hooks: Interleaving) -> None:
    """Hudi's write in a thread; once its instant is pending, our whole write under a lock
    held throughout; then Hudi's commit."""
    before = _pending_writes(rounds.judge)
    done = threading.Event()

    def hudi() -> None:
        try:
            rounds.write_hudis(theirs)
        finally:
            done.set()

    thread = threading.Thread(target=hudi)
    thread.start()
    _wait_for_pending(rounds.judge, before, done)
    hooks.held = TableLock(Storage(str(rounds.judge.path)), config.parse_options(rounds.ours))
    try:
        with hooks.held.hold():
            rounds.write_ours(ours)
            assert not done.is_set(), "Hudi's write ended while ours held the lock"
    finally:
        hooks.held = None
    thread.join(600)
    assert not thread.is_alive(), "Hudi's write never returned"


def _hudi_inside_ours(rounds: Rounds, ours: Outcome, theirs: Outcome, hooks: Interleaving) -> None:
    """Ours in a thread up to its commit; Hudi's whole write; then our commit."""
    hooks.reached.clear()
    hooks.go.clear()
    thread = threading.Thread(target=rounds.write_ours, args=(ours,))
    thread.start()
    try:
        assert hooks.reached.wait(300), "our write never reached its commit"
        rounds.write_hudis(theirs)
    finally:
        hooks.go.set()
    thread.join(600)
    assert not thread.is_alive(), "our write never returned"


@dataclass(frozen=True)
class Before:
    """The timeline's write instants before a round."""

    completed: set[str]
    pending: set[str]


def _before(judge: Judge) -> Before:
    timeline = judge.timeline()
    return Before(
        {i.instant_time for i in timeline.completed(COMMIT_ACTIONS)},
        {i.instant_time for i in timeline.pending(COMMIT_ACTIONS)},
    )


def _check_failures(rounds: Rounds, step: str, ours: Outcome, theirs: Outcome) -> None:
    """A failed write failed on a write conflict, and cleanly."""
    for who, outcome, conflict in (
        ("ours", ours, WriteConflictError),
        ("Hudi's", theirs, HudiJvmError),
    ):
        if outcome.error is None:
            continue
        assert isinstance(outcome.error, conflict), f"{step}: {who} failed: {outcome.error}"
        assert "conflict" in str(outcome.error).lower(), f"{step}: {who}: {outcome.error}"
        rounds.conflicts[who] += 1


def _name_hudis_instant(judge: Judge, before: Before, ours: Outcome, theirs: Outcome) -> None:
    """Hudi's committed instant: the write instant completed in the round that is not ours."""
    timeline = judge.timeline()
    new = {i.instant_time for i in timeline.completed(COMMIT_ACTIONS)} - before.completed
    assert ours.instant_time is None or ours.instant_time in new
    hudis = new - {ours.instant_time}
    assert len(hudis) == (1 if theirs.committed else 0), f"new instants {new}"
    theirs.instant_time = min(hudis) if hudis else None
    # a failed write of ours is rolled back at once; Hudi's (lazy policy) stays pending at most
    pending = {i.instant_time for i in timeline.pending(COMMIT_ACTIONS)} - before.pending
    assert len(pending) <= (0 if theirs.committed else 1), f"left pending: {pending}"


def _judge_round(
    rounds: Rounds, step: str, mode: str, overlap: bool, before: Before, ours: Outcome,
    theirs: Outcome,
) -> None:  # fmt: skip
    """The second committer fails on overlapping keys, both commit on disjoint ones; readers
    agree with the oracle of the committed batches."""
    judge = rounds.judge
    _check_failures(rounds, step, ours, theirs)
    _name_hudis_instant(judge, before, ours, theirs)
    if overlap:
        second = theirs if mode == OURS_INSIDE else ours
        first = ours if mode == OURS_INSIDE else theirs
        assert first.committed and not second.committed, (
            f"{step}: the writer that committed second must fail (ours: "
            f"{ours.error or ours.instant_time}; Hudi's: {theirs.error or theirs.instant_time})"
        )
    else:
        assert ours.committed and theirs.committed, (
            f"{step}: disjoint writes must both commit (ours: {ours.error}; Hudi's: {theirs.error})"
        )
    committed = [o for o in (ours, theirs) if o.committed]
    for outcome in sorted(committed, key=lambda o: str(o.instant_time)):
        judge.upserted(outcome.batch)
    judge.check(step)


@pytest.mark.parametrize(("release", "version"), RELEASES, ids=[r for r, _ in RELEASES])
def test_hudi_and_ours_write_one_table_at_once(
    spark: Any,
    hudi_jvm: Callable[[str], HudiJvm],
    tmp_path: Path,
    interleaving: Interleaving,
    release: str,
    version: int,
) -> None:
    judge = Judge(tmp_path / "t", hudi_jvm(release), COW)
    rounds = Rounds(spark, judge, hudi_options(release, version), our_options(version))
    first = judge.batch(keys(*range(12)), "bulk")
    judge.hudi.write(
        judge.path, first, {**rounds.hudi, "hoodie.datasource.write.operation": "bulk_insert"}
    )
    judge.upserted(first)
    for r, (mode, overlap) in enumerate(PLANS[release]):
        batch_ours, batch_theirs = rounds.batches(overlap)
        ours, theirs = Outcome(batch_ours), Outcome(batch_theirs)
        before = _before(judge)
        if mode == OURS_INSIDE:
            _ours_inside_hudis(rounds, ours, theirs, interleaving)
        else:
            _hudi_inside_ours(rounds, ours, theirs, interleaving)
        step = f"round {r} ({mode}, {'overlapping' if overlap else 'disjoint'} keys)"
        _judge_round(rounds, step, mode, overlap, before, ours, theirs)
    _last_write_rolls_back_failed_ones(rounds)


def _last_write_rolls_back_failed_ones(rounds: Rounds) -> None:
    """Once the heartbeats of Hudi's failed writes expired, our next write rolls them back;
    then every reader agrees again, time travel included."""
    judge = rounds.judge
    time.sleep(_EXPIRED_AFTER_SECONDS)
    last = Outcome(rounds.batches(overlap=False)[0])
    rounds.write_ours(last)
    assert last.committed, last.error
    judge.upserted(last.batch)
    pending = judge.timeline().pending(COMMIT_ACTIONS)
    assert not pending, f"failed writes left pending: {pending}"
    judge.check("our write after the failed ones expired")


def test_our_writer_leaves_hudis_pending_clustering(
    spark: Any, hudi_jvm: Callable[[str], HudiJvm], tmp_path: Path
) -> None:
    """A clustering Hudi scheduled (a pending replacecommit with its plan on table version 6,
    no heartbeat: Hudi keeps none for table services) is not a failed write: our write leaves
    it. Our update to file groups the plan rewrites fails cleanly (the clustering would drop
    it, as Hudi's reject-update strategy says); after Hudi executed the clustering it commits."""
    judge = Judge(tmp_path / "t", hudi_jvm("0.15.0"), COW)
    rounds = Rounds(spark, judge, hudi_options("0.15.0", 6), our_options(6))
    for n in range(2):
        batch = judge.batch(keys(*range(n * 6, n * 6 + 6)), f"insert{n}")
        judge.hudi.write(
            judge.path, batch, {**rounds.hudi, "hoodie.datasource.write.operation": "insert"}
        )
        judge.upserted(batch)
    judge.hudi.sql(f"CALL run_clustering(path => '{judge.path}', op => 'schedule')")
    (plan,) = judge.timeline().pending(COMMIT_ACTIONS)
    refused = Outcome(rounds.batches(overlap=False)[0])
    rounds.write_ours(refused)
    assert isinstance(refused.error, WriteConflictError), refused
    assert f"pending clustering {plan.instant_time}" in str(refused.error)
    assert [i.instant_time for i in judge.timeline().pending(COMMIT_ACTIONS)] == [
        plan.instant_time
    ], "our writer rolled back Hudi's scheduled clustering, or left its own write pending"
    judge.check("our write refused beside Hudi's pending clustering")
    judge.hudi.sql(f"CALL run_clustering(path => '{judge.path}', op => 'execute')")
    assert judge.timeline().is_completed(plan.instant_time)
    retried = Outcome(refused.batch)
    rounds.write_ours(retried)
    assert retried.committed, retried.error
    judge.upserted(retried.batch)
    judge.check("our write after Hudi's clustering")
