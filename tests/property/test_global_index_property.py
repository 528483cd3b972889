"""Property: under the global indexes, keys that move between partitions are never duplicated.

Random sequences of upserts and deletes on a table keyed by ``id`` and partitioned by ``dt``,
written with ``hoodie.index.type=GLOBAL_SIMPLE`` or ``GLOBAL_BLOOM`` (tiny bloom filters that
pass most absent keys, ranges pruning on or off), copy-on-write and merge-on-read, with the
index's update.partition.path flag on (a key that arrives with a new ``dt`` moves to
that partition) or off (it is updated in place in the partition it was inserted into). The model
keys rows by ``id`` alone; after every commit hudi-rs must read exactly its rows, each in the
partition the flag says, and after the last one ``read_hudi`` (Spark) must agree.

``RECORD_INDEX`` runs the same sequences on version 9 tables (its index is the metadata table's
``record_index`` partition, kept by every write, compacted every two deltacommits): after every
commit the record index also maps exactly the read rows' keys to their file groups. Its file
sizes are Hudi's or tiny (a file slice is full after a few records), and on merge-on-read its
inserts are appended to small file slices as log blocks: a dedicated group of merge-on-read
sequences starts with an insert and an update (a slice with a log file) and ends with new keys
in that partition, which must be appended there at Hudi's file sizes.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st

from engine import write_hudi
from engine.fs.storage import Storage
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_rows
from tests.interop.index_partitions import record_index_matches_rows
from tests.property import runner
from tests.property.oracle import DEFAULT, OVERWRITE, Oracle, Row

pytestmark = [pytest.mark.spark, pytest.mark.interop]

# 12 in make test (three examples: the first, Hypothesis's simplest, moves no key), 100 in make
# test-long
SEQUENCES = runner.SEQUENCES_BLOOM
SEQUENCES_RECORD_INDEX = runner.SEQUENCES_METADATA
record = runner.records("abcd", st.integers(0, 4))
batch = st.tuples(
    st.sampled_from(["upsert", "upsert", "upsert", "delete"]),
    st.lists(record, min_size=1, max_size=5),
)
sequence = st.tuples(
    st.sampled_from(["GLOBAL_BLOOM", "GLOBAL_SIMPLE"]),
    st.booleans(),  # GLOBAL_BLOOM: hoodie.bloom.index.prune.by.ranges
    st.sampled_from(["COPY_ON_WRITE", "MERGE_ON_READ"]),
    st.booleans(),  # hoodie.simple.index.update.partition.path (bloom: ...bloom.index...)
    st.sampled_from([OVERWRITE, DEFAULT]),
    st.lists(batch, min_size=2, max_size=4),
)
# hoodie.parquet.max.file.size: Hudi's, or tiny: a base file of a few records is about 434.7 kB
# (its bloom filter most of it), so at 1 kB a record a log-free slice takes one insert, a slice
# with a log file of 1 kB or more none (0.35 of its log bytes count), and inserts open new groups
TINY_FILES = 436_000
sizes = st.sampled_from([None, TINY_FILES])
record_index_sequence = st.tuples(
    st.just("RECORD_INDEX"),
    st.just(False),
    st.sampled_from(["COPY_ON_WRITE", "MERGE_ON_READ"]),
    st.booleans(),  # hoodie.record.index.update.partition.path
    st.just(OVERWRITE),
    st.lists(batch, min_size=2, max_size=4),
    sizes,
)
record_index_mor_sequence = st.tuples(
    st.booleans(),  # hoodie.record.index.update.partition.path
    st.lists(batch, min_size=1, max_size=3),
    sizes,
)
RECORD_INDEX_OPTIONS = {
    "hoodie.index.type": "RECORD_INDEX",
    "hoodie.write.table.version": "9",
    "hoodie.metadata.record.index.min.filegroup.count": 2,
    "hoodie.metadata.record.index.max.filegroup.count": 2,
    "hoodie.metadata.compact.max.delta.commits": 2,
}


def _one_partition_per_key(rows: list[Row]) -> list[Row]:
    """A batch names each key in one partition (a key is unique in the table)."""
    first: dict[str, str] = {}
    return [{**r, "dt": first.setdefault(r["id"], r["dt"])} for r in rows]


def _expected(oracle: Oracle, home: dict[str, str], moves: bool) -> list[tuple[Any, ...]]:
    """(key, partition path, data...) the table must hold: a moved key lives in its ``dt``
    with the flag on, in the partition it was inserted into with the flag off."""
    return sorted(
        (
            (key, row["dt"] if moves else home[key], *(row.get(c) for c in runner.COLUMNS))
            for (key, _), row in oracle.rows.items()
        ),
        key=repr,
    )


def _actual(rows: list[Row]) -> list[tuple[Any, ...]]:
    return sorted(
        (
            (
                r["_hoodie_record_key"],
                r["_hoodie_partition_path"],
                *(r.get(c) for c in runner.COLUMNS),
            )
            for r in rows
        ),
        key=repr,
    )


def _index_options(
    index: str, prune_by_ranges: bool, moves: bool, max_file_size: int | None = None
) -> dict[str, Any]:
    flag = "hoodie.simple.index.update.partition.path"
    extra: dict[str, Any] = {"hoodie.index.type": index}
    if index == "RECORD_INDEX":
        flag = "hoodie.record.index.update.partition.path"
        extra = dict(RECORD_INDEX_OPTIONS)
    if max_file_size is not None:
        extra["hoodie.parquet.max.file.size"] = max_file_size
        extra["hoodie.parquet.small.file.limit"] = max_file_size
        extra["hoodie.copyonwrite.record.size.estimate"] = 1_000
    if index == "GLOBAL_BLOOM":
        flag = "hoodie.bloom.index.update.partition.path"
        extra = runner.bloom_options(index, prune_by_ranges, "DYNAMIC_V0")
    return {**extra, flag: str(moves).lower()}


def run_sequence(
    spark: Any,
    index: str,
    prune_by_ranges: bool,
    table_type: str,
    moves: bool,
    payload: str,
    batches: list[tuple[str, list[Row]]],
    max_file_size: int | None = None,
) -> list[HoodieWriteStat]:
    """Run the sequence, checking every commit; the write stats of the last one."""
    if moves or table_type == "MERGE_ON_READ":
        payload = OVERWRITE  # moves need it; MOR keeps hudi-rs and Java merges alike
    with runner.scratch_table("global-index-property-") as path:
        options = runner.table_options(
            payload,
            {
                "hoodie.datasource.write.table.type": table_type,
                **_index_options(index, prune_by_ranges, moves, max_file_size),
            },
        )
        oracle = Oracle(payload, "ts", lambda row: (row["id"], ""), runner.FIELDS)
        home: dict[str, str] = {}
        for operation, raw in batches:
            rows = _one_partition_per_key(raw)
            if operation == "delete" and not oracle.history:
                operation = "upsert"  # a table starts with data
            df = spark.createDataFrame(
                [tuple(r[c] for c in runner.FIELDS) for r in rows], runner.SCHEMA
            )
            result = write_hudi(
                df, path, {**options, "hoodie.datasource.write.operation": operation}
            )
            before = {key for key, _ in oracle.rows}
            oracle.apply(rows, operation, result.instant_time)
            for r in rows:
                if r["id"] not in before:
                    home[r["id"]] = r["dt"]
            assert _actual(hudi_rs_rows(path)) == _expected(oracle, home, moves), (operation, rows)
            if index == "RECORD_INDEX":
                record_index_matches_rows(path)
        spark_rows = runner.read_hudi_rows(spark, path)
        assert _actual(spark_rows) == _expected(oracle, home, moves)
        return _commit_stats(path, result.instant_time)


def _commit_stats(path: str, instant_time: str) -> list[HoodieWriteStat]:
    timeline = Timeline.load(Storage(path))
    (instant,) = [i for i in timeline.completed() if i.instant_time == instant_time]
    return timeline.read_commit_metadata(instant).write_stats()


def run_mor_log_insert_sequence(
    spark: Any, moves: bool, batches: list[tuple[str, list[Row]]], max_file_size: int | None
) -> None:
    """A merge-on-read RECORD_INDEX sequence between a file slice given a log file (insert,
    then two updates) and two keys new to its partition: at Hudi's sizes both are appended to that
    slice as inserts; at tiny sizes they may open a new file group (checked like every step).

    The table is version 9, its merge mode COMMIT_TIME_ORDERING: ordering values are taken as
    drawn, and the slice's second log record carries a smaller one than its first (the latest
    write wins)."""
    row = {"dt": "p1", "v": "x", "n": 1, "_hoodie_is_deleted": False}
    prefix = [
        ("upsert", [{**row, "id": "a", "ts": 1}]),
        ("upsert", [{**row, "id": "a", "ts": 3}]),
        ("upsert", [{**row, "id": "a", "ts": 2}]),
    ]
    new = [{**row, "id": "new1", "ts": 0}, {**row, "id": "new2", "ts": 0}]
    stats = run_sequence(
        spark, "RECORD_INDEX", False, "MERGE_ON_READ", moves, OVERWRITE,
        [*prefix, *batches, ("upsert", new)], max_file_size,
    )  # fmt: skip
    if max_file_size is None:
        (stat,) = stats
        assert stat.is_delta and stat.num_inserts == 2 and stat.num_update_writes == 0
        assert len(stat.log_files or ()) > 1, stat  # the slice had a log file already


@runner.sequence_groups(sequence, SEQUENCES)
def test_global_index_keys_moving_partitions_oracle_hudi_rs_read_hudi_agree(spark, group) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, run_sequence)


@runner.sequence_groups(record_index_sequence, SEQUENCES_RECORD_INDEX)
def test_record_index_keys_moving_partitions_oracle_hudi_rs_read_hudi_agree(spark, group) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, run_sequence)


# one group in make test, a tenth of the long run's sequences under HUDI_TEST_LONG
@runner.sequence_groups(record_index_mor_sequence, SEQUENCES_RECORD_INDEX)
def test_record_index_mor_log_inserts_oracle_hudi_rs_agree(spark, group) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, run_mor_log_insert_sequence)
