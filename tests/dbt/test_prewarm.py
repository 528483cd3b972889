"""The warm-up the adapter starts while dbt parses: one task per core imports the engine's task
modules, and on a local master a throwaway write (deleted after) warms the write path and a
Parquet scan collected as Arrow the JVM's batch collection; only commands that run SQL start
it, in a daemon thread that never fails the run."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.hudi import prewarm
from engine import warm_arrow_scan, warm_python_workers, warm_write_path
from engine.spark.warmup import TASK_MODULES

pytestmark = [pytest.mark.spark]


def test_warm_python_workers_one_task_per_local_core(spark: Any) -> None:
    master = spark.conf.get("spark.master")
    assert master.startswith("local[")
    assert warm_python_workers(spark) == int(master[len("local[") : -1].split(",")[0])


def test_task_modules_are_the_engine_modules_tasks_unpickle() -> None:
    import importlib

    for name in TASK_MODULES:  # a renamed module would make the warm-up fail silently
        assert importlib.import_module(name).__name__ == name


@pytest.mark.parametrize(("command", "started"), [("run", True), ("parse", False), (None, False)])
def test_prewarm_only_for_commands_that_run_sql(
    spark: Any, monkeypatch: pytest.MonkeyPatch, command: str | None, started: bool
) -> None:
    monkeypatch.setattr(prewarm, "dbt_command", lambda: command)
    thread = prewarm.start_prewarm({})
    assert (thread is not None) == started
    if thread is not None:
        thread.join(timeout=120)
        assert not thread.is_alive()
        assert spark in prewarm._WARMED


def test_warm_write_path_leaves_nothing_behind(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert warm_write_path(spark)  # the test session's master is local
    assert list(tmp_path.iterdir()) == []
    assert warm_arrow_scan(spark)
    assert list(tmp_path.iterdir()) == []


def _warm_up_steps(tmp_path: Any, monkeypatch: pytest.MonkeyPatch, *, written: bool) -> list[str]:
    """The steps a fresh warm-up of the test session logs (``written``: a write started
    before it)."""
    import threading
    import weakref

    from dbt.adapters.hudi import timing

    log = tmp_path / "timing.jsonl"
    monkeypatch.setenv(timing.ENV, str(log))
    monkeypatch.setattr(prewarm, "_WARMED", weakref.WeakSet())
    monkeypatch.setattr(prewarm, "WRITE_STARTED", threading.Event())
    if written:
        prewarm.note_write_started()
    prewarm.warm_session({})
    return [name for name, _, _ in timing.read_log(log)]


def test_warm_up_stops_before_its_next_step_once_a_write_started(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = _warm_up_steps(tmp_path, monkeypatch, written=True)
    assert steps == ["warm-up: session start", "warm-up: catalog"]


def test_a_local_master_warms_the_driver_side_write_not_the_python_workers(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = _warm_up_steps(tmp_path, monkeypatch, written=False)
    assert steps == [
        "warm-up: session start",
        "warm-up: catalog",
        "warm-up: write path",
        "warm-up: Arrow scan",
    ]
