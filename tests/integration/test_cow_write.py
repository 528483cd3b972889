"""Copy-on-write writes on Spark: table layout, timeline, stats, errors, rollback."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

from engine import write_hudi
from engine.errors import ConfigError, RecordKeyError
from engine.fs.properties import table_checksum
from tests.hudi_rs import hudi_rs_rows
from tests.integration.metafolder import (
    instant_metadata,
    table_properties,
    timeline_files,
    write_stats,
)
from tests.keyed_table import SCHEMA, write_options

pytestmark = pytest.mark.spark

COPY_ON_WRITE = {
    "hoodie.datasource.write.operation": "upsert",
    "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
}


def opts(**extra: str) -> dict[str, str]:
    return write_options("orders", COPY_ON_WRITE, extra)


def test_write_hudi_new_table_layout_timeline_and_commit_metadata(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    rows = [(f"k{i}", f"2024-01-0{i % 2 + 1}", i, f"v{i}") for i in range(6)]
    result = write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), opts())
    t = result.instant_time

    props = table_properties(path)
    assert props["hoodie.table.version"] == "6"
    assert props["hoodie.timeline.layout.version"] == "1"
    assert props["hoodie.table.checksum"] == str(table_checksum(None, "orders"))
    assert props["hoodie.table.recordkey.fields"] == "id"
    assert props["hoodie.table.partition.fields"] == "dt"
    assert (
        (path / ".hoodie" / "hoodie.properties")
        .read_text()
        .strip()
        .splitlines()[-1]
        .startswith("hoodie.table.checksum=")
    )
    assert timeline_files(path) == sorted(
        ["hoodie.properties", f"{t}.commit.requested", f"{t}.inflight", f"{t}.commit"]
    )
    for partition in ("2024-01-01", "2024-01-02"):
        meta = (path / partition / ".hoodie_partition_metadata").read_text()
        assert f"commitTime={t}" in meta and "partitionDepth=1" in meta
    assert not (path / ".hoodie" / ".temp" / t).exists()

    metadata = instant_metadata(path, t, "commit")
    assert metadata["operationType"] == "UPSERT"
    assert json.loads(metadata["extraMetadata"]["schema"])["name"] == "orders_record"
    stats = write_stats(metadata)
    assert sum(s["numWrites"] for s in stats) == 6
    assert sum(s["numInserts"] for s in stats) == 6
    for s in stats:
        assert s["prevCommit"] == "null" and s["numUpdateWrites"] == 0
        assert s["fileSizeInBytes"] == os.path.getsize(path / s["path"]) == s["totalWriteBytes"]
        assert s["path"].startswith(s["partitionPath"] + "/" + s["fileId"] + "_")


def test_write_hudi_upsert_rewrites_group_keeps_unchanged_meta(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    first = [(f"k{i}", "p", i, "old") for i in range(4)]
    r1 = write_hudi(spark.createDataFrame(first, SCHEMA), str(path), opts())
    before = {r["id"]: r for r in hudi_rs_rows(str(path))}
    r2 = write_hudi(
        spark.createDataFrame([("k1", "p", 10, "new"), ("k9", "p", 1, "ins")], SCHEMA),
        str(path),
        opts(),
    )
    (stat,) = r2.write_stats
    assert (stat.num_writes, stat.num_update_writes, stat.num_inserts) == (5, 1, 1)
    assert stat.prev_commit == r1.instant_time
    after = {r["id"]: r for r in hudi_rs_rows(str(path))}
    assert after["k1"]["v"] == "new" and after["k1"]["_hoodie_commit_time"] == r2.instant_time
    for key in ("k0", "k2", "k3"):
        assert after[key]["_hoodie_commit_time"] == before[key]["_hoodie_commit_time"]
        assert after[key]["_hoodie_commit_seqno"] == before[key]["_hoodie_commit_seqno"]
        assert after[key]["_hoodie_file_name"] == os.path.basename(stat.path or "")
    seqno = after["k9"]["_hoodie_commit_seqno"]
    instant, bucket, index = seqno.split("_")
    assert instant == r2.instant_time and bucket.isdigit() and index.isdigit()
    footer = pq.read_metadata(path / (stat.path or "")).metadata
    assert footer[b"hoodie_min_record_key"] == b"k0" and footer[b"hoodie_max_record_key"] == b"k9"


def test_write_hudi_null_record_key_raises_and_creates_nothing(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    df = spark.createDataFrame([("k1", "p", 1, "a"), (None, "p", 2, "b")], SCHEMA)
    with pytest.raises(RecordKeyError, match="'id'"):
        write_hudi(df, str(path), opts())
    assert not (path / ".hoodie").exists()


def test_write_hudi_null_key_on_existing_table_commits_nothing(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    write_hudi(spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA), str(path), opts())
    before = timeline_files(path)
    df = spark.createDataFrame([("", "p", 2, "b")], SCHEMA)
    with pytest.raises(RecordKeyError, match="'id'"):
        write_hudi(df, str(path), opts())
    assert timeline_files(path) == before


def test_write_hudi_option_contradicting_table_raises(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    df = spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA)
    write_hudi(df, str(path), opts())
    with pytest.raises(ConfigError, match=r"hoodie\.datasource\.write\.recordkey\.field"):
        write_hudi(df, str(path), opts(**{"hoodie.datasource.write.recordkey.field": "v"}))
    with pytest.raises(ConfigError, match="MERGE_ON_READ"):
        write_hudi(df, str(path), opts(**{"hoodie.datasource.write.table.type": "MERGE_ON_READ"}))


def test_write_hudi_unknown_option_raises_naming_it(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA)
    with pytest.raises(ConfigError, match=r"hoodie\.parquet\.max\.filesize"):
        write_hudi(df, str(tmp_path / "t"), opts(**{"hoodie.parquet.max.filesize": "1"}))
    assert not (tmp_path / "t").exists()


def test_write_hudi_interrupted_write_rolled_back_by_next(spark, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import engine.write.transaction

    path = tmp_path / "t"
    write_hudi(spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA), str(path), opts())

    def die(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("killed before commit")

    monkeypatch.setattr(engine.write.transaction, "commit_write", die)
    with pytest.raises(KeyboardInterrupt):
        write_hudi(spark.createDataFrame([("k1", "p", 2, "b")], SCHEMA), str(path), opts())
    monkeypatch.undo()
    pending = [n for n in timeline_files(path) if n.endswith(".inflight")]
    failed = max(n.split(".")[0] for n in pending)
    assert not (path / ".hoodie" / f"{failed}.commit").exists()
    leftover = [p for p in (path / "p").iterdir() if failed in p.name]
    assert leftover, "the interrupted write left its base file behind"
    # readers still see the previous state
    assert [(r["id"], r["v"]) for r in hudi_rs_rows(str(path))] == [("k1", "a")]

    result = write_hudi(spark.createDataFrame([("k2", "p", 3, "c")], SCHEMA), str(path), opts())
    assert result.rolled_back == [failed]
    names = timeline_files(path)
    assert not [n for n in names if n.startswith(failed)]
    rollbacks = [n for n in names if n.endswith(".rollback")]
    assert len(rollbacks) == 1 and rollbacks[0] < f"{result.instant_time}.commit"
    assert not [p for p in (path / "p").iterdir() if failed in p.name]
    assert sorted((r["id"], r["v"]) for r in hudi_rs_rows(str(path))) == [("k1", "a"), ("k2", "c")]


def test_commit_removes_files_of_failed_task_attempts(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from engine.fs.storage import Storage
    from engine.timeline.markers import create_marker, remove_unreported_files

    storage = Storage(str(tmp_path))
    storage.write_bytes("p/f-0_0-1-1_001.parquet", b"x")
    storage.write_bytes("p/f-0_0-1-2_001.parquet", b"y")
    create_marker(storage, "001", "p", "f-0_0-1-1_001.parquet", "CREATE")
    create_marker(storage, "001", "p", "f-0_0-1-2_001.parquet", "CREATE")
    from engine.timeline.commit_metadata import HoodieWriteStat

    kept = HoodieWriteStat(file_id="f-0", path="p/f-0_0-1-2_001.parquet", partition_path="p")
    assert remove_unreported_files(storage, "001", [kept]) == ["p/f-0_0-1-1_001.parquet"]
    assert storage.exists("p/f-0_0-1-2_001.parquet")


def test_write_hudi_incompatible_column_type_raises_before_commit(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from engine.errors import SchemaError

    path = tmp_path / "t"
    write_hudi(spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA), str(path), opts())
    before = timeline_files(path)
    bad = spark.createDataFrame(
        [("k1", "p", 2, ("x", 1))], "id string, dt string, ts long, v struct<a: string, b: int>"
    )
    with pytest.raises(SchemaError, match="'v'"):
        write_hudi(bad, str(path), opts())
    assert timeline_files(path) == before


def test_write_hudi_delete_every_key_leaves_empty_group(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    rows = [("k1", "p", 1, "a"), ("k2", "p", 1, "b")]
    write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), opts())
    keys = spark.createDataFrame([("k1", "p"), ("k2", "p")], "id string, dt string")
    result = write_hudi(keys, str(path), opts(**{"hoodie.datasource.write.operation": "delete"}))
    (stat,) = result.write_stats
    assert (stat.num_writes, stat.num_deletes) == (0, 2)
    assert hudi_rs_rows(str(path)) == []


@pytest.mark.parametrize(
    "options",
    [
        {
            "hoodie.datasource.write.recordkey.field": "s",
            "hoodie.datasource.write.partitionpath.field": "d",
        },
        {
            "hoodie.datasource.write.recordkey.field": "i,s,b",
            "hoodie.datasource.write.partitionpath.field": "b,i",
            "hoodie.datasource.write.hive_style_partitioning": "true",
        },
        {
            "hoodie.datasource.write.recordkey.field": "l",
            "hoodie.datasource.write.partitionpath.field": "s",
        },
        {"hoodie.datasource.write.recordkey.field": "i"},
    ],
)
def test_spark_expression_keys_match_arrow_key_generator(spark, options) -> None:  # type: ignore[no-untyped-def]
    import datetime as dt

    from engine import config
    from engine.model.keygen import (
        generate_partition_paths,
        generate_record_keys,
        keygen_spec_from_config,
    )
    from engine.spark.jobs import add_record_keys, optimized_plan

    rows = [
        ("a", 1, 10, True, dt.date(2024, 1, 2)),
        ("", None, 11, False, None),
        (None, 3, 12, None, dt.date(1999, 12, 31)),
    ]
    df = spark.createDataFrame(rows, "s string, i int, l long, b boolean, d date")
    spec = keygen_spec_from_config(config.parse_options(options))
    if len(spec.record_key_fields) == 1:
        field = spec.record_key_fields[0]
        df = df.where(f"{field} is not null and cast({field} as string) != ''")
    keyed = add_record_keys(df, spec, delete_records=False)
    # these generators run as Spark expressions, not in a Python mapInArrow
    assert "MapInArrow" not in optimized_plan(keyed)
    got = sorted((r["_hoodie_record_key"], r["_hoodie_partition_path"]) for r in keyed.collect())
    arrow = df.toArrow()
    expected = sorted(
        zip(
            generate_record_keys(arrow, spec).to_pylist(),
            generate_partition_paths(arrow, spec).to_pylist(),
            strict=True,
        )
    )
    assert got == expected


def test_write_hudi_insert_keeps_duplicates_unless_combined(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = [("k1", "p", 1, "a"), ("k1", "p", 2, "b")]
    plain = tmp_path / "plain"
    write_hudi(
        spark.createDataFrame(rows, SCHEMA),
        str(plain),
        opts(**{"hoodie.datasource.write.operation": "insert"}),
    )
    assert sorted(r["v"] for r in hudi_rs_rows(str(plain))) == ["a", "b"]
    combined = tmp_path / "combined"
    write_hudi(
        spark.createDataFrame(rows, SCHEMA),
        str(combined),
        opts(
            **{
                "hoodie.datasource.write.operation": "insert",
                "hoodie.combine.before.insert": "true",
            }
        ),
    )
    assert [r["v"] for r in hudi_rs_rows(str(combined))] == ["b"]
