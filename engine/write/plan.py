"""Driver-side planning of a write: what the table holds where the batch lands.

The driver reads only metadata here (directory listings, footers, commit metadata); the data work
is planned for Spark tasks: which latest base files the index must scan, the average record size
that sizes new files, and the buckets (file groups) the records are routed to.

:class:`WriteJob` is one requested write as every branch (copy-on-write, merge-on-read, replace)
receives it from :class:`engine.write.transaction.WriteTransaction`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from engine import config
from engine.config import HoodieConfig, WriteOperation
from engine.errors import HudiError, NullOrderingValueError, RecordKeyError
from engine.fs.properties import PROPERTIES_FILE, read_properties, write_partition_metadata
from engine.fs.storage import Storage
from engine.io.bloom_filter import BloomFilterSpec
from engine.io.parquet import avro_schema_with_meta, table_arrow_schema
from engine.metadata.record_index_partition import record_index_wanted
from engine.model.keygen import KeyGenSpec
from engine.model.merge import MergeSpec
from engine.model.ordering import naming_ordering_field
from engine.model.schema import add_operation_field, schema_json, with_operation_column
from engine.timeline.commit_metadata import HoodieCommitMetadata, operation_type
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline, delete_instant_files, transition_to_inflight
from engine.write.bucketing import BucketPlan
from engine.write.cdc import cdc_logging_mode
from engine.write.handles import WriteContext
from engine.write.index import IndexSource, PartitionKeyRange
from engine.write.operation_field import writes_operation_field
from engine.write.runner import BatchProfile, LocatedRecords, Runner

__all__ = ["JobProfile", "PreparedRecords", "WriteJob", "WriteJobKind", "average_record_size"]


class WriteJobKind(Enum):
    """The write job a batch runs (chosen by :func:`engine.write.pipeline.choose_job`)."""

    #: the profile job tags (or only profiles) the batch; one task per planned file group
    ROUTED = "routed"
    #: one job: each task looks up, plans and writes the file groups of its partitions
    BY_PARTITION = "by partition"
    #: one job: the bucket index hashes each record to its bucket's file group
    BY_BUCKET = "by bucket"
    #: one job: each task writes the records it reads into new file groups (bulk_insert)
    UNROUTED = "unrouted"


@dataclass
class PreparedRecords:
    """The incoming batch, keyed and profiled before the instant is requested.

    Attributes:
        keyed: The runner's handle of the records with record key and partition path.
        profile: The batch profile and the keys found by the index lookup (looked up again when
            a write completes between the lookup and the requested instant).
        spec: The key generator.
        merge_spec: Payload class and ordering field.
        source: The table state the keys were looked up in (``None``: no lookup).
        job: The write job the batch runs.
    """

    keyed: Any
    profile: BatchProfile
    spec: KeyGenSpec
    merge_spec: MergeSpec
    source: IndexSource | None
    job: WriteJobKind = WriteJobKind.ROUTED


@dataclass(frozen=True)
class WriteJob:
    """A requested write and everything its data phase needs.

    Attributes:
        storage: Table storage.
        runner: Runs the data work (Spark); ``None`` only for a write without records.
        cfg: Table properties merged with the write options.
        timeline: The timeline the write started from (failed writes rolled back).
        operation: The write operation (upsert, insert, bulk_insert, delete, insert_overwrite...).
        instant_time: The requested instant.
        commit_schema: Avro schema (no meta fields) the instant writes with.
        records: The prepared batch; ``None`` for a write without records (delete_partition).
    """

    storage: Storage
    runner: Runner | None
    cfg: HoodieConfig
    timeline: Timeline
    operation: WriteOperation
    instant_time: str
    commit_schema: str
    records: PreparedRecords | None

    @property
    def batch(self) -> PreparedRecords:
        if self.records is None:
            raise HudiError(f"Operation {self.operation} of {self.instant_time} writes no records")
        return self.records

    @property
    def data_runner(self) -> Runner:
        """The runner of the data phase (a write of records always has one)."""
        if self.runner is None:
            raise HudiError(f"Write {self.instant_time} on {self.storage.base_path} has no runner")
        return self.runner

    @property
    def ranges(self) -> list[PartitionKeyRange]:
        return self.batch.profile.ranges

    @property
    def touched_partitions(self) -> list[str]:
        return [r.partition_path for r in self.ranges]

    def locate(self) -> LocatedRecords:
        """The batch tagged with its file groups (deletes keep only stored keys)."""
        deleting = self.operation == WriteOperation.DELETE
        # auto-generated keys are <instant_time>_<partition>_<row>: the instant is known now
        prefix = self.instant_time if self.batch.spec.auto_keys else ""
        return self.batch.profile.locate(
            self.batch.keyed, existing_only=deleting, key_prefix=prefix
        )

    def write_context(self, operation: WriteOperation | None = None) -> WriteContext:
        """The tasks' snapshot; ``operation`` overrides the handles' operation (replace writes
        use the insert path). Inserts combine duplicates only with combine.before.insert."""
        operation = operation or self.operation
        combine_inserts = self.cfg.get(config.COMBINE_BEFORE_INSERT) is True
        arrow_schema = table_arrow_schema(self.commit_schema)
        avro_with_meta = avro_schema_with_meta(self.commit_schema)
        if writes_operation_field(self.cfg, self.storage, self.timeline):
            arrow_schema = with_operation_column(arrow_schema)
            avro_with_meta = schema_json(add_operation_field(self.commit_schema))
        return WriteContext(
            base_path=self.storage.base_path,
            s3=self.storage.s3,
            instant_time=self.instant_time,
            operation=operation,
            arrow_schema=arrow_schema,
            avro_schema_with_meta=avro_with_meta,
            merge_spec=self.batch.merge_spec,
            combine=combine_inserts if operation.is_insert else True,
            bloom=BloomFilterSpec.of(self.cfg),
            compression=str(self.cfg.get(config.PARQUET_COMPRESSION_CODEC)),
            logs_named_by_instant=self.timeline.layout.version >= 2,
            cdc_mode=cdc_logging_mode(self.cfg),
            record_index=self.keeps_record_index(),
        )

    def keeps_record_index(self) -> bool:
        """Whether the table has or gets a record index (its handles then report the keys
        each file wrote and deleted, which the commit's record index update is made of)."""
        if not self.storage.exists(PROPERTIES_FILE):
            return record_index_wanted(self.cfg, ())
        props = read_properties(self.storage)
        listed = config.METADATA_PARTITIONS.parse(props.get(config.METADATA_PARTITIONS.key, ""))
        return record_index_wanted(self.cfg, listed)

    def start_inflight(self, action: Action, plan: BucketPlan | None) -> None:
        """``<t>.<action>.inflight``, then the partition metafile of every partition written."""
        metadata = HoodieCommitMetadata(operation_type=operation_type(self.operation))
        transition_to_inflight(self.storage, self.instant_time, action, metadata)
        partitions = {b.partition_path for b in plan.buckets.values()} if plan else set()
        for partition in sorted(partitions):
            write_partition_metadata(self.storage, partition, self.instant_time)

    @contextmanager
    def checked_inflight(self, action: Action) -> Iterator[None]:
        """``<t>.<action>.inflight`` around a write job that checks its rows itself (its map
        stage refuses a bad key or a null ordering value, :mod:`engine.model.row_checks`,
        before any file is written): on such a refusal the instant's files are deleted, as if
        it never was (no rollback instant is needed for nothing), and a null ordering value is
        refused naming the field."""
        self.start_inflight(action, None)
        try:
            with naming_ordering_field(
                self.batch.merge_spec.ordering_field, self.storage.base_path
            ):
                yield
        except (RecordKeyError, NullOrderingValueError):
            delete_instant_files(self.storage, self.instant_time, action)
            raise


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


@dataclass
class JobProfile:
    """The batch profile of a write whose one Spark job finds the keys' file groups itself (the
    bucket index hashes them, the one-job write's tasks look them up): nothing is profiled
    before that job, so no partition is known in advance.

    Attributes:
        why: What the job does instead (the error of a :meth:`locate` call says it).
        targets: The one-job write's listing of the table (``None`` on the bucket index).
    """

    why: str
    targets: object | None = None
    ranges: list[PartitionKeyRange] = field(default_factory=list)

    def locate(
        self, keyed: Any, *, existing_only: bool = False, key_prefix: str = ""
    ) -> LocatedRecords:
        raise HudiError(f"{self.why}: nothing is located before the write job")

    def release(self) -> None:
        return None
