"""The metadata table written in the data transaction (``hoodie.metadata.enable=true``), judged by
hudi-rs and the engine's reader: both list through its ``files`` partition on table versions 8
and 9, so every row they return came through what we wrote.

Each table goes through inserts, upserts, a delete, a clean and (merge-on-read) a compaction,
then its metadata table is checked record by record: the ``files`` partition lists exactly the
committed files of the storage listing, with their sizes, and every file of it decodes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import HudiTable, write_hudi
from engine.fs.properties import parse_properties_text
from engine.fs.storage import Storage
from engine.io.hfile import read_hfile
from engine.io.logfile import HoodieLogBlockType, read_log_blocks
from engine.metadata.files_index import read_files_partition
from engine.metadata.payload import decode_files_record
from engine.metadata.sync import committed_listing
from engine.read.arrow import read_table
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_rows
from tests.property.oracle import DEFAULT, Oracle, actual_set

# the subject is the metadata table a write keeps, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.driver_writes]

SCHEMA = "id int, region string, ts long, v string"
FIELDS = ["id", "region", "ts", "v"]
COLUMNS = ["region", "ts", "v", "_hoodie_commit_time"]


def _identity(row: dict[str, Any]) -> tuple[str, str]:
    return str(row["id"]), f"region={row['region']}"


def options(table_type: str, version: int, **extra: Any) -> dict[str, Any]:
    return {
        "hoodie.table.name": "mdt",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.write.table.version": version,
        "hoodie.metadata.enable": "true",
        **extra,
    }


def listing_matches_storage(path: str) -> None:
    """The files partition lists exactly the committed files on storage, with their sizes."""
    storage = Storage(path)
    timeline = Timeline.load(storage)
    listed = read_files_partition(storage, timeline)
    assert listed is not None
    on_storage = committed_listing(storage, timeline).added
    # a partition whose files were all rolled back or cleaned stays listed, empty (as in Hudi)
    with_files = {p: files for p, files in listed.partitions.items() if files}
    assert with_files == {p: files for p, files in on_storage.items() if files}


def _props(path: str) -> dict[str, str]:
    return parse_properties_text(Path(path, ".hoodie", "hoodie.properties").read_text("latin-1"))


@pytest.mark.parametrize(("table_type", "version"), [("COPY_ON_WRITE", 9), ("MERGE_ON_READ", 8)])
def test_written_metadata_table_lists_what_both_readers_read(
    spark: Any, tmp_path: Path, table_type: str, version: int
) -> None:
    path = str(tmp_path / "t")
    oracle = Oracle(DEFAULT, "ts", _identity, FIELDS)
    opts = options(
        table_type,
        version,
        **{
            "hoodie.cleaner.commits.retained": 1,
            "hoodie.compact.inline.max.delta.commits": 2,
            "hoodie.compact.inline": "true",
        },
    )

    def write(rows: list[tuple[Any, ...]], operation: str = "upsert") -> None:
        frame = spark.createDataFrame(rows, SCHEMA)
        result = write_hudi(frame, path, {**opts, "hoodie.datasource.write.operation": operation})
        oracle.apply([dict(zip(FIELDS, r, strict=True)) for r in rows], operation,
                     result.instant_time)  # fmt: skip
        assert actual_set(hudi_rs_rows(path), COLUMNS) == oracle.expected(COLUMNS)
        assert actual_set(read_table(path).to_pylist(), COLUMNS) == oracle.expected(COLUMNS)
        listing_matches_storage(path)

    write([(1, "eu", 1, "a"), (2, "us", 1, "b")], "insert")
    assert _props(path)["hoodie.table.metadata.partitions"] == "files"
    write([(1, "eu", 2, "a2"), (3, "ap", 1, "c")])
    write([(2, "us", 2, "b2")])
    write([(3, "ap", 2, "c")], "delete")
    write([(4, "eu", 1, "d"), (1, "eu", 3, "a3")])
    mdt = Storage(path).child(".hoodie/metadata")
    actions = {i.action.value for i in Timeline.load(mdt).instants}
    assert "deltacommit" in actions
    data_actions = {i.action.value for i in Timeline.load(Storage(path)).instants}
    assert "clean" in data_actions  # cleans recorded their deletions (listing checked above)


def test_metadata_log_blocks_decode_as_hudi_writes_them(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = options("COPY_ON_WRITE", 9)
    frame = spark.createDataFrame([(1, "eu", 1, "a"), (2, "us", 1, "b")], SCHEMA)
    result = write_hudi(frame, path, {**opts, "hoodie.datasource.write.operation": "insert"})
    files = Path(path, ".hoodie", "metadata", "files")
    names = sorted(p.name for p in files.iterdir())
    t = result.instant_time
    assert names == [
        ".files-0000-0_00000000000000000.log.1_0-0-0",
        f".files-0000-0_{t}.log.1_0-0-0",
        ".hoodie_partition_metadata",
        "files-0000-0_0-0-0_00000000000000000.hfile",
    ]
    base = read_hfile((files / names[3]).read_bytes())
    assert [k for k, _ in base.entries] == [b"__all_partitions__"]
    assert set(base.meta) == {"bloomFilter"}
    (init,) = read_log_blocks((files / names[0]).read_bytes())
    assert init.block_type is HoodieLogBlockType.DELETE_BLOCK
    (block,) = read_log_blocks((files / names[1]).read_bytes())
    assert block.block_type is HoodieLogBlockType.HFILE_DATA_BLOCK
    assert block.instant_time == t
    keys = [k for k, _ in read_hfile(block.content).entries]
    assert keys == [b"__all_partitions__", b"region=eu", b"region=us"]


def test_metadata_compaction_and_clean_keep_both_readers_right(spark: Any, tmp_path: Path) -> None:
    """(merge-on-read: its data compactions and cleans add deltacommits too; copy-on-write
    tables reach metadata compactions in the property tests)"""
    table_type = "MERGE_ON_READ"
    path = str(tmp_path / "t")
    oracle = Oracle(DEFAULT, "ts", _identity, FIELDS)
    opts = options(
        table_type,
        9,
        **{
            "hoodie.metadata.compact.max.delta.commits": 2,
            "hoodie.metadata.cleaner.commits.retained": 2,
            "hoodie.cleaner.commits.retained": 1,
        },
    )
    for n in range(5):
        rows = [(n, "eu", n, f"v{n}"), (0, "eu", n + 1, f"w{n}")]
        frame = spark.createDataFrame(rows, SCHEMA)
        result = write_hudi(frame, path, {**opts, "hoodie.datasource.write.operation": "upsert"})
        oracle.apply([dict(zip(FIELDS, r, strict=True)) for r in rows], "upsert",
                     result.instant_time)  # fmt: skip
        assert actual_set(hudi_rs_rows(path), COLUMNS) == oracle.expected(COLUMNS)
        assert actual_set(read_table(path).to_pylist(), COLUMNS) == oracle.expected(COLUMNS)
        listing_matches_storage(path)
    mdt = Storage(path).child(".hoodie/metadata")
    timeline = Timeline.load(mdt)
    compactions = [i.instant_time for i in timeline.completed([Action.COMMIT])]
    assert len(compactions) >= 2  # deltacommits of writes and of data cleans count
    assert timeline.completed([Action.CLEAN])
    files = Path(path, ".hoodie", "metadata", "files")
    bases = sorted(p.name for p in files.glob("*.hfile"))
    # the initialization slice was cleaned; the latest compaction's base file is there
    assert not [b for b in bases if b.endswith("_00000000000000000.hfile")]
    latest = f"files-0000-0_0-0-0_{compactions[-1]}.hfile"
    assert latest in bases
    hfile = read_hfile((files / latest).read_bytes())
    schema = hfile.file_info["schema"].decode()
    records = [decode_files_record(k, v, schema) for k, v in hfile.entries]
    assert {r.meta["_hoodie_file_name"] for r in records} == {latest}
    assert hfile.file_info["minRecordKey"] == hfile.entries[0][0]
    assert set(hfile.meta) == {"bloomFilter"}


def test_rollback_and_restore_roll_the_metadata_table_back(spark: Any, tmp_path: Path) -> None:
    """Rolling back the last commit rolls its metadata deltacommit back; a restore past a
    metadata compaction deletes the compacted files of the instants it rolls back."""
    path = str(tmp_path / "t")
    opts = options("MERGE_ON_READ", 9, **{"hoodie.metadata.compact.max.delta.commits": 2})
    states: list[set[tuple[Any, ...]]] = []
    instants: list[str] = []
    oracle = Oracle(DEFAULT, "ts", _identity, FIELDS)
    for n in range(3):  # a metadata compaction after the second
        rows = [(n, "eu" if n % 2 else "us", n, f"v{n}"), (0, "us", n + 1, f"w{n}")]
        frame = spark.createDataFrame(rows, SCHEMA)
        result = write_hudi(frame, path, {**opts, "hoodie.datasource.write.operation": "upsert"})
        oracle.apply([dict(zip(FIELDS, r, strict=True)) for r in rows], "upsert",
                     result.instant_time)  # fmt: skip
        states.append(oracle.expected(COLUMNS))
        instants.append(result.instant_time)
    table = HudiTable(path)
    mdt = Storage(path).child(".hoodie/metadata")
    assert Timeline.load(mdt).completed([Action.COMMIT])  # a metadata compaction happened

    table.rollback(instants[-1])
    assert actual_set(hudi_rs_rows(path), COLUMNS) == states[-2]
    assert actual_set(read_table(path).to_pylist(), COLUMNS) == states[-2]
    listing_matches_storage(path)
    assert not [i for i in Timeline.load(mdt).instants if i.instant_time == instants[-1]]

    table.restore(instants[0])
    assert actual_set(hudi_rs_rows(path), COLUMNS) == states[0]
    assert actual_set(read_table(path).to_pylist(), COLUMNS) == states[0]
    listing_matches_storage(path)


def test_a_metadata_table_lacking_a_commit_is_built_again(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A data commit some writer made without keeping the metadata table: the next write
    finds it stale and builds it again from the storage listing, never trusting it."""
    path = str(tmp_path / "t")
    opts = {**options("COPY_ON_WRITE", 9), "hoodie.datasource.write.operation": "upsert"}
    write_hudi(spark.createDataFrame([(1, "eu", 1, "a")], SCHEMA), path, opts)
    last = write_hudi(spark.createDataFrame([(2, "us", 1, "b")], SCHEMA), path, opts)
    mdt = Path(path, ".hoodie", "metadata")
    for stale in [*mdt.glob(f".hoodie/timeline/{last.instant_time}*"),
                  *mdt.glob(f"files/*{last.instant_time}*")]:  # fmt: skip
        stale.unlink()
    unset = {k: v for k, v in opts.items() if k != "hoodie.metadata.enable"}
    with caplog.at_level("WARNING", logger="engine.metadata.sync"):
        write_hudi(spark.createDataFrame([(3, "ap", 1, "c")], SCHEMA), path, unset)
    assert any(last.instant_time in r.getMessage() for r in caplog.records)
    listing_matches_storage(path)
    expected = {(1, "eu"), (2, "us"), (3, "ap")}
    assert {(r["id"], r["region"]) for r in hudi_rs_rows(path)} == expected
    assert {(r["id"], r["region"]) for r in read_table(path).to_pylist()} == expected


