"""Writing the metadata table (``.hoodie/metadata``) of a table version 8/9 table.

The metadata table is a MERGE_ON_READ table with its own ``hoodie.properties`` and timeline (layout
2). Each maintained partition (:mod:`engine.metadata.partitions`) holds one file group::

    initialization (once)   <init>.deltacommit: <fg>_0-0-0_<init>.hfile (base file: the listing,
                            a bloom filter of its keys) + .<fg>_<init>.log.1_0-0-0 (one empty
                            DELETE_BLOCK, as Hudi opens every file group)
    each data instant <t>   <t>.deltacommit: .<fg>_<t>.log.1_0-0-0, one HFILE_DATA_BLOCK of the
                            records <t> produces
    compaction <c>          <c>.commit: <fg>_0-0-0_<c>.hfile, the merged slice

A deltacommit is written completely, ``requested`` to completed, **before** the data instant
completes (Hudi's ``HoodieBackedTableMetadataWriter.update`` inside the commit): readers (ours,
Hudi's, hudi-rs) use a block only when its instant also completed on the data timeline, so a data
instant that never completes never shows, and the next writer rolls its deltacommit back.
"""

from __future__ import annotations

import datetime as dt
import math
from functools import cache
from pathlib import Path

import pyarrow as pa

from engine import config
from engine.errors import ConfigError
from engine.fs.filenames import format_base_file_name, format_log_file_name
from engine.fs.properties import read_properties, write_partition_metadata
from engine.fs.storage import Storage
from engine.io.bloom_filter import BLOOM_FILTER_KEY, BLOOM_FILTER_TYPE_CODE_KEY, BloomFilterSpec
from engine.io.hfile_writer import DEFAULT_BLOCK_SIZE, write_hfile
from engine.io.logfile import (
    HeaderMetadataType,
    HoodieLogBlockType,
    encode_block,
    encode_delete_block,
)
from engine.metadata.partitions import Cell, GroupCells
from engine.metadata.record_index import RECORD_INDEX_PARTITION
from engine.metadata.record_index_layout import RECORD_INDEX_HFILE_BLOCK_SIZE
from engine.metadata.record_index_writer import delete_records
from engine.metadata.slices import METADATA_TABLE_PATH
from engine.polling import poll
from engine.timeline.commit_metadata import SCHEMA_KEY, HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.instant import Action, new_instant_time
from engine.timeline.timeline import (
    Timeline,
    complete,
    create_requested,
    transition_to_inflight,
)

__all__ = [
    "METADATA_TABLE_PATH",
    "WRITE_TOKEN",
    "base_file_bytes",
    "commit_metadata",
    "hfile_block_size",
    "log_block_hfile",
    "metadata_properties",
    "metadata_schema",
    "new_metadata_instant_time",
    "new_metadata_schema",
    "table_metadata_schema",
    "write_base_file",
    "write_deltacommit",
    "write_initial_file_groups",
    "write_stat",
]

WRITE_TOKEN = "0-0-0"
# Hudi's metadata table writer sizes each base file's dynamic bloom filter for 10,000 keys (the
# corpus's metadata base files carry exactly that filter)
_BLOOM = BloomFilterSpec(num_entries=10_000)
_SCHEMAS = Path(__file__).parent / "schemas"
_BLOCK_CONTENT_VERSION = 3


@cache
def metadata_schema(table_version: int) -> str:
    """The ``HoodieMetadataRecord`` writer schema Hudi writes into every metadata HFile of a
    table version (taken from Hudi 1.0's and 1.1's own files)."""
    if table_version not in (8, 9):
        raise ConfigError(
            f"{config.METADATA_ENABLE.key}=true needs table version 8 or 9 (this table is "
            f"version {table_version}): the metadata table of version 6 is not written"
        )
    return (_SCHEMAS / f"HoodieMetadataRecord.v{table_version}.avsc").read_text(encoding="utf-8")


# a record type only Hudi 1.1's HoodieMetadataRecord has (HoodieMetadataColumnStats.valueType)
_RELEASE_1_1_MARK = "HoodieValueTypeInfo"


def new_metadata_schema(table_version: int) -> str:
    """The writer schema of a new metadata table: Hudi 1.1's in versions 8 and 9 alike, as the
    newest release writing either version writes it (its ``valueType`` stays null in version
    8), so that Hudi 1.1 continuing the table writes the schema already there."""
    metadata_schema(table_version)  # refuses a version without a metadata table
    return metadata_schema(9)


