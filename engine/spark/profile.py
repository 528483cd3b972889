"""The first Spark job of a write: profile the batch per partition and look its keys up.

One job, before anything is written::

    keyed ──select(partition, key, bad key)──repartition(partition)──mapInArrow──► persisted rows
        per partition (engine.write.index.lookup_partition): a profile row (records, distinct keys,
        key range, bad key flag, keys found), a count row per file group holding some of the
        keys, and the (key, file group) rows of the keys found

The driver collects the profile and count rows (a few per partition): the touched partitions,
the null-key check and the workload profile the buckets are planned from. The found keys stay
in Spark's cache for the write job, which joins the batch with them; the table's keys are read
by the tasks of the touched partitions only and never reach the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine.model.keygen import KeyGenSpec
from engine.model.merge import DELETE_RECORD_COLUMN
from engine.model.row_checks import (
    BAD_KEY_COLUMN,
    NULL_ORDERING_COLUMN,
    first_null_ordering,
    refuse,
)
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.spark.jobs import FILE_ID_COLUMN, run_job
from engine.spark.schema import spark_struct_of
from engine.write.global_index import (
    FOUND_FILE_ID_COLUMN,
    STORED_PARTITION_COLUMN,
    lookup_global,
)
from engine.write.index import IndexSource, PartitionKeyRange, lookup_partition

__all__ = ["BatchProfile", "LocatedRecords", "profile_batch"]

_KIND, _PARTITION, _KEY = "__kind", "__p", "__k"
_PROFILE, _GROUP, _FOUND, _NULL_ORDERING = "p", "g", "k", "o"
# the job's rows: profile rows fill n .. bad, count rows n, found-key rows the key
_ARROW_SCHEMA = pa.schema(
    [
        (_KIND, pa.string()),
        (_PARTITION, pa.string()),
        (_KEY, pa.string()),
        (FILE_ID_COLUMN, pa.string()),
        ("n", pa.int64()),
        ("distinct_keys", pa.int64()),
        ("matched", pa.int64()),
        ("lo", pa.string()),
        ("hi", pa.string()),
        ("bad", pa.bool_()),
        (STORED_PARTITION_COLUMN, pa.string()),
    ]
)
# matches joined back onto the batch by broadcast up to this many keys, else by a shuffle join
_BROADCAST_MATCHES = 2_000_000


@dataclass(frozen=True)
class LocatedRecords:
    """The batch tagged with its file groups, and the workload profile buckets are planned from.

    Attributes:
        tagged: The batch plus ``__file_id`` (null for inserts); lazy, the write job reads the
            batch and joins it with the cached keys found.
        update_counts: (partition, file_id) -> stored keys of the file group the batch updates.
        insert_counts: partition -> incoming keys not in the table.
        batch: The keyed batch ``tagged`` was made from (its size is the write job's: Spark
            estimates a join as the product of its sides).
    """

    tagged: DataFrame
    update_counts: dict[tuple[str, str], int]
    insert_counts: dict[str, int]
    batch: DataFrame


@dataclass
class BatchProfile:
    """What the first job of a write learned about its batch.

    Attributes:
        ranges: Records, distinct keys and key range per touched partition.
        update_counts: (partition, file_id) -> incoming keys stored in that file group.
        matched: partition -> distinct incoming keys stored in the table.
        indexed: Whether the keys were looked up (upserts and deletes into a table with data).
    """

    ranges: list[PartitionKeyRange]
    update_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    matched: dict[str, int] = field(default_factory=dict)
    indexed: bool = False
    _rows: DataFrame | None = None
    global_index: bool = False
    update_partition_path: bool = True

    def locate(
        self, keyed: DataFrame, *, existing_only: bool = False, key_prefix: str = ""
    ) -> LocatedRecords:
        """The batch tagged with the file group of each stored key (null for inserts).

        ``existing_only`` (deletes) keeps only the records whose key is stored; ``key_prefix``
        is put in front of every record key (the instant time of auto-generated keys).
        """
        if key_prefix:
            keyed = keyed.withColumn(
                RECORD_KEY_COLUMN, F.concat(F.lit(key_prefix), F.col(RECORD_KEY_COLUMN))
            )
        if existing_only:
            inserts: dict[str, int] = {}
        elif self.indexed:
            inserts = {
                r.partition_path: r.distinct_keys - self.matched.get(r.partition_path, 0)
                for r in self.ranges
                if r.distinct_keys > self.matched.get(r.partition_path, 0)
            }
        else:  # no index: duplicates of a key are kept unless inserts combine
            inserts = {r.partition_path: r.count for r in self.ranges if r.count}
        if self._rows is None:  # no key is stored
            tagged = keyed.withColumn(FILE_ID_COLUMN, F.lit(None).cast("string"))
            return LocatedRecords(tagged.limit(0) if existing_only else tagged, {}, inserts, keyed)
        found = self._rows.filter(F.col(_KIND) == _FOUND).select(
            _KEY, _PARTITION, FILE_ID_COLUMN, STORED_PARTITION_COLUMN
        )
        if sum(self.update_counts.values()) <= _BROADCAST_MATCHES:
            found = F.broadcast(found)
        cond = (keyed[RECORD_KEY_COLUMN] == found[_KEY]) & (
            keyed[PARTITION_PATH_COLUMN] == found[_PARTITION]
        )
        tagged = keyed.join(found, cond, "inner" if existing_only else "left")
        if self.global_index:
            moving = not existing_only and self.update_partition_path
            tagged = _place_moved_keys(tagged, moving=moving)
        tagged = tagged.drop(_KEY, _PARTITION, STORED_PARTITION_COLUMN)
        return LocatedRecords(tagged, dict(self.update_counts), inserts, keyed)

    def release(self) -> None:
        """Drop the cached keys (after the write job)."""
        if self._rows is not None:
            self._rows.unpersist()


def _place_moved_keys(tagged: DataFrame, *, moving: bool) -> DataFrame:
    """Records whose key the global index found in another partition: updated in place in the
    old partition, or (``moving``) inserted into the new one while a delete record removes the
    key from its old file group (:mod:`engine.write.global_index`)."""
    stored = F.col(STORED_PARTITION_COLUMN)
    moved = stored.isNotNull() & (stored != F.col(PARTITION_PATH_COLUMN))
    if not moving:
        path = F.when(moved, stored).otherwise(F.col(PARTITION_PATH_COLUMN))
        return tagged.withColumn(PARTITION_PATH_COLUMN, path)
    deletes = (
        tagged.filter(moved)
        .withColumn(PARTITION_PATH_COLUMN, stored)
        .withColumn(DELETE_RECORD_COLUMN, F.lit(True))
    )
    inserts = tagged.withColumn(
        FILE_ID_COLUMN, F.when(moved, F.lit(None).cast("string")).otherwise(F.col(FILE_ID_COLUMN))
    )
    return inserts.unionByName(deletes, allowMissingColumns=True)


def _global_rows(table: pa.Table, source: IndexSource) -> Iterator[pa.RecordBatch]:
    """The job's rows for a whole batch under the global index: one task looks every key up in
    every partition (:func:`engine.write.global_index.lookup_global`)."""
    bad = table.filter(table[BAD_KEY_COLUMN])
    if bad.num_rows:
        yield _rows(_PROFILE, bad[PARTITION_PATH_COLUMN][0].as_py(), 1, bad=True)
        return
    found = lookup_global(table, source)
    stays = pc.equal(found[STORED_PARTITION_COLUMN], found[PARTITION_PATH_COLUMN])
    # keys that do not become inserts of their incoming partition
    matched = found if not source.update_partition_path else found.filter(stays)
    groups = table.group_by(PARTITION_PATH_COLUMN).aggregate([(RECORD_KEY_COLUMN, "list")])
    key_lists = groups.column(f"{RECORD_KEY_COLUMN}_list").combine_chunks()
    for i, partition in enumerate(groups.column(PARTITION_PATH_COLUMN).to_pylist()):
        key_range = lookup_partition(partition, key_lists[i].values, None).key_range
        in_partition = pc.equal(matched[PARTITION_PATH_COLUMN], partition)
        yield _profile_row(key_range, int(pc.sum(pc.cast(in_partition, pa.int64())).as_py() or 0))
    # the partitions a moved key is deleted from or updated in are touched too (their file
    # slices are planned like any other): a profile row without incoming records
    incoming = set(groups.column(PARTITION_PATH_COLUMN).to_pylist())
    for stored in sorted(set(found[STORED_PARTITION_COLUMN].to_pylist()) - incoming):
        yield _rows(_PROFILE, stored, 1, n=0, distinct_keys=0, matched=0, lo="", hi="", bad=False)
    by_group = found.group_by([STORED_PARTITION_COLUMN, FOUND_FILE_ID_COLUMN]).aggregate(
        [(RECORD_KEY_COLUMN, "count")]
    )
    for stored, file_id, n in zip(
        by_group[STORED_PARTITION_COLUMN].to_pylist(),
        by_group[FOUND_FILE_ID_COLUMN].to_pylist(),
        by_group[f"{RECORD_KEY_COLUMN}_count"].to_pylist(),
        strict=True,
    ):
        yield _rows(_GROUP, stored, 1, **{FILE_ID_COLUMN: file_id, "n": n})
    for batch in found.to_batches():
        yield _found_rows(batch)


def _found_rows(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``_FOUND`` rows of a global lookup's (key, incoming partition, stored partition, file)."""
    n = batch.num_rows
    columns = {
        _KIND: pa.repeat(pa.scalar(_FOUND), n),
        _PARTITION: batch.column(PARTITION_PATH_COLUMN),
        _KEY: batch.column(RECORD_KEY_COLUMN),
        FILE_ID_COLUMN: batch.column(FOUND_FILE_ID_COLUMN),
        STORED_PARTITION_COLUMN: batch.column(STORED_PARTITION_COLUMN),
    }
    arrays = [
        columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type)
        for f in _ARROW_SCHEMA
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=_ARROW_SCHEMA)


