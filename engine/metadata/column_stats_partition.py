"""The ``column_stats`` partition as the metadata writer keeps it.

- **Initialization**: the stats of every latest base file from its Parquet footer (and of its
  slice's log files, as a data instant indexes them), in
  ``hoodie.metadata.index.column.stats.file.group.count`` file groups (``col-stats-000N-0``;
  Hudi 1.x: 2), for the columns :func:`~engine.metadata.column_stats.configured_columns` picks;
  those columns are recorded in the table's index definition (``sourceFields``), which every
  later write follows.
- **A data instant**: the stats of each base file it wrote, from its footer, and of each log
  file it wrote, from the log's data records read unmerged (sizes 0; a log of delete blocks
  only gets none), as Hudi 1.x's merge-on-read writers index them and Hudi's metadata table
  validator checks them; a clean, or a rollback merged by a metadata compaction already,
  writes the tombstones of the files it deleted.
- **Compaction**: the records of one key merged as readers merge them; a tombstoned file's
  records are dropped, as Hudi's compaction drops deleted records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine import config
from engine.config import HoodieConfig
from engine.fs.filenames import is_base_file, is_log_file
from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from engine.io.hfile import HFile
from engine.io.logfile import (
    HoodieLogBlockType,
    decode_avro_data_block,
    decode_parquet_data_block,
    read_log_blocks,
)
from engine.metadata.column_stats import (
    COLUMN_STATS_PARTITION,
    ColumnStats,
    column_stats_cells,
    column_stats_tombstone_cells,
    configured_columns,
    decode_column_stats,
    encode_column_stats,
    merge_column_stats,
)
from engine.metadata.index_defs import read_index_defs
from engine.metadata.partitions import Cell, GroupCells, MetadataInit, MetadataUpdate
from engine.metadata.slices import METADATA_TABLE_PATH, latest_slices
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSystemView

__all__ = ["ColumnStatsPartition", "column_stats_definition"]


def _file_id(index: int) -> str:
    return f"col-stats-{index:04d}-0"


def column_stats_definition(columns: list[str]) -> dict[str, Any]:
    """The ``column_stats`` index definition Hudi 1.1 records (``index.json``)."""
    return {
        "indexName": COLUMN_STATS_PARTITION,
        "indexType": COLUMN_STATS_PARTITION,
        "indexFunction": COLUMN_STATS_PARTITION,
        "sourceFields": columns,
        "indexOptions": {},
        "version": "V2",
    }


def init_columns(init: MetadataInit) -> list[str]:
    """The columns a new ``column_stats`` partition indexes: the write's options over the
    table's latest schema."""
    schema = Timeline.load(init.storage).latest_schema() or init.props[config.CREATE_SCHEMA.key]
    meta = str(init.props.get(config.POPULATE_META_FIELDS.key, "true")).lower() == "true"
    return configured_columns(init.cfg, schema, meta_fields=meta)


def _columns(storage: Storage) -> list[str]:
    """The columns the table's ``column_stats`` definition names (all of the defaults when the
    table records none)."""
    props = read_properties(storage)
    definition = read_index_defs(storage, props).get(COLUMN_STATS_PARTITION)
    if definition is not None:
        return list(definition["sourceFields"])
    schema = Timeline.load(storage).latest_schema() or props.get(config.CREATE_SCHEMA.key, "")
    return configured_columns(config.HoodieConfig({}), schema)


def _footers(storage: Storage, files: Iterable[tuple[str, str]]) -> list[tuple[str, str, Any]]:
    """(partition, name, Parquet footer) of each base file, and of each log file the footer of
    its data records written as one Parquet file (:func:`_log_footer`); a log file without
    data records is left out."""
    out = []
    for partition, name in files:
        rel = f"{partition}/{name}" if partition else name
        if is_base_file(name):
            with storage.open_input(rel) as f:
                out.append((partition, name, pq.read_metadata(f)))
            continue
        footer = _log_footer(storage, rel)
        if footer is not None:
            out.append((partition, name, footer))
    return out


