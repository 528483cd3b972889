"""Optimistic concurrency control between writers: the conflict check at commit.

Two writers on one table take the table lock (:mod:`engine.services.lock`) only around
start-commit and around commit; their data work overlaps. Heartbeats
(:mod:`engine.services.heartbeat`) say which pending instants are alive; what keeps the table
consistent at commit is **the conflict check**, under the lock: every instant that completed after
this write started and touched one of its file groups (wrote or replaced it) makes this write fail
with :class:`~engine.errors.WriteConflictError`; its instant is rolled back first, so the table is
as if it never ran. Writers touching disjoint file groups both succeed — unless both inserted one
record key: neither saw the other's key when it looked its keys up, so each put it in a file group
of its own and the table would hold it twice. The base files the other instant inserted into are
checked for this write's keys (their footer key ranges first), and the log files it inserted into
(merge-on-read on an index that finds keys in log files appends inserts to them; their data
blocks' keys); a shared key fails this write the same way. (Hudi's file-group check alone lets
such duplicates through; a record key is unique in the table here, as dbt's ``unique_key`` means
it.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import HudiError, WriteConflictError
from engine.fs.filenames import is_base_file
from engine.fs.storage import Storage
from engine.io.parquet import read_base_file, read_record_key_range
from engine.metadata.data_keys import log_file_keys
from engine.model.schema import RECORD_KEY_COLUMN
from engine.services.lock import TableLock
from engine.services.rollback import rollback_instant
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action, Instant, State
from engine.timeline.timeline import Timeline
from engine.write.index import key_range_meets, stored_keys_among

__all__ = ["check_write_conflicts", "rollback_on_error"]


def _touched(
    stats: Iterable[HoodieWriteStat], replaced: dict[str, list[str]] | None
) -> set[tuple[str, str]]:
    groups = {(s.partition_path or "", s.file_id) for s in stats}
    for partition, file_ids in (replaced or {}).items():
        groups |= {(partition, f) for f in file_ids}
    return groups


def check_write_conflicts(
    storage: Storage,
    started: Timeline,
    instant_time: str,
    action: Action,
    stats: Iterable[HoodieWriteStat],
    replaced: dict[str, list[str]] | None = None,
    *,
    bucketed: bool = False,
) -> None:
    """Fail a write whose file groups another writer changed since it started.

    Call under the table lock, right before completing the instant.

    Args:
        storage: The table's storage.
        started: The timeline the write started from (loaded when its instant was requested).
        instant_time: The write's inflight instant.
        action: Its action (commit, deltacommit, replacecommit).
        stats: Its write stats.
        replaced: Its ``partitionToReplaceFileIds`` (replacecommits).
        bucketed: Bucket-index table: two writers creating the same bucket of a partition (two
            new file groups with one bucket number) conflict too.

    Raises:
        WriteConflictError: naming both instants and the shared file groups; the write's
            instant has been rolled back.
    """
    stats = list(stats)
    ours = _touched(stats, replaced)
    before = {i.instant_time for i in started.completed()}
    current = Timeline.load(storage)
    our_keys: pa.Array | None = None
    for other in current.commits_timeline():
        if other.instant_time in before or other.instant_time == instant_time:
            continue
        metadata = current.read_commit_metadata(other)
        theirs = metadata.file_ids_written() | metadata.replaced_file_ids()
        clash = ours & theirs
        if bucketed:
            clash |= {g for g in ours if _bucket_of(g) in {_bucket_of(t) for t in theirs}}
        if not clash:
            if our_keys is None:
                our_keys = _inserted_keys(storage, stats)
            _check_inserted_keys(
                storage, our_keys, metadata.write_stats(), other, instant_time, action
            )
            continue
        rollback_instant(
            storage, Instant(instant_time, action, State.INFLIGHT), current.max_instant_time()
        )
        shown = ", ".join(f"{p}/{f}" if p else f for p, f in sorted(clash)[:5])
        raise WriteConflictError(
            f"Write {instant_time} ({action.value}) on {storage.base_path} conflicts with "
            f"{other.action.value} {other.instant_time}, completed meanwhile, on file group(s) "
            f"{shown}; the write was rolled back, retry it"
        )


def _inserting_files(stats: Iterable[HoodieWriteStat]) -> list[str]:
    """The base files and log files a write inserted keys into."""
    return [s.path for s in stats if s.path and s.num_inserts > 0]


def _file_keys(storage: Storage, rel_path: str) -> pa.Array:
    """The record keys a base file holds, or a log file's data blocks write."""
    if is_base_file(rel_path.rsplit("/", 1)[-1]):
        return read_base_file(storage, rel_path, [RECORD_KEY_COLUMN]).column(RECORD_KEY_COLUMN)
    return pa.array(sorted(log_file_keys(storage, rel_path).written), pa.string())


