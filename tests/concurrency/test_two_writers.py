"""Two writer processes on one table, 5 rounds each (20 under ``make test-long``): no lost and
no duplicated rows.

Each writer alternates between its own partition (disjoint: never a conflict) and a partition
both update (same keys and file groups: the later committer fails with a write conflict, its
instant is rolled back, and it retries). The expected table is rebuilt from the committed
attempts in instant order and compared with hudi-rs and ``read_hudi``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.config import parse_options
from engine.fs.storage import Storage
from engine.services.clean import clean
from engine.timeline.timeline import Timeline
from tests.concurrency.writer import SCHEMA, SHARED
from tests.faults.harness import REPO, Rows, assert_no_orphans, assert_reads

pytestmark = [pytest.mark.spark, pytest.mark.interop]

ROUNDS = 20 if os.environ.get("HUDI_TEST_LONG") else 5
WRITERS = ("a", "b")
OPTIONS = {
    "hoodie.table.name": "two_writers",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.cleaner.commits.retained": "4",
    "hoodie.keep.min.commits": "6",
    "hoodie.keep.max.commits": "8",
}


def _initial_rows() -> list[tuple[str, str, int, str]]:
    rows = [(f"s{i}", SHARED, -1, "init") for i in range(4)]
    for name in WRITERS:
        rows += [(f"{name}-o{i}", f"own-{name}", -1, "init") for i in range(4)]
    return rows


def _start(spec: dict[str, Any], log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.concurrency.writer", json.dumps(spec)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _overlaps(results: dict[str, list[dict[str, Any]]]) -> int:
    a, b = results[WRITERS[0]], results[WRITERS[1]]
    return sum(1 for x in a for y in b if x["start"] < y["end"] and y["start"] < x["end"])


def test_two_writers_same_and_disjoint_partitions_lose_and_duplicate_nothing(
    spark: Any, tmp_path: Path
) -> None:
    run_two_writers(spark, str(tmp_path / "t"), tmp_path, ROUNDS, OPTIONS)


def run_two_writers(
    spark: Any, path: str, tmp_path: Path, rounds: int, options: dict[str, str]
) -> None:
    """Two writer processes, ``rounds`` upserts each, on the table at ``path`` (local or S3)."""
    initial = _initial_rows()
    write_hudi(spark.createDataFrame(initial, SCHEMA), path, options)
    go = tmp_path / "go"
    procs = {}
    specs = {}
    for name in WRITERS:
        specs[name] = {
            "table": path,
            "work": str(tmp_path / f"spark-{name}"),
            "name": name,
            "rounds": rounds,
            "go": str(go),
            "ready": str(tmp_path / f"ready-{name}"),
            "results": str(tmp_path / f"results-{name}.json"),
            "options": options,
        }
        procs[name] = _start(specs[name], tmp_path / f"writer-{name}.log")
    deadline = time.monotonic() + 300
    while not all(Path(s["ready"]).exists() for s in specs.values()):
        assert time.monotonic() < deadline, "writers did not start"
        assert all(p.poll() is None for p in procs.values()), "a writer died while starting"
        time.sleep(0.2)
    go.write_text("go")
    for name, proc in procs.items():
        code = proc.wait(timeout=1500)
        log = (tmp_path / f"writer-{name}.log").read_text(errors="replace")
        assert code == 0, f"writer {name} failed:\n{log[-3000:]}"

    results = {n: json.loads(Path(s["results"]).read_text()) for n, s in specs.items()}
    committed: list[tuple[str, list[list[Any]]]] = []
    for name, entries in results.items():
        assert len(entries) == rounds
        for entry in entries:
            assert "instant" in entry, f"writer {name} round {entry['round']} never committed"
            if entry["kind"] == "disjoint":
                assert not entry["conflicts"], entry["conflicts"]
            committed.append((entry["instant"], entry["rows"]))
    assert len({t for t, _ in committed}) == 2 * rounds  # one instant per committed write
    assert _overlaps(results) > 0, "the writers never ran at the same time"

    expected: Rows = {r[0]: (r[1], r[2], r[3]) for r in initial}
    for _, rows in sorted(committed):
        for rid, dt, ts, v in rows:
            expected[rid] = (dt, ts, v)
    assert_reads(spark, path, expected, "two concurrent writers")

    storage = Storage(path)
    assert not Timeline.load(storage).pending(), "pending instants left"
    clean(storage, parse_options(options))
    assert_no_orphans(path)
    conflicts = sum(len(e["conflicts"]) for entries in results.values() for e in entries)
    print(f"\n[concurrency] {2 * rounds} commits, {conflicts} conflicts retried")
