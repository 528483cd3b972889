"""The one place that builds or finds the SparkSession the engine runs on.

dbt runs models in worker threads where ``SparkSession.getActiveSession()`` is ``None`` (the
active session is thread-local), so the engine always goes through the builder's
``getOrCreate()``, which returns the process's existing session (and its temp views) when there
is one, or a Spark Connect session when ``SPARK_REMOTE`` is set.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

QUIET_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")

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


def get_spark(conf: Mapping[str, str] | None = None) -> SparkSession:
    """Return the process's SparkSession, creating it with ``conf`` if none exists yet."""
    builder = SparkSession.builder
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


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
    builder = SparkSession.builder
    if hive:
        builder = builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
