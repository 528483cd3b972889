"""Driver-side planning of a write: what the table holds where the batch lands.

The driver reads only metadata here (directory listings, footers, commit metadata); the data work
is planned for Spark tasks: which latest base files the index must scan, the average record size
that sizes new files, and the buckets (file groups) the records are routed to.

:class:`WriteJob` is one requested write as every branch (copy-on-write, merge-on-read, replace)
receives it from :class:`engine.table.HudiTable`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine import config
from engine.bucketing import BucketPlan, SmallFile
from engine.commit_metadata import HoodieCommitMetadata
from engine.config import HoodieConfig
from engine.fs_view import FileSystemView
from engine.index import PartitionKeyRange
from engine.instant import Action
from engine.io.parquet import avro_schema_with_meta, table_arrow_schema
from engine.merge import MergeSpec
from engine.properties import write_partition_metadata
from engine.storage import Storage
from engine.timeline import Timeline, transition_to_inflight
from engine.write.commit import OPERATION_TYPES
from engine.write.handles import WriteContext

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["WriteJob", "average_record_size", "latest_base_files"]


@dataclass(frozen=True)
class WriteJob:
    """A requested write and everything its data phase needs.

    Attributes:
        storage: Table storage.
        keyed: Incoming records with record key and partition path (Spark).
        ranges: Records, distinct keys and key range per touched partition.
        cfg: Table properties merged with the write options.
        timeline: The timeline the write started from (failed writes rolled back).
        operation: The write operation (upsert, insert, bulk_insert, delete, insert_overwrite...).
        instant_time: The requested instant.
        merge_spec: Payload class and ordering field.
        commit_schema: Avro schema (no meta fields) the instant writes with.
    """

    storage: Storage
    keyed: DataFrame
    ranges: list[PartitionKeyRange]
    cfg: HoodieConfig
    timeline: Timeline
    operation: str
    instant_time: str
    merge_spec: MergeSpec
    commit_schema: str

    @property
    def touched_partitions(self) -> list[str]:
        return [r.partition_path for r in self.ranges]

    def write_context(self, operation: str | None = None) -> WriteContext:
        """The tasks' snapshot; ``operation`` overrides the handles' operation (replace writes
        use the insert path). Inserts combine duplicates only with combine.before.insert."""
        operation = operation or self.operation
        combine_inserts = self.cfg.get(config.COMBINE_BEFORE_INSERT) is True
        return WriteContext(
            base_path=self.storage.base_path,
            instant_time=self.instant_time,
            operation=operation,
            arrow_schema=table_arrow_schema(self.commit_schema),
            avro_schema_with_meta=avro_schema_with_meta(self.commit_schema),
            merge_spec=self.merge_spec,
            combine=combine_inserts if operation in ("insert", "bulk_insert") else True,
            compression=str(self.cfg.get(config.PARQUET_COMPRESSION_CODEC)),
        )

    def start_inflight(self, action: Action, plan: BucketPlan) -> None:
        """``<t>.<action>.inflight``, then the partition metafile of every partition written."""
        metadata = HoodieCommitMetadata(operation_type=OPERATION_TYPES[self.operation])
        transition_to_inflight(self.storage, self.instant_time, action, metadata.to_json())
        for partition in sorted({b.partition_path for b in plan.buckets.values()}):
            write_partition_metadata(self.storage, partition, self.instant_time)


def latest_base_files(
    timeline: Timeline, partition_paths: Iterable[str]
) -> dict[tuple[str, str], SmallFile]:
    """Latest committed base file of every live file group in ``partition_paths``.

    Returns:
        (partition_path, file_id) -> the base file with its size.
    """
    partitions = sorted(set(partition_paths))
    if not partitions or timeline.last_completed() is None:
        return {}
    storage = timeline.storage
    view = FileSystemView(storage, timeline, partition_paths=partitions)
    sizes: dict[str, int] = {}
    for partition in view.partition_paths:
        for entry in storage.list_dir(partition):
            sizes[f"{partition}/{entry.name}" if partition else entry.name] = entry.size
    out: dict[tuple[str, str], SmallFile] = {}
    for file_slice in view.latest_base_files():
        rel = file_slice.base_file_path
        if rel is None or file_slice.base_file is None:
            continue
        out[(file_slice.partition_path, file_slice.file_id)] = SmallFile(
            file_id=file_slice.file_id,
            base_file=file_slice.base_file,
            instant_time=file_slice.base_instant_time,
            size_bytes=sizes.get(rel, 0),
        )
    return out


def average_record_size(timeline: Timeline, default: int) -> int:
    """Bytes per record written by the latest commit that wrote records, else ``default``.

    Hudi sizes new files from past commits so file sizes converge on ``max.file.size`` whatever
    the compression achieves.
    """
    for instant in reversed(timeline.commits_timeline()):
        stats = timeline.read_commit_metadata(instant).write_stats()
        records = sum(s.num_writes for s in stats)
        written = sum(s.total_write_bytes for s in stats)
        if records > 0 and written > 0:
            return max(1, written // records)
    return default
