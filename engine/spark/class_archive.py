"""Start the driver's JVM from a class-data archive of the classes Spark loaded last time.

A fresh JVM spends most of a ``dbt run``'s start loading, verifying and linking the classes of
Spark, Hive's metastore client and DataNucleus: about 3.5 of the 8 seconds from launching
``spark-submit`` to the first ``SHOW DATABASES`` answered, measured on a 2-core machine. The
JDK can map those classes from an archive instead (dynamic class-data sharing, JDK 13+, which
Spark 4 requires anyway): the first JVM that starts without an archive writes one when it exits
(``-XX:ArchiveClassesAtExit``), and every later JVM with the same class path maps it
(``-XX:SharedArchiveFile``). Sharing is transparent: the same classes, initialised the same way.

* The archive lives in the user's cache (``$XDG_CACHE_HOME/dbt-hudi`` or ``~/.cache/dbt-hudi``;
  ``DBT_HUDI_CLASS_ARCHIVE`` names another directory, or ``off`` turns it off), one file per
  class path: its name is a digest of the Java runtime, Spark's jars and the settings that
  change the class path, so an upgrade starts a new archive instead of being refused.
* The JVM writes the archive as it exits, after the Python process has gone. It writes under a
  temporary name, and a small detached watcher renames it into place once that JVM has exited
  and the file carries the archive's magic number: a JVM never maps a half-written archive. One
  JVM writes an archive at a time; others start without one meanwhile.
* A JVM that cannot use the archive (another JDK build, a changed class path) starts as it would
  without it: the JVM checks the archive itself, and its messages about it are turned off.
* Only a JVM this process launches (``method: session``, a local or cluster master) is
  concerned; Spark Connect, an existing gateway (``PYSPARK_GATEWAY_PORT``) or options of the
  user's own about class-data sharing leave the launch as it is.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.services.lock import pid_alive

ENV = "DBT_HUDI_CLASS_ARCHIVE"
OPTIONS_KEY = "spark.driver.extraJavaOptions"
# the first four bytes of a finished dynamic archive (CDS_DYNAMIC_ARCHIVE_MAGIC, little-endian)
DYNAMIC_MAGIC = (0xF00BABA8).to_bytes(4, "little")
# unknown options are ignored (another JVM), and the JVM's own notes on the archive stay quiet
QUIET = "-XX:+IgnoreUnrecognizedVMOptions -Xlog:cds=off -Xlog:cds+dynamic=off"
# options of the user's own that decide class-data sharing: the launch is then left as it is
USER_SHARING_OPTIONS = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare", "SharedClassList")
# a temporary archive younger than this belongs to a JVM still running (or still writing)
WRITING_GRACE_SECONDS = 6 * 3600.0
# an archive of another class path unused this long is removed when a new one is installed
UNUSED_DAYS = 30
_OFF = frozenset({"off", "0", "false", "no"})
# a java.util.Properties line: the key ends at the first '=', ':' or blank
_PROPERTY = re.compile(r"([^\s=:]+)\s*[=:\s]\s*(.*)")


@dataclass(frozen=True)
class ClassArchive:
    """The archive a JVM launch maps (``writing`` unset) or writes at exit (``writing`` set)."""

    final: Path
    writing: Path | None = None

    def java_options(self) -> str:
        if self.writing is not None:
            return f"{QUIET} -XX:ArchiveClassesAtExit={self.writing}"
        return f"{QUIET} -XX:SharedArchiveFile={self.final}"


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """Where archives live, or ``None`` when ``DBT_HUDI_CLASS_ARCHIVE`` turns them off."""
    chosen = environ.get(ENV, "").strip()
    if chosen.lower() in _OFF:
        return None
    if chosen:
        return Path(chosen)
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dbt-hudi"


def plan(conf: Mapping[str, str], spark_home: str) -> ClassArchive | None:
    """The archive for a JVM this process is about to launch with ``conf``, if one applies:
    the installed one, else a claim to write it (when no other JVM is writing it now)."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    options = java_options_of(conf, spark_home)
    if any(flag in options for flag in USER_SHARING_OPTIONS):
        return None
    directory = cache_dir()
    if directory is None:
        return None
    final = archive_path(directory, classpath_key(conf, spark_home, options))
    if final.is_file():
        _touch(final)
        return ClassArchive(final)
    return _claim(final)


def archive_path(directory: Path, key: str) -> Path:
    return directory / f"spark-{key}.jsa"


def _claim(final: Path) -> ClassArchive | None:
    """Claim the writing of ``final``: an empty file under the temporary name tells other
    launches that a JVM will write it (the JVM replaces it as it exits)."""
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        if _being_written(final):
            return None
        writing = final.with_name(f"{final.stem}.{os.getpid()}.{time.time_ns()}.tmp")
        writing.touch(exist_ok=False)
    except OSError:
        return None
    return ClassArchive(final, writing)


def java_options_of(conf: Mapping[str, str], spark_home: str) -> str:
    """The driver's Java options the launch would have: the session's, else spark-defaults'."""
    if OPTIONS_KEY in conf:
        return conf[OPTIONS_KEY]
    return _spark_defaults(spark_home).get(OPTIONS_KEY, "")


def with_archive(conf: Mapping[str, str], spark_home: str, archive: ClassArchive) -> dict[str, str]:
    """``conf`` with the archive's options after the driver's own (kept, never replaced)."""
    own = java_options_of(conf, spark_home)
    return {**conf, OPTIONS_KEY: f"{own} {archive.java_options()}".strip()}


