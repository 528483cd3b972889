"""Four readers judge a table after every step: Apache Hudi's Spark datasource (snapshot,
read-optimized, incremental, time travel), hudi-rs, the engine's reader and an oracle kept
independently of all three (a dict of the rows each write leaves, by Hudi's rules for a table
whose ordering value only grows).

The table is the keyed one: record key ``id``, partition path ``dt`` (or none), ordering field
``ts``, one value column ``v``. A key never changes partition, so global and non-global indexes
must agree with the same oracle.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from engine import read_table
from engine.fs.storage import Storage
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from tests.hudi_jvm.client import HudiJvm
from tests.hudi_rs import hudi_rs_rows

Rows = dict[str, tuple[str, int, str]]  # id -> (dt, ts, v)

SCHEMA = pa.schema(
    [("id", pa.string()), ("dt", pa.string()), ("ts", pa.int64()), ("v", pa.string())]
)
SPARK_SCHEMA = "id string, dt string, ts long, v string"
COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
# Hudi's readers, asked about instants whose files a clean removed, read the full table instead
HUDI_READ = {"hoodie.datasource.read.incr.fallback.fulltablescan.enable": "true"}
END_OF_TIME = "99991231235959999"
_QUERY_TYPE = "hoodie.datasource.query.type"
_WRITES = {Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING}


def by_id(rows: Iterable[dict[str, Any]]) -> Rows:
    """id -> (dt, ts, v) of read rows; a key read twice fails (no key is stored twice)."""
    out: Rows = {}
    for r in rows:
        assert r["id"] not in out, f"key {r['id']} read twice"
        assert r.get("_hoodie_record_key", r["id"]) == r["id"], r
        out[r["id"]] = (r["dt"], r["ts"], r["v"])
    return out


@dataclass(frozen=True)
class Point:
    """A completed write the judge may read as of (time travel) or from (incremental)."""

    instant_time: str
    completion_time: str
    rows: Rows
    commit_times: dict[str, str]  # id -> _hoodie_commit_time


@dataclass
class Judge:
    """The oracle of one table and the readers that must agree with it."""

    path: Path
    hudi: HudiJvm
    table_type: str
    oracle: Rows = field(default_factory=dict)
    points: list[Point] = field(default_factory=list)
    ts: int = 0
    # a column a schema change added (None: none) and its value by id (None: written before)
    added: str | None = None
    added_values: dict[str, Any] = field(default_factory=dict)
    _snapshots: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    # ---- the oracle ---------------------------------------------------------------------

    def batch(self, ids: Iterable[str], tag: str) -> pa.Table:
        """A batch writing ``ids`` (their partitions as the oracle has them, or by id), with
        a ``ts`` above every earlier one; the oracle takes it once :meth:`upserted`."""
        self.ts += 1
        rows = [
            {"id": i, "dt": self.oracle.get(i, (partition_of(i), 0, ""))[0], "ts": self.ts,
             "v": f"{tag}-{i}"}
            for i in ids
        ]  # fmt: skip
        return pa.Table.from_pylist(rows, schema=SCHEMA)

    def upserted(self, batch: pa.Table) -> None:
        for r in batch.to_pylist():
            self.oracle[r["id"]] = (r["dt"], r["ts"], r["v"])
            if self.added:
                self.added_values[r["id"]] = r.get(self.added)

    def deleted(self, batch: pa.Table) -> None:
        for r in batch.to_pylist():
            self.oracle.pop(r["id"], None)
            self.added_values.pop(r["id"], None)

    def overwritten(self, batch: pa.Table, partitioned: bool) -> None:
        """insert_overwrite: the partitions ``batch`` touches (the whole table when it has no
        partitions) hold exactly its rows."""
        touched = set(batch.column("dt").to_pylist())
        for key, (dt, _, _) in list(self.oracle.items()):
            if dt in touched or not partitioned:
                self.oracle.pop(key)
                self.added_values.pop(key, None)
        self.upserted(batch)

    # ---- the readers --------------------------------------------------------------------

    def timeline(self) -> Timeline:
        return Timeline.load(Storage(str(self.path)))

    def completed(self, *actions: Action) -> int:
        """How many instants of ``actions`` the table's timeline has completed."""
        return len(self.timeline().completed(actions))

    def _latest_write(self) -> tuple[str, str]:
        """The greatest instant time and the greatest completion time of the completed writes:
        time travel as of the one sees every write (readers take instants requested up to it),
        incremental reads from the other (versions 8 and 9) start after every write. Writes
        that ran at once complete in another order than they started: two different
        instants then."""
        done = [i for i in self.timeline().completed() if i.action in _WRITES]
        latest = max(i.instant_time for i in done)
        return latest, max(i.completion_time or i.instant_time for i in done)

    def _pending_write_before_last(self) -> bool:
        timeline = self.timeline()
        done = [i.instant_time for i in timeline.completed() if i.action in _WRITES]
        pending = [i.instant_time for i in timeline.pending() if i.action in _WRITES]
        return bool(done and pending and min(pending) < max(done))

    def _range_start(self, point: Point) -> str:
        """Incremental queries range over completion times on table versions 8 and 9."""
        layout = self.timeline().layout
        return point.completion_time if layout.version >= 2 else point.instant_time

    def check(self, step: str, *, cleaned: bool = False, hudi_reads: bool = True) -> None:
        """Every reader agrees with the oracle (and with each other where it has no say).
        After a clean (``cleaned``) no time travel to the step before: Hudi refuses an instant
        before the clean's earliest commit to retain. Nor while a failed write's instant is
        pending before the last completed one (a writer that failed under the lazy
        failed-writes policy, until its heartbeat expires and a writer rolls it back): Hudi
        refuses time travel past a pending instant and incremental reads across one.

        Apache Hudi's reads run in its own JVM while hudi-rs and the engine read here: the
        JVM's answers are asked for first and collected last. Without ``hudi_reads`` only
        hudi-rs and the engine are judged, and the step is no point to read as of later: a
        state Apache Hudi is known to read wrongly (docs/format-notes.md), judged again by it
        after the next write."""
        if not hudi_reads:
            self._local_answers(None, "")
            self._check_snapshots(step, self._snapshots)
            return
        cleaned = cleaned or self._pending_write_before_last()
        point = self.points[-1] if self.points and not cleaned else None
        begin = self._range_start(point) if point else ""
        with ThreadPoolExecutor(max_workers=1) as pool:
            hudis = pool.submit(self._hudi_answers, point, begin)
            ours = self._local_answers(point, begin)
            hudi = hudis.result()
        snapshot = hudi["snapshot"]
        expected = dict(self.oracle)
        read = {"Apache Hudi": snapshot, **self._snapshots}
        self._check_snapshots(step, read)
        if self.added:
            self._check_added(step, read)
        if self.table_type == MOR:
            self._check_read_optimized(step, by_id(hudi["read_optimized"]), ours)
        if point is not None:
            self._check_time_travel(step, point, by_id(hudi["time_travel"]), ours)
            self._check_incremental(step, point, begin, snapshot, by_id(hudi["incremental"]), ours)
        instant_time, completion_time = self._latest_write()
        commit_times = {r["id"]: r["_hoodie_commit_time"] for r in snapshot}
        self.points.append(Point(instant_time, completion_time, expected, commit_times))

    def _check_snapshots(self, step: str, read: dict[str, list[dict[str, Any]]]) -> None:
        """Each reader's snapshot holds the oracle's rows."""
        expected = dict(self.oracle)
        for reader, rows in read.items():
            got = by_id(rows)
            assert got == expected, f"after {step}: {reader} snapshot {diff(got, expected)}"

    def _hudi_answers(self, point: Point | None, begin: str) -> dict[str, list[dict[str, Any]]]:
        """Apache Hudi's reads of the step, in one request (its JVM runs them at once):
        snapshot, read-optimized, as of ``point`` and the changes since it."""
        queries: dict[str, dict[str, Any]] = {"snapshot": {"query": "snapshot"}}
        if self.table_type == MOR:
            queries["read_optimized"] = {"query": "read_optimized"}
        if point is not None:
            queries["time_travel"] = {"query": "time_travel", "as_of": point.instant_time}
            queries["incremental"] = {"query": "incremental", "begin": begin}
        for query in queries.values():
            query["options"] = HUDI_READ
        return self.hudi.reads(self.path, queries)

    def _local_answers(self, point: Point | None, begin: str) -> dict[str, dict[str, Rows]]:
        """hudi-rs's and the engine's reads of the same queries, by query then reader (their
        snapshots' rows kept whole in ``_snapshots``, for the added column)."""
        path = str(self.path)
        self._snapshots = {
            "hudi-rs": hudi_rs_rows(path),
            "engine": read_table(path).to_pylist(),
        }
        answers: dict[str, dict[str, Rows]] = {}
        if self.table_type == MOR:
            answers["read_optimized"] = {
                "hudi-rs": by_id(hudi_rs_rows(path, read_optimized=True)),
                "engine": by_id(read_table(path, {_QUERY_TYPE: "read_optimized"}).to_pylist()),
            }
        if point is not None:
            as_of = point.instant_time
            answers["time_travel"] = {
                "hudi-rs": by_id(hudi_rs_rows(path, as_of)),
                "engine": by_id(read_table(path, {"as.of.instant": as_of}).to_pylist()),
            }
            since = {_QUERY_TYPE: "incremental", "hoodie.datasource.read.begin.instanttime": begin}
            answers["incremental"] = {
                "hudi-rs": by_id(hudi_rs_rows(path, incremental=(begin, END_OF_TIME))),
                "engine": by_id(read_table(path, since).to_pylist()),
            }
        return answers

    def _check_added(self, step: str, read: dict[str, list[dict[str, Any]]]) -> None:
        """The added column: its value where a write after the change gave one, else null."""
        expected = {key: self.added_values.get(key) for key in self.oracle}
        for reader, rows in read.items():
            got = {r["id"]: r.get(self.added) for r in rows}
            wrong = {k: (got[k], expected[k]) for k in expected if got.get(k) != expected[k]}
            assert not wrong, f"after {step}: {reader} column {self.added} (got, expected): {wrong}"

    def _check_read_optimized(
        self, step: str, hudi: Rows, ours: dict[str, dict[str, Rows]]
    ) -> None:
        for reader, rows in ours["read_optimized"].items():
            assert rows == hudi, f"after {step}: {reader} read-optimized {diff(rows, hudi)}"

    def _check_time_travel(
        self, step: str, point: Point, hudi: Rows, ours: dict[str, dict[str, Rows]]
    ) -> None:
        as_of = point.instant_time
        for reader, rows in {"Apache Hudi": hudi, **ours["time_travel"]}.items():
            assert rows == point.rows, (
                f"after {step}: {reader} as of {as_of} {diff(rows, point.rows)}"
            )

    def _check_incremental(
        self,
        step: str,
        point: Point,
        begin: str,
        snapshot: list[dict[str, Any]],
        hudi: Rows,
        ours: dict[str, dict[str, Rows]],
    ) -> None:
        """The changes since ``point``: the rows whose commit time is new since then."""
        expected = by_id(
            r for r in snapshot if point.commit_times.get(r["id"]) != r["_hoodie_commit_time"]
        )
        for reader, rows in {"Apache Hudi": hudi, **ours["incremental"]}.items():
            assert rows == expected, f"after {step}: {reader} since {begin} {diff(rows, expected)}"


def partition_of(key: str) -> str:
    return f"p{int(key[1:]) % 2}"


def keys(*numbers: int) -> list[str]:
    return [f"k{n:02d}" for n in numbers]


def diff(got: Rows, expected: Rows) -> str:
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    changed = sorted(k for k in set(got) & set(expected) if got[k] != expected[k])
    parts = [f"missing {missing}" if missing else "", f"extra {extra}" if extra else ""]
    parts += [f"{k}: {got[k]} != {expected[k]}" for k in changed[:5]]
    return "differs: " + "; ".join(p for p in parts if p)
