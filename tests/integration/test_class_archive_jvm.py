"""A real JVM launched through the engine maps Spark's classes from the class-data archive.

The archive is the one a test run prepares before its sessions start (``tests/conftest.py``);
the JVM's own class-loading log says where each class came from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.spark import class_archive

LAUNCH = """
from engine.spark.session import get_spark
spark = get_spark({"spark.master": "local[1]", "spark.sql.catalogImplementation": "in-memory"})
print("rows", spark.range(3).count())
print("ui", spark.conf.get("spark.ui.enabled"))
from pyspark.errors.utils import is_debugging_enabled
print("call sites", is_debugging_enabled())
print("options", spark.sparkContext.getConf().get("spark.driver.extraJavaOptions"))
"""


def test_a_launched_jvm_maps_spark_from_the_archive(tmp_path: Path) -> None:
    archive = class_archive.prepare()
    if archive is None:
        pytest.skip(f"class-data archives are turned off ({class_archive.ENV})")
    env = {
        **os.environ,
        # the JVM's log of each class it loads and where from; not part of the archive's key
        "JAVA_TOOL_OPTIONS": f"-Xlog:class+load=info:file={tmp_path}/load-%p.log",
    }
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "rows 3" in done.stdout
    assert "ui false" in done.stdout  # an embedded session starts without the UI
    assert "call sites False" in done.stdout  # nor PySpark's DataFrame debugging
    assert f"-XX:SharedArchiveFile={archive}" in done.stdout
    logs = "".join(p.read_text() for p in tmp_path.glob("load-*.log"))
    assert "org.apache.spark.SparkContext source: shared objects file (top)" in logs
    assert "org.apache.spark.sql.SparkSession source: shared objects file (top)" in logs
