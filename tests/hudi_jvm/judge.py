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
        before the clean's earliest commit to retain."""
        hudi = self.hudi.read(self.path, options=HUDI_READ)
        expected = dict(self.oracle)
        read = {
            "Apache Hudi": hudi,
            "hudi-rs": hudi_rs_rows(self.path),
            "engine": read_table(str(self.path)).to_pylist(),
        }
        for reader, rows in read.items():
            got = by_id(rows)
            assert got == expected, f"after {step}: {reader} snapshot {diff(got, expected)}"
        if self.added:
            self._check_added(step, read)
        if self.table_type == MOR:
            self._check_read_optimized(step)
        if self.points and not cleaned:
            self._check_time_travel(step, self.points[-1])
            self._check_incremental(step, self.points[-1], hudi)
        instant_time, completion_time = self._latest_write()
        commit_times = {r["id"]: r["_hoodie_commit_time"] for r in hudi}
        self.points.append(Point(instant_time, completion_time, expected, commit_times))

    def _check_added(self, step: str, read: dict[str, list[dict[str, Any]]]) -> None:
        """The added column: its value where a write after the change gave one, else null."""
        expected = {key: self.added_values.get(key) for key in self.oracle}
        for reader, rows in read.items():
            got = {r["id"]: r.get(self.added) for r in rows}
            wrong = {k: (got[k], expected[k]) for k in expected if got.get(k) != expected[k]}
            assert not wrong, f"after {step}: {reader} column {self.added} (got, expected): {wrong}"

    def _check_read_optimized(self, step: str) -> None:
        hudi = by_id(self.hudi.read(self.path, "read_optimized", options=HUDI_READ))
        rs = by_id(hudi_rs_rows(self.path, read_optimized=True))
        ours = by_id(
            read_table(
                str(self.path), {"hoodie.datasource.query.type": "read_optimized"}
            ).to_pylist()
        )
        assert rs == hudi, f"after {step}: hudi-rs read-optimized {diff(rs, hudi)}"
        assert ours == hudi, f"after {step}: engine read-optimized {diff(ours, hudi)}"

    def _check_time_travel(self, step: str, point: Point) -> None:
        as_of = point.instant_time
        hudi = by_id(self.hudi.read(self.path, "time_travel", as_of=as_of, options=HUDI_READ))
        rs = by_id(hudi_rs_rows(self.path, as_of))
        ours = by_id(read_table(str(self.path), {"as.of.instant": as_of}).to_pylist())
        for reader, rows in (("Apache Hudi", hudi), ("hudi-rs", rs), ("engine", ours)):
            assert rows == point.rows, (
                f"after {step}: {reader} as of {as_of} {diff(rows, point.rows)}"
            )

    def _check_incremental(self, step: str, point: Point, snapshot: list[dict[str, Any]]) -> None:
        """The changes since ``point``: the rows whose commit time is new since then."""
        begin = self._range_start(point)
        expected = by_id(
            r for r in snapshot if point.commit_times.get(r["id"]) != r["_hoodie_commit_time"]
        )
        hudi = by_id(self.hudi.read(self.path, "incremental", begin=begin, options=HUDI_READ))
        rs = by_id(hudi_rs_rows(self.path, incremental=(begin, END_OF_TIME)))
        ours = by_id(
            read_table(
                str(self.path),
                {
                    "hoodie.datasource.query.type": "incremental",
                    "hoodie.datasource.read.begin.instanttime": begin,
                },
            ).to_pylist()
        )
        for reader, rows in (("Apache Hudi", hudi), ("hudi-rs", rs), ("engine", ours)):
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
