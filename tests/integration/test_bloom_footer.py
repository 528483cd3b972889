"""Every base file the engine writes carries Hudi's bloom footer: bulk_insert, insert, upsert
(the profile write and the one-job write), the global index, the bucket index,
insert_overwrite and merge-on-read compaction, in table versions 6, 8 and 9. Each file's
filter holds each of its record keys and is the filter built from its keys in row order (so
the bytes are Hudi's), with the type and sizes the options ask for; hudi-rs reads the rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from engine import write_hudi
from engine.config import BloomFilterType
from engine.fs.storage import Storage
from engine.io.bloom_filter import BLOOM_FILTER_KEY, BLOOM_FILTER_TYPE_CODE_KEY, BloomFilterSpec
from engine.io.parquet import read_bloom_filter
from engine.model.schema import RECORD_KEY_COLUMN
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

pytestmark = pytest.mark.spark


def _write(spark: Any, path: Path, rows: list[tuple[Any, ...]], **extra: str) -> None:
    write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), write_options("bf", extra))


def _rows(ids: range, ts: int, tag: str) -> list[tuple[Any, ...]]:
    return [(f"k{i:03d}", f"p{i % 2}", ts, f"{tag}{i}") for i in ids]


def _assert_footers(path: Path, spec: BloomFilterSpec) -> int:
    """Every base file of the table: its filter is the one built from its keys, holds every
    key, and the min/max keys are exact. Returns how many files were checked."""
    files = sorted(p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts)
    storage = Storage(str(path))
    for file in files:
        footer = pq.read_metadata(file).metadata
        keys = pq.read_table(file, columns=[RECORD_KEY_COLUMN]).column(0)
        expected = spec.new_filter()
        expected.add(keys)
        assert (
            footer[BLOOM_FILTER_KEY]
            == expected.footer_entries()[BLOOM_FILTER_KEY.decode()].encode()
        )
        code = footer.get(BLOOM_FILTER_TYPE_CODE_KEY)
        assert code == (None if spec.filter_type is BloomFilterType.SIMPLE else b"DYNAMIC_V0")
        decoded = read_bloom_filter(storage, str(file.relative_to(path)))
        assert decoded is not None and decoded.might_contain(keys).all()
        assert decoded.vector_size == spec.vector_size and decoded.num_hashes == spec.num_hashes
        values = keys.to_pylist()
        assert footer[b"hoodie_min_record_key"].decode() == min(values)
        assert footer[b"hoodie_max_record_key"].decode() == max(values)
    return len(files)


def _keys(path: Path) -> dict[str, str]:
    return {r["id"]: r["v"] for r in hudi_rs_rows(path)}


@pytest.mark.parametrize("version", ["6", "8", "9"])
def test_copy_on_write_paths_write_hudis_footer(spark: Any, tmp_path: Path, version: str) -> None:
    path = tmp_path / "t"
    v = {"hoodie.write.table.version": version}
    op = "hoodie.datasource.write.operation"
    _write(
        spark,
        path,
        _rows(range(6), 1, "a"),
        **v,
        **{op: "bulk_insert"},
    )
    _write(
        spark,
        path,
        _rows(range(6, 9), 1, "b"),
        **v,
        **{op: "insert"},
    )
    _write(spark, path, _rows(range(4, 12), 2, "c"), **v)  # upsert: the one-job write
    _write(spark, path, _rows(range(10, 14), 3, "d"), **v, **{"hoodie.index.type": "GLOBAL_SIMPLE"})
    _write(
        spark,
        path,
        _rows(range(2), 4, "e"),
        **v,
        **{op: "insert_overwrite"},
    )
    assert _assert_footers(path, BloomFilterSpec()) >= 5
    # insert_overwrite of k000 (p0) and k001 (p1) replaced both partitions
    assert _keys(path) == {"k000": "e0", "k001": "e1"}


@pytest.mark.parametrize("version", ["6", "9"])
def test_merge_on_read_bucket_index_and_compaction_write_the_options_filter(
    spark: Any, tmp_path: Path, version: str
) -> None:
    path = tmp_path / "t"
    opts = {
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "2",
        "hoodie.bloom.index.filter.type": "SIMPLE",
        "hoodie.index.bloom.num_entries": "500",
        "hoodie.index.bloom.fpp": "0.001",
    }
    simple = BloomFilterSpec(BloomFilterType.SIMPLE, num_entries=500, fpp=0.001)
    _write(spark, path, _rows(range(8), 1, "a"), **opts)
    _write(spark, path, _rows(range(4, 8), 2, "b"), **opts)  # updates to logs, then compaction
    timeline = sorted(p.name for p in (path / ".hoodie").rglob("*.commit"))
    assert timeline, "the inline compaction completed"
    assert _assert_footers(path, simple) >= 4
    assert _keys(path) == {f"k{i:03d}": ("b" if i >= 4 else "a") + str(i) for i in range(8)}
    bucket = tmp_path / "bucket"
    _write(spark, bucket, _rows(range(8), 1, "a"), **opts, **{"hoodie.index.type": "BUCKET"})
    assert _assert_footers(bucket, simple) >= 2
