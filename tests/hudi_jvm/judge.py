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

    def deleted(self, batch: pa.Table) -> None:
        for r in batch.to_pylist():
            self.oracle.pop(r["id"], None)

    # ---- the readers --------------------------------------------------------------------

    def timeline(self) -> Timeline:
        return Timeline.load(Storage(str(self.path)))

    def completed(self, *actions: Action) -> int:
        """How many instants of ``actions`` the table's timeline has completed."""
        return len(self.timeline().completed(actions))

    def _latest_write(self) -> tuple[str, str]:
        done = [i for i in self.timeline().completed() if i.action in _WRITES]
        last = max(done, key=lambda i: i.completion_time or i.instant_time)
        return last.instant_time, last.completion_time or last.instant_time

    def _range_start(self, point: Point) -> str:
        """Incremental queries range over completion times on table versions 8 and 9."""
        layout = self.timeline().layout
        return point.completion_time if layout.version >= 2 else point.instant_time

    def check(self, step: str, *, cleaned: bool = False) -> None:
        """Every reader agrees with the oracle (and with each other where it has no say).
        After a clean (``cleaned``) no time travel to the step before: Hudi refuses an instant
        before the clean's earliest commit to retain.

        Apache Hudi's reads run in its own JVM while hudi-rs and the engine read here: the
        JVM's answers are asked for first and collected last."""
        point = self.points[-1] if self.points and not cleaned else None
        begin = self._range_start(point) if point else ""
        with ThreadPoolExecutor(max_workers=1) as pool:
            hudis = pool.submit(self._hudi_answers, point, begin)
            ours = self._local_answers(point, begin)
            hudi = hudis.result()
        snapshot = hudi["snapshot"]
        expected = dict(self.oracle)
        for reader, rows in {"Apache Hudi": by_id(snapshot), **ours["snapshot"]}.items():
            assert rows == expected, f"after {step}: {reader} snapshot {diff(rows, expected)}"
        if self.table_type == MOR:
            self._check_read_optimized(step, by_id(hudi["read_optimized"]), ours)
        if point is not None:
            self._check_time_travel(step, point, by_id(hudi["time_travel"]), ours)
            self._check_incremental(step, point, begin, snapshot, by_id(hudi["incremental"]), ours)
        instant_time, completion_time = self._latest_write()
        commit_times = {r["id"]: r["_hoodie_commit_time"] for r in snapshot}
        self.points.append(Point(instant_time, completion_time, expected, commit_times))

    def _hudi_answers(self, point: Point | None, begin: str) -> dict[str, list[dict[str, Any]]]:
        """Apache Hudi's reads of the step: snapshot, read-optimized, as of ``point`` and
        the changes since it."""
        read, path = self.hudi.read, self.path
        answers = {"snapshot": read(path, options=HUDI_READ)}
        if self.table_type == MOR:
            answers["read_optimized"] = read(path, "read_optimized", options=HUDI_READ)
        if point is not None:
            as_of = point.instant_time
            answers["time_travel"] = read(path, "time_travel", as_of=as_of, options=HUDI_READ)
            answers["incremental"] = read(path, "incremental", begin=begin, options=HUDI_READ)
        return answers

    def _local_answers(self, point: Point | None, begin: str) -> dict[str, dict[str, Rows]]:
        """hudi-rs's and the engine's reads of the same queries, by query then reader."""
        path = str(self.path)
        answers: dict[str, dict[str, Rows]] = {
            "snapshot": {
                "hudi-rs": by_id(hudi_rs_rows(path)),
                "engine": by_id(read_table(path).to_pylist()),
            }
        }
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
