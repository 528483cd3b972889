"""Change data capture on merge-on-read tables (table version 6; versions 8 and 9 run in the
property test), as Hudi 0.14's Spark writer and CDC reader do it: inserts into a small file
group rewrite its base file with a ``.cdc`` file (decoded independently here), updates and
deletes go to log files without one and are read against the file slice before them, compaction
adds no change, insert overwrite deletes the replaced group's merged rows; hudi-rs lists the
``.cdc`` files among a slice's log files and reads the snapshot rows all the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import engine.spark
from engine import SparkRunner, config, read_hudi, write_hudi
from engine.errors import ConfigError, QueryError
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.services.compaction import execute_compaction, schedule_compaction
from tests.hudi_rs import hudi_rs_rows, hudi_rs_table
from tests.integration.metafolder import instant_metadata, write_stats
from tests.integration.test_cdc import CDC_QUERY, cdc_files, changes, decode_cdc_file, opts
from tests.keyed_table import SCHEMA

# the subject is the change records of merge-on-read writes, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.interop, pytest.mark.driver_writes]

MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def mor_opts(mode: str, operation: str = "upsert", **extra: str) -> dict[str, Any]:
    return opts(mode, operation, **MOR, **extra)


def write(
    spark: Any, path: Path, rows: list[tuple[Any, ...]], mode: str, op: str = "upsert"
) -> str:
    df = spark.createDataFrame(rows, SCHEMA)
    return write_hudi(df, str(path), mor_opts(mode, op)).instant_time


def compact(path: Path) -> str:
    storage = Storage(str(path))
    instant = schedule_compaction(storage, config.parse_options({}), force=True)
    assert instant is not None
    execute_compaction(storage, instant, runner=SparkRunner().compact)
    return instant


def query(path: Path, begin: str, end: str | None = None) -> list[tuple[Any, ...]]:
    options = {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": begin}
    if end is not None:
        options["hoodie.datasource.read.end.instanttime"] = end
    return changes(read_table(str(path), options).to_pylist())


def snapshot(path: Path) -> list[tuple[str, str]]:
    return sorted((r["id"], r["v"]) for r in hudi_rs_rows(str(path)))


def same_reads(path: Path, **query: Any) -> bool:
    """hudi-rs and this engine's reader return the same rows for a read-optimized
    (``read_optimized=True``) or incremental (``incremental=(begin, end)``) query."""
    options: dict[str, str] = {}
    if query.get("read_optimized"):
        options = {"hoodie.datasource.query.type": "read_optimized"}
    if "incremental" in query:
        begin, end = query["incremental"]
        options = {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": begin,
            "hoodie.datasource.read.end.instanttime": end,
        }

    def rows(found: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((r["id"], r["v"], r["_hoodie_commit_time"]) for r in found)

    ours = rows(read_table(str(path), options).to_pylist())
    return bool(ours) and rows(hudi_rs_rows(str(path), **query)) == ours


def check_cdc_file(f: Path, t: str, mode: str) -> None:
    """One CDC_DATA_BLOCK of the instant, records in the mode's shape: 'u' k1 and 'i' k3."""
    ((block_type, header, records),) = decode_cdc_file(f.read_bytes())
    assert block_type == 6 and header[0] == t  # CDC_DATA_BLOCK, INSTANT_TIME
    names = [fld["name"] for fld in json.loads(header[2])["fields"]]
    expected = {
        "OP_KEY_ONLY": ["op", "record_key"],
        "DATA_BEFORE": ["op", "record_key", "before"],
        "DATA_BEFORE_AFTER": ["op", "ts_ms", "before", "after"],
    }[mode]
    assert names == expected
    ops = sorted(
        (r["op"], r.get("record_key") or (r.get("after") or r.get("before"))["id"]) for r in records
    )
    assert ops == [("i", "k3"), ("u", "k1")]


