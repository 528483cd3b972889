"""Start Spark and warm what the first write runs on while dbt parses the project.

Every ``dbt run`` is a fresh process: it starts a JVM and a SparkSession, and its first Hudi
write pays for cold code: on a local master the JVM's first Arrow collection and the driver's
write modules (a small batch is written in the driver there), elsewhere the Python workers'
start and the engine's imports in them. None of that needs the project, so the adapter starts
it in a background thread as soon as dbt registers it, for the commands that run SQL; dbt's
parsing overlaps it. The thread also opens the session's catalog (the Hive metastore of an
embedded session), which dbt's first statement needs. The connection's first statement asks
for the same session (``SparkSession.builder.getOrCreate`` waits for the one being built).
On a local master the Python workers are not warmed: measured on two cores, their start still
running when a small model wrote doubled its write (0.8 s to 1.6 s), and that write needs none.

A short command (``dbt show``, ``dbt compile``, a plain dbt-spark model) can end while the
warm-up is still inside the JVM or pyarrow. Python would then finalize under it and kill the
thread in native code (``Fatal Python error: PyGILState_Release``, exit code -6), after dbt had
printed its result. So the process's exit waits for it: :func:`stop_prewarm` runs first thing
at shutdown, before Python joins its threads and runs its ``atexit`` handlers. It tells the
warm-up to take no further step, interrupts the Spark jobs it tagged, and joins it; then it
stops the SparkContext this process launched, while the gateway is still up, so nothing native
runs once finalization starts.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.hudi.timing import phase

logger = AdapterLogger("Hudi")

# dbt commands that run statements on the session (parse, ls, deps, clean, debug do not)
PREWARM_COMMANDS = frozenset(
    {"run", "build", "seed", "snapshot", "test", "show", "run-operation", "compile", "docs"}
)
_WARMED: weakref.WeakSet[Any] = weakref.WeakSet()
# set when a write starts: a warm-up still running then stops before its next step
WRITE_STARTED = threading.Event()
# set when the process exits: likewise, and the warm-up's running Spark jobs are interrupted
_STOPPING = threading.Event()
# the tag of the warm-up's Spark jobs (its thread's)
WARM_UP_TAG = "dbt-hudi-warm-up"
# how long the exit waits for the warm-up once its jobs are interrupted
JOIN_SECONDS = 120.0
# the timing log's phase of an exit that stopped a warm-up still running
EXIT_PHASE = "exit: warm-up stopped"
_LOCK = threading.Lock()
_THREADS: list[threading.Thread] = []
# the session the warm-up runs on, once it has one (its jobs are interrupted there)
_SESSIONS: weakref.WeakSet[Any] = weakref.WeakSet()
_EXIT_HOOK: list[bool] = []


def _stopped() -> bool:
    """Whether the warm-up must take no further step: a write started, or the process exits."""
    return WRITE_STARTED.is_set() or _STOPPING.is_set()


def dbt_command() -> str | None:
    """The dbt command this process runs (``run``, ``build``, ...), if dbt set its flags."""
    try:
        from dbt.flags import get_flags

        which = getattr(get_flags(), "WHICH", None)  # type: ignore[no-untyped-call]
    except Exception:  # dbt-core not driving this process (a library use of the adapter)
        return None
    return str(which) if which else None


def warm_session(server_side_parameters: Mapping[str, str]) -> None:
    """Build the process's session, open its catalog, then warm what the first write runs on,
    once per session: on a local master the driver-side write (a throwaway table written and
    deleted: a small batch never reaches a Python worker there) and the JVM's Arrow collection
    of a Parquet scan, elsewhere the Python workers.
    In the order the run needs them (dbt's first statement lists the catalog's databases).
    Once a write has started (:func:`note_write_started`), the steps not yet begun are skipped:
    the warm-up can still be running when the model writes."""
    from dbt.adapters.hudi.publish import get_session

    with phase("warm-up: session start"):
        spark = get_session(server_side_parameters)
    with _LOCK:
        if spark in _WARMED or _STOPPING.is_set():
            return
        _WARMED.add(spark)
        _SESSIONS.add(spark)
    spark.addTag(WARM_UP_TAG)  # this thread's jobs: interrupted if the process exits first
    try:
        _warm_steps(spark)
    finally:
        spark.removeTag(WARM_UP_TAG)


def _warm_steps(spark: Any) -> None:
    """The warm-up's steps after the session start, each skipped once :func:`_stopped`."""
    from engine import warm_arrow_scan, warm_python_workers, warm_write_path

    with phase("warm-up: catalog"):
        spark.catalog.listDatabases()  # dbt's first statement lists them: the metastore opens here
    if _stopped():
        return
    # a local master writes a dbt model's batch in the driver (no Python worker): warm that
    with phase("warm-up: write path"):
        local = warm_write_path(spark)
    if local:
        if not _stopped():
            with phase("warm-up: Arrow scan"):  # the JIT compiles the batch's collection now
                warm_arrow_scan(spark)
        return
    if _stopped():
        return
    with phase("warm-up: Python workers"):  # a cluster's, or Spark Connect's server's
        tasks = warm_python_workers(spark)
    logger.debug(f"Python workers warmed ({tasks} task(s))")


