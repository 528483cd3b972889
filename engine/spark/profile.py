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

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine.errors import NullOrderingValueError, RecordKeyError
from engine.model.keygen import KeyGenSpec, invalid_record_key_message
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.spark.jobs import BAD_KEY_COLUMN, FILE_ID_COLUMN, NULL_ORDERING_COLUMN, run_job
from engine.spark.schema import spark_struct_of
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
    """

    tagged: DataFrame
    update_counts: dict[tuple[str, str], int]
    insert_counts: dict[str, int]


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
            return LocatedRecords(tagged.limit(0) if existing_only else tagged, {}, inserts)
        found = self._rows.filter(F.col(_KIND) == _FOUND).select(_KEY, _PARTITION, FILE_ID_COLUMN)
        if sum(self.update_counts.values()) <= _BROADCAST_MATCHES:
            found = F.broadcast(found)
        cond = (keyed[RECORD_KEY_COLUMN] == found[_KEY]) & (
            keyed[PARTITION_PATH_COLUMN] == found[_PARTITION]
        )
        tagged = keyed.join(found, cond, "inner" if existing_only else "left")
        return LocatedRecords(tagged.drop(_KEY, _PARTITION), dict(self.update_counts), inserts)

    def release(self) -> None:
        """Drop the cached keys (after the write job)."""
        if self._rows is not None:
            self._rows.unpersist()


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
        if NULL_ORDERING_COLUMN in table.column_names:
            nulls = table.filter(table[NULL_ORDERING_COLUMN])
            if nulls.num_rows:  # one sample record is enough to refuse the write
                sample = nulls.slice(0, 1)
                partition = sample[PARTITION_PATH_COLUMN][0].as_py()
                yield _rows(_NULL_ORDERING, partition, 1, **{_KEY: sample[RECORD_KEY_COLUMN][0]})
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
            r = lookup.key_range
            yield _rows(
                _PROFILE,
                partition,
                1,
                n=r.count,
                distinct_keys=r.distinct_keys,
                matched=lookup.matched_keys,
                lo=r.min_key,
                hi=r.max_key,
                bad=False,
            )
            for file_id, found in lookup.matches.items():
                yield _rows(_GROUP, partition, 1, **{FILE_ID_COLUMN: file_id, "n": len(found)})
                yield _rows(_FOUND, partition, len(found), **{_KEY: found, FILE_ID_COLUMN: file_id})

    return run


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
    rows = (
        keys.repartition(PARTITION_PATH_COLUMN)
        .mapInArrow(_lookup_task(source), spark_struct_of(_ARROW_SCHEMA))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        collected = run_job(rows.filter(F.col(_KIND) != _FOUND).collect)
    except BaseException:
        rows.unpersist()
        raise
    profiles = [r for r in collected if r[_KIND] == _PROFILE]
    if any(r["bad"] for r in profiles):
        rows.unpersist()
        raise RecordKeyError(invalid_record_key_message(spec))
    null_ordering = sorted(
        (r[_PARTITION], r[_KEY]) for r in collected if r[_KIND] == _NULL_ORDERING
    )
    if null_ordering:
        rows.unpersist()
        partition, key = null_ordering[0]
        raise NullOrderingValueError(
            f"Ordering value is null for record key {key!r} (partition {partition!r})"
        )
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
    return BatchProfile(ranges, updates, matched, indexed=True, _rows=rows)