def test_replace_writes_and_cdc_files_keep_the_listing(spark: Any, tmp_path: Path) -> None:
    """insert_overwrite, delete_partition (the partition is deleted from ``__all_partitions__``)
    and a partition written again; the .cdc log files of a CDC table are listed too."""
    path = str(tmp_path / "t")
    opts = {**options("COPY_ON_WRITE", 9), "hoodie.table.cdc.enabled": "true"}
    expected: dict[int, str] = {}

    def write(rows: list[tuple[Any, ...]], operation: str, **extra: Any) -> None:
        frame = spark.createDataFrame(rows, SCHEMA)
        write_hudi(frame, path, {**opts, "hoodie.datasource.write.operation": operation, **extra})
        assert {(r["id"], r["region"]) for r in hudi_rs_rows(path)} == set(expected.items())
        assert {(r["id"], r["region"]) for r in read_table(path).to_pylist()} == set(
            expected.items()
        )
        if operation != "delete_partition":  # its files stay on storage until cleaned
            listing_matches_storage(path)

    expected.update({1: "eu", 2: "us", 3: "ap"})
    write([(1, "eu", 1, "a"), (2, "us", 1, "b"), (3, "ap", 1, "c")], "insert")
    expected.update({1: "eu"})
    write([(1, "eu", 2, "a2")], "upsert")  # an update: a .cdc file beside the new base file
    assert any(".cdc" in name for name in read_files_partition(
        Storage(path), Timeline.load(Storage(path))).partitions["region=eu"])  # type: ignore[union-attr]  # fmt: skip
    del expected[2]
    expected[4] = "us"
    write([(4, "us", 1, "d")], "insert_overwrite")
    del expected[3]
    write([(3, "ap", 1, "c")], "delete_partition",
          **{"hoodie.datasource.write.partitions.to.delete": "region=ap"})  # fmt: skip
    listed = read_files_partition(Storage(path), Timeline.load(Storage(path)))
    assert listed is not None and "region=ap" not in listed.partitions
    expected[5] = "ap"
    write([(5, "ap", 2, "e")], "upsert")
