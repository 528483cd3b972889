"""Start Spark and warm its Python workers while dbt parses the project.

Every ``dbt run`` is a fresh process: it starts a JVM and a SparkSession, and its first Hudi
write starts the Python workers and imports the engine in them. None of that needs the
project, so the adapter starts it in a background thread as soon as dbt registers it, for the
commands that run SQL; dbt's parsing overlaps it. The thread also opens the session's catalog
(the Hive metastore of an embedded session), which dbt's first statement needs. The
connection's first statement asks for the same session (``SparkSession.builder.getOrCreate``
waits for the one being built), and the first write finds its workers warm (over Spark
Connect, the server's).
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
# the tag of the warm-up's Spark jobs, and the sessions it runs them on now
WARM_UP_TAG = "dbt-hudi-warm-up"
_WARMING: list[Any] = []


def dbt_command() -> str | None:
    """The dbt command this process runs (``run``, ``build``, ...), if dbt set its flags."""
    try:
        from dbt.flags import get_flags

        which = getattr(get_flags(), "WHICH", None)  # type: ignore[no-untyped-call]
    except Exception:  # dbt-core not driving this process (a library use of the adapter)
        return None
    return str(which) if which else None


def warm_session(server_side_parameters: Mapping[str, str]) -> None:
    """Build the process's session, open its catalog, warm its Python workers and its write
    path (a throwaway write on a local master), once per session: in the order the run needs
    them (dbt's first statement lists the catalog's databases; only the first write needs the
    rest). Once a write has started (:func:`note_write_started`), the steps not yet begun are
    skipped: on a loaded machine the warm-up can still be running when the model writes."""
    from dbt.adapters.hudi.publish import get_session
    from dbt.adapters.hudi.timing import phase
    from engine import warm_python_workers, warm_write_path

    with phase("warm-up: session start"):
        spark = get_session(server_side_parameters)
    with _LOCK:
        if spark in _WARMED:
            return
        _WARMED.add(spark)
    with phase("warm-up: catalog"):
        spark.catalog.listDatabases()  # dbt's first statement lists them: the metastore opens here
    with _LOCK:
        if WRITE_STARTED.is_set():
            return
        _tag_jobs(spark)  # this thread's jobs: a write that starts interrupts them
        _WARMING.append(spark)
    try:
        with phase("warm-up: Python workers"):
            tasks = warm_python_workers(spark)
        logger.debug(f"Python workers warmed ({tasks} task(s))")
        if WRITE_STARTED.is_set():
            return
        with phase("warm-up: write path"):
            warm_write_path(spark)
    finally:
        _untag_jobs(spark)
        with _LOCK:
            _WARMING.remove(spark)


def note_write_started() -> None:
    """The run's first Hudi write has started: the warm-up's steps not yet begun are skipped
    and its Spark jobs still running are interrupted (on two cores, a warm-up job still
    starting Python workers doubled a small write's time: the write needs the cores now)."""
    with _LOCK:
        WRITE_STARTED.set()
        warming = list(_WARMING)
    for spark in warming:
        try:
            _interrupt_jobs(spark)
        except Exception as e:  # a warm-up only: the write goes on whatever happened to it
            logger.debug(f"Spark warm-up not interrupted: {e}")


def _classic(spark: Any) -> bool:
    return not type(spark).__module__.startswith("pyspark.sql.connect")


def _tag_jobs(spark: Any) -> None:
    """Tag the jobs this thread starts (Spark classic: the context's job tags, interrupting
    the tasks' threads when cancelled; Spark Connect: the session's operation tags)."""
    if _classic(spark):
        spark.sparkContext.addJobTag(WARM_UP_TAG)
        spark.sparkContext.setInterruptOnCancel(True)
    else:
        spark.addTag(WARM_UP_TAG)


def _untag_jobs(spark: Any) -> None:
    if _classic(spark):
        spark.sparkContext.removeJobTag(WARM_UP_TAG)
    else:
        spark.removeTag(WARM_UP_TAG)


def _interrupt_jobs(spark: Any) -> None:
    if _classic(spark):
        spark.sparkContext.cancelJobsWithTag(WARM_UP_TAG)
    else:
        spark.interruptTag(WARM_UP_TAG)


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
