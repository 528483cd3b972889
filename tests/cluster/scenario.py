"""The engine's core paths as one run of driver processes, and what hudi-rs must read after it.

The same scenario runs on a standalone cluster and through Spark Connect:

* a copy-on-write table: upsert (create), upsert (updates and an insert), delete,
  insert_overwrite of one partition, then clean;
* a merge-on-read table: upsert (base files), upsert (log blocks), delete (a delete block),
  compaction, then clean;
* every query type read back by the driver (snapshot, read_optimized, time travel,
  incremental), each compared with an oracle here and with hudi-rs in the test process;
* a write killed just before its commit point (the driver dies with its JVM), then a second
  driver process whose next write rolls the killed one back.

Time travel and incremental reads by hudi-rs need the file slices a clean deletes, so the
driver copies each table before its clean and hudi-rs reads those states from the copy.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.cluster.launch import REPO, spark_env, start
from tests.faults.harness import assert_no_orphans, pending_writes
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import write_options

D1, D2 = "2024-01-01", "2024-01-02"
Row = tuple[str, str, int, str]
State = dict[str, tuple[str, int, str]]  # id -> (dt, ts, v)
DRIVER_TIMEOUT = 600
KILL_POINT = "write.before_commit"

_SERVICES_OFF = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}
COW = write_options("cluster_cow", _SERVICES_OFF)
MOR = write_options(
    "cluster_mor",
    _SERVICES_OFF,
    {"hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.compact.inline": "false"},
)
CLEAN = {"hoodie.cleaner.commits.retained": "1"}
UPSERT = {"hoodie.datasource.write.operation": "upsert"}
DELETE = {"hoodie.datasource.write.operation": "delete"}
OVERWRITE = {"hoodie.datasource.write.operation": "insert_overwrite"}
RO = {"hoodie.datasource.query.type": "read_optimized"}


def keys(ids: list[int], ts: int, tag: str, day: str | None = None) -> list[Row]:
    return [(f"k{i:02d}", day or (D1 if i % 2 == 0 else D2), ts, f"{tag}{i}") for i in ids]


def apply(state: State, rows: list[Row], *, delete: bool = False) -> State:
    out = dict(state)
    for rid, dt, ts, v in rows:
        if delete:
            out.pop(rid, None)
        else:
            out[rid] = (dt, ts, v)
    return out


def overwrite(state: State, rows: list[Row]) -> State:
    """insert_overwrite: the partitions the rows touch hold exactly these rows."""
    touched = {dt for _, dt, _, _ in rows}
    kept = {k: v for k, v in state.items() if v[0] not in touched}
    return apply(kept, rows)


# the batches of the scenario and the table states after each
FIRST = keys([0, 1, 2, 3, 4, 5], 1, "a")
UPDATES = keys([1, 4, 6], 2, "b")
DELETES = keys([2, 5], 3, "d")
OVERWRITES = keys([10, 11], 3, "o", D2)
KILLED = keys([0, 7], 5, "w")
RECOVERY = keys([8], 6, "r")

S1 = apply({}, FIRST)
S2 = apply(S1, UPDATES)
S3 = apply(S2, DELETES, delete=True)
S4 = overwrite(S3, OVERWRITES)
CHANGED_IN_2_3 = {k: S3[k] for k in ("k01", "k04", "k06")}  # incremental (1, 3]


def _write(label: str, table: Path, rows: list[Row], *options: Mapping[str, str]) -> dict[str, Any]:
    merged: dict[str, str] = {}
    for more in options:
        merged.update(more)
    return {
        "label": label,
        "kind": "write",
        "table": str(table),
        "rows": [list(r) for r in rows],
        "options": merged,
    }


def _read(label: str, table: Path, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"label": label, "kind": "read", "table": str(table), "options": dict(options or {})}


def _history(prefix: str, table: Path, options: Mapping[str, str]) -> list[dict[str, Any]]:
    """Create, update (and insert), delete: ``<prefix>1`` to ``<prefix>3``."""
    return [
        _write(f"{prefix}1", table, FIRST, options, UPSERT),
        _write(f"{prefix}2", table, UPDATES, options, UPSERT),
        _write(f"{prefix}3", table, DELETES, options, DELETE),
    ]


def _queries(name: str, prefix: str, table: Path) -> list[dict[str, Any]]:
    """Every query type, then a copy of the table for hudi-rs (before clean deletes slices)."""
    copy = table.parent / f"{name}_copy"
    return [
        _read(f"{name}_snapshot", table),
        _read(f"{name}_read_optimized", table, RO),
        _read(f"{name}_as_of_2", table, {"as.of.instant": f"@{prefix}2"}),
        _read(f"{name}_incremental", table, _incremental(f"@{prefix}1", f"@{prefix}3")),
        {"label": f"{name}_copy", "kind": "copy", "table": str(table), "to": str(copy)},
    ]


def core_steps(root: Path) -> list[dict[str, Any]]:
    """Every core path on ``root/cow`` and ``root/mor``; the last step's write is killed."""
    cow, mor = root / "cow", root / "mor"
    steps = [
        *_history("c", cow, COW),
        _write("c4", cow, OVERWRITES, COW, OVERWRITE),
        *_queries("cow", "c", cow),
        {"label": "cow_clean", "kind": "clean", "table": str(cow), "options": CLEAN},
        _read("cow_after_clean", cow),
        *_history("m", mor, MOR),
        *_queries("mor", "m", mor),
        {"label": "mor_compact", "kind": "compact", "table": str(mor)},
        _read("mor_compacted", mor),
        _read("mor_compacted_read_optimized", mor, RO),
        {"label": "mor_clean", "kind": "clean", "table": str(mor), "options": CLEAN},
        _read("mor_after_clean", mor),
    ]
    killed = _write("killed", cow, KILLED, COW, UPSERT)
    return [*steps, {**killed, "fault": KILL_POINT}]


