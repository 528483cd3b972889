"""Replace writes on Spark: insert_overwrite, insert_overwrite_table, delete_partition.

Every check reads through hudi-rs (the judge) and through ``read_hudi``; the replacecommit's
``partitionToReplaceFileIds`` is compared with the file groups the table held before the write.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import fastavro
import pytest

from engine import read_hudi, write_hudi
from engine.errors import ConfigError, HudiError, RecordKeyError
from engine.fs.storage import Storage
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSystemView
from tests.hudi_rs import hudi_rs_rows
from tests.integration.metafolder import instant_metadata
from tests.keyed_table import SCHEMA, write_options

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def opts(operation: str, **extra: str) -> dict[str, str]:
    return write_options("orders", {"hoodie.datasource.write.operation": operation}, extra)


def rows_of(spark: Any, path: Path, as_of: str | None = None) -> set[tuple[str, str, str]]:
    """(id, dt, v) through hudi-rs, checked equal to read_hudi's."""
    judged = {(r["id"], r["dt"], r["v"]) for r in hudi_rs_rows(str(path), as_of)}
    options = {"as.of.instant": as_of} if as_of else None
    ours = {(r["id"], r["dt"], r["v"]) for r in read_hudi(spark, str(path), options).collect()}
    assert ours == judged
    return judged


def live_groups(path: Path) -> dict[str, set[str]]:
    storage = Storage(str(path))
    view = FileSystemView(storage, Timeline.load(storage))
    out: dict[str, set[str]] = {}
    for s in view.latest_file_slices():
        out.setdefault(s.partition_path, set()).add(s.file_id)
    return out


def replace_metadata(path: Path, instant: str) -> dict[str, Any]:
    return instant_metadata(path, instant, "replacecommit")


def seed(spark: Any, path: Path, **extra: str) -> tuple[str, set[tuple[str, str, str]]]:
    rows = [(f"k{i}", f"2024-01-0{i % 3 + 1}", 1, f"v{i}") for i in range(9)]
    result = write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), opts("upsert", **extra))
    return result.instant_time, {(r[0], r[1], r[3]) for r in rows}


