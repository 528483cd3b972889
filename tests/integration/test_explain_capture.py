"""Plans captured from several threads at once: each thread gets its own plan, and a thread
that prints meanwhile still reaches the real stream (dbt's log while the warm-up sizes a
batch)."""

from __future__ import annotations

import io
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from engine import explain_text

pytestmark = [pytest.mark.spark]


def test_threads_capture_their_own_plans_and_others_print_through(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stdout", terminal)
    barrier = threading.Barrier(5)

    def capture(n: int) -> str:
        barrier.wait()
        return explain_text(spark.range(n).selectExpr(f"id + {n} as c{n}"), "extended")

    def chatter() -> None:
        barrier.wait()
        for i in range(200):
            print(f"dbt log line {i}")

    with ThreadPoolExecutor(max_workers=5) as pool:
        talking = pool.submit(chatter)
        plans = list(pool.map(capture, range(1, 5)))
        talking.result()
    for n, plan in enumerate(plans, 1):
        assert f"c{n}" in plan and "== Optimized Logical Plan ==" in plan
        assert all(f"c{m}" not in plan for m in range(1, 5) if m != n)
        assert "dbt log line" not in plan
    printed = terminal.getvalue()
    assert printed.count("dbt log line") == 200
    assert "Optimized Logical Plan" not in printed
    assert sys.stdout is terminal  # put back once the last capture ended
