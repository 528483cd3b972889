"""Apache Hudi on Spark as an anchor of ``make bench``: Hudi's own Spark writer, in a process of
its own per release, doing the same work on the same data as the engine.

The releases: Hudi 0.15.0 (table version 6, the engine's default) and Hudi 1.1.1 (its default,
table version 9), each on the pyspark 3.5 it is built against, run by the JVM harness of the
tests (``tests/hudi_jvm``: ``make hudi-jvm`` provisions both). ``BENCH_HUDI=0.15.0`` runs one.

Hudi's settings, the ones its documentation gives a small cluster, and nothing else:

- ``local[*]`` (every core, as the engine's local session uses them);
- Kryo (``spark.serializer=org.apache.spark.serializer.KryoSerializer`` with Hudi's
  ``HoodieSparkKryoRegistrar``);
- ``spark.sql.shuffle.partitions`` = ``spark.default.parallelism`` = the cores;
- the same driver memory as the engine's session (``BENCH_DRIVER_MEMORY``, 4g);
- Hudi's defaults otherwise: its metadata table, its file sizing, its parallelism.

The write options are the dbt model's (``run.model_options``: key ``id``, partition ``dt``,
ordering ``ts``, hive-style partitions, the index) without the payload class (Hudi's default
merge for the release); ``-default`` contenders leave the index to Hudi's default (``SIMPLE``),
``-rli`` ones enable Hudi's record index on table version 9 (1.1.1 only).

The timed region is the same as the engine's: reading the batch's Parquet file as a DataFrame
(lazily: its scan runs inside the write's jobs) and the write, ending when the commit is
complete; timed inside Hudi's process. Out of it on both sides: the session's start, the copy
of the prepared table, the verification. Peak RSS is sampled over Hudi's process and its JVM.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

RELEASE_LABELS = {"0.15.0": "hudi0.15", "1.1.1": "hudi1.1"}
RELEASES = [r for r in os.environ.get("BENCH_HUDI", "0.15.0,1.1.1").split(",") if r]
# which of Hudi's indexes run per shape: gsimple (dbt's default, GLOBAL_SIMPLE), default (Hudi's
# own default index), bucket (Hudi's BUCKET, 4 buckets)
INDEXES = [
    i for i in os.environ.get("BENCH_HUDI_INDEXES", "gsimple,default,bucket").split(",") if i
]
# the payload class is Hudi's default for the release; the rest is the model's table definition
LEFT_OUT = ("hoodie.datasource.write.payload.class",)
CORES = os.cpu_count() or 1
PHASE_PREFIX = "phase: "


def spark_conf(work: Path, driver_memory: str) -> dict[str, str]:
    """The anchor session's settings over the harness's (which sets Kryo, Hudi's registrar,
    its SQL extension and catalog)."""
    return {
        "spark.master": "local[*]",
        "spark.sql.shuffle.partitions": str(CORES),
        "spark.default.parallelism": str(CORES),
        "spark.driver.memory": driver_memory,
        "spark.ui.showConsoleProgress": "false",
        "spark.local.dir": str(work / "spark-local"),
    }


def contender_kinds(shape: str, release: str, rli_shapes: tuple[str, ...]) -> list[str]:
    """Hudi's contenders on ``shape``: per table type, the indexes of :data:`INDEXES`; on the
    record index shapes the record index (table version 9, Hudi 1.x only)."""
    if shape in rli_shapes:
        return ["cow-rli", "mor-rli"] if release != "0.15.0" else []
    suffix = {"gsimple": "", "default": "-default", "bucket": "-bucket"}
    return [f"{kind}{suffix[i]}" for i in INDEXES for kind in ("cow", "mor")]


def ours_of(kind: str) -> str:
    """Our contender doing the same work as Hudi's ``kind`` (Hudi's default index is SIMPLE)."""
    return kind.replace("-default", "-simple")


def hudi_options(release: str, ours: dict[str, Any], kind: str) -> dict[str, str]:
    """The model's options for Hudi's writer (see the module's docstring)."""
    options = {k: str(v) for k, v in ours.items() if k not in LEFT_OUT}
    if kind.endswith("-default"):
        options.pop("hoodie.index.type", None)
        options.pop("hoodie.simple.index.update.partition.path", None)
    if kind.endswith("-rli"):
        options["hoodie.metadata.record.index.enable"] = "true"
    if release == "0.15.0":
        options.pop("hoodie.write.table.version", None)
    return options


def phases(answer: dict[str, Any]) -> dict[str, float]:
    """Where Hudi's seconds went, from the jobs the server saw in the timed region: the
    driver's planning before the first job, each kind of job (Hudi's job descriptions, instant
    times and paths left out), the driver between jobs, and after the last job."""
    start, end, jobs = answer["start"], answer["end"], answer["jobs"]
    if not jobs:
        return {PHASE_PREFIX + "driver (no Spark job)": round(end - start, 3)}
    parts: dict[str, float] = {PHASE_PREFIX + "planning": round(jobs[0][1] - start, 3)}
    covered, reach = 0.0, jobs[0][1]
    for label, begin, finish in jobs:
        key = PHASE_PREFIX + _job_label(label)
        parts[key] = round(parts.get(key, 0.0) + finish - begin, 3)
        covered += max(0.0, finish - max(begin, reach))
        reach = max(reach, finish)
    after = max(0.0, end - reach)
    between = end - start - parts[PHASE_PREFIX + "planning"] - covered - after
    parts[PHASE_PREFIX + "driver between jobs"] = round(max(0.0, between), 3)
    parts[PHASE_PREFIX + "after the last job (commit)"] = round(after, 3)
    return parts


def _job_label(label: str) -> str:
    label = re.sub(r"file:/\S+", "<path>", label)
    label = re.sub(r"\d{14,}", "<instant>", label)
    label = re.sub(r"\bbench(_metadata)?\b", lambda m: "<mdt>" if m.group(1) else "<table>", label)
    return "hudi: " + " ".join(label.split())[:70]


class HudiOnSpark:
    """Hudi's processes (one per release, started on first use) and their prepared tables."""

    def __init__(self, work: Path, anchors: ModuleType, driver_memory: str) -> None:
        self.work = work
        self.anchors = anchors
        self.driver_memory = driver_memory
        self._jvms: dict[str, Any] = {}
        self._started: list[str] = []  # a restarted process gets a new work directory

    def jvm(self, release: str) -> Any:
        """Hudi's process for ``release``, started on first use and again if it exited (a
        run of hours outlives a process the machine ends, and says so)."""
        if release in self._jvms and not self._jvms[release].alive:
            log = self._jvms.pop(release).log_path
            print(json.dumps({"restarted": release, "log": str(log)}), flush=True)
        if release not in self._jvms:
            from tests.hudi_jvm.client import start

            root = self.work / f"hudi-jvm-{release}-{len(self._started)}"
            self._started.append(release)
            shutil.rmtree(root, ignore_errors=True)
            self._jvms[release] = start(release, root, spark_conf(root, self.driver_memory))
        return self._jvms[release]

    def close(self) -> None:
        for jvm in self._jvms.values():
            jvm.close()
        self._jvms.clear()

    def ours_sampler(self) -> Any:
        """``anchors.PeakRSS`` over this process and its children less Hudi's processes (the
        servers are children of this one, and their memory is Hudi's, not ours)."""
        import psutil

        servers = [jvm.pid for jvm in self._jvms.values()]

        class Sampler(self.anchors.PeakRSS):  # type: ignore[name-defined,misc]
            def _sample(self) -> None:
                theirs: set[int] = set()
                for pid in servers:
                    try:
                        theirs |= {pid, *(p.pid for p in psutil.Process(pid).children(True))}
                    except psutil.Error:
                        theirs.add(pid)
                try:
                    procs = [self.proc, *self.proc.children(recursive=True)]
                except psutil.Error:
                    procs = [self.proc]
                total = 0
                for proc in procs:
                    if proc.pid not in theirs:
                        try:
                            total += proc.memory_info().rss
                        except psutil.Error:
                            pass
                self.peak = max(self.peak, total)

        return Sampler()

    def request(self, release: str, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` to Hudi's process; once more in a new process if that one had exited
        (the answer then is the new process's; the table's failed write is Hudi's to roll
        back, as its next writer does)."""
        from tests.hudi_jvm.client import HudiJvmError

        try:
            answer: dict[str, Any] = self.jvm(release).request(**request)
        except HudiJvmError:
            if self.jvm_alive(release):
                raise
            answer = self.jvm(release).request(**request)
        return answer

    def jvm_alive(self, release: str) -> bool:
        return release in self._jvms and bool(self._jvms[release].alive)

    def write(self, release: str, path: Path, parquet: Path, options: dict[str, str]) -> None:
        """An untimed write (a prepared table, the upsert before a compaction)."""
        request = {"op": "write", "path": str(path), "parquet": str(parquet)}
        self.request(release, {**request, "options": options})

    def base(self, release: str, kind: str, data: Path, shape_dir: Path, ours: Any) -> Path:
        """The base rows bulk-inserted once by Hudi (untimed) with the contender's options;
        ``ours`` is ``run.model_options``."""
        path = shape_dir / "prepared" / f"{RELEASE_LABELS[release]}-{kind}"
        if not (path / ".hoodie" / "hoodie.properties").exists():
            shutil.rmtree(path, ignore_errors=True)
            options = hudi_options(release, ours(ours_of(kind), "bulk_insert"), kind)
            self.write(release, path, data / "base.parquet", options)
        return path

    def timed(
        self, release: str, name: str, request: dict[str, Any], extra: dict[str, Any]
    ) -> dict[str, Any]:
        """One timed request in Hudi's process: its seconds as that process measured them, the
        peak RSS of the process and its JVM meanwhile, the phases; printed as a JSON line."""
        import psutil

        jvm = self.jvm(release)
        sampler = self.anchors.PeakRSS()
        sampler.proc = psutil.Process(jvm.pid)
        load = round(os.getloadavg()[0], 2)
        with sampler:  # not tried again: a second try would time Hudi's rollback of the first
            answer = jvm.request(**request)
        rec = {
            "name": name,
            "seconds": round(answer["seconds"], 4),
            "peak_rss_mb": sampler.peak_mb,
            "load": load,
            **extra,
            **phases(answer),
        }
        if "count" in answer:
            rec["count"] = answer["count"]
        print(json.dumps(rec), flush=True)
        return rec
