"""Apache Hudi's Spark datasource in a process of its own: one JSON request a line on stdin, one
JSON answer a line on the protocol stream.

Runs with a release's own interpreter (pyspark 3.5 and the Hudi bundle, tests/hudi_jvm/
provision.py); imports nothing from the project. Requests (``op`` and its fields):

- ``write``: ``path``, ``parquet`` (a Parquet file of the rows), ``options`` (hoodie.*),
  ``mode`` (append | overwrite) -> ``{}``
- ``read``: ``path``, ``query`` (snapshot | read_optimized | incremental | time_travel),
  ``begin``/``end`` (incremental), ``as_of`` (time travel), ``options`` -> ``{"rows": [...]}``
- ``reads``: ``reads``, a list of ``read`` requests, run at once on threads of the session (tiny
  reads wait on Spark's scheduling more than they compute) -> ``{"answers": [[...], ...]}``
- ``sql``: ``statement`` -> ``{"rows": [...]}``
- ``register``: ``name``, ``path``: the table at ``path`` in the catalog as ``name`` (the
  procedures that take a table name)
- ``lock``: ``path`` (a table), ``call`` and ``options`` (``hoodie.write.lock.*``): Hudi's own
  ``FileSystemBasedLockProvider`` on the table, one per table kept between requests;
  ``call`` is ``try`` (its ``tryLock``) -> ``{"held": bool}``, ``unlock``, or ``create``: the
  last step of the create its ``tryLock`` makes once it found no lock file (Hadoop's local
  ``create`` without overwrite checks that the file does not exist, then opens it with
  ``java.io.FileOutputStream``, truncating), what it meets when another writer's lock appears
  between that check and the open -> ``{"created": bool, "error": str}``
- ``bench_write``: as ``write``, timed inside this process around reading the Parquet file
  (lazily, as a DataFrame) and the write -> ``{"seconds": float, "jobs": [...]}``
- ``bench_sql``: ``statement``, timed (a CALL procedure: compaction) -> ``{"seconds", "jobs"}``
- ``bench_scan``: ``path``: every column of a snapshot read into Spark's ``noop`` sink, timed
  -> ``{"seconds", "jobs", "count"}`` (the count read apart, untimed)
- ``stop``

The ``bench_*`` answers' ``jobs`` are the Spark jobs that ran inside the timed region, each
``[description, start, end]`` (seconds, the same clock as the region's ``start`` and ``end``
in the answer), from Spark's own status store: where the seconds went.

A JSON object of Spark settings after the work directory overrides the session's defaults
(the benchmark's ``local[*]`` master, shuffle partitions and driver memory).

An answer is ``{"ok": true, ...}`` or ``{"ok": false, "error": <the Java or Python message>}``.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import sys
import traceback
from typing import Any


def _protocol_stream() -> Any:
    """The answers' stream: the original stdout, with fd 1 sent to stderr so that nothing the
    JVM or Spark prints can mix into the answers."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answers


