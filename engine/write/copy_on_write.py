"""The copy-on-write branch of a write: a ``commit`` whose file groups get new base files.

index lookup ──► workload profile ──► buckets (updates keep their file group; inserts fill
small files, then new file groups) ──► <t>.commit.inflight ──► one task per file group
(create / merge handle) ──► write stats for the commit
"""

from __future__ import annotations

from engine import config
from engine.fs.filenames import new_file_id
from engine.services.clustering_plan import clustering_file_groups
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action
from engine.write.bucketing import plan_buckets
from engine.write.listing import latest_base_files
from engine.write.plan import WriteJob, average_record_size
from engine.write.routing import ByFileGroup
from engine.write.strategy import WriteStrategy

__all__ = ["CopyOnWriteWrite", "write_copy_on_write"]


class CopyOnWriteWrite(WriteStrategy):
    """upsert, insert, bulk_insert, delete into a copy-on-write table: a ``commit``."""

    action = Action.COMMIT

    def execute(self, job: WriteJob) -> list[HoodieWriteStat]:
        return write_copy_on_write(job)


def write_copy_on_write(job: WriteJob) -> list[HoodieWriteStat]:
    """Write the data of a requested commit; returns the write stats to commit."""
    cfg = job.cfg
    estimate = cfg.get(config.COPY_ON_WRITE_RECORD_SIZE_ESTIMATE)
    latest = latest_base_files(job.timeline, job.touched_partitions)
    located = job.locate()
    plan = plan_buckets(
        update_counts=located.update_counts,
        insert_counts=located.insert_counts,
        latest_base_files=latest,
        avg_record_size=average_record_size(job.timeline, estimate),
        max_file_size=cfg.get(config.PARQUET_MAX_FILE_SIZE),
        small_file_limit=cfg.get(config.PARQUET_SMALL_FILE_LIMIT),
        pack_small_files=job.operation.packs_small_files,
        new_file_id=new_file_id,
        excluded=clustering_file_groups(job.storage, job.timeline),
    )
    job.start_inflight(Action.COMMIT, plan)
    return job.data_runner.write_routed(
        located, ByFileGroup(plan), job.write_context(), job.batch.spec
    )