def table_metadata_schema(mdt: Storage) -> str:
    """The writer schema of the metadata table ``mdt``: its table version's, except on a
    version 8 table with nothing written yet or last written with Hudi 1.1's schema (its
    latest deltacommit's ``schema`` shows it), where Hudi 1.1's: Hudi writes one
    ``HoodieMetadataRecord`` schema whatever the table version, and readers that merge a
    file slice's blocks by one schema (hudi-rs) fail on two."""
    version = int(read_properties(mdt)[config.TABLE_VERSION.key])
    if version == 8:
        timeline = Timeline.load(mdt)
        latest = timeline.last_completed()
        if latest is None:  # nothing written yet
            return new_metadata_schema(version)
        written = timeline.read_commit_metadata(latest).schema or ""
        return metadata_schema(9 if _RELEASE_1_1_MARK in written else 8)
    return metadata_schema(version)


def metadata_properties(data_props: dict[str, str]) -> dict[str, str]:
    """The metadata table's ``hoodie.properties`` (as Hudi 1.x writes them)."""
    version = data_props[config.TABLE_VERSION.key]
    return {
        config.TABLE_NAME.key: f"{data_props[config.TABLE_NAME.key]}_metadata",
        config.TABLE_TYPE.key: "MERGE_ON_READ",
        config.TABLE_VERSION.key: version,
        config.TABLE_INITIAL_VERSION.key: version,
        config.TIMELINE_LAYOUT_VERSION.key: "2",
        config.TIMELINE_PATH.key: config.TIMELINE_PATH.default,
        config.TIMELINE_HISTORY_PATH.key: config.TIMELINE_HISTORY_PATH.default,
        config.ARCHIVELOG_FOLDER.key: config.TIMELINE_HISTORY_PATH.default,
        config.PAYLOAD_CLASS.key: "org.apache.hudi.metadata.HoodieMetadataPayload",
        config.KEYGENERATOR_TYPE_TABLE.key: "HOODIE_TABLE_METADATA",
        config.DROP_PARTITION_COLUMNS.key: "false",
        config.RECORD_MERGE_STRATEGY_ID.key: "00000000-0000-0000-0000-000000000000",
        config.RECORDKEY_FIELDS.key: "key",
        config.POPULATE_META_FIELDS.key: "false",
        config.BASE_FILE_FORMAT.key: "HFILE",
        config.RECORD_MERGE_MODE.key: "CUSTOM",
    }


def new_metadata_instant_time(after: str | None) -> str:
    """A new instant time of a metadata table service, later than ``after``; returns once the
    clock has passed it, so no data instant created afterwards takes the same time."""
    instant_time = new_instant_time(after)
    poll(lambda: new_instant_time() > instant_time, seconds=math.inf, every=0.001)
    return instant_time


def _now_ms() -> int:
    return int(dt.datetime.now(dt.UTC).timestamp() * 1000)


def hfile_block_size(partition: str) -> int:
    """The data block size of a partition's HFiles: Hudi's 1 MiB, the record index's
    :data:`~engine.metadata.record_index_layout.RECORD_INDEX_HFILE_BLOCK_SIZE` (why there)."""
    return (
        RECORD_INDEX_HFILE_BLOCK_SIZE if partition == RECORD_INDEX_PARTITION else DEFAULT_BLOCK_SIZE
    )


def log_block_hfile(
    cells: list[Cell], schema: str, create_time_ms: int, block_size: int = DEFAULT_BLOCK_SIZE
) -> bytes:
    """The HFile of an HFILE_DATA_BLOCK: the cells and the record schema, nothing else."""
    info = {"schema": schema.encode()}
    return write_hfile(cells, create_time_ms=create_time_ms, file_info=info, block_size=block_size)


def _log_block(cells: list[Cell], instant_time: str, schema: str, block_size: int) -> bytes:
    hfile = log_block_hfile(cells, schema, _now_ms(), block_size)
    header = {HeaderMetadataType.SCHEMA: schema, HeaderMetadataType.INSTANT_TIME: instant_time}
    return encode_block(HoodieLogBlockType.HFILE_DATA_BLOCK, header, hfile)


def base_file_bytes(
    cells: list[Cell], schema: str, create_time_ms: int, block_size: int = DEFAULT_BLOCK_SIZE
) -> bytes:
    """The bytes of a metadata base file of ``cells``: the HFile with the record schema, the
    key range and a bloom filter of the keys, as Hudi's metadata writer writes it."""
    keys = [key for key, _ in cells]
    bloom = _BLOOM.new_filter()
    bloom.add(pa.array([k.decode() for k in keys], pa.string()))
    entries = bloom.footer_entries()
    info = {
        "schema": schema.encode(),
        "minRecordKey": keys[0] if keys else b"",
        "maxRecordKey": keys[-1] if keys else b"",
        "bloomFilterTypeCode": entries[BLOOM_FILTER_TYPE_CODE_KEY.decode()].encode(),
    }
    meta = {"bloomFilter": entries[BLOOM_FILTER_KEY.decode()].encode()}
    return write_hfile(
        cells, create_time_ms=create_time_ms, file_info=info, meta=meta, block_size=block_size
    )