def note_write_started() -> None:
    """The run's first Hudi write has started: the warm-up's steps not yet begun are skipped
    (they would only compete with the write for the machine's cores)."""
    WRITE_STARTED.set()


def start_prewarm(server_side_parameters: Mapping[str, str]) -> threading.Thread | None:
    """Run :func:`warm_session` in a background thread for the commands that run SQL; the
    process's exit waits for it (:func:`stop_prewarm`)."""
    if dbt_command() not in PREWARM_COMMANDS:
        return None

    def run() -> None:
        try:
            warm_session(server_side_parameters)
        except Exception as e:  # a warm-up only: the statements that need Spark say what fails
            logger.debug(f"Spark warm-up skipped: {e}")

    thread = threading.Thread(target=run, name="dbt-hudi-prewarm", daemon=True)
    with _LOCK:
        _register_exit_hook()
        _THREADS.append(thread)
    thread.start()
    return thread


def _register_exit_hook() -> None:
    """Run :func:`stop_prewarm` at the very start of the interpreter's shutdown: before it joins
    threads and runs ``atexit`` handlers (pyspark's among them), while the JVM still answers."""
    if _EXIT_HOOK:
        return
    register = getattr(threading, "_register_atexit", None)
    if register is None:  # not CPython's threading: atexit runs before daemon threads die too
        import atexit

        atexit.register(stop_prewarm)
    else:
        register(stop_prewarm)
    _EXIT_HOOK.append(True)


def stop_prewarm(timeout: float = JOIN_SECONDS) -> None:
    """Stop the warm-up before the process exits: no further step, its Spark jobs interrupted,
    its thread joined; then the SparkContext this process launched is stopped."""
    _STOPPING.set()
    running = [t for t in _THREADS if t.is_alive()]
    if running:
        with phase(EXIT_PHASE):
            for spark in list(_SESSIONS):
                try:
                    spark.interruptTag(WARM_UP_TAG)
                except Exception as e:  # the session is already gone: nothing of it runs
                    logger.debug(f"warm-up jobs not interrupted: {e}")
            for thread in running:
                thread.join(timeout)
    _stop_launched_context()


def _stop_launched_context() -> None:
    """Stop the SparkContext whose JVM this process launched (its jobs and threads end while
    the gateway is up); a session of Spark Connect or of someone else's JVM is left alone."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or getattr(SparkContext._gateway, "proc", None) is None:
        return
    try:
        context.stop()
    except Exception as e:  # exiting anyway: the JVM ends with the process
        logger.debug(f"SparkContext not stopped at exit: {e}")
