"""Where a ``dbt run``'s seconds go: an opt-in log of the adapter's phases.

With ``DBT_HUDI_TIMING=<file>`` set, each phase the adapter times (the warm-up thread's session
start, catalog and worker warm-up; a Hudi write's staging, engine write, savepoint and publish
steps; the engine's own jobs) appends one JSON line to the file: its name and its start and end
as wall-clock seconds (``time.time()``), so they line up with dbt's own log timestamps
(``bench/dbt_latency.py`` joins both into the breakdown it prints). Unset, a phase costs one
environment lookup and nothing is written.

The engine's jobs are timed from outside the engine: :func:`timed_runner` wraps a table's
runner, and each call of a runner method is a phase (``locate`` is the index lookup job, the
``write_routed`` the write job); the driver's planning before them and the commit after
them are what the engine write spends outside them.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ENV = "DBT_HUDI_TIMING"
_LOCK = threading.Lock()
# runner method -> the phase its calls are logged as
RUNNER_PHASES = {
    "key_records": "engine: key records",
    "locate": "engine: lookup job",
    "write_routed": "engine: write job",
    "check_values": "engine: value check",
    "release": "engine: release",
}


def enabled() -> bool:
    """Whether this process logs its phases (``DBT_HUDI_TIMING`` names a file)."""
    return bool(os.environ.get(ENV))


def record(name: str, start: float, end: float) -> None:
    """Append one phase to the timing log (nothing when it is off)."""
    path = os.environ.get(ENV)
    if not path:
        return
    line = json.dumps({"phase": name, "start": start, "end": end})
    with _LOCK, open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase ``name`` (also when it raises)."""
    if not enabled():
        yield
        return
    start = time.time()
    try:
        yield
    finally:
        record(name, start, time.time())


class _TimedRunner:
    """A runner whose method calls are logged as phases; everything else is the runner's."""

    def __init__(self, runner: Any) -> None:
        self._runner = runner

    def for_write(self, cfg: Any) -> Any:
        """The runner the write runs on (the driver-side one on a local master), timed too."""
        for_write = getattr(self._runner, "for_write", None)
        return _TimedRunner(for_write(cfg)) if for_write is not None else self

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._runner, name)
        label = RUNNER_PHASES.get(name)
        if label is None or not callable(value):
            return value
        return _timed(label, value)


def _timed(label: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with phase(label):
            return method(*args, **kwargs)

    return call


def timed_runner(runner: Any) -> Any:
    """``runner`` with its jobs logged as phases when timing is on; else ``runner`` itself."""
    if runner is None or not enabled():
        return runner
    return _TimedRunner(runner)


def read_log(path: str | os.PathLike[str]) -> list[tuple[str, float, float]]:
    """The phases a timing log holds: (name, start, end), in the order they were logged."""
    with open(path, encoding="utf-8") as log:
        rows = [json.loads(line) for line in log if line.strip()]
    return [(str(r["phase"]), float(r["start"]), float(r["end"])) for r in rows]


def write_parts(
    phases: list[tuple[str, float, float]], start: float, end: float
) -> list[tuple[str, float, float]]:
    """The engine's parts of a write that ran from ``start`` to ``end``: its jobs (the runner
    phases logged in between), the driver's planning before the first and the commit after the
    last (none without a job)."""
    jobs = [p for p in phases if p[0].startswith("engine:") and start <= p[1] <= end]
    if not jobs:
        return []
    planning = ("engine: driver planning", start, min(j[1] for j in jobs))
    commit = ("engine: commit", max(j[2] for j in jobs), end)
    return [planning, *jobs, commit]