def _profile_row(r: PartitionKeyRange, matched: int) -> pa.RecordBatch:
    """The profile row of one partition's incoming keys, ``matched`` of them stored."""
    return _rows(
        _PROFILE,
        r.partition_path,
        1,
        n=r.count,
        distinct_keys=r.distinct_keys,
        matched=matched,
        lo=r.min_key,
        hi=r.max_key,
        bad=False,
    )


def _rows(kind: str, partition: str, count: int, **columns: object) -> pa.RecordBatch:
    """``count`` rows of one kind; a column given as a scalar is repeated, missing ones null."""
    arrays = []
    for f in _ARROW_SCHEMA:
        if f.name == _KIND:
            value: object = kind
        elif f.name == _PARTITION:
            value = partition
        else:
            value = columns.get(f.name)
        if isinstance(value, pa.Array):
            arrays.append(value.cast(f.type))
        elif value is None:
            arrays.append(pa.nulls(count, f.type))
        else:
            arrays.append(pa.repeat(pa.scalar(value, f.type), count))
    return pa.RecordBatch.from_arrays(arrays, schema=_ARROW_SCHEMA)


def _lookup_task(
    source: IndexSource | None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The task of the job: :data:`_ARROW_SCHEMA` rows for the partitions of its batches."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = list(batches)
        if not received:
            return
        table = pa.Table.from_batches(received)
        sample = first_null_ordering(table)
        if sample is not None:  # one sample record is enough to refuse the write
            key, partition = sample
            yield _rows(_NULL_ORDERING, str(partition), 1, **{_KEY: key})
            return
        if source is not None and source.global_index:
            yield from _global_rows(table, source)
            return
        groups = table.group_by(PARTITION_PATH_COLUMN).aggregate(
            [(RECORD_KEY_COLUMN, "list"), (BAD_KEY_COLUMN, "any")]
        )
        key_lists = groups.column(f"{RECORD_KEY_COLUMN}_list").combine_chunks()
        bad_flags = groups.column(f"{BAD_KEY_COLUMN}_any").to_pylist()
        for i, partition in enumerate(groups.column(PARTITION_PATH_COLUMN).to_pylist()):
            if bad_flags[i]:
                yield _rows(_PROFILE, partition, 1, bad=True)
                continue
            lookup = lookup_partition(partition, key_lists[i].values, source)
            yield _profile_row(lookup.key_range, lookup.matched_keys)
            for file_id, found in lookup.matches.items():
                yield _rows(_GROUP, partition, 1, **{FILE_ID_COLUMN: file_id, "n": len(found)})
                yield _rows(_FOUND, partition, len(found), **{_KEY: found, FILE_ID_COLUMN: file_id})

    return run


def _refuse_bad_records(collected: list[Any], spec: KeyGenSpec) -> None:
    """A null or empty record key, or a null ordering value where the write checks them."""
    null_ordering = sorted(
        (r[_PARTITION], r[_KEY]) for r in collected if r[_KIND] == _NULL_ORDERING
    )
    refuse(
        spec,
        bad_key=any(r["bad"] for r in collected if r[_KIND] == _PROFILE),
        null_ordering=null_ordering[0][::-1] if null_ordering else None,
    )


def profile_batch(keyed: DataFrame, spec: KeyGenSpec, source: IndexSource | None) -> BatchProfile:
    """Run the first job of a write (see the module docstring).

    Args:
        keyed: The batch with record key, partition path and bad-key flag.
        spec: Key generator (for the null-key message).
        source: The table state to look keys up in; ``None`` profiles only (inserts, replace
            writes, a new table).

    Raises:
        RecordKeyError: some record key is null or empty (nothing has been written yet).
        NullOrderingValueError: a record flagged ``__null_ordering`` (writes that combine).
    """
    checked = [c for c in (NULL_ORDERING_COLUMN,) if c in keyed.columns]
    keys = keyed.select(PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN, BAD_KEY_COLUMN, *checked)
    # a global lookup reads every partition's keys: once, in one task, for the whole batch
    spread = keys.repartition(1) if source is not None and source.global_index else None
    rows = (
        (spread if spread is not None else keys.repartition(PARTITION_PATH_COLUMN))
        .mapInArrow(_lookup_task(source), spark_struct_of(_ARROW_SCHEMA))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        collected = run_job(rows.filter(F.col(_KIND) != _FOUND).collect)
    except BaseException:
        rows.unpersist()
        raise
    profiles = [r for r in collected if r[_KIND] == _PROFILE]
    try:
        _refuse_bad_records(collected, spec)
    except BaseException:
        rows.unpersist()
        raise
    ranges = [
        PartitionKeyRange(
            r[_PARTITION], int(r["n"]), r["lo"], r["hi"], distinct_keys=int(r["distinct_keys"])
        )
        for r in sorted(profiles, key=lambda r: r[_PARTITION])
    ]
    updates = {
        (r[_PARTITION], r[FILE_ID_COLUMN]): int(r["n"]) for r in collected if r[_KIND] == _GROUP
    }
    if source is None or not updates:
        rows.unpersist()
        return BatchProfile(ranges, indexed=source is not None)
    matched = {r[_PARTITION]: int(r["matched"]) for r in profiles}
    return BatchProfile(
        ranges,
        updates,
        matched,
        indexed=True,
        _rows=rows,
        global_index=source.global_index,
        update_partition_path=source.update_partition_path,
    )