def recovery_steps(root: Path) -> list[dict[str, Any]]:
    """The write after the killed one, and what it leaves."""
    cow = root / "cow"
    return [_write("recovery", cow, RECOVERY, COW, UPSERT), _read("cow_recovered", cow)]


def _incremental(begin: str, end: str) -> dict[str, str]:
    return {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": begin,
        "hoodie.datasource.read.end.instanttime": end,
    }


# ---- running driver processes ------------------------------------------------------------------


@dataclass
class DriverRun:
    """What one driver process reported, and how it ended."""

    report: dict[str, Any]
    returncode: int
    log: str
    seconds: float
    by_label: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_label = {s["label"]: s for s in self.report.get("steps", []) if s.get("label")}

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL


@dataclass(frozen=True)
class Target:
    """Where drivers run: a standalone ``master`` with ``executors``, or a Connect ``remote``."""

    master: str | None = None
    remote: str | None = None
    executors: int = 1


def run_driver(work: Path, name: str, steps: list[dict[str, Any]], target: Target) -> DriverRun:
    """Run ``steps`` in a driver process on ``target``; whatever the driver leaves running is
    killed when it ends."""
    work.mkdir(parents=True, exist_ok=True)
    result = work / f"{name}.json"
    spec_file = work / f"{name}.spec.json"
    spec = {
        "master": target.master,
        "executors": target.executors,
        "work": str(work / name),
        "result": str(result),
        "steps": steps,
    }
    spec_file.write_text(json.dumps(spec))
    env = spark_env(**({"SPARK_REMOTE": target.remote} if target.remote else {}))
    command = [sys.executable, "-m", "tests.cluster.driver", str(spec_file)]
    started = time.monotonic()
    driver = start(name, command, work, env, cwd=REPO)
    try:
        driver.proc.wait(timeout=DRIVER_TIMEOUT)
    finally:
        driver.stop()
    report = json.loads(result.read_text()) if result.exists() else {}
    seconds = time.monotonic() - started
    return DriverRun(report, driver.proc.returncode, driver.log_tail(20000), seconds)


@dataclass
class ScenarioRun:
    """The two driver runs of the scenario and the table as the killed write left it."""

    root: Path
    core: DriverRun
    recovery: DriverRun
    pending_after_kill: list[str]
    rows_after_kill: State

    @property
    def seconds(self) -> float:
        return self.core.seconds + self.recovery.seconds


def run_scenario(work: Path, target: Target) -> ScenarioRun:
    """The core steps in one driver (killed at its last write), then the recovery in another."""
    root = work / "tables"
    core = run_driver(work, "core", core_steps(root), target)
    assert core.killed, f"the driver was not killed at {KILL_POINT}:\n{core.log[-6000:]}"
    pending = pending_writes(root / "cow")
    rows = judged(root / "cow")
    recovery = run_driver(work, "recovery", recovery_steps(root), target)
    assert recovery.returncode == 0, f"recovery driver failed:\n{recovery.log[-6000:]}"
    return ScenarioRun(root, core, recovery, pending, rows)


