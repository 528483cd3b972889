"""Hudi's bucket index (``hoodie.index.type=BUCKET``, engine SIMPLE): a key's file group is a
hash of the key, so a write looks nothing up.

Every partition holds at most ``hoodie.bucket.index.num.buckets`` file groups; the file id of
bucket ``n`` starts with ``n`` zero-padded to 8 digits (``00000003-<rest of a uuid>-0``), as
``org.apache.hudi.index.bucket.BucketIdentifier`` (release-0.14) names them
(``bucketIdStr``/``newBucketFileIdPrefix``; the create handle appends ``-0``). The bucket of a
record is ``BucketIdentifier.getBucketId``::

    hash keys   the record key itself when it holds no ':' (simple key generators), else the
                values of the hash fields parsed out of "f1:v1,f2:v2" (complex keys)
    bucket      (java.util.List.hashCode(hash keys) & Integer.MAX_VALUE) % num_buckets

with ``List.hashCode`` = fold ``31 * h + String.hashCode(e)`` from 1 (a missing field hashes as
0) and ``String.hashCode`` = fold ``31 * h + c`` over the UTF-16 code units, in 32-bit ints.
Java and this module agree bit for bit, so Apache Hudi continues a table written here and the
reverse.

A write on the bucket index is one Spark job (:mod:`engine.spark.bucket_write`): the map stage
computes every record's bucket (and fails on a null or empty key, before any task writes), the
shuffle brings each (partition, bucket) to one task, and the task writes the group:
copy-on-write merges into the bucket's base file or creates it; merge-on-read appends updates
**and inserts** to the bucket's latest file slice as log blocks (the bucket index can find keys
in log files, so Hudi's partitioner sends inserts there too), creating a base file only for a
bucket the partition does not have yet.

``insert_overwrite`` and ``insert_overwrite_table`` run the same job, as Hudi's
``SparkBucketIndexPartitioner`` does for them (``isOverwrite``, release-0.14 and 1.x): every
bucket the batch writes gets a **new** file group, ``newBucketFileIdPrefix`` of its bucket (a
fresh uuid behind the 8-digit bucket number, ``-0`` from the create handle), written as a base
file on either table type (Hudi's insert-overwrite executor only has an insert path); buckets
without records get no file. The replacecommit replaces every live file group of the partitions
written (Hudi's dynamic partitions: the partitions of the write statuses), or of the whole table
for ``insert_overwrite_table`` (:mod:`engine.write.replace`), so each written partition is
left with one file group per bucket it received and a later write finds exactly one live group
per bucket (replaced groups stay on storage, excluded by the replacecommit, until cleaned).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.config import HoodieConfig, WriteOperation
from engine.errors import ConfigError, RecordKeyError
from engine.fs.filenames import TaskInfo
from engine.fs.properties import write_partition_metadata
from engine.fs.storage import Storage
from engine.model.keygen import KeyGenSpec
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from engine.view.fs_view import list_partition_paths
from engine.write.append import AppendSlice, LogWriteConfig
from engine.write.bucketing import Bucket, BucketSpec
from engine.write.handles import WriteContext
from engine.write.listing import latest_table_slices
from engine.write.merge_on_read import log_write_config
from engine.write.plan import JobProfile, WriteJob
from engine.write.routing import ByBucket, UnitWriter, choose_handle, run_handle

__all__ = [
    "TASK_BUCKETS",
    "BucketTargets",
    "bucket_file_id",
    "bucket_id",
    "bucket_ids",
    "bucket_of_file_id",
    "bucket_profile",
    "bucket_spec",
    "java_list_hash",
    "java_string_hash",
    "plan_bucket_targets",
    "write_into_buckets",
]

_INT_MASK = 0xFFFFFFFF
_INT_MAX = 0x7FFFFFFF
_BUCKET_FILE_ID = re.compile(r"^(\d{8})-")


# ---- Java's hashing ---------------------------------------------------------------------------


def _to_int32(h: int) -> int:
    h &= _INT_MASK
    return h - (1 << 32) if h > _INT_MAX else h


def java_string_hash(text: str) -> int:
    """``java.lang.String.hashCode``: ``31 * h + c`` over the UTF-16 code units, as an int."""
    units = np.frombuffer(text.encode("utf-16-be"), dtype=">u2")
    h = 0
    for c in units.tolist():
        h = (31 * h + c) & _INT_MASK
    return _to_int32(h)


def java_list_hash(values: Sequence[str | None]) -> int:
    """``java.util.List.hashCode`` of a list of strings (a null element hashes as 0)."""
    h = 1
    for v in values:
        h = (31 * h + (0 if v is None else java_string_hash(v))) & _INT_MASK
    return _to_int32(h)


def _java_split(text: str, sep: str) -> list[str]:
    """``String.split`` with a one-character literal separator: trailing empties removed."""
    if text == "":
        return [""]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def hash_keys(record_key: str, hash_fields: Sequence[str]) -> list[str | None]:
    """``BucketIdentifier.getHashKeys``: the key itself, or the hash fields' values parsed out
    of a complex key ``f1:v1,f2:v2`` (Java takes the text between the first and second ':')."""
    if ":" not in record_key:
        return [record_key]
    pairs: dict[str, str] = {}
    for pair in _java_split(record_key, ","):
        parts = _java_split(pair, ":")
        if len(parts) < 2 or parts[0] in pairs:
            raise RecordKeyError(
                f"Record key {record_key!r} cannot be hashed to a bucket: {pair!r} is not a "
                "field:value pair of its own (Hudi's bucket index fails on it too)"
            )
        pairs[parts[0]] = parts[1]
    return [pairs.get(f) for f in hash_fields]


def bucket_id(record_key: str, hash_fields: Sequence[str], num_buckets: int) -> int:
    """``BucketIdentifier.getBucketId(recordKey, indexKeyFields, numBuckets)``."""
    return (java_list_hash(hash_keys(record_key, hash_fields)) & _INT_MAX) % num_buckets


def _ascii_string_hashes(keys: pa.Array) -> np.ndarray:
    """``String.hashCode`` of ASCII strings, vectorised over the Arrow buffers (one numpy pass
    per character position)."""
    keys = keys.cast(pa.large_string()) if keys.type == pa.string() else keys
    _, offsets_buf, data_buf = keys.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[keys.offset : keys.offset + len(keys) + 1]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    starts, lengths = offsets[:-1], np.diff(offsets)
    h = np.zeros(len(keys), dtype=np.int64)
    for j in range(int(lengths.max()) if len(lengths) else 0):
        live = lengths > j
        h[live] = (h[live] * 31 + data[starts[live] + j]) & _INT_MASK
    return h


def bucket_ids(keys: pa.Array, hash_fields: Sequence[str], num_buckets: int) -> pa.Array:
    """The bucket of every record key (no nulls: keys are checked before)."""
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    if not len(keys):
        return pa.array([], pa.int32())
    simple = pc.invert(pc.match_substring(keys, ":"))
    ascii_simple = pc.and_(simple, pc.string_is_ascii(keys))
    if pc.all(ascii_simple).as_py():
        h = _ascii_string_hashes(keys)
        lists = (31 + h) & _INT_MASK  # List.hashCode of a one-element list
        return pa.array(((lists & _INT_MAX) % num_buckets).astype(np.int32))
    out = [bucket_id(k, hash_fields, num_buckets) for k in keys.to_pylist()]
    return pa.array(out, pa.int32())


# ---- file ids -----------------------------------------------------------------------------------


def bucket_file_id(bucket: int) -> str:
    """A new file group id for ``bucket``: Hudi's ``newBucketFileIdPrefix`` plus ``-0``."""
    return f"{bucket:08d}{str(uuid.uuid4())[8:]}-0"