def write_base_file(
    mdt: Storage, group: tuple[str, str], instant_time: str, cells: list[Cell], schema: str
) -> tuple[str, int]:
    """An HFile base file of ``cells`` (:func:`base_file_bytes`) in file group ``group``
    (partition, file id); (path, size)."""
    data = base_file_bytes(cells, schema, _now_ms(), hfile_block_size(group[0]))
    name = format_base_file_name(group[1], WRITE_TOKEN, instant_time, ".hfile")
    rel = f"{group[0]}/{name}"
    mdt.write_bytes(rel, data)
    return rel, len(data)


def write_stat(
    group: tuple[str, str], rel: str, size: int, *, prev_commit: str, created: bool,
    **counts: object,
) -> HoodieWriteStat:  # fmt: skip
    """The write stat of a metadata table file of file group ``group`` (partition, file id),
    as Hudi's metadata writer reports it."""
    return HoodieWriteStat.of_file(
        file_id=group[1],
        path=rel,
        partition_path=group[0],
        prev_commit=prev_commit,
        size=size,
        elapsed_ms=0,
        created=created,
        **counts,
    )


def commit_metadata(
    stats: list[HoodieWriteStat], schema: str, operation: str, *, compacted: bool = False
) -> HoodieCommitMetadata:
    """A metadata table commit's metadata: its write stats, the record schema, the operation
    Hudi's metadata writer names (``BULK_INSERT_PREPPED``, ``UPSERT_PREPPED``, ``COMPACT``);
    the metadata table's layout codes it when the instant completes."""
    by_partition: dict[str, list[HoodieWriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    return HoodieCommitMetadata(by_partition, compacted, {SCHEMA_KEY: schema}, operation)


def write_initial_file_groups(
    mdt: Storage, partition: str, instant_time: str, groups: dict[str, list[Cell]], schema: str
) -> None:
    """A partition's initialization deltacommit: each file group's base file of its cells and
    first log file with an empty DELETE_BLOCK (as Hudi opens every file group), then the
    completed deltacommit."""
    t = instant_time
    create_requested(mdt, t, Action.DELTA_COMMIT)
    transition_to_inflight(mdt, t, Action.DELTA_COMMIT)
    write_partition_metadata(mdt, partition, t)
    empty_deletes = _BLOCK_CONTENT_VERSION.to_bytes(4, "big") + (1).to_bytes(4, "big") + b"\0"
    stats = []
    for file_id, cells in groups.items():
        rel, size = write_base_file(mdt, (partition, file_id), t, cells, schema)
        log = format_log_file_name(file_id, t, 1, WRITE_TOKEN)
        block = encode_block(
            HoodieLogBlockType.DELETE_BLOCK, {HeaderMetadataType.INSTANT_TIME: t}, empty_deletes
        )
        mdt.write_bytes(f"{partition}/{log}", block)
        n = len(cells)
        stats.append(write_stat((partition, file_id), rel, size, prev_commit="null",
                                created=True, num_writes=n, num_inserts=n))  # fmt: skip
    complete(mdt, t, Action.DELTA_COMMIT, commit_metadata(stats, schema, "BULK_INSERT_PREPPED"))


def _log_file(content: GroupCells, instant_time: str, schema: str, partition: str) -> bytes:
    """One file group's log file of a deltacommit: its HFILE_DATA_BLOCK (when it has cells),
    then a DELETE_BLOCK of the keys it deletes (when any), as Hudi's append handle writes them."""
    size = hfile_block_size(partition)
    data = _log_block(content.cells, instant_time, schema, size) if content.cells else b""
    if content.deletes:
        data += encode_delete_block(delete_records(content.deletes), instant_time, schema)
    return data


def write_deltacommit(
    mdt: Storage, instant_time: str, cells: dict[str, dict[str, GroupCells]], schema: str
) -> None:
    """The deltacommit of data instant ``instant_time``: one log file per file group written
    (``cells``: partition -> file id -> content), then the completed deltacommit."""
    create_requested(mdt, instant_time, Action.DELTA_COMMIT)
    transition_to_inflight(mdt, instant_time, Action.DELTA_COMMIT)
    stats = []
    for partition, groups in cells.items():
        for file_id, content in groups.items():
            if not content.cells and not content.deletes:
                continue
            name = format_log_file_name(file_id, instant_time, 1, WRITE_TOKEN)
            data = _log_file(content, instant_time, schema, partition)
            mdt.write_bytes(f"{partition}/{name}", data)
            n = len(content.cells) + len(content.deletes)
            stats.append(
                write_stat(
                    (partition, file_id),
                    f"{partition}/{name}",
                    len(data),
                    prev_commit=instant_time,
                    created=False,
                    num_writes=n,
                    num_update_writes=len(content.cells),
                    num_deletes=len(content.deletes),
                    log_version=1,
                    log_offset=0,
                    base_file="",
                    log_files=(name,),
                )
            )
    complete(
        mdt, instant_time, Action.DELTA_COMMIT, commit_metadata(stats, schema, "UPSERT_PREPPED")
    )
