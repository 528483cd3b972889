"""Commit metadata of completed commit/deltacommit/replacecommit instants (JSON, table version 6).

Java serialises ``HoodieCommitMetadata`` with Jackson in field order; the fixtures show::

    {"partitionToWriteStats": {partition: [HoodieWriteStat, ...]}, "compacted": bool,
     "extraMetadata": {"schema": <Avro schema without meta fields>}, "operationType": "UPSERT",
     ["partitionToReplaceFileIds": {partition: [file_id, ...]}]}      # replacecommit only

A log append's stat (``HoodieDeltaWriteStat``) adds ``logVersion``, ``logOffset``, ``baseFile``,
``logFiles`` and ``recordsStats``. Readers (Java incremental queries, the cleaner, hudi-rs) rely on
``fileId``, ``path`` and ``fileSizeInBytes`` being exact.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from engine.config import WriteOperation
from engine.errors import TimelineError

SCHEMA_KEY = "schema"
# the field a stat sent from a task to the driver carries its written keys in (never in a commit)
_WRITTEN_KEYS = "writtenKeys"


@dataclass(frozen=True)
class WrittenKeys:
    """The record keys one written file gave its file group and took from it, as the handle
    that wrote the file knew them: the commit's record index update is made from them instead
    of reading the file back (:mod:`engine.metadata.record_index_partition`).

    A base file's ``written`` are the keys it holds that the base file it replaced did not,
    ``deleted`` the keys it no longer holds; a log file's are the keys of its data blocks and
    of its DELETE_BLOCK (a key written, then deleted, is deleted). They live in the writing
    process only and are no part of the commit metadata: a stat without them (one sent back
    from a Spark task as JSON, or read from the timeline) has its file read instead."""

    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


@dataclass(frozen=True)
class HoodieWriteStat:
    """What one task wrote to one file."""

    file_id: str
    path: str | None
    partition_path: str | None
    prev_commit: str = "null"  # Java writes the literal string "null" for new file groups
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    total_log_records: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    file_size_in_bytes: int = 0
    min_event_time: int | None = None
    max_event_time: int | None = None
    runtime_stats: dict[str, int] | None = None
    # HoodieDeltaWriteStat (log appends only; None elsewhere)
    log_version: int | None = None
    log_offset: int | None = None
    base_file: str | None = None
    log_files: tuple[str, ...] | None = None
    # CDC tables: the .cdc log files written with this file (path relative to the base path
    # -> size); None when none was written (Java writes null)
    cdc_stats: dict[str, int] | None = None
    # the keys the file's handle wrote and deleted, for the record index (never serialized)
    written_keys: WrittenKeys | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of_file(
        cls,
        *,
        file_id: str,
        path: str,
        partition_path: str,
        prev_commit: str,
        size: int,
        elapsed_ms: int,
        created: bool,
        **counts: Any,
    ) -> HoodieWriteStat:
        """The stat of one file a write or a compaction wrote (the one place every writer builds
        it): ``size`` is both the bytes written and the file size, and ``elapsed_ms`` is the
        create time of a new file (``created``) or the upsert time of a merge or an append, as
        Hudi's handles report them. ``counts`` are the other fields (``num_writes``...)."""
        return cls(
            file_id=file_id,
            path=path,
            partition_path=partition_path,
            prev_commit=prev_commit,
            total_write_bytes=size,
            file_size_in_bytes=size,
            runtime_stats={
                "totalScanTime": 0,
                "totalUpsertTime": 0 if created else elapsed_ms,
                "totalCreateTime": elapsed_ms if created else 0,
            },
            **counts,
        )

    @property
    def written_paths(self) -> list[str]:
        """Every file this stat reports: its data file and its ``.cdc`` log files."""
        return [p for p in (self.path, *(self.cdc_stats or ())) if p]

    @property
    def is_delta(self) -> bool:
        return self.log_version is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "fileId": self.file_id,
            "path": self.path,
            "cdcStats": dict(self.cdc_stats) if self.cdc_stats else None,
            "prevCommit": self.prev_commit,
            "numWrites": self.num_writes,
            "numDeletes": self.num_deletes,
            "numUpdateWrites": self.num_update_writes,
            "numInserts": self.num_inserts,
            "totalWriteBytes": self.total_write_bytes,
            "totalWriteErrors": self.total_write_errors,
            "tempPath": None,
            "partitionPath": self.partition_path,
            "totalLogRecords": self.total_log_records,
            "totalLogFilesCompacted": self.total_log_files_compacted,
            "totalLogSizeCompacted": self.total_log_size_compacted,
            "totalUpdatedRecordsCompacted": self.total_updated_records_compacted,
            "totalLogBlocks": self.total_log_blocks,
            "totalCorruptLogBlock": self.total_corrupt_log_block,
            "totalRollbackBlocks": self.total_rollback_blocks,
            "fileSizeInBytes": self.file_size_in_bytes,
            "minEventTime": self.min_event_time,
            "maxEventTime": self.max_event_time,
            "runtimeStats": self.runtime_stats,
        }
        if self.is_delta:
            out.update(
                logVersion=self.log_version,
                logOffset=self.log_offset,
                baseFile=self.base_file or "",
                logFiles=list(self.log_files or ()),
                recordsStats={"val": None},
            )
        return out

    def to_avro(self) -> dict[str, Any]:
        """The ``HoodieWriteStat`` record of layout-2 commit metadata: the JSON fields, with
        ``prevBaseFile`` the base file a log append wrote against (``recordsStats`` has no
        Avro field; the fields this engine does not count stay null)."""
        record = self.to_dict()
        record.pop("recordsStats", None)
        record["prevBaseFile"] = record.get("baseFile") or None
        return record

    def to_wire(self) -> str:
        """The stat as a Spark task sends it back to the driver: its JSON with the keys its
        file wrote and deleted (:attr:`written_keys`, which the commit metadata never holds)."""
        out = self.to_dict()
        if self.written_keys is not None:
            out[_WRITTEN_KEYS] = [self.written_keys.written, self.written_keys.deleted]
        return json.dumps(out)

    @classmethod
    def from_wire(cls, text: str) -> HoodieWriteStat:
        """The stat :meth:`to_wire` sent."""
        d = json.loads(text)
        keys = d.pop(_WRITTEN_KEYS, None)
        stat = cls.from_dict(d)
        if keys is None:
            return stat
        return replace(stat, written_keys=WrittenKeys(tuple(keys[0]), tuple(keys[1])))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HoodieWriteStat:
        log_files = d.get("logFiles")
        return cls(
            file_id=d.get("fileId") or "",
            path=d.get("path"),
            partition_path=d.get("partitionPath"),
            prev_commit=str(d.get("prevCommit")),
            num_writes=int(d.get("numWrites") or 0),
            num_deletes=int(d.get("numDeletes") or 0),
            num_update_writes=int(d.get("numUpdateWrites") or 0),
            num_inserts=int(d.get("numInserts") or 0),
            total_write_bytes=int(d.get("totalWriteBytes") or 0),
            total_write_errors=int(d.get("totalWriteErrors") or 0),
            total_log_records=int(d.get("totalLogRecords") or 0),
            total_log_files_compacted=int(d.get("totalLogFilesCompacted") or 0),
            total_log_size_compacted=int(d.get("totalLogSizeCompacted") or 0),
            total_updated_records_compacted=int(d.get("totalUpdatedRecordsCompacted") or 0),
            total_log_blocks=int(d.get("totalLogBlocks") or 0),
            total_corrupt_log_block=int(d.get("totalCorruptLogBlock") or 0),
            total_rollback_blocks=int(d.get("totalRollbackBlocks") or 0),
            file_size_in_bytes=int(d.get("fileSizeInBytes") or 0),
            min_event_time=d.get("minEventTime"),
            max_event_time=d.get("maxEventTime"),
            runtime_stats=_runtime_stats(d.get("runtimeStats")),
            log_version=d.get("logVersion"),
            log_offset=d.get("logOffset"),
            base_file=d.get("baseFile"),
            log_files=tuple(log_files) if log_files is not None else None,
            cdc_stats=(
                {str(k): int(v) for k, v in d["cdcStats"].items()} if d.get("cdcStats") else None
            ),
        )


