"""The index seam: how a write's records get the file groups they go to.

:class:`KeyIndex` is the one interface every index plugs into (``hoodie.index.type``, and the
writes that look nothing up). An index answers the write pipeline
(:mod:`engine.write.pipeline`) with its :class:`Tagging`:

    LOOKUP      the index tags the batch with locations: :meth:`KeyIndex.find_keys` says which
                of the keys each stored file group holds (before the write job, in the profile
                job, or inside the one-job write's tasks)
    WRITE_JOB   the write job tags each record itself (BUCKET hashes the key to its file group)
    NONE        nothing is looked up: every record is an insert (insert, bulk_insert and the
                replace writes on an index that looks keys up)

Indexes (:data:`INDEXES`, by ``hoodie.index.type``)::

    SIMPLE, GLOBAL_SIMPLE   files whose footer key range meets the keys, then their key column
    BLOOM, GLOBAL_BLOOM     the same ranges (``hoodie.bloom.index.prune.by.ranges``), then the
                            keys that pass the footer's bloom filter, then the key column
                            (Hudi's ``HoodieBloomIndex``: ranges, ``mightContain`` in
                            ``HoodieKeyLookupHandle``, then the exact check of the candidates)
    BUCKET                  WRITE_JOB (:mod:`engine.write.bucket_index`)
    RECORD_INDEX            the metadata table's ``record_index`` partition: only the file
                            groups of it the keys hash to are read (Hudi's record level index)
    (no lookup)             NONE (:class:`NoLookupIndex`, from :meth:`KeyIndex.for_operation`)

The GLOBAL_ ones look keys up in every partition (:mod:`engine.write.global_index`). The meta
columns are these indexes' storage. Every lookup answers the same keys whatever the index (the
exact check comes last); the indexes differ only in what they read. An index that keeps its own
storage (the metadata table's record index) is one more LOOKUP class whose :meth:`find_keys`
reads that storage instead of the base files.

:func:`lookup_partition` is the lookup for one partition, run inside a Spark task with all of the
partition's incoming keys (:mod:`engine.spark.profile`): it profiles the keys (count, distinct,
range) and finds the stored ones. A key stored in two file groups of a partition (inserts without
combining) is found in both, as Hudi's simple index (a left outer join) finds it: an update
reaches every copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.config import HoodieConfig, WriteOperation
from engine.errors import HudiError
from engine.fs.filenames import partition_file_path
from engine.fs.storage import Storage
from engine.io.parquet import read_base_file, read_bloom_filter, read_record_key_range
from engine.metadata.record_index import located
from engine.model.schema import RECORD_KEY_COLUMN
from engine.timeline.timeline import Timeline
from engine.view.fs_view import list_partition_paths
from engine.write.bucketing import SizedBaseFile
from engine.write.listing import latest_base_files

__all__ = [
    "INDEXES",
    "BloomIndex",
    "BucketIndex",
    "FileGroupKey",
    "GlobalBloomIndex",
    "GlobalSimpleIndex",
    "IndexSource",
    "KeyIndex",
    "NoLookupIndex",
    "PartitionKeyRange",
    "PartitionLookup",
    "RecordIndex",
    "SimpleIndex",
    "Tagging",
    "key_range_meets",
    "lookup_partition",
    "stored_keys_among",
]

_READ_THREADS = 4  # base files whose keys one lookup task reads at a time

#: (partition path, file id) of a file group
FileGroupKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class PartitionKeyRange:
    """Incoming records of one partition: record count, distinct keys and key range."""

    partition_path: str
    count: int
    min_key: str
    max_key: str
    distinct_keys: int = 0


def key_range_meets(file_range: tuple[str, str] | None, lo: str, hi: str) -> bool:
    """Whether a base file's footer key range (``None``: unknown) meets the keys [lo, hi]."""
    return file_range is None or not (file_range[1] < lo or file_range[0] > hi)


