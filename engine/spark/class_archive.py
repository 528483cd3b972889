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
* The JDK maps (and writes) an archive only when no directory on the class path holds files
  ("Cannot have non-empty directory in paths", printed at every exit). ``spark-class`` puts
  Spark's conf directory there (``SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``), which on a real
  install holds ``spark-defaults.conf`` and ``log4j2.properties``. For a local master whose conf
  directory has no ``spark-env.sh`` (a script the launch would have to source),
  :func:`shareable_launch` hands the JVM the same configuration without the directory: its
  files as one jar on the driver's class path (Hadoop's, Hive's and log4j's files are class
  path resources), ``spark-defaults.conf``'s settings below the session's own (where
  ``spark-submit`` would have put them), and an empty conf directory. Any other non-empty
  directory on the class path (``HADOOP_CONF_DIR``, ``YARN_CONF_DIR``, ``SPARK_DIST_CLASSPATH``,
  the driver's extra class path), or a cluster master, leaves class sharing off for the launch.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import javaproperties

from engine.polling import poll
from engine.services.lock import pid_alive

ENV = "DBT_HUDI_CLASS_ARCHIVE"
OPTIONS_KEY = "spark.driver.extraJavaOptions"
EXTRA_CLASSPATH_KEY = "spark.driver.extraClassPath"
# the environment variables whose directories spark-class puts on the driver's class path
CLASSPATH_VARIABLES = (
    "SPARK_DIST_CLASSPATH",
    "SPARK_CLASSPATH",
    "SPARK_CONF_DIR",
    "HADOOP_CONF_DIR",
    "YARN_CONF_DIR",
)
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


@dataclass(frozen=True)
class Launch:
    """What a JVM launch is given: its settings and the environment variables it changes."""

    conf: Mapping[str, str]
    environ: Mapping[str, str]


def shareable_launch(
    conf: Mapping[str, str], spark_home: str, environ: Mapping[str, str] = os.environ
) -> Launch | None:
    """The launch of ``conf`` with no non-empty directory on the driver's class path (the
    module notes), or ``None`` when there is none to be had: class sharing stays off."""
    conf_dir = environ.get("SPARK_CONF_DIR") or os.path.join(spark_home, "conf")
    defaults = _spark_defaults(spark_home, environ)
    extra = conf.get(EXTRA_CLASSPATH_KEY, defaults.get(EXTRA_CLASSPATH_KEY, ""))
    others = [
        *extra.split(os.pathsep),
        environ.get("HADOOP_CONF_DIR", ""),
        environ.get("YARN_CONF_DIR", ""),
        *environ.get("SPARK_DIST_CLASSPATH", "").split(os.pathsep),
    ]
    if any(_holds_files(path) for path in others):
        return None
    if not _holds_files(conf_dir):
        return Launch(dict(conf), {})
    master = conf.get("spark.master") or defaults.get("spark.master") or "local[*]"
    directory = cache_dir(environ)
    if not master.startswith("local") or os.path.exists(os.path.join(conf_dir, "spark-env.sh")):
        return None
    if directory is None:
        return None
    try:
        empty = directory / "empty-conf"
        empty.mkdir(parents=True, exist_ok=True)
        jar = _conf_jar(Path(conf_dir), directory)
    except OSError:
        return None
    settings = {**defaults, **conf}
    settings[EXTRA_CLASSPATH_KEY] = os.pathsep.join(p for p in (extra, str(jar)) if p)
    return Launch(settings, {"SPARK_CONF_DIR": str(empty)})


def _holds_files(path: str) -> bool:
    """A directory with entries (a class path entry the JDK refuses to share)."""
    if not path or path.endswith("*") or not os.path.isdir(path):
        return False
    try:
        with os.scandir(path) as entries:
            return any(True for _ in entries)
    except OSError:
        return True


def _conf_jar(conf_dir: Path, directory: Path) -> Path:
    """The files of ``conf_dir`` as one jar in the cache, named by a digest of their names and
    contents (a changed file makes a new jar, and so a new archive key)."""
    files = sorted(p for p in conf_dir.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(conf_dir)}\0".encode())
        digest.update(path.read_bytes())
    jar = directory / f"conf-{digest.hexdigest()[:20]}.jar"
    if not jar.is_file():
        writing = jar.with_name(f"{jar.name}.{os.getpid()}.{time.time_ns()}.part")
        with zipfile.ZipFile(writing, "w") as archive:
            for path in files:
                archive.write(path, str(path.relative_to(conf_dir)))
        os.replace(writing, jar)
    return jar


def plan(
    conf: Mapping[str, str], spark_home: str, environ: Mapping[str, str] = os.environ
) -> ClassArchive | None:
    """The archive for a JVM this process is about to launch with ``conf`` and ``environ``, if
    one applies: the installed one, else a claim to write it (when no other JVM is writing it
    now)."""
    if "PYSPARK_GATEWAY_PORT" in environ:
        return None
    options = java_options_of(conf, spark_home)
    if any(flag in options for flag in USER_SHARING_OPTIONS):
        return None
    directory = cache_dir(environ)
    if directory is None:
        return None
    final = archive_path(directory, classpath_key(conf, spark_home, options, environ))
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


def classpath_key(
    conf: Mapping[str, str],
    spark_home: str,
    options: str,
    environ: Mapping[str, str] = os.environ,
) -> str:
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
    digest.update(f"classpath={conf.get(EXTRA_CLASSPATH_KEY, '')}\n".encode())
    for name in CLASSPATH_VARIABLES:
        digest.update(f"{name}={environ.get(name, '')}\n".encode())
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
    poll(lambda: not _alive(jvm_pid), seconds=WRITING_GRACE_SECONDS, every=poll_seconds)
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


def _spark_defaults(spark_home: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``spark-defaults.conf``'s settings (``key value`` lines), as ``spark-submit`` reads them."""
    conf_dir = environ.get("SPARK_CONF_DIR") or os.path.join(spark_home, "conf")
    try:
        text = Path(conf_dir, "spark-defaults.conf").read_text(encoding="utf-8")
    except OSError:
        return {}
    # Spark loads it with java.util.Properties and trims each value
    return {key: value.strip() for key, value in javaproperties.loads(text).items()}


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
    launch = shareable_launch({}, spark_home)
    if launch is None:
        return None
    options = java_options_of(launch.conf, spark_home)
    environ = {**os.environ, **launch.environ}
    final = archive_path(directory, classpath_key(launch.conf, spark_home, options, environ))
    if not final.is_file() and not (directory.is_dir() and _being_written(final)):
        subprocess.run(
            [sys.executable, "-m", "engine.spark.warmup", "class-archive"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    poll(lambda: final.is_file() or not _being_written(final), seconds=timeout, every=0.5)
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
