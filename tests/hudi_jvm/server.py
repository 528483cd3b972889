"""Apache Hudi's Spark datasource in a process of its own: one JSON request a line on stdin, one
JSON answer a line on the protocol stream.

Runs with a release's own interpreter (pyspark 3.5 and the Hudi bundle, tests/hudi_jvm/
provision.py); imports nothing from the project. Requests (``op`` and its fields):

- ``write``: ``path``, ``parquet`` (a Parquet file of the rows), ``options`` (hoodie.*),
  ``mode`` (append | overwrite) -> ``{}``
- ``reads``: ``reads``, a list of reads, each ``path``, ``query`` (snapshot | read_optimized |
  incremental | time_travel), ``begin``/``end`` (incremental), ``as_of`` (time travel),
  ``options``; run at once on threads of the session (tiny reads wait on Spark's scheduling more
  than they compute) -> ``{"answers": [[rows], ...]}``
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
- ``validate_metadata``: ``path`` -> ``{"passed": bool, "checked": [...], "compared": {...},
  "failures": [...]}``:
  the checks of Hudi's ``HoodieMetadataTableValidator`` (hudi-utilities, whose 1.1.1 bundle
  Maven Central does not serve as the tests reach it) made with the Spark bundle's classes: the
  metadata table's partitions, latest file slices, latest base files and file groups against the
  storage listing's; its column stats and bloom filters against the files' own; its record index
  count and content against a snapshot read
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


def _read(spark: Any, request: dict[str, Any]) -> list[dict[str, Any]]:
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
    return _rows(frame)


def _reads(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    reads = request["reads"]
    with ThreadPoolExecutor(max_workers=max(1, len(reads))) as pool:
        answers = list(pool.map(lambda read: _read(spark, read), reads))
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


# What Apache Hudi's HoodieMetadataTableValidator (hudi-utilities) compares, done here with the
# classes of the Spark bundle: the utilities bundle of 1.1.1 is not on Maven Central as the tests
# reach it. Each check sets the metadata table's answer beside the one Hudi builds without it
# (storage listing, Parquet footers, a snapshot read of the table) and names what differs.
_MDT_CHECKS = ("partitions", "latest file slices", "latest base files", "all file groups")


def _metadata_views(spark: Any, path: str) -> tuple[Any, dict[bool, Any], dict[bool, Any]]:
    """The table's meta client, and per "metadata table on?" its HoodieTableMetadata and
    HoodieTableFileSystemView (on the completed and compaction instants, as Hudi's own view)."""
    jvm = spark._jvm
    hudi = jvm.org.apache.hudi
    conf = hudi.hadoop.fs.HadoopFSUtils.getStorageConfWithCopy(spark._jsc.hadoopConfiguration())
    builder = hudi.common.table.HoodieTableMetaClient.builder().setConf(conf).setBasePath(path)
    meta_client = builder.setLoadActiveTimelineOnLoad(True).build()
    engine = hudi.client.common.HoodieSparkEngineContext(spark._jsc)
    timeline = meta_client.getActiveTimeline().filterCompletedAndCompactionInstants()
    metadata, views = {}, {}
    for on in (True, False):
        config = hudi.common.config.HoodieMetadataConfig.newBuilder().enable(on)
        config = config.withMetadataIndexBloomFilter(on).withMetadataIndexColumnStats(on).build()
        factory = meta_client.getTableFormat().getMetadataFactory()
        metadata[on] = factory.create(engine, meta_client.getStorage(), config, path)
        views[on] = hudi.common.table.view.HoodieTableFileSystemView(
            metadata[on], meta_client, timeline
        )
    return meta_client, metadata, views


def _slice_facts(file_slice: Any) -> str:
    """What the validator compares of a file slice: file group, base instant, base file name
    and size, the log files' names."""
    base = file_slice.getBaseFile()
    base_facts = (
        f"{base.get().getFileName()}:{base.get().getFileSize()}" if base.isPresent() else "-"
    )
    logs = sorted(str(log.getFileName()) for log in file_slice.getLogFiles().toArray())
    return (
        f"{file_slice.getPartitionPath()}/{file_slice.getFileId()}@"
        f"{file_slice.getBaseInstantTime()} base={base_facts} logs={logs}"
    )


def _listings(view: Any, partition: str) -> dict[str, list[str]]:
    """A file system view's answers for ``partition``, sorted as the validator sorts them."""
    groups = view.getAllFileGroups(partition).toArray()
    return {
        "latest file slices": sorted(
            _slice_facts(s) for s in view.getLatestFileSlices(partition).toArray()
        ),
        "latest base files": sorted(
            f"{b.getFileName()}:{b.getFileSize()}"
            for b in view.getLatestBaseFiles(partition).toArray()
        ),
        "all file groups": sorted(
            _slice_facts(s) for g in groups for s in g.getAllFileSlices().toArray()
        ),
    }


def _committed_partitions(spark: Any, meta_client: Any, on_storage: list[str]) -> list[str]:
    """The partitions on storage a completed (or archived) commit created, as the validator
    takes them: a partition whose metadata file names an instant still inflight is left out."""
    hudi = spark._jvm.org.apache.hudi
    completed = meta_client.getCommitsTimeline().filterCompletedInstants()
    kept = []
    for partition in on_storage:
        where = hudi.common.fs.FSUtils.constructAbsolutePath(meta_client.getBasePath(), partition)
        created = hudi.common.model.HoodiePartitionMetadata(
            meta_client.getStorage(), where
        ).readPartitionCreatedCommitTime()
        if created.isPresent() and completed.containsOrBeforeTimelineStarts(created.get()):
            kept.append(partition)
    return kept


def _differences(label: str, partition: str, mdt: list[str], fs: list[str]) -> list[str]:
    if mdt == fs:
        return []
    return [
        f"{label} of partition {partition!r} differ: from the metadata table {mdt}; "
        f"from storage {fs}"
    ]


def _column_names(spark: Any, meta_client: Any) -> list[str]:
    """The columns whose stats are checked: every column of the table's schema."""
    resolver = spark._jvm.org.apache.hudi.common.table.TableSchemaResolver(meta_client)
    return [str(f.name()) for f in resolver.getTableAvroSchema().getFields().toArray()]


def _stats_facts(stats: Any, file_name: str) -> str:
    return (
        f"{file_name}/{stats.getColumnName()}: min={stats.getMinValue()} "
        f"max={stats.getMaxValue()} nulls={stats.getNullCount()} values={stats.getValueCount()}"
    )


def _column_stats_from_metadata(
    spark: Any, metadata: Any, partition: str, files: list[str], columns: list[str]
) -> list[str]:
    """Per file and column, the range the metadata table's column_stats partition holds."""
    hudi = spark._jvm.org.apache.hudi
    pairs = [hudi.common.util.collection.Pair.of(partition, name) for name in files]
    out = []
    for column in columns:
        found = metadata.getColumnStats(pairs, column)
        for entry in found.entrySet().toArray():
            stats = hudi.stats.HoodieColumnRangeMetadata.fromColumnStats(entry.getValue())
            if _empty(stats):
                continue
            out.append(_stats_facts(stats, str(entry.getKey().getValue())))
    return sorted(out)


def _empty(stats: Any) -> bool:
    """A range of no value: what Hudi's writer records for a log file of delete blocks only
    (HoodieAppendHandle: an empty range per indexed column), where Hudi's validator reading the
    file finds no record and so no range (HoodieTableMetadataUtil.getLogFileColumnRangeMetadata).
    Hudi's own tables fail that comparison (docs/format-notes.md), so an empty range is left
    out of it; it says nothing of any value, and a file with values still needs its range."""
    return (
        stats.getValueCount() == 0 and stats.getMinValue() is None and stats.getMaxValue() is None
    )


def _column_stats_from_files(
    spark: Any, meta_client: Any, partition: str, files: list[str], columns: list[str]
) -> list[str]:
    """Per file and column, the range Hudi reads from the file itself: a Parquet base file's
    footer, a log file's records."""
    hudi = spark._jvm.org.apache.hudi
    storage = meta_client.getStorage()
    where = hudi.common.fs.FSUtils.constructAbsolutePath(meta_client.getBasePath(), partition)
    # the version of the column_stats index (its value encoding), as the metadata table has it
    version = hudi.metadata.HoodieTableMetadataUtil.existingIndexVersionOrDefault(
        hudi.metadata.MetadataPartitionType.COLUMN_STATS.getPartitionPath(), meta_client
    )
    parquet = hudi.io.storage.HoodieIOFactory.getIOFactory(storage).getFileFormatUtils(
        hudi.common.model.HoodieFileFormat.PARQUET
    )
    schema = hudi.common.table.TableSchemaResolver(meta_client).getTableAvroSchema()
    out = []
    for name in files:
        file_path = hudi.storage.StoragePath(where, name)
        if name.endswith(".parquet"):
            ranges = parquet.readColumnStatsFromMetadata(storage, file_path, columns, version)
        else:
            ranges = hudi.metadata.HoodieTableMetadataUtil.getLogFileColumnRangeMetadata(
                file_path.toString(), partition, meta_client, columns,
                hudi.common.util.Option.of(schema), 1024 * 1024,
            )  # fmt: skip
        out.extend(_stats_facts(r, name) for r in ranges.toArray())
    return sorted(out)


def _indexed_columns(
    spark: Any, meta_client: Any, metadata: Any, partition: str, files: list[str]
) -> list[str]:
    """The schema's columns the column_stats partition holds a range of for any of ``files``:
    those the writer indexes (Hudi's validator checks its meta columns only; every indexed
    column is checked here)."""
    hudi = spark._jvm.org.apache.hudi
    pairs = [hudi.common.util.collection.Pair.of(partition, name) for name in files]
    return [
        c
        for c in _column_names(spark, meta_client)
        if not metadata.getColumnStats(pairs, c).isEmpty()
    ]


def _bloom_filters_from_metadata(
    spark: Any, metadata: Any, partition: str, files: list[str]
) -> list[str]:
    hudi = spark._jvm.org.apache.hudi
    pairs = [hudi.common.util.collection.Pair.of(partition, name) for name in files]
    found = metadata.getBloomFilters(pairs).entrySet().toArray()
    return sorted(f"{e.getKey().getValue()}:{e.getValue().serializeToString()}" for e in found)


def _bloom_filters_from_files(
    spark: Any, meta_client: Any, partition: str, files: list[str]
) -> list[str]:
    """The bloom filter each base file's footer holds, read by Hudi's file reader."""
    jvm = spark._jvm
    hudi = jvm.org.apache.hudi
    storage = meta_client.getStorage()
    where = hudi.common.fs.FSUtils.constructAbsolutePath(meta_client.getBasePath(), partition)
    avro = getattr(hudi.common.model, "HoodieRecord$HoodieRecordType").AVRO
    readers = hudi.io.storage.HoodieSparkIOFactory.getHoodieSparkIOFactory(storage)
    out = []
    for name in files:
        reader = readers.getReaderFactory(avro).getFileReader(
            hudi.common.config.HoodieConfig(), hudi.storage.StoragePath(where, name)
        )
        try:
            bloom = reader.readBloomFilter()
        finally:
            reader.close()
        if bloom is not None:
            out.append(f"{name}:{bloom.serializeToString()}")
    return sorted(out)


def _latest_files(view: Any, partition: str, *, logs: bool) -> list[str]:
    """The names of the latest file slices' base files (and log files) in ``partition``."""
    names = []
    for file_slice in view.getLatestFileSlices(partition).toArray():
        base = file_slice.getBaseFile()
        if base.isPresent():
            names.append(str(base.get().getFileName()))
        if logs:
            names.extend(str(log.getFileName()) for log in file_slice.getLogFiles().toArray())
    return names


def _partition_checks(
    spark: Any,
    meta_client: Any,
    metadata: dict[bool, Any],
    views: dict[bool, Any],
    partition: str,
    compared: dict[str, int],
) -> list[str]:
    """Files, column stats and bloom filters of one partition: the metadata table's answer
    against the storage's (``compared`` counts the storage's items per check)."""
    hudi = spark._jvm.org.apache.hudi
    config = meta_client.getTableConfig()
    types = hudi.metadata.MetadataPartitionType
    failures = []
    on, off = _listings(views[True], partition), _listings(views[False], partition)
    for label in on:
        failures += _differences(label, partition, on[label], off[label])
        compared[label] = compared.get(label, 0) + len(off[label])
    if config.isMetadataPartitionAvailable(types.COLUMN_STATS):
        files = _latest_files(views[False], partition, logs=True)
        columns = _indexed_columns(spark, meta_client, metadata[True], partition, files)
        mdt = _column_stats_from_metadata(spark, metadata[True], partition, files, columns)
        fs = _column_stats_from_files(spark, meta_client, partition, files, columns)
        failures += _differences(f"column stats of {columns}", partition, mdt, fs)
        compared["column stats"] = compared.get("column stats", 0) + len(fs)
    if config.isMetadataPartitionAvailable(types.BLOOM_FILTERS):
        files = _latest_files(views[False], partition, logs=False)
        mdt = _bloom_filters_from_metadata(spark, metadata[True], partition, files)
        fs = _bloom_filters_from_files(spark, meta_client, partition, files)
        failures += _differences("bloom filters", partition, mdt, fs)
        compared["bloom filters"] = compared.get("bloom filters", 0) + len(fs)
    return failures


def _latest_completed(meta_client: Any) -> str:
    timeline = meta_client.getActiveTimeline().getCommitsAndCompactionTimeline()
    return str(timeline.filterCompletedInstants().lastInstant().get().requestedTime())


def _record_index_check(
    spark: Any, meta_client: Any, path: str, compared: dict[str, int]
) -> list[str]:
    """The record index against a snapshot read of the table as of its latest completed commit:
    as many entries as keys, and each key at the partition and file group that holds it."""
    hudi = spark._jvm.org.apache.hudi
    latest = _latest_completed(meta_client)
    table = spark.read.format("hudi").option("as.of.instant", latest).load(path)
    fields = ("_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name")
    rows = table.select(*fields).collect()
    file_id = hudi.common.fs.FSUtils.getFileId
    on_table = {r[0]: (r[1], str(file_id(r[2]))) for r in rows}
    mdt = spark.read.format("hudi").option("as.of.instant", latest)
    entries = mdt.load(f"{path.rstrip('/')}/.hoodie/metadata").filter("type = 5")
    info = "recordIndexMetadata"
    found = entries.select(
        "key", *(f"{info}.{f}" for f in ("partitionName", "fileIdEncoding", "fileIdHighBits",
                                          "fileIdLowBits", "fileIndex", "fileId", "instantTime"))
    ).collect()  # fmt: skip
    locate = hudi.metadata.HoodieTableMetadataUtil.getLocationFromRecordIndexInfo
    in_index = {}
    for r in found:
        where = locate(r[1], r[2], r[3], r[4], r[5], r[6], r[7])
        in_index[r[0]] = (str(where.getPartitionPath()), str(where.getFileId()))
    compared["record index count and content"] = len(rows)
    failures = []
    if len(found) != len(rows):
        failures.append(
            f"record index count: {len(found)} entries in the record index, {len(rows)} keys "
            f"in the table as of {latest}"
        )
    wrong = {
        k: (on_table.get(k), in_index.get(k))
        for k in sorted(set(on_table) | set(in_index))
        if on_table.get(k) != in_index.get(k)
    }
    if wrong:
        sample = "; ".join(
            f"{k}: table {t}, record index {i}" for k, (t, i) in list(wrong.items())[:20]
        )
        failures.append(f"record index content: {len(wrong)} keys at another location: {sample}")
    return failures


def _validate_metadata(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The checks of Hudi's HoodieMetadataTableValidator on the table at ``path``: partitions,
    latest file slices, latest base files, all file groups, column stats and bloom filters
    where the metadata table has those partitions, record index count and content where it
    has a record index. ``{"passed": bool, "checked": [...], "compared": {check: items},
    "failures": [...]}``: the items are the storage's (slices, files, ranges, keys), a failure
    names what differs (or gives Hudi's exception chain where a check could not run)."""
    path = request["path"]
    meta_client, metadata, views = _metadata_views(spark, path)
    hudi = spark._jvm.org.apache.hudi
    engine = hudi.client.common.HoodieSparkEngineContext(spark._jsc)
    listed = hudi.common.fs.FSUtils.getAllPartitionPaths
    in_mdt = sorted(str(p) for p in listed(engine, meta_client, True).toArray())
    on_storage = sorted(str(p) for p in listed(engine, meta_client, False).toArray())
    failures = _differences(
        "partitions", "(all)", in_mdt, _committed_partitions(spark, meta_client, on_storage)
    )
    checked = [*_MDT_CHECKS]
    compared: dict[str, int] = {}
    config = meta_client.getTableConfig()
    types = hudi.metadata.MetadataPartitionType
    for label, kind in (
        ("column stats", types.COLUMN_STATS),
        ("bloom filters", types.BLOOM_FILTERS),
    ):
        if config.isMetadataPartitionAvailable(kind):
            checked.append(label)
    try:
        for partition in in_mdt:
            failures += _partition_checks(spark, meta_client, metadata, views, partition, compared)
        if config.isMetadataPartitionAvailable(types.RECORD_INDEX):
            checked.append("record index count and content")
            failures += _record_index_check(spark, meta_client, path, compared)
    except Exception as exc:  # a check Hudi could not run is a failure, its chain the reason
        failures.append(f"a check could not run: {_message(exc)}")
    finally:
        for on in (True, False):
            views[on].close()
            metadata[on].close()
    return {"passed": not failures, "checked": checked, "compared": compared, "failures": failures}


def _answer(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "write":
        return _write(spark, request)
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
    if op == "validate_metadata":
        return _validate_metadata(spark, request)
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