def stored_keys_among(storage: Storage, rel_path: str, keys: pa.Array) -> pa.Array:
    """The record keys of one base file that are among ``keys`` (its key column only)."""
    stored = read_base_file(storage, rel_path, [RECORD_KEY_COLUMN])
    column = stored.column(RECORD_KEY_COLUMN).combine_chunks()
    return column.filter(pc.is_in(column, value_set=keys))


class Tagging(Enum):
    """Who gives a write's records their file groups (see the module notes)."""

    LOOKUP = "lookup"
    WRITE_JOB = "write job"
    NONE = "none"


@dataclass(frozen=True)
class KeyIndex:
    """The index interface (picklable: it travels to Spark tasks); see the module notes.

    Attributes:
        prune_by_ranges: Only files whose footer key range meets the keys are read (always on
            the simple indexes; ``hoodie.bloom.index.prune.by.ranges`` on the bloom ones).
        update_partition_path: Global indexes: a key arriving in a new partition moves there
            (``hoodie.simple.index.update.partition.path`` or
            ``hoodie.bloom.index.update.partition.path``), else it is updated where it is.
    """

    #: ``hoodie.index.type`` of the index
    index_type: ClassVar[str] = ""
    tagging: ClassVar[Tagging] = Tagging.LOOKUP
    #: a key is unique in the whole table: it is looked up in every partition
    is_global: ClassVar[bool] = False
    #: candidate files are checked with their footer bloom filter before their keys
    uses_bloom: ClassVar[bool] = False
    #: global indexes: the option saying whether a key moves to its new partition
    update_partition_path_option: ClassVar[config.ConfigOption[bool] | None] = None
    #: the option saying whether candidate files are pruned by footer key range (else always)
    prune_by_ranges_option: ClassVar[config.ConfigOption[bool] | None] = None
    #: the index finds keys a log file holds (Hudi's ``canIndexLogFiles``): a merge-on-read
    #: write may then append inserts to an existing file group's log files
    #: (:mod:`engine.write.merge_on_read`); an index reading base files only must not, or the
    #: next lookup would miss those keys
    can_index_log_files: ClassVar[bool] = False

    prune_by_ranges: bool = True
    update_partition_path: bool = True

    @staticmethod
    def of(cfg: HoodieConfig) -> KeyIndex:
        """The index the write's options (and the table's properties) choose."""
        return INDEXES[cfg.get(config.INDEX_TYPE)].configured(cfg)

    @classmethod
    def configured(cls, cfg: HoodieConfig) -> KeyIndex:
        """This index with the options of ``cfg`` it reads."""
        prune, flag = cls.prune_by_ranges_option, cls.update_partition_path_option
        return cls(
            prune_by_ranges=cfg.get(prune) if prune is not None else True,
            update_partition_path=cfg.get(flag) if flag is not None else True,
        )

    def for_operation(self, operation: WriteOperation) -> KeyIndex:
        """The index a write of ``operation`` runs with: an operation that looks no key up
        (insert, bulk_insert, replace writes) on an index that looks keys up has nothing to
        tag (:class:`NoLookupIndex`); the bucket index still places every record itself."""
        if self.tagging is Tagging.LOOKUP and not operation.looks_up_keys:
            return NoLookupIndex()
        return self

    @property
    def looks_up(self) -> bool:
        """The index tags the batch by looking its keys up (:meth:`find_keys`)."""
        return self.tagging is Tagging.LOOKUP

    @property
    def tags_in_write_job(self) -> bool:
        """The write job finds each key's file group itself (no lookup before it)."""
        return self.tagging is Tagging.WRITE_JOB

    def may_hold(self, file_range: tuple[str, str] | None, lo: str, hi: str) -> bool:
        """Whether a file with footer key range ``file_range`` is a candidate for [lo, hi]."""
        return not self.prune_by_ranges or key_range_meets(file_range, lo, hi)

    def stored_keys_among(self, storage: Storage, rel_path: str, keys: pa.Array) -> pa.Array:
        """The ``keys`` one candidate base file stores (its key column)."""
        return stored_keys_among(storage, rel_path, keys)

    def prefetch(self, storage: Storage, keys: pa.Array) -> None:
        """Look the whole batch's distinct ``keys`` up before the write's tasks ask for their
        parts, when the tasks run in this process: an index whose lookup costs the same for
        few keys as for many (its storage is read per question) answers them all at once.
        The base-file indexes read per candidate file and gain nothing: a no-op."""

    def find_keys(
        self,
        storage: Storage,
        files: Mapping[FileGroupKey, SizedBaseFile],
        keys: pa.Array,
        *,
        key_ranges: Mapping[str, tuple[str, str] | None] | None = None,
    ) -> dict[FileGroupKey, pa.Array]:
        """Which of the distinct ``keys`` each file group of ``files`` (latest base files)
        stores; file groups storing none are left out (NONE: none is looked for).

        The lookup of the indexes whose storage is the base files' meta columns: the files
        whose footer key range meets the keys (:meth:`may_hold`), then each candidate's
        :meth:`stored_keys_among`. An index with storage of its own overrides it.

        Args:
            storage: Table storage.
            files: The file groups to look in, with their latest base file.
            keys: Distinct incoming record keys.
            key_ranges: Footer key ranges already read (relative path -> range); a file not
                in it counts as any range. ``None``: the index reads the footers it needs.
        """
        if self.tagging is Tagging.WRITE_JOB:
            raise HudiError(f"Index {self.index_type} looks no key up: its write job tags")
        if self.tagging is Tagging.NONE or not len(keys) or not files:
            return {}
        bounds = pc.min_max(keys)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        candidates: list[tuple[FileGroupKey, str]] = []
        for group, base in sorted(files.items()):
            rel = partition_file_path(group[0], base.base_file)
            file_range = None
            if self.prune_by_ranges and key_ranges is not None:
                file_range = key_ranges.get(rel)
            elif self.prune_by_ranges:
                file_range = read_record_key_range(storage, rel)
            if self.may_hold(file_range, lo, hi):
                candidates.append((group, rel))

        def found_in(candidate: tuple[FileGroupKey, str]) -> pa.Array:
            return self.stored_keys_among(storage, candidate[1], keys)

        # overlap the files' reads (Arrow releases the GIL)
        with ThreadPoolExecutor(max_workers=min(_READ_THREADS, max(1, len(candidates)))) as pool:
            found = list(pool.map(found_in, candidates))
        return {c[0]: hits for c, hits in zip(candidates, found, strict=True) if len(hits)}


