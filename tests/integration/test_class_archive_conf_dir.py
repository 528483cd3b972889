"""A Spark conf directory full of files, as on a real install, and the class-data archive.

``spark-class`` puts ``SPARK_CONF_DIR`` on the driver's class path, and the JDK refuses to write
or map an archive while a class path directory holds files: every run printed "Cannot have
non-empty directory in paths" and started unarchived. Two fresh launches with such a directory:
both print no JVM error and read the directory's settings and files; the first writes the
archive, the second maps it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from engine.spark import session

LAUNCH = """
from pyspark import SparkContext
from engine.spark.session import local_session
spark = local_session({work!r})
print("rows", spark.range(3).count())
print("defaults", spark.conf.get("spark.dbt_hudi.marker", "unset"))
loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()
print("resource", loader.getResource("dbt-hudi-marker.txt") is not None)
maps = open(f"/proc/{{SparkContext._gateway.proc.pid}}/maps").read()
print("mapped", [line.split()[-1] for line in maps.splitlines() if line.endswith(".jsa")])
"""
JVM_ERRORS = ("Error occurred during initialization of VM", "non-empty directory", "Hint:")


def _launch(tmp_path: Path, environ: dict[str, str], run: int) -> tuple[str, str]:
    code = LAUNCH.format(work=str(tmp_path / f"work-{run}"))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_a_conf_dir_with_files_writes_then_maps_the_archive_without_jvm_errors(
    tmp_path: Path,
) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.dbt_hudi.marker from-the-conf-dir\n")
    (conf / "log4j2.properties").write_text(Path(session.QUIET_LOG4J).read_text())
    (conf / "dbt-hudi-marker.txt").write_text("a class path resource\n")
    cache = tmp_path / "archives"
    environ = {**os.environ, "SPARK_CONF_DIR": str(conf), "DBT_HUDI_CLASS_ARCHIVE": str(cache)}

    first, errors = _launch(tmp_path, environ, 1)
    assert not [e for e in JVM_ERRORS if e in errors], errors
    assert "rows 3" in first and "defaults from-the-conf-dir" in first
    assert "resource True" in first
    deadline = time.monotonic() + 120  # the watcher installs it once the JVM has exited
    while not list(cache.glob("spark-*.jsa")) and time.monotonic() < deadline:
        time.sleep(0.5)
    (archive,) = cache.glob("spark-*.jsa")

    second, errors = _launch(tmp_path, environ, 2)
    assert not [e for e in JVM_ERRORS if e in errors], errors
    assert "defaults from-the-conf-dir" in second and "resource True" in second
    assert str(archive) in second  # the second JVM maps the archive the first one wrote
