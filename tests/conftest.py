"""Shared fixtures: ONE local SparkSession for the whole run, and the Apache Hudi corpus.

The corpus (real tables written by Apache Hudi) is used where it lies: each zip is unzipped once
into a session temp dir; tests that write into a corpus table get their own copy.
"""

from __future__ import annotations

import os
import shutil
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hudi_jvm.fixtures import hudi_jvm  # noqa: F401  (Apache Hudi's JVMs)
from tests.s3.fixtures import s3, table_location  # noqa: F401  (the local S3 server fixtures)

REPO = Path(__file__).resolve().parent.parent


def _shared_dir() -> Path | None:
    """The shared material beside the repository (``../shared``), or ``HUDI_SHARED_DIR``."""
    candidates = [os.environ.get("HUDI_SHARED_DIR"), REPO.parent / "shared"]
    for c in candidates:
        if c and (Path(c) / "corpus" / "tables").is_dir():
            return Path(c)
    return None


SHARED = _shared_dir()

# Every JVM the tests start (the sessions, the dbt and writer processes, Apache Hudi's, the
# cluster's and the Spark Connect server) compiles with C1 only: their data is tiny and most of
# them live seconds, so C2's optimizing compiles never pay back; measured on the suite's files,
# they cost about 30 % of its CPU seconds. A test setting its own JAVA_TOOL_OPTIONS replaces this;
# JAVA_TOOL_OPTIONS=-XX:TieredStopAtLevel=4 in the environment runs them with C2.
_JIT = "-XX:TieredStopAtLevel=1"
if "TieredStopAtLevel" not in os.environ.get("JAVA_TOOL_OPTIONS", ""):
    os.environ["JAVA_TOOL_OPTIONS"] = f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} {_JIT}".strip()

# The longest files, then folders by how long their files run: ``make test`` hands files to its
# workers in collection order (pytest-xdist, ``--dist loadfile --no-loadscope-reorder``), so the
# long ones start first and the short unit files fill the gaps at the end instead of one worker
# finishing a long file alone.
_LONGEST_FILES = (
    "hudi_jvm/test_hudi_1_1_ours_first.py", "hudi_jvm/test_hudi_1_1_hudi_first.py",
    "hudi_jvm/test_two_writers.py", "hudi_jvm/test_dbt_spark_bundle.py",
    "hudi_jvm/test_differential.py", "hudi_jvm/test_hudi_0_15.py",
    "hudi_jvm/test_clustering_jvm.py", "s3/test_s3_concurrency.py",
    "interop/test_corpus_read.py",
    "cluster/test_standalone.py",
    "concurrency/test_two_writers.py", "cluster/test_connect.py", "property/test_cow_property.py",
    "property/test_mor_property.py", "concurrency/test_two_dbt_builds.py", "s3/test_s3_faults.py",
    "dbt/test_fresh_reads.py", "property/test_schema_evolution_property.py",
)  # fmt: skip
_LONGEST_FIRST = (
    "cluster", "s3", "concurrency", "property", "faults", "dbt", "interop", "integration", "cli",
    "unit",
)  # fmt: skip


def pytest_sessionstart(session: pytest.Session) -> None:
    """Write the driver JVM's class-data archive before any test launches a JVM (the run's
    sessions, the dbt and writer processes it starts): each then starts from it. In a parallel
    run the controller writes it; pytest-xdist starts the workers after this hook (its own
    ``pytest_sessionstart`` is ``trylast``)."""
    from engine.spark import class_archive

    if not hasattr(session.config, "workerinput"):
        class_archive.prepare()


# The files that talk to Apache Hudi's JVMs (tests/hudi_jvm/fixtures.py: one per release per
# worker process, started on first use): one worker runs them all (:func:`pytest_xdist_make_
# scheduler`), so each release's JVM starts once in the run, instead of once on each worker.
_ONE_WORKER = "hudi_jvm"
_HUDI_JVM_FILES = (
    "hudi_jvm/test_hudi_1_1_ours_first.py", "hudi_jvm/test_hudi_1_1_hudi_first.py",
    "hudi_jvm/test_two_writers.py", "hudi_jvm/test_differential.py",
    "hudi_jvm/test_hudi_0_15.py", "hudi_jvm/test_clustering_jvm.py",
    "hudi_jvm/test_metadata_validator.py",
)  # fmt: skip


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``make test``'s scheduling (``--dist loadfile``: a file's tests on one worker, its
    module fixtures shared), with :data:`_HUDI_JVM_FILES` one unit instead of one each."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FilesAndHudiJvms(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = str(super()._split_scope(nodeid))
            return _ONE_WORKER if path.removeprefix("tests/") in _HUDI_JVM_FILES else path

    return FilesAndHudiJvms(config, log)


