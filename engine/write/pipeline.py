"""The one write pipeline: the write job a batch runs, chosen from what its index says.

Every write of records goes through :class:`engine.write.transaction.WriteTransaction`. Once
the keys are generated, the pipeline asks the write's index (:class:`engine.write.index.KeyIndex`,
:meth:`~engine.write.index.KeyIndex.for_operation`) how the records get their file groups, and
picks one of four write jobs (:class:`WriteJobKind`)::

    the index says   the write                            job            routing
    LOOKUP / NONE    upsert, insert, delete whose every   BY_PARTITION   ByPartition
                     partition fits one task (table with
                     data, no pending instant)
    LOOKUP           any other lookup write               ROUTED         locate, ByFileGroup
    NONE             bulk_insert (sort mode NONE, no      UNROUTED       locate, Unrouted
                     combining)
    NONE             any other (insert, replace writes)   ROUTED         locate, ByFileGroup
    WRITE_JOB        any                                  BY_BUCKET      ByBucket

Every job is one call of the runner's ``write_routed`` with its routing
(:mod:`engine.write.routing`), and every job's tasks run the same task over their routing
units, each file group written by one of the write handles.

``ROUTED`` is the write the strategies plan (:mod:`engine.write.copy_on_write`,
:mod:`engine.write.merge_on_read`, :mod:`engine.write.replace`): the profile job looks the keys
up with the index (or only profiles them), the driver plans the buckets, one task writes each
file group. ``BY_PARTITION`` (:mod:`engine.write.partition_write`) looks the keys up with the
same index inside its write tasks. ``UNROUTED`` (:mod:`engine.write.bulk_insert`) and
``BY_BUCKET`` (:mod:`engine.write.bucket_index`) tag nothing before their write job. A new
index is a :class:`~engine.write.index.KeyIndex` class: its answer picks one of these jobs, and
no write path is added.
"""

from __future__ import annotations

from typing import Any

from engine.config import HoodieConfig, TableType, WriteOperation
from engine.fs.storage import Storage
from engine.model.keygen import KeyGenSpec
from engine.model.ordering import naming_ordering_field
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.timeline import Timeline
from engine.write.bucket_index import bucket_profile, bucket_spec, write_into_buckets
from engine.write.bulk_insert import streams_bulk_insert, write_bulk_insert
from engine.write.index import IndexSource, KeyIndex, Tagging
from engine.write.partition_write import (
    PartitionTargets,
    one_job_plan,
    one_job_profile,
    write_by_partition,
)
from engine.write.plan import WriteJob, WriteJobKind
from engine.write.runner import BatchProfile, Runner
from engine.write.strategy import WriteStrategy

__all__ = ["choose_job", "one_job_targets", "run_write_job", "tag_batch"]


def choose_job(
    index: KeyIndex,
    operation: WriteOperation,
    cfg: HoodieConfig,
    one_job: PartitionTargets | None,
) -> WriteJobKind:
    """The write job of a batch (see the module notes).

    Args:
        index: The write's index, for its operation (:meth:`KeyIndex.for_operation`).
        operation: The write operation.
        cfg: The write's options.
        one_job: The one-job write's listing of the table, ``None`` when the write's
            semantics or sizes rule it out (:func:`engine.write.partition_write.one_job_plan`).
    """
    if index.tagging is Tagging.WRITE_JOB:
        return WriteJobKind.BY_BUCKET
    if index.tagging is Tagging.NONE and streams_bulk_insert(cfg, operation):
        return WriteJobKind.UNROUTED
    if one_job is not None:
        return WriteJobKind.BY_PARTITION
    return WriteJobKind.ROUTED


def one_job_targets(
    storage: Storage,
    cfg: HoodieConfig,
    index: KeyIndex,
    operation: WriteOperation,
    table_type: TableType,
    spec: KeyGenSpec,
    timeline: Timeline | None,
) -> PartitionTargets | None:
    """The one-job write's listing, for an index that does not tag in its own write job."""
    if index.tagging is Tagging.WRITE_JOB:
        return None
    return one_job_plan(storage, cfg, index, operation, table_type, spec, timeline)


def tag_batch(
    kind: WriteJobKind,
    runner: Runner,
    keyed: Any,
    spec: KeyGenSpec,
    cfg: HoodieConfig,
    *,
    source: IndexSource | None,
    one_job: PartitionTargets | None,
    ordering: str | None,
    base_path: str,
) -> BatchProfile:
    """What the write knows of its batch before its instant is requested: the profile job's
    (partitions, counts and, with a ``source``, the keys the index found), or the profile of
    a write job that tags the batch itself.

    Raises:
        RecordKeyError, NullOrderingValueError: from the profile job (nothing written).
        ConfigError: the bucket index's settings.
    """
    if kind is WriteJobKind.BY_BUCKET:
        bucket_spec(cfg, spec)  # checked before anything is written
        return bucket_profile()
    if kind is WriteJobKind.BY_PARTITION and one_job is not None:
        return one_job_profile(one_job)
    with naming_ordering_field(ordering, base_path):
        return runner.locate(keyed, spec, source)  # key/ordering errors: no write


def run_write_job(
    kind: WriteJobKind, job: WriteJob, strategy: WriteStrategy
) -> list[HoodieWriteStat]:
    """Write the data of the requested instant with the chosen job; the write stats."""
    if job.records is None or kind is WriteJobKind.ROUTED:
        return strategy.execute(job)
    if kind is WriteJobKind.BY_PARTITION:
        return write_by_partition(job, strategy.action)
    if kind is WriteJobKind.BY_BUCKET:
        return write_into_buckets(job, strategy.action)
    return write_bulk_insert(job, strategy.action, strategy.record_size(job))