def _runtime_stats(value: dict[str, Any] | None) -> dict[str, int] | None:
    """``runtimeStats`` as JSON holds it: the Avro record's null timers are not there."""
    if value is None:
        return None
    return {k: int(v) for k, v in value.items() if v is not None}


@dataclass(frozen=True)
class HoodieCommitMetadata:
    """Content of a completed commit, deltacommit or replacecommit."""

    partition_to_write_stats: dict[str, list[HoodieWriteStat]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str = "UNKNOWN"
    # replacecommit only: None marks a plain commit (the key is then not written)
    partition_to_replace_file_ids: dict[str, list[str]] | None = None

    @property
    def schema(self) -> str | None:
        """The Avro schema (without meta fields) this commit wrote with."""
        return self.extra_metadata.get(SCHEMA_KEY)

    def write_stats(self) -> list[HoodieWriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def file_ids_written(self) -> set[tuple[str, str]]:
        """(partition_path, file_id) of every file group this commit wrote to."""
        return {
            (partition, s.file_id)
            for partition, stats in self.partition_to_write_stats.items()
            for s in stats
        }

    def replaced_file_ids(self) -> set[tuple[str, str]]:
        return {
            (partition, file_id)
            for partition, ids in (self.partition_to_replace_file_ids or {}).items()
            for file_id in ids
        }

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "partitionToWriteStats": {
                partition: [s.to_dict() for s in stats]
                for partition, stats in self.partition_to_write_stats.items()
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }
        if self.partition_to_replace_file_ids is not None:
            out["partitionToReplaceFileIds"] = {
                p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()
            }
        return out

    def to_json(self) -> bytes:
        """Layout 1's coding: Jackson's JSON of Java's ``HoodieCommitMetadata``."""
        return json.dumps(self.to_dict(), indent=2).encode("utf-8")

    def to_avro(self) -> dict[str, Any]:
        """Layout 2's record: ``HoodieCommitMetadata``, or ``HoodieReplaceCommitMetadata`` when
        :attr:`partition_to_replace_file_ids` is set (:attr:`is_replace`)."""
        record = self.to_dict()
        record["partitionToWriteStats"] = {
            partition: [s.to_avro() for s in stats]
            for partition, stats in self.partition_to_write_stats.items()
        }
        record["version"] = 1
        return record

    @property
    def is_replace(self) -> bool:
        """The metadata of a replacecommit (it names the file groups it replaced)."""
        return self.partition_to_replace_file_ids is not None

    @classmethod
    def from_json(cls, data: bytes, *, source: str = "commit metadata") -> HoodieCommitMetadata:
        """Parse commit metadata; empty content (Java's inflight files) gives empty metadata."""
        if not data.strip():
            return cls()
        try:
            d = json.loads(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise TimelineError(f"Failed to parse JSON commit metadata of {source}: {e}") from e
        return cls.from_dict(d)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HoodieCommitMetadata:
        """Commit metadata from its field map (JSON object or Avro record: same names)."""
        stats = {
            partition: [HoodieWriteStat.from_dict(s) for s in (lst or [])]
            for partition, lst in (d.get("partitionToWriteStats") or {}).items()
        }
        replaced = d.get("partitionToReplaceFileIds")
        return cls(
            partition_to_write_stats=stats,
            compacted=bool(d.get("compacted")),
            extra_metadata=dict(d.get("extraMetadata") or {}),
            operation_type=d.get("operationType") or "UNKNOWN",
            partition_to_replace_file_ids=(
                {p: list(ids or []) for p, ids in replaced.items()}
                if replaced is not None
                else None
            ),
        )


STAT_FIELDS = tuple(f.name for f in fields(HoodieWriteStat))


def operation_type(operation: WriteOperation | None) -> str:
    """The ``WriteOperationType`` name commit metadata carries; a table service's commit
    (compaction) names no write operation: ``UNKNOWN``."""
    return "UNKNOWN" if operation is None else WriteOperation(operation).type_name


def build_commit_metadata(
    stats: Iterable[HoodieWriteStat],
    *,
    schema: str,
    operation: WriteOperation | None,
    replaced: dict[str, list[str]] | None = None,
    extra: Mapping[str, str] | None = None,
) -> HoodieCommitMetadata:
    by_partition: dict[str, list[HoodieWriteStat]] = {}
    for stat in sorted(stats, key=lambda s: (s.partition_path or "", s.file_id)):
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    return HoodieCommitMetadata(
        partition_to_write_stats=by_partition,
        compacted=False,
        extra_metadata={**(extra or {}), SCHEMA_KEY: schema},
        operation_type=operation_type(operation),
        partition_to_replace_file_ids=replaced,
    )
