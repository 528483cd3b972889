"""Kill points for fault-injection tests: ``checkpoint(name)`` SIGKILLs the writer when asked.

A no-op unless ``HUDI_FAULT_POINT`` names the point; then the process dies at once, the way a
crashed driver or a lost executor dies, with no ``finally`` block or ``atexit`` hook running::

    HUDI_FAULT_POINT = {name}            die at the first hit of {name}
                     | {name}:{n}        die at the n-th hit (counted across processes
                                         when HUDI_FAULT_COUNTER names a counter file)
    HUDI_FAULT_PID   = {pid}             the writer process, leader of its process group:
                                         a Spark task that hits the point kills that group
                                         (driver and JVM) and then itself

Points are named ``{phase}.{moment}``; :data:`KILL_POINTS` lists every point the engine calls.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "FAULT_COUNTER_ENV",
    "FAULT_PID_ENV",
    "FAULT_POINT_ENV",
    "KILL_POINTS",
    "checkpoint",
    "passed_by",
]

FAULT_POINT_ENV = "HUDI_FAULT_POINT"
FAULT_PID_ENV = "HUDI_FAULT_PID"
FAULT_COUNTER_ENV = "HUDI_FAULT_COUNTER"

KILL_POINTS = (
    "write.requested",  # instant requested, nothing written
    "write.before_files",  # inflight, partition metafiles written, no data file yet
    "task.before_file",  # a Spark task starts a file group (earlier groups may be written)
    "task.after_marker",  # marker created, its data file not yet
    "file.mid_write",  # a base file's rows written, footer not yet (a torn file)
    "task.after_file",  # a file group's file complete
    "write.before_commit",  # every data file written, completed instant not yet
    "audit.before_queries",  # pre-commit audit begun, no query run yet
    "audit.after_queries",  # pre-commit audit: every query run, verdict not yet acted on
    "metadata.after_deltacommit",  # metadata table deltacommit completed, data instant not yet
    "metadata.compaction_before_complete",  # metadata base file written, its commit not yet
    "commit.after_complete",  # completed instant written, markers not yet removed
    "write.after_commit",  # committed, table services not yet run
    "clean.requested",  # clean plan written, nothing deleted
    "clean.mid_delete",  # some of the clean plan's files deleted
    "compaction.before_complete",  # compacted base files written, commit not yet
    "clustering.task_after_file",  # a clustering task wrote one new base file (more may follow)
    "clustering.task_before_return",  # a clustering task wrote all its files, stats not returned
    "clustering.before_complete",  # clustered base files written, replacecommit not yet
    "clustering.after_complete",  # clustering's replacecommit written, markers not yet removed
    "archive.after_write",  # archive log written, instant files not yet removed
    "rollback.mid_delete",  # rollback plan written, some files deleted
    "rollback.before_complete",  # rollback's deletions done, its instant not completed
    "restore.requested",  # restore plan written, nothing rolled back
    "restore.mid_rollback",  # the restore's newest instant rolled back, older ones not yet
    "restore.before_complete",  # every instant rolled back, the restore not completed
)

_hits: dict[str, int] = {}
# set in a context whose writes are not the writer's own work (see :func:`passed_by`)
_PASSED_BY: ContextVar[bool] = ContextVar("hudi_fault_points_passed_by", default=False)


@contextmanager
def passed_by() -> Iterator[None]:
    """Kill points in this context neither die nor count a hit: the dbt adapter's warm-up
    writes a throwaway table beside the model's writes, whose hits a test counts. Threads
    the context starts carry it when they run in a copy of it (``contextvars.copy_context``)."""
    token = _PASSED_BY.set(True)
    try:
        yield
    finally:
        _PASSED_BY.reset(token)


def _hit_number(name: str) -> int:
    counter = os.environ.get(FAULT_COUNTER_ENV)
    if not counter:
        _hits[name] = _hits.get(name, 0) + 1
        return _hits[name]
    # one byte per hit, appended: O_APPEND makes concurrent tasks count without a lock
    fd = os.open(counter, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"x")
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _die() -> None:
    writer = os.environ.get(FAULT_PID_ENV)
    if writer and writer.isdigit() and int(writer) != os.getpid():
        pid = int(writer)
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass  # the writer is gone already
    elif writer == str(os.getpid()) and os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)  # the writer: with its JVM
    os.kill(os.getpid(), signal.SIGKILL)


def checkpoint(name: str) -> None:
    """Die here if ``HUDI_FAULT_POINT`` names this point (and this is the chosen hit)."""
    spec = os.environ.get(FAULT_POINT_ENV)
    if not spec or _PASSED_BY.get():
        return
    point, _, nth = spec.partition(":")
    if point != name:
        return
    if _hit_number(name) >= (int(nth) if nth.isdigit() else 1):
        _die()
