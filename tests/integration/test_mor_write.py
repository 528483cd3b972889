"""Merge-on-read writes on Spark: deltacommits, log appends, routing, compaction, failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.cli import main as cli_main
from engine.config import parse_options
from engine.fs.filenames import parse_log_file_name
from engine.fs.storage import Storage
from engine.io.logfile import HeaderMetadataType, HoodieLogBlockType, read_log_blocks
from engine.read.arrow import read_table
from engine.services.compaction import pending_compactions, schedule_compaction
from engine.timeline.timeline import Timeline
from tests.integration.metafolder import (
    instant_metadata,
    table_properties,
    timeline_files,
    write_stats,
)
from tests.keyed_table import SCHEMA, write_options

pytestmark = pytest.mark.spark

MERGE_ON_READ = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def opts(**extra: Any) -> dict[str, Any]:
    return write_options("events", MERGE_ON_READ, extra)


def deltacommit(path: Path, instant: str) -> dict[str, Any]:
    return instant_metadata(path, instant, "deltacommit")


def rows_of(path: Path, **options: str) -> dict[str, tuple[Any, ...]]:
    table = read_table(str(path), options or None).to_pylist()
    return {r["id"]: (r["dt"], r["ts"], r["v"]) for r in table}


def test_write_mor_updates_append_avro_log_blocks_with_delta_stats(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    first = [(f"k{i}", "2024-01-01", 1, f"a{i}") for i in range(8)]
    t1 = write_hudi(spark.createDataFrame(first, SCHEMA), str(path), opts()).instant_time
    props = table_properties(path)
    assert props["hoodie.table.type"] == "MERGE_ON_READ"
    assert f"{t1}.deltacommit" in timeline_files(path)
    base_files = list((path / "2024-01-01").glob("*.parquet"))
    assert len(base_files) == 1

    updates = [(f"k{i}", "2024-01-01", 2, f"b{i}") for i in range(3)]
    avro = opts(**{"hoodie.logfile.data.block.format": "avro"})
    t2 = write_hudi(spark.createDataFrame(updates, SCHEMA), str(path), avro).instant_time
    (stat,) = write_stats(deltacommit(path, t2))
    assert deltacommit(path, t2)["operationType"] == "UPSERT"
    log_name = stat["path"].split("/")[-1]
    log = parse_log_file_name(log_name)
    assert (log.base_instant_time, log.version) == (t1, 1)
    assert stat["baseFile"] == base_files[0].name and stat["prevCommit"] == t1
    assert stat["logVersion"] == 1 and stat["logOffset"] == 0 and stat["logFiles"] == [log_name]
    assert (stat["numWrites"], stat["numUpdateWrites"], stat["numInserts"]) == (3, 3, 0)
    assert stat["fileSizeInBytes"] == (path / stat["path"]).stat().st_size
    blocks = list(read_log_blocks((path / stat["path"]).read_bytes()))
    assert [b.block_type for b in blocks] == [HoodieLogBlockType.AVRO_DATA_BLOCK]
    assert blocks[0].instant_time == t2
    # the base file is untouched: read-optimized still sees the old values
    assert rows_of(path)["k0"] == ("2024-01-01", 2, "b0")
    assert rows_of(path, **{"hoodie.datasource.query.type": "read_optimized"})["k0"][2] == "a0"

    dels = spark.createDataFrame([("k1", "2024-01-01", 3, None)], SCHEMA)
    t3 = write_hudi(dels, str(path), opts(**{"hoodie.datasource.write.operation": "delete"}))
    (stat3,) = write_stats(deltacommit(path, t3.instant_time))
    assert parse_log_file_name(stat3["path"].split("/")[-1]).version == 2
    assert stat3["numDeletes"] == 1 and stat3["logFiles"][-1] == stat3["path"].split("/")[-1]
    blocks = list(read_log_blocks((path / stat3["path"]).read_bytes()))
    assert [b.block_type for b in blocks] == [HoodieLogBlockType.DELETE_BLOCK]
    assert "k1" not in rows_of(path) and len(rows_of(path)) == 7


def test_write_mor_inserts_rewrite_small_file_without_logs_only(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    rows = [(f"{d}-{i}", d, 1, "a") for i in range(4) for d in ("d1", "d2")]
    write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), opts())
    # d1 gets an update (a log), d2 stays log-free
    write_hudi(spark.createDataFrame([("d1-0", "d1", 2, "b")], SCHEMA), str(path), opts())
    batch = [("d1-9", "d1", 3, "new"), ("d2-9", "d2", 3, "new"), ("d2-0", "d2", 3, "upd")]
    t = write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), opts()).instant_time
    stats = {s["partitionPath"]: s for s in write_stats(deltacommit(path, t))}
    # d2: small file without logs takes the insert and its update: a new base file at t
    assert stats["d2"]["path"].endswith(f"_{t}.parquet") and stats["d2"]["prevCommit"] != "null"
    assert stats["d2"]["numInserts"] == 1 and stats["d2"]["numUpdateWrites"] == 1
    # d1: its only file group has logs, so the insert opens a new file group
    assert stats["d1"]["path"].endswith(f"_{t}.parquet") and stats["d1"]["prevCommit"] == "null"
    assert len(list((path / "d1").glob("*.parquet"))) == 2
    got = rows_of(path)
    assert got["d1-9"][2] == got["d2-9"][2] == "new" and got["d2-0"][2] == "upd"
    assert got["d1-0"][2] == "b" and len(got) == 10


def test_write_mor_inline_compaction_after_max_delta_commits(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    inline = opts(**{"hoodie.compact.inline": True, "hoodie.compact.inline.max.delta.commits": 3})
    write_hudi(
        spark.createDataFrame([("a", "d", 1, "v1"), ("b", "d", 1, "v1")], SCHEMA), str(path), inline
    )
    write_hudi(spark.createDataFrame([("a", "d", 2, "v2")], SCHEMA), str(path), inline)
    assert not list((path / ".hoodie").glob("*.commit"))
    write_hudi(spark.createDataFrame([("b", "d", 3, "v3")], SCHEMA), str(path), inline)
    (completed,) = list((path / ".hoodie").glob("*.commit"))
    metadata = json.loads(completed.read_text())
    assert metadata["compacted"] is True and metadata["operationType"] == "COMPACT"
    snapshot = rows_of(path)
    assert snapshot == rows_of(path, **{"hoodie.datasource.query.type": "read_optimized"})
    assert snapshot == {"a": ("d", 2, "v2"), "b": ("d", 3, "v3")}
    # the next update appends to the compacted slice
    t = write_hudi(spark.createDataFrame([("a", "d", 4, "v4")], SCHEMA), str(path), inline)
    (stat,) = write_stats(deltacommit(path, t.instant_time))
    assert (
        parse_log_file_name(stat["path"].split("/")[-1]).base_instant_time
        == completed.name.split(".")[0]
    )


def test_write_mor_failed_deltacommit_rolled_back_by_next_write(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    write_hudi(spark.createDataFrame([("a", "d", 1, "v1")], SCHEMA), str(path), opts())
    t2 = write_hudi(spark.createDataFrame([("a", "d", 2, "v2")], SCHEMA), str(path), opts())
    # make t2 look like a write that died before its commit
    (path / ".hoodie" / f"{t2.instant_time}.deltacommit").unlink()
    (log,) = list((path / "d").glob(".*.log.*"))
    marker_dir = path / ".hoodie" / ".temp" / t2.instant_time / "d"
    marker_dir.mkdir(parents=True)
    (marker_dir / f"{log.name}.marker.APPEND").touch()
    assert rows_of(path)["a"][2] == "v1"
    result = write_hudi(spark.createDataFrame([("a", "d", 3, "v3")], SCHEMA), str(path), opts())
    assert result.rolled_back == [t2.instant_time]
    # the failed log file is deleted, or (Hudi's way) a COMMAND block rolls its blocks back
    targets = [
        b.header.get(HeaderMetadataType.TARGET_INSTANT_TIME)
        for p in (path / "d").glob(".*.log.*")
        for b in read_log_blocks(p.read_bytes())
        if b.block_type is HoodieLogBlockType.COMMAND_BLOCK
    ]
    assert not log.exists() or targets == [t2.instant_time]
    assert rows_of(path)["a"][2] == "v3"


def test_write_mor_pending_compaction_finished_before_next_write(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    write_hudi(spark.createDataFrame([("a", "d", 1, "v1")], SCHEMA), str(path), opts())
    write_hudi(spark.createDataFrame([("a", "d", 2, "v2")], SCHEMA), str(path), opts())
    storage = Storage(str(path))
    compaction = schedule_compaction(storage, parse_options({}), force=True)
    assert compaction is not None
    write_hudi(spark.createDataFrame([("a", "d", 3, "v3")], SCHEMA), str(path), opts())
    assert pending_compactions(Timeline.load(storage)) == []
    assert (path / ".hoodie" / f"{compaction}.commit").exists()
    logs = [parse_log_file_name(p.name) for p in (path / "d").glob(".*.log.*")]
    assert compaction in {log.base_instant_time for log in logs}
    assert rows_of(path)["a"][2] == "v3"


def test_cli_compact_schedules_and_runs_on_spark(spark, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    write_hudi(
        spark.createDataFrame([("a", "d", 1, "v1"), ("b", "e", 1, "v1")], SCHEMA), str(path), opts()
    )
    write_hudi(
        spark.createDataFrame([("a", "d", 2, "v2"), ("b", "e", 2, "v2")], SCHEMA), str(path), opts()
    )
    assert cli_main(["compact", str(path), "--schedule"]) == 0
    scheduled = capsys.readouterr().out.strip()
    assert (path / ".hoodie" / f"{scheduled}.compaction.requested").exists()
    assert cli_main(["compact", str(path), "--order", "LIFO"]) == 0
    assert capsys.readouterr().out.strip() == scheduled
    metadata = instant_metadata(path, scheduled, "commit")
    assert sorted(metadata["partitionToWriteStats"]) == ["d", "e"]
    assert cli_main(["compact", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "nothing to compact"
    assert rows_of(path, **{"hoodie.datasource.query.type": "read_optimized"}) == rows_of(path)


@pytest.mark.parametrize(
    "name",
    [
        "mor_parquet__v6_nonpartitioned_rollback",
        "mor_parquet__v6_simplekeygen_nonhivestyle",
        "mor_parquet__v6_complexkeygen_hivestyle",
        "trips_mor_avro__v6_trips_8i3d",
    ],
)
def test_write_mor_into_corpus_tables_upsert_and_compact(spark, corpus_copy, name) -> None:  # type: ignore[no-untyped-def]
    path = corpus_copy(name)
    before = read_table(str(path)).to_pylist()
    assert before
    key = before[0]["_hoodie_record_key"]
    updated = (
        read_table(str(path))
        .drop_columns([c for c in before[0] if c.startswith("_hoodie_")])
        .slice(0, 1)
    )
    frame = spark.createDataFrame(updated)
    ordering = table_properties(path).get("hoodie.table.precombine.field")
    result = write_hudi(frame, str(path))
    assert any(s.is_delta for s in result.write_stats)
    after = {r["_hoodie_record_key"]: r for r in read_table(str(path)).to_pylist()}
    assert len(after) == len(before)
    assert after[key]["_hoodie_commit_time"] == result.instant_time
    assert ordering is None or after[key][ordering] == before[0][ordering]
    storage = Storage(str(path))
    compaction = schedule_compaction(storage, parse_options({}), force=True)
    assert compaction is not None
    cli_main(["compact", str(path)])
    ro = read_table(str(path), {"hoodie.datasource.query.type": "read_optimized"})
    snap = read_table(str(path))
    key_of = lambda t: sorted(t.column("_hoodie_record_key").to_pylist())  # noqa: E731
    assert key_of(ro) == key_of(snap) == sorted(after)