# ---- judging -----------------------------------------------------------------------------------


def as_state(rows: list[Any], source: str) -> State:
    """Rows of a driver's read (``[id, dt, ts, v, commit]``) or hudi-rs (dicts) as a state."""
    out: State = {}
    for row in rows:
        if isinstance(row, dict):
            rid, dt, ts, v = row["id"], row["dt"], row["ts"], row["v"]
        else:
            rid, dt, ts, v = row[:4]
        assert rid not in out, f"{source}: duplicate record key {rid}"
        out[rid] = (dt, ts, v)
    return out


def judged(path: Path, **kwargs: Any) -> State:
    """What hudi-rs reads at ``path`` (``as_of``, ``read_optimized``, ``incremental``)."""
    return as_state(hudi_rs_rows(path, **kwargs), f"hudi-rs {path.name} {kwargs}")


def read_by_driver(run: DriverRun, label: str) -> State:
    return as_state(run.by_label[label]["rows"], f"driver read {label}")


def commit_times(run: DriverRun, label: str) -> set[str]:
    return {row[4] for row in run.by_label[label]["rows"]}


def check_copy_on_write(run: ScenarioRun) -> None:
    """Upserts, delete, insert_overwrite and clean, every query type, by the driver and hudi-rs."""
    core, copy = run.core, run.root / "cow_copy"
    c1, c2, c3, c4 = (core.by_label[c]["instant_time"] for c in ("c1", "c2", "c3", "c4"))
    assert read_by_driver(core, "cow_snapshot") == S4 == judged(copy)
    assert read_by_driver(core, "cow_read_optimized") == S4 == judged(copy, read_optimized=True)
    assert read_by_driver(core, "cow_as_of_2") == S2 == judged(copy, as_of=c2)
    incremental = judged(copy, incremental=(c1, c3))
    assert read_by_driver(core, "cow_incremental") == CHANGED_IN_2_3 == incremental
    assert commit_times(core, "cow_incremental") == {c2}
    assert core.by_label["cow_clean"]["deleted"] > 0, core.by_label["cow_clean"]
    assert read_by_driver(core, "cow_after_clean") == S4
    assert c4 > c3 > c2 > c1


def check_merge_on_read(run: ScenarioRun) -> None:
    """Log upserts and deletes, compaction and clean, every query type."""
    core, copy, mor = run.core, run.root / "mor_copy", run.root / "mor"
    m1, m2, m3 = (core.by_label[m]["instant_time"] for m in ("m1", "m2", "m3"))
    assert read_by_driver(core, "mor_snapshot") == S3 == judged(copy)
    read_optimized = judged(copy, read_optimized=True)
    assert read_by_driver(core, "mor_read_optimized") == read_optimized
    assert read_optimized != S3, "the updates and deletes went to log blocks"
    assert read_by_driver(core, "mor_as_of_2") == S2 == judged(copy, as_of=m2)
    incremental = judged(copy, incremental=(m1, m3))
    assert read_by_driver(core, "mor_incremental") == CHANGED_IN_2_3 == incremental
    assert len(core.by_label["mor_compact"]["compacted"]) == 1, core.by_label["mor_compact"]
    assert read_by_driver(core, "mor_compacted") == S3
    assert read_by_driver(core, "mor_compacted_read_optimized") == S3
    assert core.by_label["mor_clean"]["deleted"] > 0, core.by_label["mor_clean"]
    assert read_by_driver(core, "mor_after_clean") == S3
    assert judged(mor) == S3 == judged(mor, read_optimized=True)


def check_killed_write(run: ScenarioRun) -> None:
    """The killed write stays invisible, and the next write rolls it back."""
    assert "killed" not in run.core.by_label
    assert len(run.pending_after_kill) == 1, run.pending_after_kill
    assert run.rows_after_kill == S4
    recovery = run.recovery.by_label["recovery"]
    assert recovery["rolled_back"] == run.pending_after_kill
    expected = apply(S4, RECOVERY)
    assert read_by_driver(run.recovery, "cow_recovered") == expected == judged(run.root / "cow")
    assert not pending_writes(run.root / "cow")
    assert_no_orphans(run.root / "cow")
