"""The steps every new base file takes, whoever writes it (a write's create and merge handles,
bulk_insert's task writer, a compaction, a clustering):

1. its name: ``{file_id}_{write_token}_{instant_time}.parquet``, the write token
   ``{number}-{stage_id}-{task_attempt_id}`` naming the task attempt (a retried task writes
   another file);
2. its rows stamped with that name (``_hoodie_file_name``; commit times and seqnos are the
   writer's to stamp, or to keep);
3. its marker (a rollback of the instant finds the file by it), before any byte is written;
4. its Parquet (:mod:`engine.io.parquet`: key range and bloom filter in the footer);
5. its write stat (:meth:`HoodieWriteStat.of_file`).

Here so that the write (above the table services) and the services share them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa

from engine.faults import checkpoint
from engine.fs.filenames import (
    TaskInfo,
    format_base_file_name,
    make_write_token,
    partition_file_path,
)
from engine.fs.storage import Storage
from engine.io.bloom_filter import BloomFilter, BloomFilterSpec
from engine.io.parquet import write_base_file
from engine.model.meta_fields import stamp_file_name
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.markers import IOType, create_marker

__all__ = ["NewBaseFile"]


@dataclass(frozen=True, slots=True)
class NewBaseFile:
    """A base file a task is about to write (see the module notes).

    Attributes:
        partition_path: Partition of the file group.
        file_id: File group id.
        write_token: The task attempt's write token.
        file_name: The file's name.
        started: When the writer started on the file (``time.monotonic()``; its stat's time).
    """

    partition_path: str
    file_id: str
    write_token: str
    file_name: str
    started: float

    @classmethod
    def named(
        cls,
        partition_path: str,
        file_id: str,
        number: int,
        task: TaskInfo,
        instant_time: str,
        started: float | None = None,
    ) -> NewBaseFile:
        """The new base file of group ``file_id`` that write number ``number`` of ``task``
        writes at ``instant_time``, its writer started at ``started`` (now if ``None``)."""
        token = make_write_token(number, task.stage_id, task.task_attempt_id)
        name = format_base_file_name(file_id, token, instant_time)
        return cls(partition_path, file_id, token, name, started or time.monotonic())

    @property
    def rel_path(self) -> str:
        return partition_file_path(self.partition_path, self.file_name)

    def stamp(self, rows: pa.Table) -> pa.Table:
        """``rows`` with this file's name in ``_hoodie_file_name``."""
        return stamp_file_name(rows, self.file_name)

    def mark(
        self, storage: Storage, instant_time: str, io_type: IOType, *, fault_point: bool = True
    ) -> None:
        """The file's marker, before any byte is written; ``fault_point``: a write task's
        ``task.after_marker`` follows it."""
        create_marker(storage, instant_time, self.partition_path, self.file_name, io_type)
        if fault_point:
            checkpoint("task.after_marker")

    def write(
        self,
        storage: Storage,
        rows: pa.Table,
        *,
        instant_time: str,
        io_type: IOType,
        avro_schema_with_meta: str,
        bloom: BloomFilterSpec,
        compression: str,
        bloom_so_far: BloomFilter | None = None,
        fault_point: bool = True,
    ) -> int:
        """Mark, then write ``rows`` (stamped) as the file; its size."""
        self.mark(storage, instant_time, io_type, fault_point=fault_point)
        return write_base_file(
            storage,
            self.rel_path,
            rows,
            avro_schema_with_meta=avro_schema_with_meta,
            bloom=bloom,
            compression=compression,
            bloom_so_far=bloom_so_far,
        )

    def stat(self, *, prev_commit: str, size: int, created: bool, **counts: int) -> HoodieWriteStat:
        """The file's write stat, timed from :attr:`started`."""
        return HoodieWriteStat.of_file(
            file_id=self.file_id,
            path=self.rel_path,
            partition_path=self.partition_path,
            prev_commit=prev_commit,
            size=size,
            elapsed_ms=int((time.monotonic() - self.started) * 1000),
            created=created,
            **counts,
        )
