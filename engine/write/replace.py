"""Replace writes: ``insert_overwrite``, ``insert_overwrite_table`` and ``delete_partition``.

Each completes as a ``replacecommit`` whose metadata names the file groups it replaces; readers
drop those groups whole from snapshots at or after the instant, time travel before it still
sees them, and the cleaner deletes their files once the instant leaves the retained commits::

    <t>.replacecommit.requested   Avro HoodieRequestedReplaceMetadata, every field null (what
                                  Spark writes for a non-clustering replace)
    <t>.replacecommit.inflight    JSON HoodieCommitMetadata (operation type only)
    <partition>/<new file groups> insert_overwrite*: the input, as inserts into new file groups
    <t>.replacecommit             JSON HoodieReplaceCommitMetadata:
                                  partitionToReplaceFileIds = {partition: [file_id, ...]}

Which file groups are replaced (Hudi's ``getAllExistingFileIds``: every file group with a latest
file slice in the partition)::

    insert_overwrite        partitions the input writes to (a new partition maps to [])
    insert_overwrite_table  every partition of the table, and the partitions written
    delete_partition        partitions named by hoodie.datasource.write.partitions.to.delete;
                            no records are written

The replaced set is computed when the instant completes, under the table lock, from the timeline
as it is then. A write completed meanwhile into an overwritten partition has written a file group
the replace would now replace: the conflict check (:mod:`engine.write.conflict`) refuses the
replace and rolls it back (retrying it overwrites that write's rows too), so no committed row is
replaced unseen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine import config
from engine.config import HoodieConfig, WriteOperation
from engine.errors import ConfigError
from engine.fs.filenames import new_file_id
from engine.fs.storage import Storage
from engine.timeline.avro_metadata import REQUESTED_REPLACE_METADATA_SCHEMA, serialize
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSystemView
from engine.write.bucketing import plan_buckets
from engine.write.plan import WriteJob, average_record_size
from engine.write.routing import ByFileGroup
from engine.write.strategy import WriteStrategy

__all__ = [
    "DeletePartitionWrite",
    "InsertOverwriteWrite",
    "partitions_to_delete",
    "plan_replaced_file_ids",
    "requested_replace_metadata",
    "write_insert_overwrite",
]


def requested_replace_metadata() -> bytes:
    """Content of ``<t>.replacecommit.requested`` for a replace that is not clustering."""
    record: dict[str, Any] = {
        "operationType": None,
        "clusteringPlan": None,
        "extraMetadata": None,
        "version": None,
    }
    return serialize(REQUESTED_REPLACE_METADATA_SCHEMA, record)


def partitions_to_delete(cfg: HoodieConfig) -> tuple[str, ...]:
    """The partition paths a ``delete_partition`` write names.

    Raises:
        ConfigError: none is named.
    """
    named = tuple(p.strip("/") for p in cfg.get(config.PARTITIONS_TO_DELETE))
    if not named:
        raise ConfigError(
            f"Operation 'delete_partition' needs {config.PARTITIONS_TO_DELETE.key} "
            "(comma-separated partition paths)"
        )
    return named


def plan_replaced_file_ids(
    storage: Storage,
    timeline: Timeline,
    operation: WriteOperation,
    partitions: Iterable[str],
) -> dict[str, list[str]]:
    """``partitionToReplaceFileIds`` of a replace write.

    Args:
        storage: The table's storage.
        timeline: The timeline the replace completes on (the write's own instant is pending,
            so its new file groups are not in the view).
        operation: A replace operation (:attr:`WriteOperation.is_replace`).
        partitions: Partitions the write touched (written, or named for deletion).

    Returns:
        Partition path -> sorted file ids of its live file groups; every touched partition
        is a key, with an empty list when it holds no file group.
    """
    touched = set(partitions)
    if operation == WriteOperation.INSERT_OVERWRITE_TABLE:
        view = FileSystemView(storage, timeline)
        touched |= set(view.partition_paths)
    else:
        view = FileSystemView(storage, timeline, partition_paths=touched)
    replaced: dict[str, set[str]] = {p: set() for p in touched}
    for file_slice in view.latest_file_slices():
        if file_slice.partition_path in replaced:
            replaced[file_slice.partition_path].add(file_slice.file_id)
    return {p: sorted(ids) for p, ids in sorted(replaced.items())}


class InsertOverwriteWrite(WriteStrategy):
    """insert_overwrite, insert_overwrite_table: new file groups replace the old ones."""

    action = Action.REPLACE_COMMIT

    def execute(self, job: WriteJob) -> list[HoodieWriteStat]:
        return write_insert_overwrite(job)

    def replaced(
        self, storage: Storage, job: WriteJob, stats: list[HoodieWriteStat]
    ) -> dict[str, list[str]]:
        # the partitions the batch holds, and those written: a write job that tags the batch
        # itself (the bucket index) profiles no partition in advance, Hudi's dynamic
        # partitions are the write statuses' ones
        written = {s.partition_path or "" for s in stats}
        touched = set(job.touched_partitions) | written
        return plan_replaced_file_ids(storage, Timeline.load(storage), job.operation, touched)


class DeletePartitionWrite(WriteStrategy):
    """delete_partition: a replacecommit that writes nothing and replaces every file group of
    the named partitions (partitions the table does not have are recorded with no file ids,
    as Hudi does)."""

    action = Action.REPLACE_COMMIT
    writes_records = False

    def execute(self, job: WriteJob) -> list[HoodieWriteStat]:
        job.start_inflight(self.action, None)
        return []

    def replaced(
        self, storage: Storage, job: WriteJob, stats: list[HoodieWriteStat]
    ) -> dict[str, list[str]]:
        partitions = partitions_to_delete(job.cfg)
        return plan_replaced_file_ids(storage, Timeline.load(storage), job.operation, partitions)


def write_insert_overwrite(job: WriteJob) -> list[HoodieWriteStat]:
    """Write the records of a requested replacecommit into new file groups.

    Hudi's insert-overwrite partitioner has no small files and no index: every record is an
    insert, sized into new file groups of ``hoodie.parquet.max.file.size``.

    Returns:
        One write stat per new base file.
    """
    located = job.locate()  # no index lookup: all inserts
    estimate = job.cfg.get(config.COPY_ON_WRITE_RECORD_SIZE_ESTIMATE)
    plan = plan_buckets(
        update_counts={},
        insert_counts=located.insert_counts,
        latest_base_files={},
        avg_record_size=average_record_size(job.timeline, estimate),
        max_file_size=job.cfg.get(config.PARQUET_MAX_FILE_SIZE),
        small_file_limit=0,
        pack_small_files=False,
        new_file_id=new_file_id,
    )
    job.start_inflight(Action.REPLACE_COMMIT, plan)
    # the handles' insert path: new files, no stored rows
    ctx = job.write_context(WriteOperation.INSERT)
    return job.data_runner.write_routed(located, ByFileGroup(plan), ctx, job.batch.spec)
