"""The merge-on-read branch of a write: a ``deltacommit`` whose updates become log blocks.

Timeline of one write (the driver; the data work runs on Spark)::

    index lookup (engine.spark.profile) ──► roll back failed writes ──► finish a pending
      compaction (synchronous compaction only) ──► <t>.deltacommit.requested ──► buckets
      ──► <t>.deltacommit.inflight
      ──► tasks: create / merge / append handles ──► <t>.deltacommit ──► inline compaction if due

Routing follows Hudi's Spark ``SparkUpsertDeltaCommitPartitioner`` (``getSmallFiles``) and
``BaseSparkDeltaCommitActionExecutor.handleUpdate``; which slices take inserts depends on whether
the configured index finds keys in log files
(:attr:`engine.index.IndexType.indexes_log_files`, Hudi's ``canIndexLogFiles``;
:class:`SmallFileRule`)::

    updates / deletes of a file group     append handle: log blocks on the latest file slice
    inserts, index reading base files     first the small-file candidates of the partition:
    only (SIMPLE, BLOOM, GLOBAL_*)        latest slices WITHOUT log files whose base file is
                                          below hoodie.parquet.small.file.limit, smallest first,
                                          at most hoodie.merge.small.file.group.candidates.limit
                                          of them; such a group is rewritten by the merge
                                          handle (its updates too) into a new base file
    inserts, index finding keys in log    first every latest slice (with a base file, not in a
    files (RECORD_INDEX)                  pending compaction) whose base file + log bytes x
                                          hoodie.logfile.to.parquet.compression.ratio is below
                                          hoodie.parquet.max.file.size, smallest first; the
                                          inserts are APPENDED to it as log blocks (numInserts
                                          on the log file's write stat), nothing is rewritten
                                        then new file groups (create handle, new base files)

A small file limit of 0 or less turns both rules off. Hudi writes an index-logs write's new file
groups as log files too; here they are base files, so a key is always in a file group with a
base file, which is where the lookups look.

The average record size that sizes inserts comes from completed ``commit``/``replacecommit``
instants only (compactions), as Hudi's partitioner reads it; delta commits hold log sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from engine import config
from engine.config import HoodieConfig
from engine.errors import HudiError
from engine.fs.filenames import new_file_id
from engine.fs.storage import Storage
from engine.services.clustering_plan import clustering_file_groups
from engine.services.compaction import compacting_file_groups, run_pending_compactions
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from engine.write.append import LogWriteConfig
from engine.write.bucketing import BucketPlan, SizedBaseFile, plan_buckets
from engine.write.listing import TableSlices, latest_table_slices
from engine.write.plan import WriteJob
from engine.write.routing import ByFileGroup, HandleChoice
from engine.write.runner import Runner
from engine.write.strategy import WriteStrategy

if TYPE_CHECKING:
    pass

__all__ = [
    "MergeOnReadWrite",
    "SmallFileRule",
    "average_record_size",
    "plan_merge_on_read_buckets",
    "write_merge_on_read",
]

# Hudi's hoodie.record.size.estimation.threshold: a commit informs the record size only when it
# wrote more than this fraction of the small file limit
_RECORD_SIZE_ESTIMATION_THRESHOLD = 1.0


def average_record_size(timeline: Timeline, default: int, small_file_limit: int) -> int:
    """Bytes per record of the latest compaction/replace commit that wrote enough data."""
    threshold = int(_RECORD_SIZE_ESTIMATION_THRESHOLD * small_file_limit)
    for instant in reversed(timeline.commits_timeline()):
        if instant.action not in (Action.COMMIT, Action.REPLACE_COMMIT):
            continue
        stats = timeline.read_commit_metadata(instant).write_stats()
        records = sum(s.num_writes for s in stats)
        written = sum(s.total_write_bytes for s in stats)
        if written > threshold and records > 0:
            return max(1, math.ceil(written / records))
    return default


@dataclass(frozen=True)
class SmallFileRule:
    """Which latest file slices of a merge-on-read table take inserts (Hudi's
    ``SparkUpsertDeltaCommitPartitioner.getSmallFiles``), chosen by the table's index.

    Attributes:
        small_file_limit: ``hoodie.parquet.small.file.limit``; 0 or less: no slice takes
            inserts, whatever the index.
        candidates_limit: ``hoodie.merge.small.file.group.candidates.limit`` (base-file rule).
        inserts_to_logs: The index finds keys in log files (``canIndexLogFiles``): every
            latest slice is sized (base file + log bytes x ``log_to_base_ratio``) and those
            below ``hoodie.parquet.max.file.size`` take inserts as log blocks.
        log_to_base_ratio: ``hoodie.logfile.to.parquet.compression.ratio``.
        compacting: File groups of pending compaction (and clustering) plans, never
            candidates.
    """

    small_file_limit: int
    candidates_limit: int
    inserts_to_logs: bool = False
    log_to_base_ratio: float = config.LOGFILE_TO_PARQUET_COMPRESSION_RATIO.default
    compacting: frozenset[tuple[str, str]] = frozenset()

    @staticmethod
    def of(
        cfg: HoodieConfig, compacting: frozenset[tuple[str, str]] = frozenset()
    ) -> SmallFileRule:
        """The rule of a write with options ``cfg``: the configured index decides (an insert
        looks no key up, but the next lookup must find what it appends)."""
        return SmallFileRule(
            small_file_limit=cfg.get(config.PARQUET_SMALL_FILE_LIMIT),
            candidates_limit=cfg.get(config.MERGE_SMALL_FILE_GROUP_CANDIDATES_LIMIT),
            inserts_to_logs=cfg.get(config.INDEX_TYPE).indexes_log_files,
            log_to_base_ratio=cfg.get(config.LOGFILE_TO_PARQUET_COMPRESSION_RATIO),
            compacting=compacting,
        )

    def candidates(
        self, table_slices: TableSlices, receiving: set[str], max_file_size: int
    ) -> dict[tuple[str, str], SizedBaseFile]:
        """The small-file candidates of the partitions ``receiving`` inserts, each sized as
        the bucketing must see it."""
        if self.small_file_limit <= 0:
            return {}
        if self.inserts_to_logs:
            return self._slices_below_max_size(table_slices, receiving, max_file_size)
        return self._base_files_without_logs(table_slices, receiving)

    def _slices_below_max_size(
        self, table_slices: TableSlices, receiving: set[str], max_file_size: int
    ) -> dict[tuple[str, str], SizedBaseFile]:
        """``canIndexLogFiles``: every latest slice outside pending compaction whose estimated
        size is below the max file size, no candidates limit; the bucketing fills them smallest
        first (Hudi takes the file system view's order, which it leaves unspecified). A
        log-only slice is left out (Hudi keeps it): the lookups look keys up in file groups
        with a base file."""
        found: dict[tuple[str, str], SizedBaseFile] = {}
        for key, base in table_slices.base_files.items():
            if key[0] not in receiving or key in self.compacting:
                continue
            file_slice = table_slices.slices.get(key)
            log_bytes = file_slice.log_bytes if file_slice else 0
            size = base.size_bytes + int(log_bytes * self.log_to_base_ratio)
            if size < max_file_size:
                found[key] = replace(base, size_bytes=size)
        return found

    def _base_files_without_logs(
        self, table_slices: TableSlices, receiving: set[str]
    ) -> dict[tuple[str, str], SizedBaseFile]:
        """Any other index: slices without log files whose base file is below the small file
        limit, smallest first, at most the candidates limit per partition."""
        by_partition: dict[str, list[tuple[tuple[str, str], SizedBaseFile]]] = {}
        for key, base in table_slices.base_files.items():
            if (
                key[0] in receiving
                and not table_slices.has_logs(key)
                and key not in self.compacting
            ):
                if base.size_bytes < self.small_file_limit:
                    by_partition.setdefault(key[0], []).append((key, base))
        found: dict[tuple[str, str], SizedBaseFile] = {}
        for entries in by_partition.values():
            entries.sort(key=lambda e: (e[1].size_bytes, e[1].file_id))
            found.update(entries[: max(0, self.candidates_limit)])
        return found


def plan_merge_on_read_buckets(
    *,
    update_counts: Mapping[tuple[str, str], int],
    insert_counts: Mapping[str, int],
    table_slices: TableSlices,
    avg_record_size: int,
    max_file_size: int,
    rule: SmallFileRule,
    pack_small_files: bool,
) -> tuple[BucketPlan, frozenset[str]]:
    """Buckets of a merge-on-read write and the file ids rewritten as small files.

    Returns:
        The bucket plan, and the file ids whose bucket the merge handle writes (small-file
        candidates of partitions receiving inserts, on an index that cannot find keys in log
        files); other existing file groups get appends.
    """
    receiving = {p for p, n in insert_counts.items() if n > 0}
    candidates = rule.candidates(table_slices, receiving, max_file_size) if pack_small_files else {}
    # the candidates are shown with their estimated size, every other file group at the limit
    # the shared planner packs below, so that only the candidates take inserts
    limit = max_file_size if rule.inserts_to_logs else rule.small_file_limit
    shown = {
        key: candidates.get(key) or replace(base, size_bytes=max(base.size_bytes, limit))
        for key, base in table_slices.base_files.items()
    }
    plan = plan_buckets(
        update_counts=update_counts,
        insert_counts=insert_counts,
        latest_base_files=shown,
        avg_record_size=avg_record_size,
        max_file_size=max_file_size,
        small_file_limit=limit,
        pack_small_files=pack_small_files and bool(candidates),
        new_file_id=new_file_id,
    )
    if rule.inserts_to_logs:  # inserts are appended like updates: nothing is rewritten
        return plan, frozenset()
    return plan, frozenset(base.file_id for base in candidates.values())


def log_write_config(cfg: HoodieConfig) -> LogWriteConfig:
    return LogWriteConfig(
        data_block_max_size=cfg.get(config.LOGFILE_DATA_BLOCK_MAX_SIZE),
        log_file_max_size=cfg.get(config.LOGFILE_MAX_SIZE),
        data_block_format=cfg.get(config.LOGFILE_DATA_BLOCK_FORMAT),
    )


class MergeOnReadWrite(WriteStrategy):
    """upsert, insert, bulk_insert, delete into a merge-on-read table: a ``deltacommit``.

    Compaction is synchronous: a pending compaction completes before the instant is requested.
    """

    action = Action.DELTA_COMMIT

    def before_request(self, storage: Storage, runner: Runner | None) -> list[str]:
        if runner is None:
            raise HudiError(f"A merge-on-read write on {storage.base_path} needs a runner")
        return run_pending_compactions(storage, runner=runner.compact)

    def execute(self, job: WriteJob) -> list[HoodieWriteStat]:
        return write_merge_on_read(job)

    def record_size(self, job: WriteJob) -> int:
        """Bytes per record from compactions and replace commits only (delta commits hold log
        sizes), as Hudi's merge-on-read partitioner reads it."""
        cfg = job.cfg
        estimate = cfg.get(config.COPY_ON_WRITE_RECORD_SIZE_ESTIMATE)
        return average_record_size(job.timeline, estimate, cfg.get(config.PARQUET_SMALL_FILE_LIMIT))


def write_merge_on_read(job: WriteJob) -> list[HoodieWriteStat]:
    """Write the data of a requested deltacommit; returns the write stats to commit."""
    cfg = job.cfg
    small_file_limit = cfg.get(config.PARQUET_SMALL_FILE_LIMIT)
    estimate = cfg.get(config.COPY_ON_WRITE_RECORD_SIZE_ESTIMATE)
    table_slices = latest_table_slices(job.storage, job.timeline, job.touched_partitions)
    located = job.locate()
    rule = SmallFileRule.of(cfg)
    # never a small file: groups of pending compaction (logs-rule) and of pending clustering
    busy = clustering_file_groups(job.storage, job.timeline)
    if rule.inserts_to_logs:
        busy |= compacting_file_groups(job.storage, job.timeline)
    rule = replace(rule, compacting=busy)
    plan, small_file_ids = plan_merge_on_read_buckets(
        update_counts=located.update_counts,
        insert_counts=located.insert_counts,
        table_slices=table_slices,
        avg_record_size=average_record_size(job.timeline, estimate, small_file_limit),
        max_file_size=cfg.get(config.PARQUET_MAX_FILE_SIZE),
        rule=rule,
        pack_small_files=job.operation.packs_small_files,
    )
    job.start_inflight(Action.DELTA_COMMIT, plan)
    appends = {
        bucket.file_id: table_slices.slices[(bucket.partition_path, bucket.file_id)]
        for bucket in plan.buckets.values()
        if (bucket.partition_path, bucket.file_id) in table_slices.slices
        and bucket.file_id not in small_file_ids
    }
    handles = HandleChoice(appends, log_write_config(cfg))
    routing = ByFileGroup(plan, handles)
    return job.data_runner.write_routed(located, routing, job.write_context(), job.batch.spec)


def describe(stats: list[HoodieWriteStat]) -> dict[str, Any]:
    """Counts of a merge-on-read write's stats (base files vs log files), for logs and tests."""
    logs = [s for s in stats if s.is_delta]
    return {
        "log_files": len(logs),
        "base_files": len(stats) - len(logs),
        "records": sum(s.num_writes for s in stats),
        "deletes": sum(s.num_deletes for s in stats),
    }