# ``make test-long`` (HUDI_TEST_LONG=1) runs the tests marked ``long`` as well: repetitions of
# what ``make test`` covers once (another table version, another kill point of the same step)
LONG_RUN = bool(os.environ.get("HUDI_TEST_LONG"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leaves out the ``long`` tests unless HUDI_TEST_LONG is set, then orders the collected
    tests by :data:`_LONGEST_FILES`, then :data:`_LONGEST_FIRST` (stable: a file keeps its
    order)."""
    if not LONG_RUN:
        long_tests = [item for item in items if item.get_closest_marker("long") is not None]
        if long_tests:
            config.hook.pytest_deselected(items=long_tests)
            left_out = set(long_tests)
            items[:] = [item for item in items if item not in left_out]

    def rank(item: pytest.Item) -> tuple[int, int]:
        parts = item.path.relative_to(REPO).parts
        inside = "/".join(parts[1:]) if parts[0] == "tests" else ""
        if inside in _LONGEST_FILES:
            return 0, _LONGEST_FILES.index(inside)
        folder = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
        order = _LONGEST_FIRST.index(folder) if folder in _LONGEST_FIRST else len(_LONGEST_FIRST)
        return 1, order

    items.sort(key=rank)


# where the one-job writes of this process run: "driver" (every batch, whatever its size, on the
# local master: engine/spark/local_runner.py), "tasks" (Spark tasks only), unset: the defaults.
# Run a write suite both ways: HUDI_TEST_WRITE_PATH=driver pytest ...; =tasks pytest ...
WRITE_PATH = os.environ.get("HUDI_TEST_WRITE_PATH", "")


@pytest.fixture(autouse=True)
def write_path(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    """Sets the defaults of the ``hoodie.write.local.*`` options as HUDI_TEST_WRITE_PATH asks
    (writes in this process; a test's own options still win). Without it, a test marked
    ``driver_writes`` writes in the driver: a batch made from a Python list has no size Spark
    knows, which a dbt model's small batch has, and its subject is not where a write runs."""
    mode = WRITE_PATH
    if not mode and request.node.get_closest_marker("driver_writes") is not None:
        mode = "driver"
    if not mode:
        return mode
    from dataclasses import replace

    from engine import config
    from engine.spark.local_runner import LONG_MAX

    if mode not in ("driver", "tasks"):
        raise pytest.UsageError(f"HUDI_TEST_WRITE_PATH={mode!r}: driver or tasks")
    if mode == "driver":
        bound = replace(config.WRITE_LOCAL_MAX_BYTES, default=LONG_MAX)  # any batch
        monkeypatch.setattr(config, "WRITE_LOCAL_MAX_BYTES", bound)
    else:
        monkeypatch.setattr(
            config, "WRITE_LOCAL_ENABLED", replace(config.WRITE_LOCAL_ENABLED, default=False)
        )
    return mode


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if SHARED is None:
        pytest.skip("the Apache Hudi corpus (shared/corpus) is not on this machine")
    return SHARED


@pytest.fixture(scope="session")
def spark(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[object]:
    """The one SparkSession of the test run (local[2], in-memory catalog, quiet)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from engine.spark.session import local_session

    work = tmp_path_factory.mktemp("spark")
    session = local_session(str(work), app_name="dbt-hudi-tests")
    # Shown past pytest's capture so a run's log tells how many sessions started (one).
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n[tests] SparkSession started (Spark {session.version})", file=sys.stderr)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def corpus_root(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every corpus table unzipped once (read-only use: copy before writing)."""
    root = tmp_path_factory.mktemp("corpus")
    for zpath in sorted((shared_dir / "corpus" / "tables").glob("*.zip")):
        dest = root / zpath.stem
        with zipfile.ZipFile(zpath) as zf:
            zf.extractall(dest)
    return root


def _table_dir(unzipped: Path) -> Path:
    """The base path inside an unzipped corpus table (the folder holding `.hoodie`)."""
    hits = sorted(p.parent for p in unzipped.rglob(".hoodie") if p.is_dir())
    if not hits:
        raise FileNotFoundError(f"no .hoodie folder under {unzipped}")
    return min(hits, key=lambda p: len(p.parts))


@pytest.fixture(scope="session")
def corpus_table(corpus_root: Path) -> Callable[[str], Path]:
    """Base path of corpus table ``name`` (read-only)."""

    def get(name: str) -> Path:
        return _table_dir(corpus_root / name)

    return get


@pytest.fixture
def corpus_copy(corpus_table: Callable[[str], Path], tmp_path: Path) -> Callable[[str], Path]:
    """A private, writable copy of corpus table ``name``."""

    def get(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(corpus_table(name), dest)
        return dest

    return get
