"""Simple index: which file group holds each incoming record key.

Hudi's SIMPLE index (the Spark default in 0.14) needs no index storage: the meta columns are the
index. An upsert joins its incoming ``(_hoodie_record_key, _hoodie_partition_path)`` against the
``_hoodie_record_key`` column of the latest base files of the partitions it touches, pruned by the
partition's incoming key range against each file's footer min/max keys.

:func:`lookup_partition` is that lookup for one partition, run inside a Spark task with all of the
partition's incoming keys (:mod:`engine.spark.profile`): it profiles the keys (count, distinct,
range) and finds the stored ones. A key stored in two file groups of a partition (inserts without
combining) is found in both, as Hudi's simple index (a left outer join) finds it: an update
reaches every copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from engine.fs.filenames import partition_file_path
from engine.fs.storage import Storage
from engine.fs.view import FileSlice, FileSystemView, list_partition_paths
from engine.io.parquet import read_base_file, read_record_key_range
from engine.model.schema import RECORD_KEY_COLUMN
from engine.timeline.timeline import Timeline
from engine.write.bucketing import SizedBaseFile

__all__ = [
    "IndexCandidate",
    "IndexSource",
    "PartitionKeyRange",
    "PartitionLookup",
    "find_stored_keys",
    "key_range_meets",
    "latest_base_files",
    "lookup_partition",
    "plan_index_lookup",
    "sized_base_file",
    "stored_keys_among",
]

_READ_THREADS = 4  # base files whose keys one lookup task reads at a time


@dataclass(frozen=True, slots=True)
class PartitionKeyRange:
    """Incoming records of one partition: record count, distinct keys and key range."""

    partition_path: str
    count: int
    min_key: str
    max_key: str
    distinct_keys: int = 0


@dataclass(frozen=True, slots=True)
class IndexCandidate:
    """A latest base file whose keys must be joined against the batch."""

    partition_path: str
    file_id: str
    rel_path: str


def key_range_meets(file_range: tuple[str, str] | None, lo: str, hi: str) -> bool:
    """Whether a base file's footer key range (``None``: unknown) meets the keys [lo, hi]."""
    return file_range is None or not (file_range[1] < lo or file_range[0] > hi)


def stored_keys_among(storage: Storage, rel_path: str, keys: pa.Array) -> pa.Array:
    """The record keys of one base file that are among ``keys`` (its key column only)."""
    stored = read_base_file(storage, rel_path, [RECORD_KEY_COLUMN])
    column = stored.column(RECORD_KEY_COLUMN).combine_chunks()
    return column.filter(pc.is_in(column, value_set=keys))


def plan_index_lookup(
    storage: Storage,
    latest: Mapping[tuple[str, str], SizedBaseFile],
    ranges: Iterable[PartitionKeyRange],
) -> list[IndexCandidate]:
    """Base files of the touched partitions whose footer key range meets the batch's.

    Args:
        storage: Table storage (footers are read from it).
        latest: (partition, file_id) -> latest base file of the touched partitions.
        ranges: Key range of the incoming records per partition.
    """
    by_partition = {r.partition_path: r for r in ranges}
    out: list[IndexCandidate] = []
    for (partition, file_id), base in sorted(latest.items()):
        batch = by_partition.get(partition)
        if batch is None:
            continue
        rel = partition_file_path(partition, base.base_file)
        if key_range_meets(read_record_key_range(storage, rel), batch.min_key, batch.max_key):
            out.append(IndexCandidate(partition, file_id, rel))
    return out


def latest_base_files(
    timeline: Timeline, partition_paths: Iterable[str] | None
) -> dict[tuple[str, str], SizedBaseFile]:
    """Latest committed base file of every live file group in ``partition_paths`` (``None``:
    every partition of the table, listed once).

    Returns:
        (partition_path, file_id) -> the base file with its size.
    """
    partitions = None if partition_paths is None else sorted(set(partition_paths))
    if partitions == [] or timeline.last_completed() is None:
        return {}
    view = FileSystemView(timeline.storage, timeline, partition_paths=partitions)
    out: dict[tuple[str, str], SizedBaseFile] = {}
    for file_slice in view.latest_base_files():
        base = sized_base_file(view, file_slice)
        if base is not None:
            out[(file_slice.partition_path, file_slice.file_id)] = base
    return out


def sized_base_file(view: FileSystemView, file_slice: FileSlice) -> SizedBaseFile | None:
    """The slice's base file with its listed size, ``None`` for a slice without one."""
    rel = file_slice.base_file_path
    if rel is None or file_slice.base_file is None:
        return None
    return SizedBaseFile(
        file_id=file_slice.file_id,
        base_file=file_slice.base_file,
        instant_time=file_slice.base_instant_time,
        size_bytes=view.file_size(rel),
    )


@dataclass(frozen=True)
class IndexSource:
    """The table state an index lookup reads (picklable: it travels to Spark tasks).

    Attributes:
        global_index: Keys are looked up in every partition (GLOBAL_SIMPLE,
            :mod:`engine.write.global_index`), not only in the record's own.
        update_partition_path: Global index: a key arriving in a new partition moves there
            (else it is updated in its old partition).
    """

    storage: Storage
    timeline: Timeline
    global_index: bool = False
    update_partition_path: bool = True

    def all_partitions(self) -> list[str]:
        """Every partition of the table (a global lookup reads them all)."""
        return list(list_partition_paths(self.storage))


@dataclass
class PartitionLookup:
    """One partition's incoming keys, profiled and looked up.

    Attributes:
        key_range: Records, distinct keys and key range of the partition's incoming records.
        matches: file_id -> the incoming keys stored in that file group's latest base file.
        matched_keys: Distinct incoming keys found in any file group.
    """

    key_range: PartitionKeyRange
    matches: dict[str, pa.Array] = field(default_factory=dict)
    matched_keys: int = 0


def lookup_partition(
    partition_path: str, record_keys: pa.Array, source: IndexSource | None
) -> PartitionLookup:
    """Profile the incoming keys of one partition and, with a ``source``, find the stored ones
    in the latest base files whose footer key range meets the keys' range."""
    distinct = pc.unique(record_keys)
    bounds = pc.min_max(distinct)
    key_range = PartitionKeyRange(
        partition_path,
        len(record_keys),
        bounds["min"].as_py(),
        bounds["max"].as_py(),
        distinct_keys=len(distinct),
    )
    if source is None or not len(distinct):
        return PartitionLookup(key_range)
    latest = latest_base_files(source.timeline, [partition_path])
    return find_stored_keys(source.storage, latest, key_range, distinct)


def find_stored_keys(
    storage: Storage,
    latest: Mapping[tuple[str, str], SizedBaseFile],
    key_range: PartitionKeyRange,
    distinct: pa.Array,
) -> PartitionLookup:
    """The ``distinct`` incoming keys of one partition stored in its ``latest`` base files
    (those whose footer key range meets ``key_range``)."""
    candidates = plan_index_lookup(storage, latest, [key_range])

    def found_in(candidate: IndexCandidate) -> pa.Array:
        return stored_keys_among(storage, candidate.rel_path, distinct)

    # a partition's files are read by one task: overlap their reads (Arrow releases the GIL)
    with ThreadPoolExecutor(max_workers=min(_READ_THREADS, max(1, len(candidates)))) as pool:
        found = list(pool.map(found_in, candidates))
    matches = {c.file_id: keys for c, keys in zip(candidates, found, strict=True) if len(keys)}
    matched = len(pc.unique(pa.concat_arrays(list(matches.values())))) if matches else 0
    return PartitionLookup(key_range, matches, matched)
