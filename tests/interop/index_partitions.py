"""Checks that a table's ``record_index`` and ``column_stats`` partitions agree with its rows.

Shared by the tests that write tables with those partitions: the record index maps exactly the
keys a snapshot read returns, each to the file group the read found it in (``locate`` and the
whole-index read agree), and every latest base file, and log file with data records, has column
stats whose ``_hoodie_record_key`` range is the file's own, and no file gone from storage keeps
stats.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow.compute as pc

from engine.fs.storage import Storage
from engine.io.logfile import HoodieLogBlockType, decode_avro_data_block, read_log_blocks
from engine.io.parquet import read_base_file
from engine.metadata.column_stats import ColumnStats, read_column_stats
from engine.metadata.record_index import locate, read_record_index
from engine.metadata.sync import committed_listing
from engine.model.schema import RECORD_KEY_COLUMN
from engine.read.arrow import read_table
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSlice, FileSystemView


def file_id_of(file_name: str) -> str:
    """The file id of a base or log file name (``_hoodie_file_name``)."""
    return file_name.lstrip(".").split("_")[0]


def record_index_matches_rows(path: str) -> None:
    """``read_record_index`` and ``locate`` give each read row's key its partition and file
    group, and hold no other key."""
    storage = Storage(path)
    timeline = Timeline.load(storage)
    rows = read_table(path).to_pylist()
    expected = {
        r["_hoodie_record_key"]: (r["_hoodie_partition_path"], file_id_of(r["_hoodie_file_name"]))
        for r in rows
    }
    index = read_record_index(storage, timeline)
    assert index is not None
    assert {k: (v.partition_path, v.file_id) for k, v in index.items()} == expected
    located = locate(storage, timeline, [*expected, "never-written-key"])
    assert located is not None
    assert {k: (v.partition_path, v.file_id) for k, v in located.items()} == expected


def _log_record_keys(storage: Storage, rel_path: str) -> list[str]:
    """The keys of a log file's data records, unmerged (what its column stats range over)."""
    keys: list[str] = []
    for block in read_log_blocks(storage.read_bytes(rel_path)):
        if block.block_type is HoodieLogBlockType.AVRO_DATA_BLOCK:
            keys += decode_avro_data_block(block).column(RECORD_KEY_COLUMN).to_pylist()
    return keys


def _log_stats_match(
    storage: Storage, stats: Mapping[str, Mapping[str, ColumnStats]], file_slice: FileSlice
) -> None:
    """Each log file of ``file_slice`` with data records has stats of its records' key range
    and count (sizes 0, as Hudi records them); one of delete blocks only has no range."""
    for name, rel in zip(file_slice.log_files, file_slice.log_file_paths, strict=True):
        keys = _log_record_keys(storage, rel)
        if not keys:  # none of ours; Hudi's writer records empty ranges (docs/format-notes.md)
            assert all(
                (s.min_value, s.max_value, s.value_count) == (None, None, 0)
                for s in stats.get(name, {}).values()
            ), name
            continue
        kept = stats[name][RECORD_KEY_COLUMN]
        assert kept.min_value is not None and kept.max_value is not None
        assert (kept.min_value[1], kept.max_value[1], kept.value_count) == (
            min(keys),
            max(keys),
            len(keys),
        ), name
        assert (kept.total_size, kept.total_uncompressed_size) == (0, 0), name


def column_stats_match_files(path: str) -> None:
    """Every latest base file and log file has column stats, its record key range the file's
    own; a file no longer on storage (cleaned) has none (its stats were tombstoned)."""
    storage = Storage(path)
    timeline = Timeline.load(storage)
    stats = read_column_stats(storage, timeline)
    assert stats is not None
    on_storage = {n for files in committed_listing(storage, timeline).added.values() for n in files}
    assert set(stats) <= on_storage
    for file_slice in FileSystemView(storage, timeline).latest_file_slices():
        _log_stats_match(storage, stats, file_slice)
        if file_slice.base_file is None:
            continue
        keys = read_base_file(storage, file_slice.base_file_path or "", [RECORD_KEY_COLUMN])
        column = keys.column(RECORD_KEY_COLUMN)
        kept = stats[file_slice.base_file][RECORD_KEY_COLUMN]
        assert kept.min_value is not None and kept.max_value is not None
        assert (kept.min_value[1], kept.max_value[1]) == (
            pc.min(column).as_py(),
            pc.max(column).as_py(),
        ), file_slice.base_file
