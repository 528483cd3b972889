"""Spark processes started from the installed pyspark: a standalone master and worker, and a
Spark Connect server, each bound to 127.0.0.1 on free ports with small memory.

Every process runs in its own process group and carries :data:`OWNER_ENV` in its environment,
which the executor JVMs and Python workers it starts inherit; :meth:`SparkProcess.stop` kills
the group and then every process still carrying the mark (pyspark's Python daemon moves to a
group of its own), so nothing outlives the test run, whichever way it ends.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
QUIET_LOG4J = REPO / "engine" / "spark" / "log4j2.properties"
OWNER_ENV = "DBT_HUDI_SPARK_PROCESS"
START_TIMEOUT = 180.0
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_PR_SET_PDEATHSIG = 1


def spark_home() -> Path:
    """The installed pyspark, which ships Spark's launch scripts and jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def spark_env(**extra: str) -> dict[str, str]:
    """The environment of a Spark process: this interpreter for Python workers, loopback only."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_HOSTNAME="127.0.0.1",
    )
    env.pop("SPARK_REMOTE", None)
    env.update(extra)
    return env


@dataclass
class SparkProcess:
    """One started process (its own process group), its log, and the mark its children carry."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    mark: str
    stopped: bool = field(default=False)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Kill the process group, then any process still carrying this process's mark."""
        if self.stopped:
            return
        self.stopped = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait(timeout=30)
        marked = []
        for candidate in psutil.process_iter():
            try:
                if candidate.environ().get(OWNER_ENV) == self.mark:
                    candidate.kill()
                    marked.append(candidate)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        psutil.wait_procs(marked, timeout=30)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the process that started it dies (Linux), so a
    test run killed outright leaves no server behind (their own children follow them)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def start(
    name: str, command: list[str], work: Path, env: dict[str, str], *, cwd: Path | None = None
) -> SparkProcess:
    """Start ``command`` in a new process group, its output in ``work/<name>.log``."""
    work.mkdir(parents=True, exist_ok=True)
    mark = f"{name}-{uuid.uuid4().hex}"
    log = work / f"{name}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=cwd or work,
            env={**env, OWNER_ENV: mark},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
    return SparkProcess(name, proc, log, mark)


def wait_until(process: SparkProcess, ready: Callable[[], bool], what: str) -> None:
    """Poll ``ready()`` until it holds; the process dying or the timeout fails with its log."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if not process.alive():
            raise RuntimeError(f"{process.name} exited before {what}:\n{process.log_tail()}")
        if ready():
            return
        time.sleep(0.5)
    process.stop()
    raise TimeoutError(
        f"{process.name}: no {what} after {START_TIMEOUT:.0f}s:\n{process.log_tail()}"
    )


# ---- standalone cluster -------------------------------------------------------------------------


@dataclass
class Cluster:
    """A standalone master and one worker; ``master_url`` is what a driver's spark.master says."""

    master_url: str
    work: Path
    processes: list[SparkProcess]

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()


def _alive_workers(webui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui_port}/json/", timeout=2) as resp:
            state = json.load(resp)
    except OSError:
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


def start_cluster(work: Path, *, cores: int = 1, memory: str = "2g") -> Cluster:
    """A master and a worker (``cores`` cores, ``memory`` for executors), daemons at 256m."""
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = spark_env(
        SPARK_DAEMON_MEMORY="256m",
        SPARK_DAEMON_JAVA_OPTS=f"-Dlog4j.configurationFile={QUIET_LOG4J}",
        SPARK_WORKER_DIR=str(work / "worker"),
    )
    port, webui = free_port(), free_port()
    master_class = "org.apache.spark.deploy.master.Master"
    master_args = ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui)]
    master = start("master", [spark_class, master_class, *master_args], work, env)
    processes = [master]
    try:
        wait_until(master, lambda: port_open(port), f"master listening on {port}")
        url = f"spark://127.0.0.1:{port}"
        worker_class = "org.apache.spark.deploy.worker.Worker"
        worker_args = ["--host", "127.0.0.1", "--port", str(free_port())]
        worker_args += ["--webui-port", str(free_port()), "--cores", str(cores)]
        worker_args += ["--memory", memory, "--work-dir", str(work / "worker"), url]
        worker = start("worker", [spark_class, worker_class, *worker_args], work, env)
        processes.append(worker)
        wait_until(worker, lambda: _alive_workers(webui) > 0, "worker registered")
    except BaseException:
        for process in processes:
            process.stop()
        raise
    return Cluster(url, work, processes)


def executor_conf(master_url: str, executors: int = 1) -> dict[str, str]:
    """A driver's settings for the cluster: ``executors`` executors of one core and 512m."""
    return {
        "spark.master": master_url,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.cores.max": str(executors),
        "spark.driver.memory": "1g",
        "spark.executor.extraJavaOptions": f"-Dlog4j.configurationFile={QUIET_LOG4J}",
    }


# ---- Spark Connect server ---------------------------------------------------------------------


def start_connect_server(work: Path, *, master: str = "local[2]") -> tuple[SparkProcess, str]:
    """A Spark Connect server on a free loopback port; returns it and its ``sc://`` URL.

    Its warehouse and Derby metastore live under ``work`` (dbt's seeds and views land there).
    """
    port = free_port()
    conf = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.ansi.enabled": "false",
        "spark.sql.warehouse.dir": str(work / "warehouse"),
        "spark.driver.extraJavaOptions": (
            f"-Dlog4j.configurationFile={QUIET_LOG4J} -Dderby.system.home={work}"
        ),
    }
    command = [
        str(spark_home() / "bin" / "spark-submit"),
        "--class",
        CONNECT_SERVER_CLASS,
        "--name",
        "dbt-hudi Spark Connect server",
        "--master",
        master,
        "--driver-memory",
        "1g",
    ]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    server = start("connect-server", command, work, spark_env())
    try:
        wait_until(server, lambda: port_open(port), f"Spark Connect listening on {port}")
    except BaseException:
        server.stop()
        raise
    return server, f"sc://127.0.0.1:{port}"