def test_insert_overwrite_replaces_touched_partitions_only(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    first, before = seed(spark, path)
    groups = live_groups(path)
    new = [("n1", "2024-01-01", 2, "new1"), ("n2", "2024-01-09", 2, "new2")]
    result = write_hudi(spark.createDataFrame(new, SCHEMA), str(path), opts("insert_overwrite"))
    t = result.instant_time

    meta = replace_metadata(path, t)
    assert meta["operationType"] == "INSERT_OVERWRITE"
    assert meta["partitionToReplaceFileIds"] == {
        "2024-01-01": sorted(groups["2024-01-01"]),
        "2024-01-09": [],
    }
    assert set(meta["partitionToWriteStats"]) == {"2024-01-01", "2024-01-09"}
    with open(path / ".hoodie" / f"{t}.replacecommit.requested", "rb") as f:
        requested = list(fastavro.reader(f))
    assert requested == [
        {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}
    ]
    expected = {r for r in before if r[1] != "2024-01-01"} | {(r[0], r[1], r[3]) for r in new}
    assert rows_of(spark, path) == expected
    assert rows_of(spark, path, first) == before  # time travel before the replacecommit
    # the replaced files stay on storage until the cleaner removes them
    assert all(
        any(p.name.startswith(fid) for p in (path / "2024-01-01").iterdir())
        for fid in groups["2024-01-01"]
    )


def test_insert_overwrite_table_replaces_every_partition(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    first, before = seed(spark, path)
    groups = live_groups(path)
    new = [("n1", "2024-01-05", 2, "new1")]
    t = write_hudi(
        spark.createDataFrame(new, SCHEMA), str(path), opts("insert_overwrite_table")
    ).instant_time
    meta = replace_metadata(path, t)
    assert meta["operationType"] == "INSERT_OVERWRITE_TABLE"
    assert meta["partitionToReplaceFileIds"] == {
        **{p: sorted(ids) for p, ids in groups.items()},
        "2024-01-05": [],
    }
    assert rows_of(spark, path) == {("n1", "2024-01-05", "new1")}
    assert rows_of(spark, path, first) == before


def test_insert_overwrite_then_upsert_updates_new_file_groups(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    seed(spark, path)
    new = [("k0", "2024-01-01", 2, "over0"), ("k3", "2024-01-01", 2, "over3")]
    write_hudi(spark.createDataFrame(new, SCHEMA), str(path), opts("insert_overwrite"))
    upd = [("k0", "2024-01-01", 3, "upd0"), ("k6", "2024-01-01", 3, "ins6")]
    write_hudi(spark.createDataFrame(upd, SCHEMA), str(path), opts("upsert"))
    got = rows_of(spark, path)
    part1 = {r for r in got if r[1] == "2024-01-01"}
    assert part1 == {
        ("k0", "2024-01-01", "upd0"),
        ("k3", "2024-01-01", "over3"),
        ("k6", "2024-01-01", "ins6"),
    }
    assert len(got) == 9 - 3 + 3


def test_delete_partition_replaces_named_partitions(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    first, before = seed(spark, path)
    groups = live_groups(path)
    files_before = sorted(p.name for p in path.rglob("*.parquet"))
    empty = spark.createDataFrame([], SCHEMA)
    t = write_hudi(
        empty,
        str(path),
        opts(
            "delete_partition",
            **{"hoodie.datasource.write.partitions.to.delete": "2024-01-02,2024-01-07"},
        ),
    ).instant_time
    meta = replace_metadata(path, t)
    assert meta["operationType"] == "DELETE_PARTITION"
    assert meta["partitionToWriteStats"] == {}
    assert meta["partitionToReplaceFileIds"] == {
        "2024-01-02": sorted(groups["2024-01-02"]),
        "2024-01-07": [],
    }
    assert sorted(p.name for p in path.rglob("*.parquet")) == files_before
    assert rows_of(spark, path) == {r for r in before if r[1] != "2024-01-02"}
    assert rows_of(spark, path, first) == before


def test_delete_partition_without_partitions_raises_and_leaves_table(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    seed(spark, path)
    timeline_before = sorted(p.name for p in (path / ".hoodie").iterdir())
    with pytest.raises(ConfigError, match=r"partitions\.to\.delete"):
        write_hudi(spark.createDataFrame([], SCHEMA), str(path), opts("delete_partition"))
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == timeline_before


def test_insert_overwrite_merge_on_read_table(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    mor = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    _, before = seed(spark, path, **mor)
    upd = [("k1", "2024-01-02", 5, "log1")]
    write_hudi(spark.createDataFrame(upd, SCHEMA), str(path), opts("upsert", **mor))
    new = [("n1", "2024-01-02", 6, "new1")]
    t = write_hudi(
        spark.createDataFrame(new, SCHEMA), str(path), opts("insert_overwrite", **mor)
    ).instant_time
    assert (path / ".hoodie" / f"{t}.replacecommit").exists()
    expected = {r for r in before if r[1] != "2024-01-02"} | {("n1", "2024-01-02", "new1")}
    assert rows_of(spark, path) == expected


@pytest.mark.parametrize(
    ("frame", "extra", "error"),
    [
        ("dt string, ts long, v string", {}, "Key field 'id'"),  # no record key column
        (SCHEMA, {"hoodie.no.such.option": "1"}, "Unknown config 'hoodie.no.such.option'"),
        (SCHEMA, {"hoodie.keep.min.commits": "5"}, "hoodie.cleaner.commits.retained=10"),
        (
            SCHEMA,
            {"hoodie.client.heartbeat.interval_in_ms": "0"},
            "hoodie.client.heartbeat.interval_in_ms=0 must be at least 1",
        ),
    ],
    ids=["missing-key-column", "unknown-option", "bad-retention", "bad-heartbeat"],
)
def test_insert_overwrite_bad_input_raises_before_writing(
    spark, tmp_path, frame, extra, error
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    _, before = seed(spark, path)
    listing = sorted(str(p.relative_to(path)) for p in path.rglob("*"))
    data = [("2024-01-01", 9, "bad")] if frame != SCHEMA else [("n", "2024-01-01", 9, "bad")]
    with pytest.raises(HudiError, match=re.escape(error)):
        write_hudi(spark.createDataFrame(data, frame), str(path), opts("insert_overwrite", **extra))
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == listing
    assert rows_of(spark, path) == before


def test_insert_overwrite_null_record_key_raises_before_writing(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    _, before = seed(spark, path)
    listing = sorted(str(p.relative_to(path)) for p in path.rglob("*"))
    data = [(None, "2024-01-01", 9, "bad"), ("n2", "2024-01-01", 9, "ok")]
    with pytest.raises(RecordKeyError):
        write_hudi(spark.createDataFrame(data, SCHEMA), str(path), opts("insert_overwrite_table"))
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == listing
    assert rows_of(spark, path) == before
