"""The ``column_stats`` partition of the metadata tables Apache Hudi 1.1 wrote (the corpus's v9
``*_meta`` tables): every record decoded and encoded again byte for byte, each row key rebuilt
from its column, partition and file, each key in the file group its hash picks, and the stats
of every base file computed from its Parquet footer equal to Hudi's, down to the cells."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.fs.storage import Storage
from engine.io.hfile import read_hfile
from engine.io.hfile_writer import callers_file_info, write_hfile
from engine.io.logfile import HoodieLogBlockType, read_log_blocks
from engine.metadata.column_stats import (
    ColumnStats,
    column_stats_cells,
    column_stats_key,
    column_stats_tombstone_cells,
    columns_to_index,
    decode_column_stats,
    encode_column_stats,
    merge_column_stats,
    parquet_column_stats,
    read_column_stats,
)
from engine.metadata.files_index import read_files_partition
from engine.metadata.record_index import record_index_file_group
from engine.timeline.timeline import Timeline

pytestmark = pytest.mark.interop

META_TABLES = ("cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta")


def _stored(base: Path) -> Iterator[tuple[str, bool, int, str, bytes, bytes]]:
    """(file name, is base file, file group, schema, key, value) of every stored record."""
    folder = base / ".hoodie" / "metadata" / "column_stats"
    for path in sorted(folder.iterdir()):
        if path.name.endswith(".hfile"):
            contents = [path.read_bytes()]
        elif ".log." in path.name:
            blocks = read_log_blocks(path.read_bytes())
            kinds = HoodieLogBlockType.HFILE_DATA_BLOCK
            contents = [b.content for b in blocks if b.block_type is kinds]
        else:
            continue
        group = int(path.name.lstrip(".").split("_")[0].split("-")[2])
        for content in contents:
            hfile = read_hfile(content)
            schema = hfile.file_info["schema"].decode()
            for key, value in hfile.entries:
                yield path.name, path.name.endswith(".hfile"), group, schema, key, value


def _partitions_of_files(base: Path) -> dict[str, str]:
    storage = Storage(str(base))
    listing = read_files_partition(storage, Timeline.load(storage))
    assert listing is not None
    known = {name: p for p, files in listing.partitions.items() for name in files}
    for path in base.rglob("*"):  # files the latest listing no longer names
        if path.is_file() and ".hoodie" not in path.parts:
            known.setdefault(path.name, path.parent.relative_to(base).as_posix())
    return known


@pytest.mark.parametrize("table", META_TABLES)
def test_records_round_trip_and_keys_rebuild(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    base = corpus_table(table)
    partitions = _partitions_of_files(base)
    seen = 0
    for _, _, group, schema, key, value in _stored(base):
        stats = decode_column_stats(value, schema)
        assert encode_column_stats(stats, schema) == value
        partition = partitions[stats.file_name]
        assert column_stats_key(stats.column_name, partition, stats.file_name) == key.decode()
        # the record index's key hash over the partition's two file groups
        assert record_index_file_group(key.decode(), 2) == group
        seen += 1
    assert seen >= 400


def _figures(stats: ColumnStats) -> tuple[object, ...]:
    return (
        stats.min_value,
        stats.max_value,
        stats.value_count,
        stats.null_count,
        stats.total_size,
        stats.total_uncompressed_size,
        stats.value_type,
    )


@pytest.mark.parametrize("table", META_TABLES)
def test_base_file_stats_from_the_footer_equal_hudis(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    base = corpus_table(table)
    timeline = Timeline.load(Storage(str(base)))
    stored, schema = read_column_stats(Storage(str(base)), timeline), timeline.latest_schema()
    assert stored is not None and schema is not None
    columns = columns_to_index(schema)  # Hudi's default choice, as its index definition lists
    compared = 0
    for path in sorted(base.glob("*/*.parquet")):
        if path.name not in stored:
            continue
        assert sorted(stored[path.name]) == sorted(columns)
        mine = parquet_column_stats(path.name, pq.ParquetFile(path).metadata, columns)
        assert {s.column_name: _figures(s) for s in mine} == {
            c: _figures(s) for c, s in stored[path.name].items()
        }
        compared += len(mine)
    assert compared >= 200


def test_a_commits_cells_write_hudis_log_block_hfiles_byte_for_byte(
    corpus_table: Callable[[str], Path],
) -> None:
    """Each log block of the copy-on-write table's column_stats holds the stats of the base
    files its commit wrote: the cells computed from those files' footers, written as an HFile
    with the block's schema and creation time, are the block's bytes."""
    base = corpus_table("cow__v9_txns_simple_meta")
    columns = columns_to_index(str(Timeline.load(Storage(str(base))).latest_schema()))
    folder = base / ".hoodie" / "metadata" / "column_stats"
    rebuilt = 0
    for path in sorted(folder.glob(".col-stats-*.log.*")):
        instant = path.name.split("_")[1].split(".")[0]
        group = int(path.name.split("_")[0].split("-")[2])
        written = [
            (p.parent.name, p.name, pq.ParquetFile(p).metadata)
            for p in sorted(base.glob(f"*/*_{instant}.parquet"))
        ]
        for block in read_log_blocks(path.read_bytes()):
            if block.block_type is not HoodieLogBlockType.HFILE_DATA_BLOCK:
                continue
            stored = read_hfile(block.content)
            schema = stored.file_info["schema"].decode()
            cells = column_stats_cells(written, columns, schema).get(group, [])
            created = int.from_bytes(stored.file_info["hfile.CREATE_TIME_TS"], "big")
            info = callers_file_info(stored)
            assert write_hfile(cells, create_time_ms=created, file_info=info) == block.content
            rebuilt += 1
    assert rebuilt == 24


def test_a_read_of_some_columns_decodes_only_theirs(corpus_table: Callable[[str], Path]) -> None:
    storage = Storage(str(corpus_table("mor_avro__v9_txns_simple_meta")))
    timeline = Timeline.load(storage)
    every = read_column_stats(storage, timeline)
    some = read_column_stats(storage, timeline, columns={"txn_id", "amount"})
    assert every is not None and some is not None and len(some) == len(every) > 10
    for name, by_column in some.items():
        assert by_column == {c: every[name][c] for c in ("txn_id", "amount")}


def test_a_removed_files_tombstones_take_its_keys_and_drop_its_stats(
    corpus_table: Callable[[str], Path],
) -> None:
    base = corpus_table("cow__v9_txns_simple_meta")
    path = sorted(base.glob("*/*.parquet"))[0]
    columns = columns_to_index(str(Timeline.load(Storage(str(base))).latest_schema()))
    schema = next(s for _, _, _, s, _, _ in _stored(base))
    footer = [(path.parent.name, path.name, pq.ParquetFile(path).metadata)]
    live = column_stats_cells(footer, columns, schema)
    gone = column_stats_tombstone_cells([(path.parent.name, path.name)], columns, schema)
    assert {g: [k for k, _ in cells] for g, cells in gone.items()} == {
        g: [k for k, _ in cells] for g, cells in live.items()
    }
    for (_, stored), (_, tombstone) in zip(live[0], gone[0], strict=True):
        before, after = decode_column_stats(stored, schema), decode_column_stats(tombstone, schema)
        assert after.is_deleted and after.min_value is None and after.value_count == -1
        assert merge_column_stats(before, after) == after  # the reader then drops the file
        assert merge_column_stats(after, before) == before  # a file written again comes back
