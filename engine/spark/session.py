"""The one place that builds or finds the SparkSession the engine runs on.

dbt runs models in worker threads where ``SparkSession.getActiveSession()`` is ``None`` (the
active session is thread-local), so the engine always goes through the builder's
``getOrCreate()``, which returns the process's existing session (and its temp views) when there
is one, or a Spark Connect session when ``SPARK_REMOTE`` is set.

A Spark Connect server fixes its static settings (``spark.sql.warehouse.dir``,
``spark.driver.memory``, the catalog...) when it starts: asking a session for them again is
refused, and pyspark warns on every attempt. :func:`get_spark` therefore tries each setting once
per process, keeps sending the ones the server accepts, and warns once about those it refused
with a value other than the server's.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark import SparkContext
from pyspark.errors import AnalysisException
from pyspark.find_spark_home import _find_spark_home
from pyspark.sql import SparkSession

from engine.spark import class_archive

QUIET_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
FILE_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-file.properties")
# the system property naming the file FILE_LOG4J writes to
SPARK_LOG_PROPERTY = "dbt_hudi.spark_log"
# a logging configuration of the user's own, in the driver's options or Spark's conf directory
_USER_LOG4J = ("log4j.configurationFile", "log4j2.configurationFile")
_CONF_LOG4J_FILES = ("log4j2.properties", "log4j2.xml", "log4j2.yaml", "log4j2.json")

# Settings for an embedded local session: quiet, small shuffles, no UI.
LOCAL_DEFAULTS: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.ansi.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.python.filterPushdown.enabled": "true",
}


# Defaults of a session the adapter embeds (``method: session``) that dbt-spark's lacks: a dbt
# process lives seconds, and the UI's web server costs about 0.4 s of every start; PySpark's
# DataFrame debugging records the Python call site of every DataFrame and Column call, five
# round trips to the JVM each (about 0.05 s of a write's planning), for error messages that
# would name the engine's lines, never a dbt model's.
EMBEDDED_DEFAULTS: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}

# one JVM launch at a time (dbt's warm-up thread and its first statement both ask for it)
_LAUNCH_LOCK = threading.Lock()

# what a Spark Connect server refused to set (static settings), tried once per process
_REFUSED_BY_SERVER: set[str] = set()
_CONNECT_LOCK = threading.Lock()
_STATIC_SETTING_ERRORS = ("CANNOT_MODIFY_STATIC_CONFIG", "CANNOT_MODIFY_CONFIG")


def get_spark(
    conf: Mapping[str, str] | None = None, *, hive: bool = False, log_file: str | None = None
) -> SparkSession:
    """Return the process's SparkSession, creating it with ``conf`` if none exists yet.

    ``hive`` asks for Hive support as dbt-spark does; over Spark Connect (``SPARK_REMOTE``,
    ``spark.remote``) the server's catalog is the one there is, and only the settings the server
    accepts at runtime are sent (see the module notes). A JVM this call launches writes Spark's
    own log lines to ``log_file`` when one is given (:func:`with_log_file`).
    """
    settings = dict(conf or {})
    if is_connect(settings):
        return _connect_session(settings)
    return _launch({**EMBEDDED_DEFAULTS, **settings}, hive=hive, log_file=log_file)


def with_log_file(conf: Mapping[str, str], spark_home: str, log_file: str) -> dict[str, str]:
    """``conf`` with Spark's own log lines going to ``log_file`` instead of the terminal, unless
    the user configured logging (``-Dlog4j.configurationFile`` in the driver's options, or a
    ``log4j2`` file in Spark's conf directory): a dbt command's terminal keeps dbt's lines, and
    Spark's warnings (``Using an existing Spark session``...) stay where dbt's debug log is."""
    own = class_archive.java_options_of(conf, spark_home)
    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(spark_home, "conf")
    if any(k in own for k in _USER_LOG4J) or any(
        os.path.isfile(os.path.join(conf_dir, name)) for name in _CONF_LOG4J_FILES
    ):
        return dict(conf)
    ours = f"-Dlog4j.configurationFile={FILE_LOG4J} -D{SPARK_LOG_PROPERTY}={log_file}"
    return {**conf, class_archive.OPTIONS_KEY: f"{ours} {own}".strip()}


def _launch(
    settings: Mapping[str, str], *, hive: bool, log_file: str | None = None
) -> SparkSession:
    """``getOrCreate`` with ``settings``; a JVM it launches starts from the class-data archive
    (:mod:`engine.spark.class_archive`), or writes one when it exits."""
    with _LAUNCH_LOCK:
        archive = None
        environ: Mapping[str, str] = {}
        if SparkContext._gateway is None:
            spark_home = _find_spark_home()
            if log_file is not None:
                settings = with_log_file(settings, spark_home, log_file)
            archive, settings, environ = _with_class_archive(settings, spark_home)
        builder = SparkSession.builder
        if hive:
            builder = builder.enableHiveSupport()
        for key, value in settings.items():
            builder = builder.config(key, value)
        try:
            with _launch_environment(environ):
                spark = builder.getOrCreate()
        except BaseException:
            if archive is not None:
                class_archive.release(archive)  # no JVM writes it: the next launch may
            raise
        proc = getattr(SparkContext._gateway, "proc", None)
        if archive is not None and proc is not None:
            class_archive.watch(archive, proc.pid)
        return spark


def _with_class_archive(
    settings: Mapping[str, str], spark_home: str
) -> tuple[class_archive.ClassArchive | None, Mapping[str, str], Mapping[str, str]]:
    """The archive a launch maps or writes, with the settings and environment variables it
    launches with; ``settings`` as they are when it uses none."""
    launch = class_archive.shareable_launch(settings, spark_home)
    if launch is None:
        return None, settings, {}
    archive = class_archive.plan(launch.conf, spark_home, {**os.environ, **launch.environ})
    if archive is None:
        return None, settings, {}
    return archive, class_archive.with_archive(launch.conf, spark_home, archive), launch.environ


@contextmanager
def _launch_environment(environ: Mapping[str, str]) -> Iterator[None]:
    """``environ`` set while pyspark launches the JVM (it passes its environment on)."""
    saved = {name: os.environ.get(name) for name in environ}
    os.environ.update(environ)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def is_connect(conf: Mapping[str, str] | None = None) -> bool:
    """Whether the process's session is (or will be) a Spark Connect session."""
    from pyspark.sql.utils import is_remote

    return "spark.remote" in (conf or {}) or "SPARK_REMOTE" in os.environ or is_remote()


def _connect_session(conf: Mapping[str, str]) -> SparkSession:
    builder = SparkSession.builder
    if "spark.remote" in conf:
        builder = builder.remote(conf["spark.remote"])
    spark = builder.getOrCreate()
    with _CONNECT_LOCK:
        refused = _set_runtime_settings(spark, conf)
    if refused:
        listed = "; ".join(
            f"{key}={asked!r} (the server has {server!r})"
            for key, (asked, server) in refused.items()
        )
        warnings.warn(
            f"The Spark Connect server fixed these settings when it started, so they are not "
            f"applied: {listed}. Set them where the server starts.",
            stacklevel=3,
        )
    return spark


def _set_runtime_settings(
    spark: SparkSession, conf: Mapping[str, str]
) -> dict[str, tuple[str, str | None]]:
    """Set every setting the server has not refused before; those it refuses now whose value
    differs from the server's, with the server's value."""
    refused: dict[str, tuple[str, str | None]] = {}
    for key, value in conf.items():
        if key == "spark.remote" or key in _REFUSED_BY_SERVER:
            continue
        try:
            spark.conf.set(key, value)
        except AnalysisException as exc:
            if exc.getCondition() not in _STATIC_SETTING_ERRORS:
                raise
            _REFUSED_BY_SERVER.add(key)
            server_value = spark.conf.get(key, None)
            if server_value != value:
                refused[key] = (value, server_value)
    return refused


def local_session(
    work_dir: str,
    *,
    master: str = "local[2]",
    app_name: str = "dbt-hudi",
    hive: bool = False,
    extra_conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Build an embedded local session whose warehouse, metastore and Derby live in ``work_dir``.

    Python workers must run the interpreter that has the engine installed, hence
    ``PYSPARK_PYTHON`` defaults to the current one.
    """
    work_dir = os.path.abspath(work_dir)
    os.makedirs(work_dir, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = {
        **LOCAL_DEFAULTS,
        **EMBEDDED_DEFAULTS,
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.driver.memory": "2g",
        "spark.sql.warehouse.dir": os.path.join(work_dir, "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={os.path.join(work_dir, 'metastore_db')};create=true"
        ),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={work_dir} -Dlog4j.configurationFile={QUIET_LOG4J}"
        ),
        **(extra_conf or {}),
    }
    if not hive:
        conf["spark.sql.catalogImplementation"] = "in-memory"
    return _launch(conf, hive=hive)
