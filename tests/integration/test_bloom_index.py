"""``hoodie.index.type=BLOOM`` and ``GLOBAL_BLOOM``: candidate files by footer key range
(``hoodie.bloom.index.prune.by.ranges``), then the footer's bloom filter, then the exact key
check; the global one moves keys between partitions as ``hoodie.bloom.index.update.partition.path``
says. Copy-on-write and merge-on-read, the profile write and the one-job write; hudi-rs reads
every table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import write_hudi
from engine.config import parse_options
from engine.errors import ConfigError
from engine.fs.storage import Storage
from engine.io.bloom_filter import BloomFilterSpec
from engine.model.schema import RECORD_KEY_COLUMN
from engine.write.bucketing import SizedBaseFile
from engine.write.index import BloomIndex, KeyIndex, SimpleIndex
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options


def _file_with_filter_of(path: Path, stored: list[str], in_filter: list[str]) -> None:
    """A base file storing ``stored`` whose footer filter holds ``in_filter`` instead."""
    bloom = BloomFilterSpec().new_filter()
    bloom.add(pa.array(in_filter))
    footer = {
        **bloom.footer_entries(),
        "hoodie_min_record_key": min(stored),
        "hoodie_max_record_key": max(stored),
    }
    table = pa.table({RECORD_KEY_COLUMN: stored}).replace_schema_metadata(footer)
    pq.write_table(table, path)


def bloom_of(keys: list[str]) -> dict[str, str]:
    bloom = BloomFilterSpec().new_filter()
    bloom.add(pa.array(keys))
    return bloom.footer_entries()


def test_bloom_index_reads_only_keys_its_filter_passes_and_ranges_prune(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    _file_with_filter_of(tmp_path / "f1.parquet", ["k1", "k2"], ["k2", "k9"])
    keys = pa.array(["k1", "k2", "k9"])
    simple, bloom = SimpleIndex(), KeyIndex.of(parse_options({"hoodie.index.type": "bloom"}))
    assert isinstance(bloom, BloomIndex)
    assert simple.stored_keys_among(storage, "f1.parquet", keys).to_pylist() == ["k1", "k2"]
    # k1 is stored but the filter says no: the bloom index never asks the file about it; k9
    # passes the filter (a false positive) and the exact check drops it
    assert bloom.stored_keys_among(storage, "f1.parquet", keys).to_pylist() == ["k2"]
    assert bloom.stored_keys_among(storage, "f1.parquet", pa.array(["k1"])).to_pylist() == []

    latest = {("", "g1"): SizedBaseFile("g1", "f1.parquet", "001", 1)}
    found = bloom.find_keys(storage, latest, keys)
    assert {g: hits.to_pylist() for g, hits in found.items()} == {("", "g1"): ["k2"]}
    # a file whose footer range [k1, k2] does not cover k9 is never read for it: shown by a
    # file that does store k9 (its footer range says otherwise)
    footer = {**bloom_of(["k9"]), "hoodie_min_record_key": "k1", "hoodie_max_record_key": "k2"}
    pq.write_table(
        pa.table({RECORD_KEY_COLUMN: ["k9"]}).replace_schema_metadata(footer),
        tmp_path / "f2.parquet",
    )
    lying = {("", "g2"): SizedBaseFile("g2", "f2.parquet", "001", 1)}
    assert bloom.find_keys(storage, lying, pa.array(["k9"])) == {}
    no_pruning = KeyIndex.of(
        parse_options({"hoodie.index.type": "BLOOM", "hoodie.bloom.index.prune.by.ranges": "false"})
    )
    found = no_pruning.find_keys(storage, lying, pa.array(["k9"]))
    assert {g: hits.to_pylist() for g, hits in found.items()} == {("", "g2"): ["k9"]}
    moves = KeyIndex.of(
        parse_options(
            {"hoodie.index.type": "GLOBAL_BLOOM", "hoodie.bloom.index.update.partition.path": "0"}
        )
    )
    assert moves.is_global and moves.uses_bloom and not moves.update_partition_path


def _write(spark: Any, path: Path, rows: list[tuple[Any, ...]], **extra: str) -> None:
    write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), write_options("bl", extra))


def _rows(path: Path) -> list[tuple[str, str, str]]:
    return sorted((r["id"], r["_hoodie_partition_path"], r["v"]) for r in hudi_rs_rows(path))


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_bloom_indexes_update_stored_keys_and_move_keys_between_partitions(
    spark: Any, tmp_path: Path, table_type: str
) -> None:
    tiny = {  # filters that pass most absent keys: the exact check decides
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.index.bloom.num_entries": "2",
        "hoodie.index.bloom.fpp": "0.5",
        "hoodie.parquet.small.file.limit": "0",  # a missed update would be a duplicate
    }
    bloom = tmp_path / "bloom"
    first = [(f"k{i}", f"p{i % 2}", 1, f"a{i}") for i in range(6)]
    _write(spark, bloom, first, **tiny, **{"hoodie.index.type": "BLOOM"})  # profile write
    _write(  # one-job write: k1 updated, k7 new, k2 arrives in p1 (BLOOM: a new key there)
        spark,
        bloom,
        [("k1", "p1", 2, "b1"), ("k7", "p1", 2, "b7"), ("k2", "p1", 2, "b2")],
        **tiny,
        **{"hoodie.index.type": "BLOOM"},
    )
    expected = {(f"k{i}", f"p{i % 2}", f"a{i}") for i in range(6)} - {("k1", "p1", "a1")}
    expected |= {("k1", "p1", "b1"), ("k7", "p1", "b7"), ("k2", "p1", "b2")}
    assert _rows(bloom) == sorted(expected)

    moved = tmp_path / "global"
    flag = "hoodie.bloom.index.update.partition.path"
    glob = {**tiny, "hoodie.index.type": "GLOBAL_BLOOM"}
    _write(spark, moved, first, **glob)
    _write(spark, moved, [("k2", "p1", 2, "b2"), ("k3", "p1", 2, "b3")], **glob)  # moves k2
    _write(spark, moved, [("k4", "p1", 3, "c4")], **glob, **{flag: "false"})  # k4 stays in p0
    expected = {(f"k{i}", f"p{i % 2}", f"a{i}") for i in (0, 1, 5)}
    expected |= {("k2", "p1", "b2"), ("k3", "p1", "b3"), ("k4", "p0", "c4")}
    assert _rows(moved) == sorted(expected)
    # a payload that merges a moving record with the stored one is refused, naming the flag
    merging = {"hoodie.datasource.write.payload.class": "DefaultHoodieRecordPayload"}
    with pytest.raises(ConfigError, match=r"hoodie\.bloom\.index\.update\.partition\.path=true"):
        _write(spark, tmp_path / "refused", [("k5", "p0", 4, "d5")], **glob, **merging)
    assert not (tmp_path / "refused" / ".hoodie").exists()
