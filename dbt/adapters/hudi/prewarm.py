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
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

logger = AdapterLogger("Hudi")

# dbt commands that run statements on the session (parse, ls, deps, clean, debug do not)
PREWARM_COMMANDS = frozenset(
    {"run", "build", "seed", "snapshot", "test", "show", "run-operation", "compile", "docs"}
)
_WARMED: weakref.WeakSet[Any] = weakref.WeakSet()
# set when a write starts: a warm-up still running then stops before its next step
WRITE_STARTED = threading.Event()
_LOCK = threading.Lock()


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
    from dbt.adapters.hudi.timing import phase
    from engine import warm_arrow_scan, warm_python_workers, warm_write_path

    with phase("warm-up: session start"):
        spark = get_session(server_side_parameters)
    with _LOCK:
        if spark in _WARMED:
            return
        _WARMED.add(spark)
    with phase("warm-up: catalog"):
        spark.catalog.listDatabases()  # dbt's first statement lists them: the metastore opens here
    if WRITE_STARTED.is_set():
        return
    # a local master writes a dbt model's batch in the driver (no Python worker): warm that
    with phase("warm-up: write path"):
        local = warm_write_path(spark)
    if local:
        if not WRITE_STARTED.is_set():
            with phase("warm-up: Arrow scan"):  # the JIT compiles the batch's collection now
                warm_arrow_scan(spark)
        return
    if WRITE_STARTED.is_set():
        return
    with phase("warm-up: Python workers"):  # a cluster's, or Spark Connect's server's
        tasks = warm_python_workers(spark)
    logger.debug(f"Python workers warmed ({tasks} task(s))")


def note_write_started() -> None:
    """The run's first Hudi write has started: the warm-up's steps not yet begun are skipped
    (they would only compete with the write for the machine's cores)."""
    WRITE_STARTED.set()


def start_prewarm(server_side_parameters: Mapping[str, str]) -> threading.Thread | None:
    """Run :func:`warm_session` in a daemon thread for the commands that run SQL."""
    if dbt_command() not in PREWARM_COMMANDS:
        return None

    def run() -> None:
        try:
            warm_session(server_side_parameters)
        except Exception as e:  # a warm-up only: the statements that need Spark say what fails
            logger.debug(f"Spark warm-up skipped: {e}")

    thread = threading.Thread(target=run, name="dbt-hudi-prewarm", daemon=True)
    thread.start()
    return thread
