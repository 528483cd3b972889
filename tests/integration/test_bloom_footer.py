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
    """:func:`_assert_footers_of` every base file of the table."""
    return _assert_footers_of(
        path, sorted(p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts), spec
    )


def _assert_footers_of(path: Path, files: list[Path], spec: BloomFilterSpec) -> int:
    """Each of the table's ``files``: its filter is the one built from its keys, holds every
    key, and the min/max keys are exact. Returns how many files were checked."""
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


def _latest_files(path: Path) -> list[Path]:
    """The base files the table's last write made (their names end in its instant time)."""
    files = [p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts]
    last = max(p.stem.rsplit("_", 1)[1] for p in files)
    return sorted(p for p in files if p.stem.endswith(f"_{last}"))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("filter_type", ["DYNAMIC_V0", "SIMPLE"])
def test_a_rewritten_file_group_keeps_its_rows_in_place_and_its_filter_is_hudis(
    spark: Any, tmp_path: Path, table_type: str, filter_type: str
) -> None:
    """Upserts into small files rewrite each file group as Hudi's merge handle does: the stored
    rows in their order (an update in place), then the inserts. The new file's filter goes on
    from the stored one and is, byte for byte, the filter built from all its keys: with rows
    growing and taking keys in turn (3 keys a row, at most 7), after a delete (built again),
    and when the options change between writes (built again, with the new sizes)."""
    path = tmp_path / "t"
    tiny = {
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.bloom.index.filter.type": filter_type,
        "hoodie.index.bloom.num_entries": "3",
        "hoodie.index.bloom.fpp": "0.3",
        "hoodie.bloom.index.filter.dynamic.max.entries": "7",
    }
    spec = BloomFilterSpec(BloomFilterType(filter_type), num_entries=3, fpp=0.3, max_entries=7)
    _write(spark, path, _rows(range(0, 12, 2), 1, "a"), **tiny)
    expected = {f"k{i:03d}": f"a{i}" for i in range(0, 12, 2)}
    for ts, ids in ((2, [2, 4, 13, 15, 17]), (3, [0, 8, 19, 21]), (4, [6, 10, 23])):
        before = {
            p.parent.name: pq.read_table(p, columns=[RECORD_KEY_COLUMN]).column(0).to_pylist()
            for p in _latest_files(path)
        }
        _write(spark, path, [(f"k{i:03d}", f"p{i % 2}", ts, f"u{i}") for i in ids], **tiny)
        expected.update({f"k{i:03d}": f"u{i}" for i in ids})
        for file in _latest_files(path):
            keys = pq.read_table(file, columns=[RECORD_KEY_COLUMN]).column(0).to_pylist()
            stored = before.get(file.parent.name, [])
            assert keys[: len(stored)] == stored, file.name  # stored rows in place
        assert _assert_footers_of(path, _latest_files(path), spec) >= 1
    assert _keys(path) == expected

    deletes = {"hoodie.datasource.write.operation": "delete"}
    _write(spark, path, [(f"k{i:03d}", f"p{i % 2}", 5, "") for i in (0, 13)], **tiny, **deletes)
    assert _assert_footers_of(path, _latest_files(path), spec) >= 1
    del expected["k000"], expected["k013"]
    assert _keys(path) == expected

    wider = {**tiny, "hoodie.index.bloom.num_entries": "4"}
    _write(spark, path, [(f"k{i:03d}", f"p{i % 2}", 6, f"w{i}") for i in (2, 25, 27)], **wider)
    expected.update({f"k{i:03d}": f"w{i}" for i in (2, 25, 27)})
    four = BloomFilterSpec(BloomFilterType(filter_type), num_entries=4, fpp=0.3, max_entries=7)
    assert _assert_footers_of(path, _latest_files(path), four) >= 1
    assert _keys(path) == expected
