"""Workload profile to buckets: which file group each incoming record is written to.

A bucket is one file group written by one task. Hudi's UpsertPartitioner rules::

    updates           -> the bucket of the file group that holds the key
    inserts           -> first the partition's small files (base file size < small.file.limit),
                         each taking  (max.file.size - size) / avg_record_size  records,
                         then new file groups of  max.file.size / avg_record_size  records each
    bulk_insert       -> new file groups only (no small-file packing)

``avg_record_size`` comes from the last commit that wrote data (bytes / records), else from
``hoodie.copyonwrite.record.size.estimate``. Inserts of a partition are spread over its insert
buckets by weight: a record goes to the bucket whose cumulative-weight interval holds the hash
fraction of its record key, so all duplicates of a key meet in one task.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Bucket",
    "BucketPlan",
    "BucketSpec",
    "SizedBaseFile",
    "plan_buckets",
]


@dataclass(frozen=True)
class BucketSpec:
    """The bucket index's buckets: their number and the fields hashed (picklable). Here, below
    the runner interface whose bucket-index write hands it to the tasks, rather than in
    :mod:`engine.write.bucket_index`, which hashes with it."""

    num_buckets: int
    hash_fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SizedBaseFile:
    """A latest base file and its size: the index scans it, the bucketing fills it with inserts
    while it is below the small file limit."""

    file_id: str
    base_file: str
    instant_time: str
    size_bytes: int


@dataclass(frozen=True, slots=True)
class Bucket:
    """One file group this write produces a new base file for.

    Attributes:
        number: Bucket number, unique in the write (the "task partition id" of seqnos/tokens).
        file_id: File group id.
        partition_path: Partition of the file group.
        base_file: Latest base file merged into the new one, ``None`` for a new file group.
        prev_commit: Instant of ``base_file``, or Hudi's literal ``"null"``.
    """

    number: int
    file_id: str
    partition_path: str
    base_file: str | None = None
    prev_commit: str = "null"


@dataclass(frozen=True)
class BucketPlan:
    """Buckets of one write and the insert weights per partition."""

    buckets: dict[str, Bucket] = field(default_factory=dict)  # file_id -> bucket
    # partition -> (cumulative upper bounds in (0, 1], file ids), for inserts
    insert_ranges: dict[str, tuple[tuple[float, ...], tuple[str, ...]]] = field(
        default_factory=dict
    )

    def insert_file_id(self, partition_path: str, fraction: float) -> str:
        """File group of an insert whose key hashes to ``fraction`` in [0, 1)."""
        bounds, file_ids = self.insert_ranges[partition_path]
        i = bisect.bisect_right(bounds, fraction)
        return file_ids[min(i, len(file_ids) - 1)]

    def insert_rows(self) -> list[tuple[str, float, float, str]]:
        """(partition, lower, upper, file_id) per insert bucket, for a range join."""
        rows: list[tuple[str, float, float, str]] = []
        for partition, (bounds, file_ids) in self.insert_ranges.items():
            lower = 0.0
            for k, (upper, file_id) in enumerate(zip(bounds, file_ids, strict=True)):
                top = 2.0 if k == len(bounds) - 1 else upper
                rows.append((partition, lower, top, file_id))
                lower = upper
        return rows


def plan_buckets(
    *,
    update_counts: Mapping[tuple[str, str], int],
    insert_counts: Mapping[str, int],
    latest_base_files: Mapping[tuple[str, str], SizedBaseFile],
    avg_record_size: int,
    max_file_size: int,
    small_file_limit: int,
    pack_small_files: bool,
    new_file_id: Callable[[], str],
    excluded: frozenset[tuple[str, str]] = frozenset(),
) -> BucketPlan:
    """Assign updates and inserts to buckets.

    Args:
        update_counts: (partition, file_id) -> number of incoming records tagged to it.
        insert_counts: partition -> number of incoming records not in the table.
        latest_base_files: (partition, file_id) -> latest base file of every file group of the
            touched partitions.
        avg_record_size: Bytes per record used to size files.
        max_file_size: ``hoodie.parquet.max.file.size``.
        small_file_limit: ``hoodie.parquet.small.file.limit`` (0 disables packing).
        pack_small_files: False for bulk_insert.
        new_file_id: Makes a new file group id.
        excluded: File groups under pending clustering: never small files (Hudi's rule).
    """
    buckets = _Buckets(latest_base_files)
    for (partition, file_id), _count in sorted(update_counts.items()):
        buckets.existing(partition, file_id)

    record_size = max(1, avg_record_size)
    per_bucket = max(1, max_file_size // record_size)
    insert_ranges: dict[str, tuple[tuple[float, ...], tuple[str, ...]]] = {}
    for partition, total in sorted(insert_counts.items()):
        if total <= 0:
            continue
        assigned: list[tuple[str, int]] = []
        if pack_small_files and small_file_limit > 0:
            small = [
                f
                for (p, fid), f in sorted(latest_base_files.items())
                if p == partition and f.size_bytes < small_file_limit and (p, fid) not in excluded
            ]
            assigned = _fill_small_files(
                buckets, partition, small, total, max_file_size, record_size
            )
        remaining = total - sum(n for _, n in assigned)
        if remaining > 0:
            count = math.ceil(remaining / per_bucket)
            share, extra = divmod(remaining, count)
            for k in range(count):
                file_id = buckets.new(partition, new_file_id())
                assigned.append((file_id, share + (1 if k < extra else 0)))
        bounds: list[float] = []
        running = 0
        for _, n in assigned:
            running += n
            bounds.append(running / total)
        insert_ranges[partition] = (tuple(bounds), tuple(fid for fid, _ in assigned))
    return BucketPlan(buckets=buckets.buckets, insert_ranges=insert_ranges)


class _Buckets:
    """The buckets of a plan, numbered in the order they are made."""

    def __init__(self, latest_base_files: Mapping[tuple[str, str], SizedBaseFile]) -> None:
        self.latest_base_files = latest_base_files
        self.buckets: dict[str, Bucket] = {}

    def existing(self, partition: str, file_id: str) -> Bucket:
        """The bucket of an existing file group (made on first use)."""
        if file_id not in self.buckets:
            base = self.latest_base_files.get((partition, file_id))
            self.buckets[file_id] = Bucket(
                number=len(self.buckets),
                file_id=file_id,
                partition_path=partition,
                base_file=base.base_file if base else None,
                prev_commit=base.instant_time if base else "null",
            )
        return self.buckets[file_id]

    def new(self, partition: str, file_id: str) -> str:
        """A bucket for a new file group."""
        self.buckets[file_id] = Bucket(len(self.buckets), file_id, partition)
        return file_id


def _fill_small_files(
    buckets: _Buckets,
    partition: str,
    small: list[SizedBaseFile],
    total: int,
    max_file_size: int,
    record_size: int,
) -> list[tuple[str, int]]:
    """Inserts given to the partition's small files, smallest first, up to the max file size."""
    assigned: list[tuple[str, int]] = []
    remaining = total
    for f in sorted(small, key=lambda s: s.size_bytes):
        take = min((max_file_size - f.size_bytes) // record_size, remaining)
        if take <= 0:
            continue
        buckets.existing(partition, f.file_id)
        assigned.append((f.file_id, take))
        remaining -= take
        if remaining == 0:
            break
    return assigned
