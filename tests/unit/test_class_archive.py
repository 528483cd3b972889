"""The driver JVM's class-data archive: where it lives, when a launch maps or writes it, how the
watcher installs only a finished archive, and that the user's own options are kept."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.spark import class_archive
from engine.spark.class_archive import DYNAMIC_MAGIC, ClassArchive

OPTIONS = class_archive.OPTIONS_KEY


@pytest.fixture
def spark_home(tmp_path: Path) -> Path:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "spark-core.jar").write_bytes(b"core")
    (home / "conf").mkdir()
    return home


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(class_archive.ENV, str(directory))
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    return directory


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_cache_dir_follows_the_environment() -> None:
    assert class_archive.cache_dir({class_archive.ENV: "off"}) is None
    assert class_archive.cache_dir({class_archive.ENV: "False"}) is None
    assert class_archive.cache_dir({class_archive.ENV: "/x/y"}) == Path("/x/y")
    assert class_archive.cache_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/dbt-hudi")


def test_first_launch_claims_the_writing_and_the_next_starts_unarchived(
    cache: Path, spark_home: Path
) -> None:
    first = class_archive.plan({}, str(spark_home))
    assert first is not None and first.writing is not None
    assert first.writing.exists() and first.writing.parent == cache
    assert f"-XX:ArchiveClassesAtExit={first.writing}" in first.java_options()
    # another launch while that JVM runs: no second writer
    assert class_archive.plan({}, str(spark_home)) is None


def test_an_installed_archive_is_mapped(cache: Path, spark_home: Path) -> None:
    claim = class_archive.plan({}, str(spark_home))
    assert claim is not None and claim.writing is not None
    claim.writing.write_bytes(DYNAMIC_MAGIC + b"rest")
    assert class_archive.install(_dead_pid(), claim.writing, claim.final)
    mapped = class_archive.plan({"spark.driver.memory": "4g"}, str(spark_home))
    assert mapped == ClassArchive(claim.final)
    assert f"-XX:SharedArchiveFile={claim.final}" in mapped.java_options()


def test_a_half_written_archive_is_never_installed(cache: Path, spark_home: Path) -> None:
    claim = class_archive.plan({}, str(spark_home))
    assert claim is not None and claim.writing is not None
    # a JVM killed while writing leaves the header unwritten (or only the empty claim)
    claim.writing.write_bytes(b"\0" * 64)
    assert not class_archive.install(_dead_pid(), claim.writing, claim.final)
    assert not claim.final.exists() and not claim.writing.exists()
    # the claim is gone: the next launch writes it again
    again = class_archive.plan({}, str(spark_home))
    assert again is not None and again.writing is not None


def test_the_watcher_waits_for_the_jvm(cache: Path, spark_home: Path) -> None:
    claim = class_archive.plan({}, str(spark_home))
    assert claim is not None and claim.writing is not None
    jvm = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    started = time.monotonic()
    claim.writing.write_bytes(DYNAMIC_MAGIC)
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "engine.spark.class_archive",
            str(jvm.pid),
            str(claim.writing),
            str(claim.final),
        ]
    )
    time.sleep(0.5)
    assert not claim.final.exists()  # the JVM still runs
    jvm.wait()
    assert watcher.wait(timeout=30) == 0
    assert claim.final.read_bytes() == DYNAMIC_MAGIC
    assert time.monotonic() - started >= 1.5


def test_an_exited_unreaped_jvm_counts_as_exited() -> None:
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{zombie.pid}/stat").exists() and time.monotonic() < deadline:
        if Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z":
            break
        time.sleep(0.05)
    assert not class_archive._alive(zombie.pid)
    zombie.wait()
    assert class_archive._alive(os.getpid())


def test_the_users_java_options_are_kept(cache: Path, spark_home: Path) -> None:
    archive = ClassArchive(cache / "spark-k.jsa")
    conf = {OPTIONS: "-Dmine=1 -Xss4m"}
    merged = class_archive.with_archive(conf, str(spark_home), archive)
    assert merged[OPTIONS].startswith("-Dmine=1 -Xss4m ")
    assert merged[OPTIONS].endswith(f"-XX:SharedArchiveFile={archive.final}")
    # spark-defaults.conf's options, which a session setting would replace, are carried over
    (spark_home / "conf" / "spark-defaults.conf").write_text(
        "# site settings\nspark.driver.extraJavaOptions=-Dsite=1 -Dother=2\nspark.master local\n"
    )
    merged = class_archive.with_archive({}, str(spark_home), archive)
    assert merged[OPTIONS].startswith("-Dsite=1 -Dother=2 ")
    (spark_home / "conf" / "spark-defaults.conf").write_text(
        "spark.driver.extraJavaOptions   -Dsite=3\n"
    )
    assert class_archive.java_options_of({}, str(spark_home)) == "-Dsite=3"


@pytest.mark.parametrize(
    "options", ["-Xshare:off", "-XX:SharedArchiveFile=/mine.jsa", "-XX:ArchiveClassesAtExit=/a"]
)
def test_sharing_options_of_the_users_own_leave_the_launch_alone(
    cache: Path, spark_home: Path, options: str
) -> None:
    assert class_archive.plan({OPTIONS: options}, str(spark_home)) is None
    assert not cache.exists()


def test_turned_off_or_an_existing_gateway_leaves_the_launch_alone(
    cache: Path, spark_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(class_archive.ENV, "off")
    assert class_archive.plan({}, str(spark_home)) is None
    monkeypatch.setenv(class_archive.ENV, str(cache))
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "4040")
    assert class_archive.plan({}, str(spark_home)) is None


def test_the_key_follows_the_class_path_not_system_properties(spark_home: Path) -> None:
    home = str(spark_home)
    key = class_archive.classpath_key({}, home, "")
    assert class_archive.classpath_key({}, home, "-Dderby.system.home=/w") == key
    assert class_archive.classpath_key({}, home, "-XX:+UseParallelGC") != key
    assert class_archive.classpath_key({"spark.driver.extraClassPath": "/x.jar"}, home, "") != key
    (spark_home / "jars" / "spark-sql.jar").write_bytes(b"sql")  # an upgraded Spark
    assert class_archive.classpath_key({}, home, "") != key


def test_stale_claims_and_long_unused_archives_are_removed(cache: Path, spark_home: Path) -> None:
    claim = class_archive.plan({}, str(spark_home))
    assert claim is not None and claim.writing is not None
    old = time.time() - class_archive.WRITING_GRACE_SECONDS - 60
    os.utime(claim.writing, (old, old))
    fresh = class_archive.plan({}, str(spark_home))  # the stale claim no longer blocks
    assert fresh is not None and fresh.writing is not None
    assert not claim.writing.exists()
    unused = cache / "spark-0ld.jsa"
    unused.write_bytes(DYNAMIC_MAGIC)
    month_ago = time.time() - (class_archive.UNUSED_DAYS + 1) * 86400
    os.utime(unused, (month_ago, month_ago))
    recent = cache / "spark-recent.jsa"
    recent.write_bytes(DYNAMIC_MAGIC)
    fresh.writing.write_bytes(DYNAMIC_MAGIC)
    assert class_archive.install(_dead_pid(), fresh.writing, fresh.final)
    assert not unused.exists() and recent.exists() and fresh.final.exists()


def test_a_claim_whose_jvm_never_started_is_given_up(cache: Path, spark_home: Path) -> None:
    claim = class_archive.plan({}, str(spark_home))
    assert claim is not None and claim.writing is not None
    class_archive.release(claim)
    again = class_archive.plan({}, str(spark_home))
    assert again is not None and again.writing is not None


def _conf_dir(tmp_path: Path, *files: str) -> Path:
    conf = tmp_path / "site-conf"
    conf.mkdir()
    for name in files:
        (conf / name).write_text("spark.dbt_hudi.marker from-defaults\n")
    return conf


def test_a_conf_dir_with_files_becomes_a_jar_and_its_defaults_settings(
    cache: Path, spark_home: Path, tmp_path: Path
) -> None:
    conf = _conf_dir(tmp_path, "spark-defaults.conf", "log4j2.properties")
    environ = {**os.environ, "SPARK_CONF_DIR": str(conf)}
    launch = class_archive.shareable_launch(
        {"spark.master": "local[2]", "spark.dbt_hudi.own": "1"}, str(spark_home), environ
    )
    assert launch is not None
    empty = Path(launch.environ["SPARK_CONF_DIR"])
    assert empty.is_dir() and not list(empty.iterdir())  # the JDK accepts an empty directory
    jar = Path(launch.conf[class_archive.EXTRA_CLASSPATH_KEY])
    import zipfile

    with zipfile.ZipFile(jar) as archive:
        assert sorted(archive.namelist()) == ["log4j2.properties", "spark-defaults.conf"]
    assert launch.conf["spark.dbt_hudi.marker"] == "from-defaults"  # below the session's own
    assert launch.conf["spark.dbt_hudi.own"] == "1"
    # a changed file makes another jar, so another archive key
    (conf / "log4j2.properties").write_text("rootLogger.level = warn\n")
    again = class_archive.shareable_launch({"spark.master": "local[2]"}, str(spark_home), environ)
    assert again is not None and again.conf[class_archive.EXTRA_CLASSPATH_KEY] != str(jar)


@pytest.mark.parametrize(
    ("case", "conf", "variables"),
    [
        ("spark-env.sh to source", {"spark.master": "local[2]"}, {}),
        ("a cluster master", {"spark.master": "spark://127.0.0.1:7077"}, {}),
        ("a Hadoop conf dir with files", {"spark.master": "local[2]"}, {"HADOOP_CONF_DIR": ""}),
    ],
)
def test_a_class_path_directory_that_cannot_be_left_out_turns_sharing_off(
    cache: Path,
    spark_home: Path,
    tmp_path: Path,
    case: str,
    conf: dict[str, str],
    variables: dict[str, str],
) -> None:
    site = _conf_dir(tmp_path, "spark-defaults.conf", *(["spark-env.sh"] if "env" in case else []))
    environ = {**os.environ, "SPARK_CONF_DIR": str(site)}
    if "HADOOP_CONF_DIR" in variables:
        environ["HADOOP_CONF_DIR"] = str(site)
        environ["SPARK_CONF_DIR"] = str(tmp_path / "absent")
    assert class_archive.shareable_launch(conf, str(spark_home), environ) is None, case


def test_an_empty_or_missing_conf_dir_leaves_the_launch_as_it_is(
    cache: Path, spark_home: Path
) -> None:
    conf = {"spark.master": "local[2]"}
    launch = class_archive.shareable_launch(conf, str(spark_home), dict(os.environ))
    assert launch == class_archive.Launch(conf, {})  # $SPARK_HOME/conf is empty