def bucket_of_file_id(file_id: str) -> int | None:
    """The bucket a file id names (``BucketIdentifier.bucketIdFromFileId``), else ``None``."""
    match = _BUCKET_FILE_ID.match(file_id)
    return int(match.group(1)) if match else None


# ---- the write's plan ---------------------------------------------------------------------------


def bucket_spec(cfg: HoodieConfig, keygen: KeyGenSpec) -> BucketSpec:
    """The write's bucket settings, checked as Hudi checks them.

    Raises:
        ConfigError: a non-positive bucket count, or a hash field that is not a record key field.
    """
    num = cfg.get(config.BUCKET_INDEX_NUM_BUCKETS)
    if num < 1:
        raise ConfigError(f"{config.BUCKET_INDEX_NUM_BUCKETS.key}={num}: must be at least 1")
    fields = cfg.get(config.BUCKET_INDEX_HASH_FIELD) or keygen.record_key_fields
    stray = [f for f in fields if f not in keygen.record_key_fields]
    if stray:
        raise ConfigError(
            f"{config.BUCKET_INDEX_HASH_FIELD.key}={','.join(fields)}: {', '.join(stray)} is not "
            f"a record key field ({','.join(keygen.record_key_fields)})"
        )
    return BucketSpec(num, tuple(fields))


@dataclass(frozen=True)
class _Existing:
    file_id: str
    base_file: str | None
    base_instant_time: str


#: bucket numbers of one task: task partition * this + the group's ordinal in the task
TASK_BUCKETS = 1_000