def _inserted_keys(storage: Storage, stats: list[HoodieWriteStat]) -> pa.Array:
    """The record keys of the files this write inserted into (key columns, data blocks)."""
    paths = _inserting_files(stats)
    if not paths:
        return pa.array([], pa.string())
    columns = [_file_keys(storage, p) for p in paths]
    return pa.chunked_array(columns, pa.string()).combine_chunks()


def _shared_keys(storage: Storage, rel_path: str, keys: pa.Array) -> pa.Array:
    """Which of ``keys`` a file another write inserted into holds (a base file whose footer
    key range misses them is not read)."""
    if not is_base_file(rel_path.rsplit("/", 1)[-1]):
        written = _file_keys(storage, rel_path)
        return written.filter(pc.is_in(written, value_set=keys))
    lo, hi = pc.min(keys).as_py(), pc.max(keys).as_py()
    if not key_range_meets(read_record_key_range(storage, rel_path), lo, hi):
        return pa.array([], pa.string())
    return stored_keys_among(storage, rel_path, keys)


def _check_inserted_keys(
    storage: Storage,
    our_keys: pa.Array,
    their_stats: Iterable[HoodieWriteStat],
    other: Instant,
    instant_time: str,
    action: Action,
) -> None:
    """Fail (rolled back) when ``other`` inserted one of this write's record keys elsewhere."""
    if len(our_keys) == 0:
        return
    for path in _inserting_files(their_stats):
        shared = _shared_keys(storage, path, our_keys)
        if len(shared) == 0:
            continue
        current = Timeline.load(storage)
        rollback_instant(
            storage, Instant(instant_time, action, State.INFLIGHT), current.max_instant_time()
        )
        keys = ", ".join(sorted(str(k) for k in shared.to_pylist())[:5])
        raise WriteConflictError(
            f"Write {instant_time} ({action.value}) on {storage.base_path} conflicts with "
            f"{other.action.value} {other.instant_time}, completed meanwhile, which inserted the "
            f"same record key(s) {keys} in {path}; the write was rolled back, retry it"
        )


def _bucket_of(group: tuple[str, str]) -> tuple[str, str]:
    """(partition, bucket number prefix) of a bucket-index file group."""
    return group[0], group[1][:8]


def _rollback_own(storage: Storage, lock: TableLock, instant_time: str) -> None:
    """Best effort: roll back this writer's instant if it is still pending."""
    try:
        with lock.hold():
            current = Timeline.load(storage)
            mine = current.get(instant_time)
            if mine is not None and not mine.is_completed:
                rollback_instant(storage, mine, current.max_instant_time())
    except (HudiError, OSError):
        pass  # left pending: the next writer rolls it back once the heartbeat is gone


@contextmanager
def rollback_on_error(storage: Storage, lock: TableLock, instant_time: str) -> Iterator[None]:
    """Around a write's data phase and commit: a failure rolls the instant back at once, so an
    error in a Spark task leaves the table as it was (a conflict has rolled back already)."""
    try:
        yield
    except WriteConflictError:
        raise
    except Exception:
        _rollback_own(storage, lock, instant_time)
        raise
