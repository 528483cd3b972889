"""Apache Hudi on the JVM for the tests: per release, a virtual environment with the PyPI
``pyspark`` its Spark bundle is built against, and the bundle from Maven Central, both cached
under ``~/.cache/dbt-hudi/hudi-jvm/<release>/`` (``HUDI_JVM_CACHE`` moves it).

``python -m tests.hudi_jvm.provision`` (``make hudi-jvm``, which ``make test`` runs) sets up every
release and returns at once when the cache is ready. A test dependency only: nothing under
``engine/`` or ``dbt/`` imports it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Release:
    """One Apache Hudi release: its Spark 3.5 bundle and the pyspark it is built against."""

    version: str
    pyspark: str
    table_versions: tuple[int, ...]
    # the dbt-spark (and dbt-core) installed beside pyspark, for the releases dbt-spark projects
    # are run with (tests/hudi_jvm/test_dbt_spark_bundle.py); empty: none
    dbt: tuple[str, ...] = ()

    @property
    def bundle(self) -> str:
        """The bundle's Maven coordinate."""
        return f"org.apache.hudi:hudi-spark3.5-bundle_2.12:{self.version}"

    @property
    def home(self) -> Path:
        return cache_root() / self.version

    @property
    def python(self) -> Path:
        return self.home / "venv" / "bin" / "python"

    @property
    def jar(self) -> Path:
        return self.home / "jars" / f"hudi-spark3.5-bundle_2.12-{self.version}.jar"

    @property
    def dbt_executable(self) -> Path:
        """The ``dbt`` command of the release's venv (dbt-spark with ``method: session``)."""
        return self.home / "venv" / "bin" / "dbt"

    @property
    def stamp(self) -> Path:
        return self.home / "ready"

    @property
    def spec(self) -> str:
        """What the stamp records: a change of either rebuilds the release's cache."""
        return " ".join([f"pyspark=={self.pyspark}", *self.dbt, self.bundle]) + "\n"


# Hudi 0.15.0 is built against Spark 3.5.1, Hudi 1.1.1 against Spark 3.5.5 (their poms'
# spark35.version); 1.1.1 writes table version 9 by default, 8 and 6 when asked.
# dbt-spark runs beside Hudi 0.15.0: the release the managed Spark platforms ship (Amazon EMR 7.x,
# AWS Glue 5.0), so the one most dbt-spark projects with file_format='hudi' run with; dbt-spark
# and dbt-core are the releases pyproject.toml takes for the adapter, so both run the same dbt.
DBT_SPARK = ("dbt-spark[session]==1.11.0", "dbt-core==1.11.16")
RELEASES = {
    "0.15.0": Release("0.15.0", "3.5.1", (6,), DBT_SPARK),
    "1.1.1": Release("1.1.1", "3.5.5", (6, 8, 9)),
}


_MAVEN = threading.Lock()


class ProvisionError(RuntimeError):
    """A release could not be set up: the message names what could not be fetched."""


def cache_root() -> Path:
    configured = os.environ.get("HUDI_JVM_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "dbt-hudi" / "hudi-jvm"


def _run(command: list[str], what: str, log: Path) -> None:
    with log.open("a") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
        raise ProvisionError(f"could not fetch {what} (exit {done.returncode}): {tail[0]}")


def _installer(release: Release) -> list[str]:
    """``uv pip install`` into the release's venv when the project's venv has uv (``make``
    installs it: it fetches in parallel), else the venv's own pip."""
    uv = Path(sys.executable).with_name("uv")
    if uv.is_file():
        return [str(uv), "pip", "install", "-q", "--python", str(release.python)]
    return [str(release.python), "-m", "pip", "install", "-q"]


def ensure(release: Release) -> Release:
    """Sets ``release`` up once (its venv, its bundle); a ready cache returns at once."""
    if release.stamp.is_file() and release.stamp.read_text() == release.spec:
        return release
    release.home.mkdir(parents=True, exist_ok=True)
    log = release.home / "provision.log"
    if not release.python.is_file():
        _run([sys.executable, "-m", "venv", str(release.home / "venv")], "a venv", log)
    _run(
        [*_installer(release), f"pyspark=={release.pyspark}"],
        f"pyspark=={release.pyspark} from PyPI",
        log,
    )
    if release.dbt:
        # pyspark pinned again: dbt-spark's session extra would take any pyspark below 5
        dbt = [*release.dbt, f"pyspark=={release.pyspark}"]
        _run(
            [*_installer(release), *dbt],
            f"{' '.join(release.dbt)} from PyPI",
            log,
        )
    if not release.jar.is_file():
        copy = ["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={release.bundle}"]
        copy.append(f"-DoutputDirectory={release.jar.parent}")
        with _MAVEN:
            _run(copy, f"{release.bundle} from Maven Central", log)
    release.stamp.write_text(release.spec)
    return release


def main() -> int:
    """Every release at once: a fresh machine's set-up is downloads, which overlap (the Maven
    fetches take turns: two ``mvn`` runs may write the same plugin into ``~/.m2`` at once)."""
    with ThreadPoolExecutor(len(RELEASES)) as pool:
        outcomes = list(pool.map(_ensure_or_error, RELEASES.values()))
    for release, error in zip(RELEASES.values(), outcomes, strict=True):
        if error is not None:
            print(f"hudi-jvm: {error}", file=sys.stderr)
        else:
            print(f"hudi-jvm: Apache Hudi {release.version} ready in {release.home}")
    return 1 if any(outcomes) else 0


def _ensure_or_error(release: Release) -> str | None:
    try:
        ensure(release)
    except (ProvisionError, OSError) as exc:
        return str(exc)
    return None


if __name__ == "__main__":
    sys.exit(main())