def classpath_key(conf: Mapping[str, str], spark_home: str, options: str) -> str:
    """A digest of what decides whether an archive fits a JVM: the Java runtime, Spark's jars,
    the class path settings and the driver's Java options."""
    digest = hashlib.sha256()
    java = _java_runtime()
    digest.update(java.encode())
    modules = Path(java).resolve().parent.parent / "lib" / "modules"
    for path in (modules, *_jar_files(spark_home)):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    digest.update(f"classpath={conf.get('spark.driver.extraClassPath', '')}\n".encode())
    for name in ("SPARK_DIST_CLASSPATH", "SPARK_CLASSPATH", "SPARK_CONF_DIR"):
        digest.update(f"{name}={os.environ.get(name, '')}\n".encode())
    # -XX options may change the layout an archive needs (garbage collector, compressed
    # pointers); system properties (-D) do not, so a Derby home of its own keeps the archive
    vm_options = [o for o in options.split() if o.startswith("-XX:")]
    default = conf.get("spark.driver.defaultJavaOptions", "")
    vm_options += [o for o in default.split() if o.startswith("-XX:")]
    digest.update(" ".join(vm_options).encode())
    return digest.hexdigest()[:20]


def watch(archive: ClassArchive, jvm_pid: int) -> None:
    """Start the detached watcher that installs ``archive`` once the JVM ``jvm_pid`` exits."""
    if archive.writing is None:
        return
    subprocess.Popen(
        [
            sys.executable,
            "-m",
            "engine.spark.class_archive",
            str(jvm_pid),
            str(archive.writing),
            str(archive.final),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def release(archive: ClassArchive) -> None:
    """Give up a claim to write ``archive`` (the JVM did not start)."""
    if archive.writing is not None:
        archive.writing.unlink(missing_ok=True)


def install(jvm_pid: int, writing: Path, final: Path, *, poll_seconds: float = 0.5) -> bool:
    """Wait for the JVM to exit, then rename its finished archive into place (or remove a
    half-written one). Returns whether an archive was installed."""
    deadline = time.monotonic() + WRITING_GRACE_SECONDS
    while _alive(jvm_pid) and time.monotonic() < deadline:
        time.sleep(poll_seconds)
    if _alive(jvm_pid) or not _finished(writing):
        writing.unlink(missing_ok=True)
        return False
    os.replace(writing, final)
    _remove_unused(final)
    return True


def _finished(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(DYNAMIC_MAGIC)) == DYNAMIC_MAGIC
    except OSError:
        return False


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped has exited: its archive is written)."""
    if not pid_alive(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _being_written(final: Path) -> bool:
    """Whether another JVM is writing ``final`` now; stale leftovers are removed."""
    now = time.time()
    writing = False
    for path in final.parent.glob(f"{final.stem}.*.tmp"):
        try:
            age = now - path.stat().st_mtime
        except OSError:
            continue
        if age < WRITING_GRACE_SECONDS:
            writing = True
        else:
            path.unlink(missing_ok=True)
    return writing


def _remove_unused(final: Path) -> None:
    """Archives of other class paths nobody started from in ``UNUSED_DAYS`` (an upgraded
    Spark or JDK leaves its old archive behind)."""
    cutoff = time.time() - UNUSED_DAYS * 86400
    for path in final.parent.glob("spark-*.jsa"):
        try:
            if path != final and path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            continue


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def _java_runtime() -> str:
    """The ``java`` that ``spark-class`` runs: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        return os.path.realpath(os.path.join(java_home, "bin", "java"))
    found = shutil.which("java")
    return os.path.realpath(found) if found else ""


def _jar_files(spark_home: str) -> list[Path]:
    try:
        return sorted(Path(spark_home, "jars").glob("*.jar"))
    except OSError:
        return []


def _spark_defaults(spark_home: str) -> dict[str, str]:
    """``spark-defaults.conf``'s settings (``key value`` lines), as ``spark-submit`` reads them."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(spark_home, "conf")
    settings: dict[str, str] = {}
    try:
        lines = Path(conf_dir, "spark-defaults.conf").read_text().splitlines()
    except OSError:
        return settings
    for line in lines:
        found = _PROPERTY.match(line.strip())
        if found and not found.group(1).startswith(("#", "!")):
            settings[found.group(1)] = found.group(2).strip()
    return settings


def prepare(timeout: float = 300.0) -> Path | None:
    """The archive of an embedded session, written now by a short training session when none
    is installed or being written, then waited for. For what starts many JVMs at once (a test
    suite's workers, an image build): without it each of them would start unarchived until
    the first one exits."""
    from pyspark.find_spark_home import _find_spark_home

    directory = cache_dir()
    if directory is None:
        return None
    spark_home = _find_spark_home()
    final = archive_path(directory, classpath_key({}, spark_home, java_options_of({}, spark_home)))
    if not final.is_file() and not (directory.is_dir() and _being_written(final)):
        subprocess.run(
            [sys.executable, "-m", "engine.spark.warmup", "class-archive"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    deadline = time.monotonic() + timeout
    while not final.is_file() and _being_written(final) and time.monotonic() < deadline:
        time.sleep(0.5)
    return final if final.is_file() else None


def main(argv: list[str]) -> None:
    """``prepare`` (the archive, written if need be) or ``PID TMP FINAL`` (the watcher a
    launch starts)."""
    if argv[:1] == ["prepare"]:
        print(prepare() or "no class-data archive (turned off, or not written)")
    else:
        install(int(argv[0]), Path(argv[1]), Path(argv[2]))


if __name__ == "__main__":
    main(sys.argv[1:])
