"""Tables on S3 (the local server): every operation and table service, read back by the engine's
readers (Spark, through the pyarrow path in tasks: no S3A connector here) and by hudi-rs through
its own S3 support, with the same endpoint."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine import HudiTable, read_hudi, spark_table, write_hudi
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.spark.reader import spark_opens
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options
from tests.s3.server import S3Server

pytestmark = [pytest.mark.spark, pytest.mark.interop]

Row = tuple[str, str, int, str]
State = dict[str, tuple[str, int, str]]


def _apply(state: State, rows: list[Row], *, delete: bool = False) -> State:
    out = dict(state)
    for rid, dt, ts, v in rows:
        if delete:
            out.pop(rid, None)
        else:
            out[rid] = (dt, ts, v)
    return out


def _as_state(rows: list[dict[str, Any]], source: str) -> State:
    out: State = {}
    for r in rows:
        assert r["id"] not in out, f"{source}: duplicate key {r['id']}"
        out[r["id"]] = (r["dt"], r["ts"], r["v"])
    return out


def assert_reads(spark: Any, path: str, expected: State, context: str) -> None:
    """hudi-rs, read_hudi (Spark) and the Arrow reader return exactly ``expected``."""
    assert _as_state(hudi_rs_rows(path), "hudi-rs") == expected, f"hudi-rs after {context}"
    ours = [r.asDict() for r in read_hudi(spark, path).collect()]
    assert _as_state(ours, "read_hudi") == expected, f"read_hudi after {context}"
    arrow = read_table(path).to_pylist()
    assert _as_state(arrow, "arrow") == expected, f"arrow reader after {context}"


def _write(spark: Any, path: str, rows: list[Row], opts: dict[str, Any], **extra: str) -> str:
    return write_hudi(spark.createDataFrame(rows, SCHEMA), path, {**opts, **extra}).instant_time


def _metadata_schemes(storage: Storage) -> set[bytes]:
    """The URI schemes the table's clean and rollback plans and metadata name files with."""
    found: set[bytes] = set()
    for entry in storage.list_dir(".hoodie"):
        if "clean" in entry.name or "rollback" in entry.name:
            data = storage.read_bytes(f".hoodie/{entry.name}")
            found |= {scheme for scheme in (b"s3://", b"s3a://") if scheme in data}
    return found


def test_spark_cannot_open_s3_here_so_tasks_read_through_pyarrow(spark, s3: S3Server) -> None:  # type: ignore[no-untyped-def]
    storage = Storage(s3.table_uri("probe"))
    assert spark_opens(spark, storage) is False  # no Hadoop S3A connector in a pip install
    assert spark_opens(spark, Storage("/tmp")) is True


def test_cow_every_operation_and_service_on_s3(spark, s3: S3Server) -> None:  # type: ignore[no-untyped-def]
    path = s3.table_uri("cow", "s3")
    other = "s3a://" + path.partition("://")[2]  # the same table, the other spelling
    opts = write_options(
        "orders",
        {
            "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
            "hoodie.cleaner.commits.retained": "1",
            "hoodie.keep.min.commits": "2",
            "hoodie.keep.max.commits": "3",
        },
    )
    first = [(f"k{i}", f"2024-01-0{i % 2 + 1}", 1, f"a{i}") for i in range(6)]
    _write(spark, path, first, opts)
    state = _apply({}, first)
    assert_reads(spark, path, state, "insert")

    upsert = [("k0", "2024-01-01", 2, "b0"), ("k9", "2024-01-02", 2, "b9")]
    _write(spark, other, upsert, opts)
    state = _apply(state, upsert)
    assert_reads(spark, path, state, "upsert through s3a://")

    deletes = [("k1", "2024-01-02", 3, "")]
    _write(spark, path, deletes, opts, **{"hoodie.datasource.write.operation": "delete"})
    state = _apply(state, deletes, delete=True)
    assert_reads(spark, other, state, "delete")

    overwrite = [("k2", "2024-01-01", 4, "c2"), ("k8", "2024-01-01", 4, "c8")]
    _write(
        spark,
        path,
        overwrite,
        opts,
        **{"hoodie.datasource.write.operation": "insert_overwrite"},
    )
    state = {k: v for k, v in state.items() if v[0] != "2024-01-01"}
    state = _apply(state, overwrite)
    assert_reads(spark, path, state, "insert overwrite")

    last = _write(spark, path, [("k3", "2024-01-02", 5, "d3")], opts)
    HudiTable(path).rollback(last)
    assert_reads(spark, path, state, "rollback of the last commit")

    for i in range(3):  # more commits: cleaning and archival become due
        rows = [(f"k{i}", "2024-01-01", 10 + i, f"e{i}")] if i else [("k0", "2024-01-01", 10, "e0")]
        _write(spark, other if i % 2 else path, rows, opts)
        state = _apply(state, rows)
    assert_reads(spark, path, state, "cleaning and archival")
    storage = Storage(path)
    timeline = Timeline.load(storage)
    assert "clean" in {i.action.value for i in timeline.instants}
    assert storage.list_dir(".hoodie/archived"), "nothing archived"
    # one spelling in the metadata, whichever the writes used
    assert _metadata_schemes(storage) == {b"s3a://"}
    assert not storage.list_dir(".hoodie/.temp"), "markers left behind"


def test_mor_log_appends_compaction_and_clean_on_s3(spark, s3: S3Server) -> None:  # type: ignore[no-untyped-def]
    path = s3.table_uri("mor", "s3a")
    opts = write_options(
        "events",
        {
            "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.compact.inline": "false",
            "hoodie.cleaner.commits.retained": "1",
        },
    )
    first = [(f"k{i}", f"2024-01-0{i % 2 + 1}", 1, f"a{i}") for i in range(6)]
    _write(spark, path, first, opts)
    state = _apply({}, first)
    updates = [("k0", "2024-01-01", 2, "b0"), ("k3", "2024-01-02", 2, "b3")]
    _write(spark, path, updates, opts)
    state = _apply(state, updates)
    deletes = [("k4", "2024-01-01", 3, "")]
    _write(spark, path, deletes, opts, **{"hoodie.datasource.write.operation": "delete"})
    state = _apply(state, deletes, delete=True)
    storage = Storage(path)
    logs = [e.name for p in ("2024-01-01", "2024-01-02") for e in storage.list_dir(p)]
    assert any(".log." in n for n in logs), logs
    assert_reads(spark, path, state, "log appends")

    table = spark_table(path, spark)
    assert table.compact(opts) is not None
    assert_reads(spark, path, state, "compaction")
    ro = read_hudi(spark, path, {"hoodie.datasource.query.type": "read_optimized"}).collect()
    assert _as_state([r.asDict() for r in ro], "read optimized") == state
    more = [("k5", "2024-01-02", 4, "c5")]
    _write(spark, path, more, opts)
    state = _apply(state, more)
    table.clean(opts)
    assert_reads(spark, path, state, "clean after compaction")
    meta = json.loads(
        storage.read_bytes(
            next(
                f".hoodie/{e.name}"
                for e in storage.list_dir(".hoodie")
                if e.name.endswith(".commit")
            )
        )
    )
    for stats in meta["partitionToWriteStats"].values():
        assert all("://" not in s["path"] for s in stats)  # write stats stay relative