@dataclass(frozen=True)
class SimpleIndex(KeyIndex):
    """``SIMPLE``: the key column of the files whose footer key range meets the keys."""

    index_type = "SIMPLE"


@dataclass(frozen=True)
class BloomIndex(SimpleIndex):
    """``BLOOM``: key ranges, then each candidate's footer bloom filter, then its key column."""

    index_type = "BLOOM"
    uses_bloom = True
    prune_by_ranges_option = config.BLOOM_INDEX_PRUNE_BY_RANGES

    def stored_keys_among(self, storage: Storage, rel_path: str, keys: pa.Array) -> pa.Array:
        """Only the keys the file's footer filter may contain are checked, and a file none
        passes is not read. A file without a filter (Hudi's lookup would fail on it) has all
        its keys checked."""
        if len(keys):
            bloom = read_bloom_filter(storage, rel_path)
            if bloom is not None:
                keys = keys.filter(pa.array(bloom.might_contain(keys)))
                if not len(keys):
                    return keys
        return stored_keys_among(storage, rel_path, keys)


@dataclass(frozen=True)
class GlobalSimpleIndex(SimpleIndex):
    """``GLOBAL_SIMPLE``: SIMPLE over every partition (:mod:`engine.write.global_index`)."""

    index_type = "GLOBAL_SIMPLE"
    is_global = True
    update_partition_path_option = config.SIMPLE_INDEX_UPDATE_PARTITION_PATH


