"""The index: which file group holds each incoming record key.

:class:`KeyIndex` is the one interface every index type plugs into (``hoodie.index.type``):
either the write job tags the batch itself (BUCKET hashes each key to its file group), or the
keys are looked up in the latest base files, and the index says which files may hold a key and
which of the keys a file holds:

    SIMPLE, GLOBAL_SIMPLE   files whose footer key range meets the keys, then their key column
    BLOOM, GLOBAL_BLOOM     the same ranges (``hoodie.bloom.index.prune.by.ranges``), then the
                            keys that pass the footer's bloom filter, then the key column
                            (Hudi's ``HoodieBloomIndex``: ranges, ``mightContain`` in
                            ``HoodieKeyLookupHandle``, then the exact check of the candidates)

The GLOBAL_ ones look keys up in every partition (:mod:`engine.write.global_index`). The meta
columns are the index: no index storage. Every lookup answers the same keys whatever the index
(the exact check comes last); the indexes differ only in what they read.

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

from engine import config
from engine.config import HoodieConfig
from engine.fs.filenames import partition_file_path
from engine.fs.storage import Storage
from engine.fs.view import FileSlice, FileSystemView, list_partition_paths
from engine.io.parquet import read_base_file, read_bloom_filter, read_record_key_range
from engine.model.schema import RECORD_KEY_COLUMN
from engine.timeline.timeline import Timeline
from engine.write.bucketing import SizedBaseFile

__all__ = [
    "IndexCandidate",
    "IndexSource",
    "KeyIndex",
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


@dataclass(frozen=True)
class KeyIndex:
    """``hoodie.index.type`` and its options, as every write path asks them (picklable).

    Attributes:
        index_type: SIMPLE, GLOBAL_SIMPLE, BLOOM, GLOBAL_BLOOM or BUCKET.
        prune_by_ranges: Only files whose footer key range meets the keys are read (always on
            the simple indexes; ``hoodie.bloom.index.prune.by.ranges`` on the bloom ones).
        update_partition_path: Global indexes: a key arriving in a new partition moves there
            (``hoodie.simple.index.update.partition.path`` or
            ``hoodie.bloom.index.update.partition.path``), else it is updated where it is.
    """

    index_type: str = "SIMPLE"
    prune_by_ranges: bool = True
    update_partition_path: bool = True

    @classmethod
    def of(cls, cfg: HoodieConfig) -> KeyIndex:
        """The index the write's options (and the table's properties) choose."""
        index = cls(cfg.get(config.INDEX_TYPE))
        return cls(
            index.index_type,
            prune_by_ranges=not index.uses_bloom or cfg.get(config.BLOOM_INDEX_PRUNE_BY_RANGES),
            update_partition_path=cfg.get(index.update_partition_path_option),
        )

    @property
    def is_global(self) -> bool:
        """A key is unique in the whole table: it is looked up in every partition."""
        return self.index_type in ("GLOBAL_SIMPLE", "GLOBAL_BLOOM")

    @property
    def uses_bloom(self) -> bool:
        """Candidate files are checked with their footer bloom filter before their keys."""
        return self.index_type in ("BLOOM", "GLOBAL_BLOOM")

    @property
    def tags_in_write_job(self) -> bool:
        """The write job finds each key's file group itself (no lookup before it)."""
        return self.index_type == "BUCKET"

    @property
    def update_partition_path_option(self) -> config.ConfigOption[bool]:
        """The option that says whether a global index moves a key to its new partition."""
        if self.uses_bloom:
            return config.BLOOM_INDEX_UPDATE_PARTITION_PATH
        return config.SIMPLE_INDEX_UPDATE_PARTITION_PATH

    def may_hold(self, file_range: tuple[str, str] | None, lo: str, hi: str) -> bool:
        """Whether a file with footer key range ``file_range`` is a candidate for [lo, hi]."""
        return not self.prune_by_ranges or key_range_meets(file_range, lo, hi)

    def stored_keys_among(self, storage: Storage, rel_path: str, keys: pa.Array) -> pa.Array:
        """The ``keys`` one candidate base file stores: on a bloom index only the keys its
        footer filter may contain are checked, and a file none passes is not read. A file
        without a filter (Hudi's lookup would fail on it) has all its keys checked."""
        if self.uses_bloom and len(keys):
            bloom = read_bloom_filter(storage, rel_path)
            if bloom is not None:
                keys = keys.filter(pa.array(bloom.might_contain(keys)))
                if not len(keys):
                    return keys
        return stored_keys_among(storage, rel_path, keys)


def plan_index_lookup(
    storage: Storage,
    latest: Mapping[tuple[str, str], SizedBaseFile],
    ranges: Iterable[PartitionKeyRange],
    index: KeyIndex,
) -> list[IndexCandidate]:
    """Base files of the touched partitions the index must check: those whose footer key
    range meets the batch's (every one when the index does not prune by ranges).

    Args:
        storage: Table storage (footers are read from it).
        latest: (partition, file_id) -> latest base file of the touched partitions.
        ranges: Key range of the incoming records per partition.
        index: The index (whether it prunes by ranges).
    """
    by_partition = {r.partition_path: r for r in ranges}
    out: list[IndexCandidate] = []
    for (partition, file_id), base in sorted(latest.items()):
        batch = by_partition.get(partition)
        if batch is None:
            continue
        rel = partition_file_path(partition, base.base_file)
        file_range = read_record_key_range(storage, rel) if index.prune_by_ranges else None
        if index.may_hold(file_range, batch.min_key, batch.max_key):
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
        index: The index the keys are looked up with; a global one looks them up in every
            partition (:mod:`engine.write.global_index`), not only in the record's own.
    """

    storage: Storage
    timeline: Timeline
    index: KeyIndex = field(default_factory=KeyIndex)

    @property
    def global_index(self) -> bool:
        return self.index.is_global

    @property
    def update_partition_path(self) -> bool:
        """Global index: a key arriving in a new partition moves there (else it is updated in
        its old partition)."""
        return self.index.update_partition_path

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
    return find_stored_keys(source.storage, latest, key_range, distinct, source.index)


def find_stored_keys(
    storage: Storage,
    latest: Mapping[tuple[str, str], SizedBaseFile],
    key_range: PartitionKeyRange,
    distinct: pa.Array,
    index: KeyIndex,
) -> PartitionLookup:
    """The ``distinct`` incoming keys of one partition stored in its ``latest`` base files
    (the candidates ``index`` checks)."""
    candidates = plan_index_lookup(storage, latest, [key_range], index)

    def found_in(candidate: IndexCandidate) -> pa.Array:
        return index.stored_keys_among(storage, candidate.rel_path, distinct)

    # a partition's files are read by one task: overlap their reads (Arrow releases the GIL)
    with ThreadPoolExecutor(max_workers=min(_READ_THREADS, max(1, len(candidates)))) as pool:
        found = list(pool.map(found_in, candidates))
    matches = {c.file_id: keys for c, keys in zip(candidates, found, strict=True) if len(keys)}
    matched = len(pc.unique(pa.concat_arrays(list(matches.values())))) if matches else 0
    return PartitionLookup(key_range, matches, matched)