@dataclass(frozen=True)
class BucketTargets(UnitWriter):
    """What the write's tasks need to write any (partition, bucket) (picklable): the task side
    of :class:`~engine.write.routing.ByBucket`, whose route is the bucket.

    Attributes:
        spec: Bucket count and hash fields.
        merge_on_read: Existing buckets get log blocks (else their base file is merged).
        existing: (partition, bucket) -> the bucket's file group and latest base file.
        slices: (partition, bucket) -> the slice a merge-on-read append writes to.
        log_config: Log block and file sizing.
    """

    spec: BucketSpec
    merge_on_read: bool
    existing: Mapping[tuple[str, int], _Existing] = field(default_factory=dict)
    slices: Mapping[tuple[str, int], AppendSlice] = field(default_factory=dict)
    log_config: LogWriteConfig | None = None
    task_numbers = TASK_BUCKETS

    def write_unit(
        self,
        partition_path: str,
        bucket: int,
        records: pa.Table,
        number: int,
        ctx: WriteContext,
        task: TaskInfo,
    ) -> tuple[list[HoodieWriteStat], int]:
        """Write one bucket's records (inside a task); its write stats."""
        write_partition_metadata(Storage(ctx.base_path, ctx.s3), partition_path, ctx.instant_time)
        key = (partition_path, bucket)
        if ctx.operation == WriteOperation.DELETE and key not in self.existing:
            return [], 1  # deletes reach stored keys only, and a missing bucket stores none
        target = self.slices.get(key) if self.merge_on_read else None
        stored = self.existing.get(key)
        group = (
            Bucket(
                number, stored.file_id, partition_path, stored.base_file, stored.base_instant_time
            )
            if stored is not None and stored.base_file is not None
            else Bucket(number, bucket_file_id(bucket), partition_path)
        )
        return run_handle(choose_handle(group, target, self.log_config), records, ctx, task), 1


def plan_bucket_targets(
    storage: Storage,
    timeline: Timeline,
    cfg: HoodieConfig,
    keygen: KeyGenSpec,
    *,
    merge_on_read: bool,
) -> BucketTargets:
    """List the table's latest file slices and map them to their buckets.

    Raises:
        ConfigError: a file group that is not a bucket of this bucket count (the table was
            written with another index or another ``num.buckets``), or two file groups of one
            bucket; nothing is written.
    """
    spec = bucket_spec(cfg, keygen)
    if timeline.last_completed() is None:
        return BucketTargets(spec, merge_on_read, log_config=log_write_config(cfg))
    partitions = sorted(list_partition_paths(storage))
    current = latest_table_slices(storage, timeline, partitions)
    existing: dict[tuple[str, int], _Existing] = {}
    slices: dict[tuple[str, int], AppendSlice] = {}
    for (partition, file_id), file_slice in sorted(current.slices.items()):
        key = (partition, _checked_bucket(storage, partition, file_id, spec, existing))
        existing[key] = _Existing(file_id, file_slice.base_file, file_slice.base_instant_time)
        slices[key] = file_slice
    return BucketTargets(spec, merge_on_read, existing, slices, log_write_config(cfg))


def _checked_bucket(
    storage: Storage,
    partition: str,
    file_id: str,
    spec: BucketSpec,
    seen: Mapping[tuple[str, int], _Existing],
) -> int:
    bucket = bucket_of_file_id(file_id)
    where = f"{partition}/{file_id}" if partition else file_id
    if bucket is None or bucket >= spec.num_buckets:
        raise ConfigError(
            f"Table at {storage.base_path}: file group {where} is not a bucket of "
            f"{config.INDEX_TYPE.key}=BUCKET with {config.BUCKET_INDEX_NUM_BUCKETS.key}="
            f"{spec.num_buckets} (the table was written with another index or bucket count)"
        )
    other = seen.get((partition, bucket))
    if other is not None:
        raise ConfigError(
            f"Table at {storage.base_path}: file groups {other.file_id} and {file_id} of "
            f"partition {partition!r} are both bucket {bucket}"
        )
    return bucket


# ---- the transaction's view of a bucketed batch -------------------------------------------------


def bucket_profile() -> JobProfile:
    """The profile of a bucket-index write (its job hashes and routes the records)."""
    return JobProfile("A bucket-index write routes records by hash")


# ---- the write job -----------------------------------------------------------------------------


def _write_bucketed(
    job: WriteJob, action: Action, targets: BucketTargets, ctx: WriteContext
) -> list[HoodieWriteStat]:
    """The data phase of a bucket-index write: one job writes the planned buckets (a refused
    row fails its map stage before any file is written: :meth:`WriteJob.checked_inflight`)."""
    batch = job.batch
    with job.checked_inflight(action):
        return job.data_runner.write_routed(batch.keyed, ByBucket(targets), ctx, batch.spec)


def write_into_buckets(job: WriteJob, action: Action) -> list[HoodieWriteStat]:
    """The bucket index's write job: each bucket's records go to its live file group, or, on
    insert_overwrite and insert_overwrite_table, to a new file group per bucket written (see
    the module notes).

    The table's layout is checked either way: a table of another index or bucket count is
    refused before anything is written.
    """
    targets = plan_bucket_targets(
        job.storage,
        job.timeline,
        job.cfg,
        job.batch.spec,
        merge_on_read=action == Action.DELTA_COMMIT,
    )
    if job.operation.is_replace:
        # the handles' insert path: every bucket's file group is new, no stored rows
        fresh = BucketTargets(targets.spec, merge_on_read=False)
        return _write_bucketed(job, action, fresh, job.write_context(WriteOperation.INSERT))
    return _write_bucketed(job, action, targets, job.write_context())