def _log_footer(storage: Storage, rel: str) -> pq.FileMetaData | None:
    """The footer of a log file's data records (every data block, unmerged) written as one
    Parquet file: its statistics are the records' ranges and counts, which the column stats
    of a log file hold (Hudi's ``getLogFileColumnRangeMetadata``); None without records."""
    tables = []
    for block in read_log_blocks(storage.read_bytes(rel)):
        if block.block_type is HoodieLogBlockType.AVRO_DATA_BLOCK:
            tables.append(decode_avro_data_block(block))
        elif block.block_type is HoodieLogBlockType.PARQUET_DATA_BLOCK:
            tables.append(decode_parquet_data_block(block))
    records = [t for t in tables if t.num_rows]
    if not records:
        return None
    sink = pa.BufferOutputStream()
    pq.write_table(pa.concat_tables(records, promote_options="default"), sink)
    return pq.read_metadata(pa.BufferReader(sink.getvalue()))


def _indexed_files(names: Iterable[str]) -> list[str]:
    return [n for n in names if is_base_file(n) or is_log_file(n)]


def _by_file_id(cells: dict[int, list[Cell]]) -> dict[str, list[Cell]]:
    return {_file_id(group): group_cells for group, group_cells in cells.items()}


def _value_types(props: Mapping[str, str]) -> bool:
    """Index version V2 (typed ranges) on table version 9; V1 on version 8, as Hudi 1.1
    writes each (``HoodieIndexVersion``)."""
    return int(props.get(config.TABLE_VERSION.key, "9")) >= 9


class ColumnStatsPartition:
    """The ``column_stats`` partition (see the module notes)."""

    name = COLUMN_STATS_PARTITION

    def enabled(self, cfg: HoodieConfig, listed: Iterable[str]) -> bool:
        enabled = cfg.get(config.COLUMN_STATS_ENABLE)
        return enabled if enabled is not None else COLUMN_STATS_PARTITION in set(listed)

    def initial_groups(self, init: MetadataInit, schema: str) -> dict[str, list[Cell]]:
        count = init.cfg.get(config.COLUMN_STATS_FILE_GROUP_COUNT)
        files = [
            (s.partition_path, name)
            for s in FileSystemView(init.storage, init.timeline).latest_file_slices()
            for name in [*([s.base_file] if s.base_file else []), *s.log_files]
        ]
        footers = _footers(init.storage, files)
        typed = _value_types(init.props)
        cells = column_stats_cells(footers, init_columns(init), schema, count, value_types=typed)
        return {_file_id(i): cells.get(i, []) for i in range(count)}

    def update_groups(self, update: MetadataUpdate, schema: str) -> dict[str, GroupCells]:
        mdt = update.storage.child(METADATA_TABLE_PATH)
        count = len(latest_slices(mdt, Timeline.load(mdt), COLUMN_STATS_PARTITION))
        columns = _columns(update.storage)
        if update.commit is not None:
            files = [(p, n) for p, names in update.change.added.items()
                     for n in _indexed_files(names)]  # fmt: skip
            typed = _value_types(read_properties(update.storage))
            footers = _footers(update.storage, files)
            cells = column_stats_cells(footers, columns, schema, count, value_types=typed)
        else:
            removed = [(p, n) for p, names in update.change.deleted.items()
                       for n in _indexed_files(names)]  # fmt: skip
            cells = column_stats_tombstone_cells(removed, columns, schema, count)
        return {fid: GroupCells(group_cells) for fid, group_cells in _by_file_id(cells).items()}

    def compacted_cells(
        self, base: HFile | None, logs: list[HFile | list[str]], schema: str, file_name: str
    ) -> list[Cell]:
        merged: dict[bytes, ColumnStats | None] = {}
        for item in [base, *logs] if base else logs:
            if isinstance(item, HFile):
                stored = item.file_info["schema"].decode()
                for key, value in item.entries:
                    stats = decode_column_stats(value, stored)
                    before = merged.get(key)
                    merged[key] = stats if before is None else merge_column_stats(before, stats)
            else:
                merged.update(dict.fromkeys(k.encode() for k in item))
        return [
            (key, encode_column_stats(stats, schema))
            for key, stats in sorted(merged.items())
            if stats is not None and not stats.is_deleted
        ]
