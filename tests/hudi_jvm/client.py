"""Apache Hudi's own Spark writer and reader, a long-lived process per release
(tests/hudi_jvm/server.py, under the release's pyspark 3.5 and Hudi bundle) spoken to in JSON
lines. A test dependency only; the fixtures are in tests/hudi_jvm/fixtures.py."""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.hudi_jvm.provision import RELEASES, Release, ensure

Row = dict[str, Any]

SERVER = Path(__file__).with_name("server.py")


class HudiJvmError(RuntimeError):
    """Apache Hudi refused a request: the message is its exception chain, innermost first."""


class HudiJvm:
    """One JVM running Apache Hudi ``release`` (write, read, Spark SQL)."""

    def __init__(
        self, release: Release, work: Path, spark_conf: dict[str, str] | None = None
    ) -> None:
        self.release = ensure(release)
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.log_path = work / "server.log"
        self._log: IO[bytes] = self.log_path.open("wb")
        command = [str(release.python), str(SERVER), str(release.jar), str(work)]
        if spark_conf:  # the session's settings over the server's defaults (the benchmark's)
            command.append(json.dumps(spark_conf))
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )
        self._lock = threading.Lock()
        hello = self._answer()
        self.spark_version: str = hello["spark"]
        self._batches = 0

    @property
    def pid(self) -> int:
        """The server's process id (its JVM is a child of it)."""
        return self._process.pid

    @property
    def alive(self) -> bool:
        """Whether the server process still runs."""
        return self._process.poll() is None

    @property
    def version(self) -> str:
        return self.release.version

    def _answer(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise HudiJvmError(f"Apache Hudi {self.version}'s JVM exited: {tail}")
        answer: dict[str, Any] = json.loads(line)
        if not answer.pop("ok"):
            raise HudiJvmError(answer["error"])
        return answer

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self._process.stdin is not None
        with self._lock:
            self._process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
            self._process.stdin.flush()
            return self._answer()

    def write(
        self, path: str | Path, rows: pa.Table, options: dict[str, Any], mode: str = "append"
    ) -> None:
        """Hudi's datasource writes ``rows`` to the table at ``path``."""
        self._batches += 1
        parquet = self.work / f"batch-{self._batches}.parquet"
        pq.write_table(rows, parquet)
        options = {k: str(v) for k, v in options.items()}
        self.request("write", path=str(path), parquet=str(parquet), options=options, mode=mode)

    def reads(self, path: str | Path, queries: dict[str, dict[str, Any]]) -> dict[str, list[Row]]:
        """Rows Hudi's datasource reads from the table at ``path``, for several queries at once,
        by name (each value: ``query``, one of snapshot, read_optimized, incremental,
        time_travel, and its ``begin``, ``end``, ``as_of``, ``options``)."""
        reads = [{"path": str(path), **query} for query in queries.values()]
        answers: list[list[Row]] = self.request("reads", reads=reads)["answers"]
        return dict(zip(queries, answers, strict=True))

    def sql(self, statement: str) -> list[Row]:
        """Rows of ``statement`` in Hudi's Spark session (CALL procedures among them)."""
        rows: list[Row] = self.request("sql", statement=statement)["rows"]
        return rows

    def register(self, name: str, path: str | Path) -> str:
        """The table at ``path`` in Hudi's catalog as ``name`` (for procedures taking a table)."""
        self.request("register", name=name, path=str(path))
        return name

    def lock(
        self, path: str | Path, call: str, options: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """Hudi's FileSystemBasedLockProvider on the table at ``path``: ``call`` is ``try``,
        ``unlock`` or ``create`` (tests/hudi_jvm/server.py)."""
        return self.request("lock", path=str(path), call=call, options=options or {})

    def validate_metadata(self, path: str | Path) -> dict[str, Any]:
        """The checks of Hudi's HoodieMetadataTableValidator on the table at ``path`` (its
        metadata table against storage: partitions, latest file slices, latest base files, all
        file groups, column stats, bloom filters, record index count and content):
        ``{"passed": bool, "checked": [...], "compared": {check: items}, "failures": [...]}``
        (tests/hudi_jvm/server.py)."""
        return self.request("validate_metadata", path=str(path))

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            try:
                self._process.stdin.write(json.dumps({"op": "stop"}) + "\n")
                self._process.stdin.close()
                self._process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        self._log.close()


def start(
    version: str, work: Path | None = None, spark_conf: dict[str, str] | None = None
) -> HudiJvm:
    """A JVM running Apache Hudi ``version`` (one of :data:`RELEASES`), its session with
    ``spark_conf`` over the server's defaults."""
    root = work or Path(tempfile.mkdtemp(prefix=f"hudi-jvm-{version}-"))
    return HudiJvm(RELEASES[version], root, spark_conf)
