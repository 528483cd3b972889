"""The global indexes: a record key is unique in the whole table, whatever its partition.

``hoodie.index.type=GLOBAL_SIMPLE`` (Hudi's ``HoodieGlobalSimpleIndex``) and ``GLOBAL_BLOOM``
(``HoodieGlobalBloomIndex``: the same files, checked by footer key range and bloom filter
first, :class:`engine.write.index.KeyIndex`) look every incoming key up in the latest base files
of **every** partition, not only the record's own. A key found in another partition than the
one it arrives with has moved; ``hoodie.simple.index.update.partition.path`` (GLOBAL_SIMPLE) or
``hoodie.bloom.index.update.partition.path`` (GLOBAL_BLOOM), default true, decide what happens,
as
``HoodieIndexUtils.tagGlobalLocationBackToRecords`` / ``mergeForPartitionUpdatesIfNeeded`` do::

    flag on    the stored record is deleted from its old file group (a delete record: the copy-
               on-write merge drops it, merge-on-read appends a delete block) and the incoming
               record is inserted into its new partition
    flag off   the incoming record updates the stored one in place: it is written to the old
               file group, with the old partition path
    deletes    (operation delete, or a flag-on delete record) reach the key where it lives

Hudi merges a moving record with the stored one before placing it; with
``OverwriteWithLatestAvroPayload`` the incoming record always wins, so placing the incoming record
is that merge. The payloads whose merge can keep the stored record or take its values
(event-time ordering, partial updates) are refused with the flag on rather than placed wrongly.

One lookup task reads the key column of every latest base file once (pruned by footer key
range) and looks the whole batch up, so it also sees a key arriving in two partitions of one
batch: Hudi keeps one of them by precombining across partitions; here the batch is refused,
naming the key (a key is unique in a table under this index).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.errors import ConfigError, RecordKeyError
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.write.index import FileGroupKey, IndexSource, KeyIndex
from engine.write.listing import latest_base_files

__all__ = [
    "FOUND_FILE_ID_COLUMN",
    "STORED_PARTITION_COLUMN",
    "check_index_options",
    "cross_partition_duplicate",
    "lookup_global",
]

STORED_PARTITION_COLUMN = "__stored_partition"
FOUND_FILE_ID_COLUMN = "file_id"
_FOUND_SCHEMA = pa.schema(
    [
        (RECORD_KEY_COLUMN, pa.string()),
        (PARTITION_PATH_COLUMN, pa.string()),
        (STORED_PARTITION_COLUMN, pa.string()),
        (FOUND_FILE_ID_COLUMN, pa.string()),
    ]
)


def check_index_options(index: KeyIndex, payload: str, *, partitioned: bool = True) -> None:
    """Refuse a global index setting this engine would not apply exactly. On a table without
    partitions no record moves, so every payload is applied exactly (Apache Hudi 1.1 gives the
    version 6 tables it creates ``DefaultHoodieRecordPayload``).

    Raises:
        ConfigError: a global index with update.partition.path on and a payload whose merge
            with the stored record decides where a moving record lands, on a partitioned
            table.
    """
    option = index.update_partition_path_option
    if not index.is_global or option is None or not partitioned:
        return
    flag = option.key
    if index.update_partition_path and payload != config.OVERWRITE_WITH_LATEST_PAYLOAD:
        raise ConfigError(
            f"{config.INDEX_TYPE.key}={index.index_type} with {flag}=true moves records between "
            f"partitions only with {config.OVERWRITE_WITH_LATEST_PAYLOAD} (payload {payload} "
            "merges a moving record with the stored one, which is not implemented); set "
            f"{flag}=false to update moved keys in their old partition"
        )


def cross_partition_duplicate(keys: pa.Table) -> tuple[str, str, str] | None:
    """A record key the batch carries in two partitions: (key, partition, other partition)."""
    pairs = keys.select([RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN])
    if pc.count_distinct(pairs[RECORD_KEY_COLUMN]).as_py() == pairs.num_rows:
        return None  # every key once (a batch of distinct keys): a tenth of the grouping's cost
    counts = pairs.group_by(RECORD_KEY_COLUMN).aggregate(
        [(PARTITION_PATH_COLUMN, "count_distinct")]
    )
    several = counts.filter(pc.greater(counts[f"{PARTITION_PATH_COLUMN}_count_distinct"], 1))
    if not several.num_rows:
        return None
    key = sorted(several[RECORD_KEY_COLUMN].to_pylist())[0]
    partitions = pairs.filter(pc.equal(pairs[RECORD_KEY_COLUMN], key))[PARTITION_PATH_COLUMN]
    first, second = sorted(set(partitions.to_pylist()))[:2]
    return key, first, second


def lookup_global(keys: pa.Table, source: IndexSource) -> pa.Table:
    """Where the batch's keys are stored, in any partition.

    Args:
        keys: The batch's ``_hoodie_record_key`` and ``_hoodie_partition_path``.
        source: The table state (a global index source).

    Returns:
        One row per (incoming record key and partition, file group holding the key):
        ``_hoodie_record_key``, ``_hoodie_partition_path`` (incoming), ``__stored_partition``,
        ``file_id``.

    Raises:
        RecordKeyError: the batch carries a key in two partitions.
    """
    duplicate = cross_partition_duplicate(keys)
    if duplicate is not None:
        key, first, second = duplicate
        raise RecordKeyError(
            f"Record key {key!r} arrives in partitions {first!r} and {second!r} of one batch; "
            f"with {config.INDEX_TYPE.key}={source.index.index_type} a key is unique in the table "
            "(deduplicate the batch by key)"
        )
    incoming = (
        keys.select([RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN])
        .group_by([RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN])
        .aggregate([])
    )
    distinct = pc.unique(incoming[RECORD_KEY_COLUMN].combine_chunks())
    if not len(distinct):
        return _FOUND_SCHEMA.empty_table()
    everywhere = latest_base_files(source.timeline, source.all_partitions())
    found = [
        _keys_found(group, hits)
        for group, hits in source.index.find_keys(source.storage, everywhere, distinct).items()
    ]
    if not found:
        return _FOUND_SCHEMA.empty_table()
    joined = incoming.join(pa.concat_tables(found), RECORD_KEY_COLUMN, join_type="inner")
    base_instants = {fid: base.instant_time for (_, fid), base in everywhere.items()}
    return _one_location(joined.select(_FOUND_SCHEMA.names), base_instants)


def _keys_found(group: FileGroupKey, hits: pa.Array) -> pa.Table:
    """The keys one file group stores, with its partition and file id."""
    hits = pc.unique(hits)
    partition, file_id = group
    return pa.table(
        {
            RECORD_KEY_COLUMN: hits,
            STORED_PARTITION_COLUMN: pa.repeat(pa.scalar(partition, pa.string()), len(hits)),
            FOUND_FILE_ID_COLUMN: pa.repeat(pa.scalar(file_id, pa.string()), len(hits)),
        }
    )


def _one_location(found: pa.Table, base_instants: dict[str, str]) -> pa.Table:
    """One stored location per incoming (key, partition).

    A merge-on-read base file still holds a key its log files deleted (a key that moved away,
    until compaction), so a key can be found twice: the live copy is the one in the incoming
    partition, else the one in the newest base file (written when the key moved, after the
    stale base file)."""
    best: dict[tuple[str, str], dict[str, str]] = {}
    for row in found.to_pylist():
        slot = (row[RECORD_KEY_COLUMN], row[PARTITION_PATH_COLUMN])
        rank = _rank(row, base_instants)
        if slot not in best or rank > _rank(best[slot], base_instants):
            best[slot] = row
    rows = [best[k] for k in sorted(best)]
    return pa.Table.from_pylist(rows, schema=_FOUND_SCHEMA) if rows else found.slice(0, 0)


def _rank(row: dict[str, str], base_instants: dict[str, str]) -> tuple[bool, str]:
    stays = row[STORED_PARTITION_COLUMN] == row[PARTITION_PATH_COLUMN]
    return stays, base_instants.get(row[FOUND_FILE_ID_COLUMN], "")
