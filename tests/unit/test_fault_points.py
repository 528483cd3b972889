"""Kill points a warm-up passes by: in :func:`engine.faults.passed_by` (and the threads run in
a copy of its context) a point neither kills nor counts a hit; outside it, the same point
kills the process at its first counted hit."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from engine.faults import FAULT_COUNTER_ENV, FAULT_POINT_ENV

SCRIPT = """
import contextvars
from concurrent.futures import ThreadPoolExecutor
from engine.faults import checkpoint, passed_by
with passed_by():
    checkpoint("write.before_commit")
    with ThreadPoolExecutor(2) as pool:
        pool.submit(contextvars.copy_context().run, checkpoint, "write.before_commit").result()
print("passed by", flush=True)
checkpoint("write.before_commit")
print("not killed", flush=True)
"""


def test_points_passed_by_neither_kill_nor_count(tmp_path: Path) -> None:
    counter = tmp_path / "hits"
    env = {FAULT_POINT_ENV: "write.before_commit", FAULT_COUNTER_ENV: str(counter)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.splitlines() == ["passed by"]
    assert done.returncode == -signal.SIGKILL
    assert counter.read_bytes() == b"x"  # the one hit outside
