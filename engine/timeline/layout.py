"""Timeline layouts: where instant files live, how they are named, how commit metadata is coded.

::

    layout 1 (table version 6)         layout 2 (table versions 8, 9)
    .hoodie/<t>.<action>               .hoodie/timeline/<t>_<completion_time>.<action>
    .hoodie/<t>.<action>.requested     .hoodie/timeline/<t>.<action>.requested   (unchanged)
    .hoodie/<t>.inflight               .hoodie/timeline/<t>.inflight              (unchanged)
    commit metadata: JSON              commit metadata: Avro container (HoodieCommitMetadata),
                                       JSON still read for legacy-named completed instants

In layout 2 pending clustering has its own action (``<t>.clustering.requested``) and completes
as ``replacecommit``; compaction still completes as ``commit``. The completion time, not the
requested time, orders what a completed write made visible (file slicing, incremental queries).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from engine.fs.properties import PROPERTIES_FILE, parse_properties_text
from engine.fs.storage import Storage
from engine.fs.table_version import LAYOUT_1, TableFormat, table_format
from engine.timeline.avro_metadata import deserialize, serialize
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import (
    Instant,
    State,
    completed_action,
    instant_file_name,
    parse_instant_file_name,
)

__all__ = ["TimelineLayout", "decode_commit_metadata"]

_COMPLETED_V2_RE = re.compile(r"^(\d+)_(\d+)\.(\w+)$")
AVRO_MAGIC = b"Obj\x01"


@lru_cache(maxsize=64)
def _format_of(properties_text: str, where: str) -> TableFormat:
    """The table format ``hoodie.properties`` text announces: parsed once per text (a write
    asks for its timeline's layout about twenty times; the file is read each time)."""
    return table_format(parse_properties_text(properties_text), where=where)


@dataclass(frozen=True, slots=True)
class TimelineLayout:
    """How one table lays out its active timeline."""

    table_format: TableFormat = LAYOUT_1

    @classmethod
    def of(cls, storage: Storage) -> TimelineLayout:
        """The layout ``hoodie.properties`` announces (layout 1 when there is no table yet)."""
        if not storage.exists(PROPERTIES_FILE):
            return cls()
        text = storage.read_bytes(PROPERTIES_FILE).decode("latin-1")
        return cls(_format_of(text, storage.base_path))

    @property
    def directory(self) -> str:
        """Folder of the instant files, relative to the base path."""
        return self.table_format.timeline_dir

    @property
    def version(self) -> int:
        return self.table_format.layout_version

    def file_name(self, instant: Instant) -> str:
        """The file an instant is stored in (its completed file carries the completion time)."""
        if instant.is_completed and instant.completion_time is not None:
            action = completed_action(instant.action).value
            return f"{instant.instant_time}_{instant.completion_time}.{action}"
        return instant_file_name(instant.instant_time, instant.action, instant.state)

    def parse(self, name: str) -> Instant | None:
        """Parse an instant file name; ``None`` for other files (ignored, as Hudi does)."""
        if self.version >= 2:
            m = _COMPLETED_V2_RE.match(name)
            if m is not None:
                parsed = parse_instant_file_name(f"{m.group(1)}.{m.group(3)}")
                if parsed is None or parsed.state is not State.COMPLETED:
                    return None
                return Instant(parsed.instant_time, parsed.action, parsed.state, m.group(2))
        return parse_instant_file_name(name)


def decode_commit_metadata(data: bytes, *, source: str) -> HoodieCommitMetadata:
    """Commit metadata in either coding: Avro container (layout 2) or JSON (layout 1, legacy).

    Empty content (requested and some inflight files) gives empty metadata, as Java reads it.
    """
    if data.startswith(AVRO_MAGIC):
        record = deserialize(data, source=source)
        return HoodieCommitMetadata.from_dict(_plain(record))
    return HoodieCommitMetadata.from_json(data, source=source)


def _plain(value: Any) -> Any:
    """Avro maps may come back as lists of pairs; the JSON reader expects dicts."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# ---- Avro commit metadata (CommitMetadataSerDeV2) ------------------------------------------------

_NAMESPACE = "org.apache.hudi.avro.model"
_LONG_STATS = (
    "numWrites", "numDeletes", "numUpdateWrites", "totalWriteBytes", "totalWriteErrors",
    "totalLogRecords", "totalUpdatedRecordsCompacted", "numInserts", "totalLogBlocks",
    "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes", "logOffset",
    "minEventTime", "maxEventTime", "totalLogFilesCompacted", "totalLogSizeCompacted",
)  # fmt: skip
_STRING_STATS = ("fileId", "path", "prevCommit", "partitionPath", "baseFile", "tempPath")


def _nullable(name: str, type_: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", type_], "default": None}


_WRITE_STAT_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieWriteStat",
    "namespace": _NAMESPACE,
    "fields": [
        *(_nullable(n, "string") for n in _STRING_STATS),
        *(_nullable(n, "long") for n in _LONG_STATS),
        _nullable("logVersion", "int"),
        _nullable("logFiles", {"type": "array", "items": "string"}),
        _nullable("cdcStats", {"type": "map", "values": "long"}),
        _nullable("prevBaseFile", "string"),
    ],
}


def _commit_metadata_schema(replace: bool) -> dict[str, Any]:
    fields: list[dict[str, Any]] = [
        _nullable("partitionToWriteStats", {"type": "map", "values": {
            "type": "array", "items": _WRITE_STAT_SCHEMA}}),
        _nullable("compacted", "boolean"),
        _nullable("extraMetadata", {"type": "map", "values": "string"}),
        {"name": "version", "type": ["int", "null"], "default": 1},
        _nullable("operationType", "string"),
    ]  # fmt: skip
    if replace:
        fields.append(
            _nullable(
                "partitionToReplaceFileIds",
                {"type": "map", "values": {"type": "array", "items": "string"}},
            )
        )
    name = "HoodieReplaceCommitMetadata" if replace else "HoodieCommitMetadata"
    return {"type": "record", "name": name, "namespace": _NAMESPACE, "fields": fields}


def encode_commit_metadata(metadata: HoodieCommitMetadata) -> bytes:
    """Commit metadata as Hudi 1.x stores it in a completed layout-2 instant: an Avro container
    with one HoodieCommitMetadata (or HoodieReplaceCommitMetadata) record."""
    replace = metadata.partition_to_replace_file_ids is not None
    as_dict = metadata.to_dict()
    stat_fields = [f["name"] for f in _WRITE_STAT_SCHEMA["fields"]]
    record = {
        "partitionToWriteStats": {
            partition: [
                {k: stat.get(k) for k in stat_fields}
                | {"prevBaseFile": stat.get("baseFile") or None}
                for stat in stats
            ]
            for partition, stats in as_dict["partitionToWriteStats"].items()
        },
        "compacted": metadata.compacted,
        "extraMetadata": dict(metadata.extra_metadata),
        "version": 1,
        "operationType": metadata.operation_type,
    }
    if replace:
        record["partitionToReplaceFileIds"] = as_dict["partitionToReplaceFileIds"]
    return serialize(_commit_metadata_schema(replace), record)


def layout_content(layout: TimelineLayout, content: bytes) -> bytes:
    """Completed-instant content in the layout's coding: JSON commit metadata becomes Avro in
    layout 2 (other content, Avro plans and metadata, is the same in both layouts)."""
    if layout.version < 2 or not content.lstrip().startswith(b"{"):
        return content
    return encode_commit_metadata(HoodieCommitMetadata.from_json(content, source="commit"))