# size: one sequence of writes, each followed by what it must have written and read back
@pytest.mark.parametrize("mode", ["OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER"])
def test_mor_cdc_files_log_file_changes_compaction_and_overwrite(spark, tmp_path, mode) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    t1 = write(spark, path, [("k1", "p", 1, "a"), ("k2", "p", 1, "b")], mode)
    assert cdc_files(path) == []  # a new file group: its base file is the change
    t2 = write(spark, path, [("k1", "p", 2, "a2"), ("k3", "p", 2, "c")], mode)
    # an insert into the small file group rewrites it (merge handle): a .cdc file, in cdcStats
    ((f,),) = [cdc_files(path)]
    (stat,) = write_stats(instant_metadata(path, t2, "deltacommit"))
    assert f.name.startswith(f".{stat['fileId']}_{t2}.log.1_") and f.name.endswith(".cdc")
    assert stat["path"].endswith(f"_{t2}.parquet")
    assert stat["cdcStats"] == {f"p/{f.name}": f.stat().st_size}
    check_cdc_file(f, t2, mode)

    t3 = write(spark, path, [("k1", "p", 3, "a3")], mode)
    t4 = write(spark, path, [("k1", "p", 4, "a"), ("k2", "p", 4, "b")], mode, "delete")
    # updates and deletes are log appends: no .cdc file, a log file stat without cdcStats
    for t in (t3, t4):
        (log_stat,) = write_stats(instant_metadata(path, t, "deltacommit"))
        assert ".log." in log_stat["path"] and log_stat["cdcStats"] is None
    assert cdc_files(path) == [f]
    # hudi-rs takes the .cdc file for a log file of the slice, and reads the same rows
    listed = {
        log
        for file_slice in hudi_rs_table(path).get_file_slices()
        for log in file_slice.log_files_relative_paths()
    }
    assert f"p/{f.name}" in listed
    assert snapshot(path) == [("k3", "c")]
    assert same_reads(path, read_optimized=True)
    assert same_reads(path, incremental=(t1, t4)) and same_reads(path, incremental=(t2, t3))

    c = compact(path)
    assert cdc_files(path) == [f]  # the SIMPLE index: compaction writes no .cdc file
    assert [s["cdcStats"] for s in write_stats(instant_metadata(path, c, "commit"))] == [None]
    t6 = write(spark, path, [("k4", "p", 6, "d")], mode, "insert_overwrite")

    expected = [
        ("d", t4, ("k1", "p", 3, "a3"), None),  # its before image: the earlier log file's
        ("d", t4, ("k2", "p", 1, "b"), None),
        ("d", t6, ("k3", "p", 2, "c"), None),
        ("i", t1, None, ("k1", "p", 1, "a")),
        ("i", t1, None, ("k2", "p", 1, "b")),
        ("i", t2, None, ("k3", "p", 2, "c")),
        ("i", t6, None, ("k4", "p", 6, "d")),
        ("u", t2, ("k1", "p", 1, "a"), ("k1", "p", 2, "a2")),
        ("u", t3, ("k1", "p", 2, "a2"), ("k1", "p", 3, "a3")),
    ]
    assert query(path, "000") == expected
    assert query(path, t4, c) == []  # the compaction changed nothing
    assert query(path, t2, t4) == [e for e in expected if e[1] in (t3, t4)]
    everything = {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": "000"}
    spark_rows = read_hudi(spark, str(path), everything)
    assert changes([r.asDict() for r in spark_rows.collect()]) == expected
    engine.spark.register(spark)
    frame = spark.read.format("hudi").options(**everything).load(str(path))
    assert changes([r.asDict() for r in frame.collect()]) == expected
    # a log file's images are rows of the file slice, meta columns included
    (update,) = [
        r
        for r in read_table(
            str(path), {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": t2}
        ).to_pylist()
        if r["op"] == "u"
    ]
    assert json.loads(update["before"])["_hoodie_commit_time"] == t2
    assert json.loads(update["after"])["_hoodie_commit_time"] == t3
    assert snapshot(path) == [("k4", "d")]


def test_mor_cdc_rollback_and_clean_remove_cdc_files(spark, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import engine.write.transaction

    path = tmp_path / "t"
    options = mor_opts(
        "OP_KEY_ONLY",
        **{
            "hoodie.cleaner.commits.retained": "1",
            "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": "2",
        },
    )

    def run(rows: list[tuple[Any, ...]]) -> str:
        return write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), options).instant_time

    run([("k1", "p", 1, "a")])

    def die(*args: object, **kwargs: object) -> None:
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(engine.write.transaction, "commit_write", die)
    with pytest.raises(RuntimeError):
        run([("k1", "p", 2, "a2"), ("k2", "p", 2, "b")])
    monkeypatch.undo()
    assert cdc_files(path) == []  # the failed rewrite's .cdc file was rolled back

    t2 = run([("k1", "p", 2, "a2"), ("k2", "p", 2, "b")])  # small-file rewrite: a .cdc file
    first = cdc_files(path)
    assert len(first) == 1 and f"_{t2}.log.1_" in first[0].name
    t3 = run([("k1", "p", 3, "a3")])  # a log append, then compaction and the cleaner
    assert cdc_files(path) == first  # t3 still reads the slice: the cleaner keeps it
    run([("k1", "p", 4, "a4")])  # a log append on the compacted slice
    t5 = run([("k1", "p", 5, "a5")])  # another, then compaction and the cleaner
    assert cdc_files(path) == []  # cleaned with its file slice
    deltas = sorted(p.name.split(".")[0] for p in (path / ".hoodie").glob("*.deltacommit"))
    assert query(path, deltas[-2]) == [("u", t5, ("k1", "p", 4, "a4"), ("k1", "p", 5, "a5"))]
    # t3's changes are read against the slice the cleaner removed: the query says so
    with pytest.raises(QueryError, match=r"cleaned"):
        query(path, t2, t3)
    assert snapshot(path) == [("k1", "a5"), ("k2", "b")]


def test_mor_log_file_changes_follow_the_payload(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A log record the payload loses to the stored row changes nothing; a soft delete and a
    delete by key are 'd' with the stored row; a delete of an absent key changes nothing."""
    schema = f"{SCHEMA}, _hoodie_is_deleted boolean"
    path = tmp_path / "t"
    options = mor_opts(
        "DATA_BEFORE_AFTER",
        **{"hoodie.datasource.write.payload.class": config.DEFAULT_PAYLOAD},
    )

    def run(rows: list[tuple[Any, ...]], operation: str = "upsert") -> str:
        df = spark.createDataFrame(rows, schema)
        write = {**options, "hoodie.datasource.write.operation": operation}
        return write_hudi(df, str(path), write).instant_time

    t1 = run([("k1", "p", 5, "a", False), ("k2", "p", 5, "b", False)])
    t2 = run([("k1", "p", 3, "older", False)])  # smaller ordering value: the stored row stays
    t3 = run([("k2", "p", 6, "b", True)])  # a soft delete
    t4 = run([("k1", "p", 7, "a", False), ("k9", "p", 7, "z", False)], "delete")
    for t in (t2, t3, t4):
        (stat,) = write_stats(instant_metadata(path, t, "deltacommit"))
        assert ".log." in stat["path"]
    assert query(path, "000") == [
        ("d", t3, ("k2", "p", 5, "b"), None),
        ("d", t4, ("k1", "p", 5, "a"), None),
        ("i", t1, None, ("k1", "p", 5, "a")),
        ("i", t1, None, ("k2", "p", 5, "b")),
    ]
    assert snapshot(path) == []


def test_mor_log_file_changes_carry_a_column_added_since_the_base_file(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    t1 = write(spark, path, [("k1", "p", 1, "a")], "DATA_BEFORE")
    wider = spark.createDataFrame([("k1", "p", 2, "a2", "x")], f"{SCHEMA}, w string")
    t2 = write_hudi(wider, str(path), mor_opts("DATA_BEFORE")).instant_time
    (stat,) = write_stats(instant_metadata(path, t2, "deltacommit"))
    assert ".log." in stat["path"]  # the base file of t1 has no column w
    options = {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": t1}
    (update,) = read_table(str(path), options).to_pylist()
    before, after = json.loads(update["before"]), json.loads(update["after"])
    assert (before["v"], before["w"], after["v"], after["w"]) == ("a", None, "a2", "x")


def test_mor_cdc_with_the_bucket_index_is_refused(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA)
    bucket = mor_opts("DATA_BEFORE_AFTER", **{"hoodie.index.type": "BUCKET"})
    with pytest.raises(ConfigError, match=r"hoodie\.index\.type=BUCKET.*compaction"):
        write_hudi(df, str(tmp_path / "b"), bucket)
    assert not (tmp_path / "b").exists()
