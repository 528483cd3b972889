"""Simple index: which file group holds each incoming record key.

Hudi's SIMPLE index (the Spark default in 0.14) needs no index storage: the meta columns are the
index. An upsert joins its incoming ``(_hoodie_record_key, _hoodie_partition_path)`` against the
``_hoodie_record_key`` / ``_hoodie_file_name`` columns of the latest base files of the partitions it
touches. This module plans that lookup on the driver: which base files can hold any incoming key,
pruned by the per-partition key range of the batch against each file's footer min/max keys. The
join itself runs on Spark (:mod:`engine.spark.jobs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.bucketing import SmallFile
from engine.io.parquet import read_record_key_range
from engine.storage import Storage

__all__ = ["IndexCandidate", "PartitionKeyRange", "plan_index_lookup"]


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


def _overlaps(file_range: tuple[str, str] | None, batch: PartitionKeyRange) -> bool:
    if file_range is None:
        return True
    lo, hi = file_range
    return not (hi < batch.min_key or lo > batch.max_key)


def plan_index_lookup(
    storage: Storage,
    latest: Mapping[tuple[str, str], SmallFile],
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
        rel = f"{partition}/{base.base_file}" if partition else base.base_file
        if _overlaps(read_record_key_range(storage, rel), batch):
            out.append(IndexCandidate(partition, file_id, rel))
    return out