@dataclass(frozen=True)
class GlobalBloomIndex(BloomIndex):
    """``GLOBAL_BLOOM``: BLOOM over every partition (:mod:`engine.write.global_index`)."""

    index_type = "GLOBAL_BLOOM"
    is_global = True
    update_partition_path_option = config.BLOOM_INDEX_UPDATE_PARTITION_PATH


@dataclass(frozen=True)
class BucketIndex(KeyIndex):
    """``BUCKET``: the write job hashes each key to its bucket's file group
    (:mod:`engine.write.bucket_index`, :mod:`engine.spark.bucket_write`)."""

    index_type = "BUCKET"
    tagging = Tagging.WRITE_JOB
    can_index_log_files = True  # the key's hash is its file group


@dataclass(frozen=True)
class RecordIndex(KeyIndex):
    """``RECORD_INDEX``: a global index whose storage is the metadata table's ``record_index``
    partition (:func:`engine.metadata.record_index.locate`), so a lookup reads the index file
    groups the keys hash to, whatever the table's size; no base file is opened. The write
    keeps the partition current (:mod:`engine.metadata.record_index_partition`)."""

    index_type = "RECORD_INDEX"
    is_global = True
    update_partition_path_option = config.RECORD_INDEX_UPDATE_PARTITION_PATH
    can_index_log_files = True  # the partition indexes the keys of log data blocks too

    @classmethod
    def configured(cls, cfg: HoodieConfig) -> KeyIndex:
        """No footer is read: the index says where each key is."""
        flag = cfg.get(config.RECORD_INDEX_UPDATE_PARTITION_PATH)
        return cls(prune_by_ranges=False, update_partition_path=flag)

    def prefetch(self, storage: Storage, keys: pa.Array) -> None:
        """Every index file group a key hashes to is read once per question: asked once for
        the whole batch, the tasks' questions are answered from this process's answers."""
        if len(keys):
            located(storage, keys.to_pylist())

    def find_keys(
        self,
        storage: Storage,
        files: Mapping[FileGroupKey, SizedBaseFile],
        keys: pa.Array,
        **_: object,  # footer key ranges: the record index reads no footer
    ) -> dict[FileGroupKey, pa.Array]:
        """The keys the record index places in each file group of ``files``.

        Raises:
            HudiError: The table has no metadata table or no committed ``record_index``
                partition (it is built at the start of a write with this index).
        """
        if not len(keys) or not files:
            return {}
        where_is = located(storage, keys.to_pylist())
        if where_is is None:
            raise HudiError(
                f"{config.INDEX_TYPE.key}=RECORD_INDEX: the table at {storage.base_path} has no "
                "metadata table to look keys up in"
            )
        found: dict[FileGroupKey, list[str]] = {}
        for key, where in where_is.items():
            group = (where.partition_path, where.file_id)
            if group in files:
                found.setdefault(group, []).append(key)
        return {group: pa.array(hits, pa.string()) for group, hits in sorted(found.items())}


@dataclass(frozen=True)
class NoLookupIndex(KeyIndex):
    """A write that looks no key up: every record is an insert, nothing is tagged."""

    tagging = Tagging.NONE


#: every ``hoodie.index.type``: a new index is one class here
INDEXES: Mapping[str, type[KeyIndex]] = {
    cls.index_type: cls
    for cls in (
        SimpleIndex,
        GlobalSimpleIndex,
        BloomIndex,
        GlobalBloomIndex,
        BucketIndex,
        RecordIndex,
    )
}


@dataclass(frozen=True)
class IndexSource:
    """The table state an index lookup reads (picklable: it travels to Spark tasks).

    Attributes:
        index: The index the keys are looked up with; a global one looks them up in every
            partition (:mod:`engine.write.global_index`), not only in the record's own.
    """

    storage: Storage
    timeline: Timeline
    index: KeyIndex = field(default_factory=SimpleIndex)

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
    found = source.index.find_keys(source.storage, latest, distinct)
    matches = {file_id: keys for (_, file_id), keys in found.items()}
    matched = len(pc.unique(pa.concat_arrays(list(matches.values())))) if matches else 0
    return PartitionLookup(key_range, matches, matched)
