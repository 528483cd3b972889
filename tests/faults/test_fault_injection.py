"""SIGKILL fault injection over copy-on-write and merge-on-read tables.

Each case is a chain on a copy of a baseline table: a writer process is killed at a kill point
(:data:`engine.faults.KILL_POINTS`), the table is judged (hudi-rs and ``read_hudi`` return
exactly the last committed state), more processes may be killed while they roll back, clean,
archive or compact, and finally the next write succeeds, rolls the leftovers back, and a clean
leaves no orphan file. ``make test`` runs fixed chains (11 kill points, 3 writer JVMs);
``make test-long`` (``HUDI_TEST_LONG=1``) adds random chains until at least 50 kills have
happened (seed from ``HUDI_TEST_SEED``, printed on failure).
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.config import parse_options
from engine.fs.storage import Storage
from engine.services.clean import clean
from engine.services.compaction import schedule_compaction
from engine.services.rollback import plan_rollback
from engine.timeline.timeline import Timeline
from engine.view.fs_view import list_partition_paths
from tests.faults.harness import (
    Rows,
    assert_no_orphans,
    assert_reads,
    completed_writes,
    copy_table,
    pending_writes,
    run_writer,
    uncommit,
)
from tests.faults.writer import SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.interop]

LONG = bool(os.environ.get("HUDI_TEST_LONG"))
SEED = int(os.environ.get("HUDI_TEST_SEED") or random.SystemRandom().randrange(1 << 30))
MIN_LONG_KILLS = 50

BASE = {
    "hoodie.table.name": "faults",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}
# services due on the next commit: keep one commit, archive beyond three
SERVICES = {
    "hoodie.clean.automatic": "true",
    "hoodie.archive.automatic": "true",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
}
MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
DAYS = ("2024-01-01", "2024-01-02")

Row = tuple[str, str, int, str]


def _apply(state: Rows, rows: list[Row]) -> Rows:
    out = dict(state)
    for rid, dt, ts, v in rows:
        out[rid] = (dt, ts, v)
    return out


def _keys(ids: list[int], ts: int, tag: str, day: str | None = None) -> list[Row]:
    return [(f"k{i:02d}", day or DAYS[i % 2], ts, f"{tag}{i}") for i in ids]


@dataclass
class Baseline:
    path: str
    rows: Rows
    options: dict[str, str]


def _build(spark: Any, path: str, options: dict[str, str], batches: list[list[Row]]) -> Baseline:
    rows: Rows = {}
    for batch in batches:
        write_hudi(spark.createDataFrame(batch, SCHEMA), path, options)
        rows = _apply(rows, batch)
    return Baseline(path, rows, options)


def build_baselines(
    spark: Any, location: Callable[[str], str], tables: tuple[str, ...] = ("cow", "mor")
) -> dict[str, Baseline]:
    """The copy-on-write and merge-on-read tables (those of ``tables``) every chain starts from
    a copy of."""
    built: dict[str, Baseline] = {}
    if "cow" in tables:
        built["cow"] = _build(
            spark,
            location("cow"),
            BASE,
            [_keys(list(range(8)), 1, "a"), _keys([0, 1], 2, "b"), _keys([2, 3], 3, "c")],
        )
    if "mor" in tables:
        built["mor"] = _build(
            spark,
            location("mor"),
            {**BASE, **MOR},
            [_keys(list(range(8)), 1, "a"), _keys([0, 1], 2, "b")],
        )
    return built


@pytest.fixture(scope="module")
def baselines(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Baseline]:
    root = tmp_path_factory.mktemp("fault-baselines")
    return build_baselines(spark, lambda name: str(root / name))


@dataclass
class Chain:
    """One case: the killed write (or a prepared state), then killed services, then recovery."""

    name: str
    table: str  # cow | mor
    writer_point: str | None  # kill point of the Spark writer process (None: no such step)
    prepare: str | None = None  # uncommit | schedule_compaction
    follow_ups: list[tuple[str, str]] = field(default_factory=list)  # (step kind, kill point)

    @property
    def planned_kills(self) -> int:
        return (self.writer_point is not None) + len(self.follow_ups)


FIXED = [
    Chain(
        "cow-torn-file",
        "cow",
        "file.mid_write",  # marker written, data file torn
        follow_ups=[("rollback", "rollback.mid_delete")],
    ),
    Chain(
        "cow-after-commit",
        "cow",
        "write.after_commit",
        follow_ups=[("clean", "clean.mid_delete:2"), ("archive", "archive.after_write")],
    ),
    Chain(
        "mor-logs-before-commit",
        "mor",
        "write.before_commit",  # log files written, instant not completed
        follow_ups=[("rollback", "rollback.before_complete")],
    ),
    Chain(
        "mor-compaction",
        "mor",
        None,
        prepare="schedule_compaction",
        follow_ups=[("compact", "file.mid_write"), ("compact", "compaction.before_complete")],
    ),
    Chain(
        "cow-failed-write-rollback-then-clean",
        "cow",
        None,
        prepare="uncommit",  # what a kill between file writes and the commit leaves
        follow_ups=[("rollback", "rollback.before_complete"), ("clean", "clean.requested")],
    ),
]
assert sum(c.planned_kills for c in FIXED) >= 10

_WRITER_POINTS = {
    "cow": [
        ("write.requested", 1),
        ("write.before_files", 1),
        ("task.before_file", 3),
        ("task.after_marker", 3),
        ("file.mid_write", 3),
        ("task.after_file", 3),
        ("write.before_commit", 1),
        ("commit.after_complete", 1),
        ("write.after_commit", 1),
        ("clean.requested", 1),
        ("clean.mid_delete", 4),
        ("archive.after_write", 1),
    ],
    "mor": [
        ("write.requested", 1),
        ("task.after_marker", 2),
        ("task.after_file", 2),
        ("write.before_commit", 1),
        ("commit.after_complete", 1),
        ("write.after_commit", 1),
    ],
}


_PRE_COMMIT = ("write.requested", "write.before_files", "task.", "file.", "write.before_commit")


def _random_chains(seed: int) -> list[Chain]:
    """Random chains (seeded) until the planned kills reach the long-run target with margin."""
    rng = random.Random(seed)
    chains: list[Chain] = []
    planned = sum(c.planned_kills for c in FIXED)
    while planned < MIN_LONG_KILLS + 10:
        table = rng.choice(("cow", "cow", "mor"))
        if rng.random() < 0.25:
            services = [("rollback", "rollback.before_complete")]
            if table == "cow":  # the merge-on-read baseline has no old slice to clean
                services.append(("clean", f"clean.mid_delete:{rng.randint(1, 2)}"))
                services.append(("clean", "clean.requested"))
            kind, point = rng.choice(services)
            chain = Chain(
                f"random{len(chains)}-{table}-{point}",
                table,
                None,
                prepare="uncommit" if kind == "rollback" else None,
                follow_ups=[(kind, point)],
            )
        else:
            point, max_hit = rng.choice(_WRITER_POINTS[table])
            pre_commit = point.startswith(_PRE_COMMIT)
            chain = Chain(
                f"random{len(chains)}-{table}-{point}",
                table,
                f"{point}:{rng.randint(1, max_hit)}",
                follow_ups=[("rollback", "rollback.before_complete")]
                if pre_commit and rng.random() < 0.5
                else [],
            )
        chains.append(chain)
        planned += chain.planned_kills
    return chains


CHAINS = FIXED + (_random_chains(SEED) if LONG else [])
# chain name -> the kill points it hit; a chain runs once per session, whichever test needs it
_KILLS: dict[str, list[str]] = {}


def _writer_step(table: str, options: dict[str, str]) -> tuple[dict[str, Any], list[Row]]:
    """The killed write: updates in both partitions, a small-file insert, a new partition."""
    if table == "mor":
        rows = _keys([1, 4], 5, "w")  # log appends only, one per partition
    else:
        rows = [
            *_keys([2, 7], 5, "w"),
            *_keys([8], 5, "w", DAYS[0]),
            *_keys([9], 5, "w", "2024-01-03"),
        ]
    step = {"kind": "write", "rows": [list(r) for r in rows], "options": {**options, **SERVICES}}
    return step, rows


def _service_step(kind: str) -> dict[str, Any]:
    return {"kind": kind, "options": SERVICES}


def _assert_torn_file_planned(path: str) -> None:
    """The file a kill tore mid-write is named by its marker, so its rollback deletes it with
    every other file of the failed write (on an object store no torn object exists)."""
    [failed] = pending_writes(path)
    storage = Storage(path)
    instant = Timeline.load(storage).get(failed)
    assert instant is not None
    plan = plan_rollback(storage, instant)
    planned = sorted(f for f in plan.files_to_delete if f.endswith(f"_{failed}.parquet"))
    on_disk = sorted(
        f"{partition}/{e.name}" if partition else e.name
        for partition, entries in list_partition_paths(storage).items()
        for e in entries
        if e.name.endswith(f"_{failed}.parquet")
    )
    # every base file the failed write left (finished ones of earlier tasks included) is planned
    assert planned == on_disk, plan
    if storage.is_object_store:
        # an object appears whole when its writer closes it: the torn file is not there at all
        assert all(storage.read_bytes(f)[-4:] == b"PAR1" for f in planned), planned
        return
    # and among them the one the kill tore (no footer yet)
    assert planned and any(storage.read_bytes(f)[-4:] != b"PAR1" for f in planned), planned


def run_chain(
    spark: Any,
    baselines: dict[str, Baseline],
    root: pytest.TempPathFactory,
    chain: Chain,
    location: Callable[[str], str] | None = None,
) -> list[str]:
    """Run ``chain`` (once per session and storage) and judge every state it leaves; the kills
    it hit. Its table is a copy of the baseline in a temporary folder, or at ``location(name)``
    when given (a table on the S3 server)."""
    key = f"{chain.name}@{'local' if location is None else 'located'}"
    if key not in _KILLS:
        chain_dir = root.mktemp(chain.name)
        path = location(chain.name) if location is not None else str(chain_dir / "t")
        try:
            _KILLS[key] = _kill_and_recover(spark, baselines, chain_dir, chain, path)
        finally:
            shutil.rmtree(chain_dir / "work", ignore_errors=True)
    return _KILLS[key]


@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: c.name)
def test_fault_injection_kill_then_recover_reads_last_commit(
    spark: Any,
    baselines: dict[str, Baseline],
    tmp_path_factory: pytest.TempPathFactory,
    chain: Chain,
) -> None:
    run_chain(spark, baselines, tmp_path_factory, chain)


def _kill_and_recover(
    spark: Any, baselines: dict[str, Baseline], chain_dir: Path, chain: Chain, path: str
) -> list[str]:
    kills: list[str] = []
    base = baselines[chain.table]
    copy_table(base.path, path)
    work = chain_dir / "work"
    committed = dict(base.rows)
    context = f"{chain.name} (seed {SEED})"

    if chain.prepare == "uncommit":
        extra = _keys([3, 6], 4, "u")
        t = write_hudi(spark.createDataFrame(extra, SCHEMA), path, base.options).instant_time
        uncommit(path, t)
    elif chain.prepare == "schedule_compaction":
        assert schedule_compaction(Storage(path), parse_options({}), force=True)
    assert_reads(spark, path, committed, f"{context}: prepared")

    if chain.writer_point is not None:
        before = completed_writes(path)
        step, rows = _writer_step(chain.table, base.options)
        killed, log = run_writer(path, work, [step], chain.writer_point)
        assert killed or LONG, f"{context}: writer was not killed at {chain.writer_point}\n{log}"
        if killed:
            kills.append(f"{chain.name}@{chain.writer_point}")
        if completed_writes(path) - before:
            committed = _apply(committed, rows)  # killed after its commit point
        if killed and chain.writer_point.startswith("file.mid_write"):
            _assert_torn_file_planned(path)
        assert_reads(spark, path, committed, f"{context}: writer killed at {chain.writer_point}")

    for kind, point in chain.follow_ups:
        if kind == "rollback" and point == "rollback.mid_delete":
            pending = pending_writes(path)
            assert pending, f"{context}: nothing to roll back"
        killed, log = run_writer(path, work, [_service_step(kind)], point)
        assert killed or LONG, f"{context}: {kind} was not killed at {point}\n{log}"
        if killed:
            kills.append(f"{chain.name}@{point}")
        assert_reads(spark, path, committed, f"{context}: {kind} killed at {point}")

    # the next write succeeds and rolls back what the killed processes left
    leftovers = set(pending_writes(path))
    following = _keys([0], 9, "next") + _keys([10], 9, "next")
    result = write_hudi(
        spark.createDataFrame(following, SCHEMA), path, {**base.options, **SERVICES}
    )
    assert leftovers <= set(result.rolled_back), f"{context}: {leftovers} not rolled back"
    committed = _apply(committed, following)
    assert_reads(spark, path, committed, f"{context}: next write")
    storage = Storage(path)
    clean(storage, parse_options(SERVICES))
    assert_no_orphans(path)
    assert_reads(spark, path, committed, f"{context}: clean after recovery")
    return kills


def test_fault_injection_kill_count_meets_target(
    spark: Any, baselines: dict[str, Baseline], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Kills that happened over every chain (a chain not run yet by its own test runs here, so
    the count does not depend on which tests ran before)."""
    target = MIN_LONG_KILLS if LONG else 10
    kills = [k for chain in CHAINS for k in run_chain(spark, baselines, tmp_path_factory, chain)]
    print(f"\n[faults] {len(kills)} kill points hit (seed {SEED}): {', '.join(kills)}")
    assert len(kills) >= target, kills