def _session(jar: str, work: str, overrides: dict[str, str] | None = None) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hudi-judge")
        .config("spark.jars", jar)
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
        .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.hudi.catalog.HoodieCatalog"
        )
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.warehouse.dir", os.path.join(work, "warehouse"))
        .config("spark.local.dir", os.path.join(work, "local"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work}")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in (overrides or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _plain(value: Any) -> Any:
    if isinstance(value, (datetime.date, datetime.datetime, decimal.Decimal)):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return _plain(value.asDict(recursive=True))
    return value


def _rows(frame: Any) -> list[dict[str, Any]]:
    return [_plain(row.asDict(recursive=True)) for row in frame.collect()]


def _read(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    options = dict(request.get("options") or {})
    query = request.get("query", "snapshot")
    if query == "read_optimized":
        options["hoodie.datasource.query.type"] = "read_optimized"
    elif query == "incremental":
        options["hoodie.datasource.query.type"] = "incremental"
        options["hoodie.datasource.read.begin.instanttime"] = request["begin"]
        if request.get("end"):
            options["hoodie.datasource.read.end.instanttime"] = request["end"]
    elif query == "time_travel":
        options["as.of.instant"] = request["as_of"]
    elif query != "snapshot":
        raise ValueError(f"unknown query {query!r}")
    frame = spark.read.format("hudi").options(**options).load(request["path"])
    return {"rows": _rows(frame)}


def _reads(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    reads = request["reads"]
    with ThreadPoolExecutor(max_workers=max(1, len(reads))) as pool:
        answers = list(pool.map(lambda read: _read(spark, read)["rows"], reads))
    return {"answers": answers}


def _write(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    frame = spark.read.parquet(request["parquet"])
    writer = frame.write.format("hudi").options(**request.get("options", {}))
    writer.mode(request.get("mode", "append")).save(request["path"])
    return {}


_PROVIDERS: dict[str, Any] = {}


def _lock_provider(spark: Any, path: str, options: dict[str, str]) -> Any:
    """Hudi's FileSystemBasedLockProvider on the table at ``path`` (0.15 takes a Hadoop
    configuration, 1.x a storage configuration wrapping one)."""
    if path in _PROVIDERS:
        return _PROVIDERS[path]
    jvm = spark._jvm
    props = jvm.org.apache.hudi.common.config.TypedProperties()
    settings = {"hoodie.base.path": path, "hoodie.write.lock.filesystem.expire": "0", **options}
    for key, value in settings.items():
        props.setProperty(key, value)
    lock_conf = jvm.org.apache.hudi.common.config.LockConfiguration(props)
    hadoop = spark._jsc.hadoopConfiguration()
    provider_class = jvm.org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider
    try:
        storage_conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(hadoop)
    except TypeError:  # no such class: Hudi 0.x
        storage_conf = hadoop
    _PROVIDERS[path] = provider_class(lock_conf, storage_conf)
    return _PROVIDERS[path]


def _lock(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    path, call = request["path"], request["call"]
    provider = _lock_provider(spark, path, dict(request.get("options") or {}))
    if call == "try":
        unit = spark._jvm.java.util.concurrent.TimeUnit.MILLISECONDS
        return {"held": bool(provider.tryLock(0, unit))}
    if call == "unlock":
        provider.unlock()
        return {}
    if call == "create":
        jvm = spark._jvm
        local = jvm.org.apache.hadoop.fs.Path(str(provider.getLock())).toUri().getPath()
        try:
            jvm.java.io.FileOutputStream(jvm.java.io.File(local), False).close()
        except Exception as exc:  # what Hudi's tryLock catches and answers false to
            return {"created": False, "error": _message(exc)}
        return {"created": True, "error": ""}
    raise ValueError(f"unknown lock call {call!r}")


def _answer(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "write":
        return _write(spark, request)
    if op == "read":
        return _read(spark, request)
    if op == "reads":
        return _reads(spark, request)
    if op == "sql":
        return {"rows": _rows(spark.sql(request["statement"]))}
    if op == "register":
        name = request["name"]
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{request['path']}'")
        return {}
    if op == "lock":
        return _lock(spark, request)
    if op in _BENCH:
        return _timed(spark, _BENCH[op], request)
    if op == "version":
        return {"spark": spark.version}
    raise ValueError(f"unknown op {op!r}")


# ---- the benchmark's timed requests --------------------------------------------------------


def _bench_write(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    _write(spark, request)
    return {}


def _bench_sql(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    spark.sql(request["statement"]).collect()
    return {}


def _bench_scan(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    frame = spark.read.format("hudi").options(**(request.get("options") or {}))
    frame.load(request["path"]).write.format("noop").mode("overwrite").save()
    return {}


_BENCH = {"bench_write": _bench_write, "bench_sql": _bench_sql, "bench_scan": _bench_scan}


def _timed(spark: Any, run: Any, request: dict[str, Any]) -> dict[str, Any]:
    """``run`` timed (wall clock, so that the jobs' times compare), then the jobs that ran in
    between; a scan's row count after the timed region."""
    import time

    start = time.time()
    run(spark, request)
    end = time.time()
    answer = {"seconds": end - start, "start": start, "end": end, "jobs": _jobs(spark, start)}
    if request["op"] == "bench_scan":
        answer["count"] = spark.read.format("hudi").load(request["path"]).count()
    return answer


def _jobs(spark: Any, since: float) -> list[list[Any]]:
    """The jobs submitted at or after ``since`` (epoch seconds) from Spark's status store, each
    ``[description or name, start, end]``. The store is fed by the listener bus, which runs
    behind the driver: wait (a little) until every such job shows its completion."""
    import time

    store = spark.sparkContext._jsc.sc().statusStore()
    found: list[list[Any]] = []
    for _ in range(50):
        jobs = store.jobsList(None)
        found, done = [], True
        for i in range(jobs.size()):
            job = jobs.apply(i)
            submitted = job.submissionTime()
            if not submitted.isDefined() or submitted.get().getTime() / 1000 < since - 0.001:
                continue
            completed = job.completionTime()
            done = done and completed.isDefined()
            end = completed.get().getTime() / 1000 if completed.isDefined() else time.time()
            description = job.description()
            named = description.isDefined() and description.get()
            label = description.get() if named else job.name()
            found.append([str(label), submitted.get().getTime() / 1000, end])
        if done:
            break
        time.sleep(0.02)
    return sorted(found, key=lambda j: j[1])


def _message(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    if java is not None:
        # the innermost cause says what Hudi refused; the outer one where
        causes, cause = [], java
        while cause is not None and len(causes) < 8:
            causes.append(str(cause.toString()))
            cause = cause.getCause()
        return " <- ".join(reversed(causes))
    return f"{type(exc).__name__}: {exc}"


def main() -> int:
    jar, work = sys.argv[1], sys.argv[2]
    overrides = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
    answers = _protocol_stream()
    spark = _session(jar, work, overrides)
    answers.write(json.dumps({"ok": True, "spark": spark.version}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("op") == "stop":
            break
        try:
            answer = {"ok": True, **_answer(spark, request)}
        except Exception as exc:  # every failure is an answer: the client raises it
            traceback.print_exc()
            answer = {"ok": False, "error": _message(exc)}
        answers.write(json.dumps(answer, default=str) + "\n")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
