"""Rows of a batch split by partition path (and bucket), each group in arrival order.

A write task receives the records of several partitions (and, on the bucket index, buckets)
mixed; each group is written by one handle, and a key's versions must keep their arrival order
(the payload's merge of equal ordering values takes the later one). One stable sort of a small
integer per row (the partition's rank among the paths, times the bucket count, plus the bucket)
and one ``take`` give every group as a slice; sorting the path strings themselves cost several
times more.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["groups_in_arrival_order"]


def groups_in_arrival_order(
    table: pa.Table, path_column: str, bucket_column: str | None = None
) -> Iterator[tuple[str, int, pa.Table]]:
    """(partition path, bucket, rows) of every group of ``table``, by path then bucket; the
    bucket is 0 and the bucket column absent when ``bucket_column`` is ``None``."""
    if table.num_rows == 0:
        return
    encoded = pc.dictionary_encode(table.column(path_column)).combine_chunks()
    paths = encoded.dictionary.to_pylist()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    rank = np.empty(len(paths), dtype=np.int64)
    rank[np.argsort(np.array(paths, dtype=object), kind="stable")] = np.arange(len(paths))
    if bucket_column is None:
        buckets = np.zeros(table.num_rows, dtype=np.int64)
        rows = table
    else:
        buckets = table.column(bucket_column).to_numpy().astype(np.int64)
        rows = table.drop_columns([bucket_column])
    if len(paths) == 1 and buckets.min() == buckets.max():
        yield str(paths[0]), int(buckets[0]), rows
        return
    width = int(buckets.max()) + 1
    group = rank[codes] * width + buckets
    order = np.argsort(group, kind="stable")
    ordered = rows.take(pa.array(order))
    sorted_groups = group[order]
    starts = np.flatnonzero(sorted_groups[1:] != sorted_groups[:-1]) + 1
    for begin, end in itertools.pairwise([0, *starts.tolist(), len(order)]):
        code = int(codes[order[begin]])
        yield str(paths[code]), int(buckets[order[begin]]), ordered.slice(begin, end - begin)
