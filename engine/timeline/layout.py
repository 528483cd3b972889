"""Timeline layouts: where instant files live, how they are named, how commit metadata is coded.

::

    layout 1 (table version 6)         layout 2 (table versions 8, 9)
    .hoodie/<t>.<action>               .hoodie/timeline/<t>_<completion_time>.<action>
    .hoodie/<t>.<action>.requested     .hoodie/timeline/<t>.<action>.requested   (unchanged)
    .hoodie/<t>.inflight               .hoodie/timeline/<t>.inflight              (unchanged)
    commit metadata: JSON              commit metadata: Avro container (HoodieCommitMetadata),
                                       JSON for legacy-named completed instants (<t>.<action>)

The layout decides the coding of commit metadata when it is written and when it is read
(:meth:`TimelineLayout.encode_commit_metadata`, :meth:`TimelineLayout.decode_commit_metadata`);
the bytes are never looked at to guess it. Every other timeline record (plans, clean, rollback,
savepoint, restore metadata) is Avro in both layouts (:mod:`engine.timeline.avro_metadata`).

In layout 2 pending clustering has its own action (``<t>.clustering.requested``) and completes
as ``replacecommit``; compaction still completes as ``commit``. The completion time, not the
requested time, orders what a completed write made visible (file slicing, incremental queries).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from engine.fs.properties import PROPERTIES_FILE, parse_properties_text
from engine.fs.storage import Storage
from engine.fs.table_version import LAYOUT_1, TableFormat, table_format
from engine.timeline.avro_metadata import (
    COMMIT_METADATA_SCHEMA,
    REPLACE_COMMIT_METADATA_SCHEMA,
    deserialize,
    serialize,
)
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import (
    Instant,
    State,
    completed_action,
    instant_file_name,
    parse_instant_file_name,
)

__all__ = ["TimelineLayout"]

_COMPLETED_V2_RE = re.compile(r"^(\d+)_(\d+)\.(\w+)$")


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

    def commit_metadata_in_avro(self, instant: Instant | None = None) -> bool:
        """Whether the commit metadata of ``instant`` (a write's own when ``None``) is an Avro
        container: in layout 2, except a completed instant under its legacy name (no
        completion time in it), which Hudi wrote as JSON before the table was upgraded."""
        if self.version < 2:
            return False
        return instant is None or not instant.is_completed or instant.completion_time is not None

    def encode_commit_metadata(self, metadata: HoodieCommitMetadata) -> bytes:
        """Commit metadata as this layout stores it: JSON (layout 1), or an Avro container with
        one HoodieCommitMetadata or HoodieReplaceCommitMetadata record (layout 2, Hudi 1.x's
        ``CommitMetadataSerDeV2``)."""
        if not self.commit_metadata_in_avro():
            return metadata.to_json()
        schema = REPLACE_COMMIT_METADATA_SCHEMA if metadata.is_replace else COMMIT_METADATA_SCHEMA
        return serialize(schema, metadata.to_avro())

    def decode_commit_metadata(
        self, data: bytes, instant: Instant | None = None, *, source: str
    ) -> HoodieCommitMetadata:
        """The commit metadata stored for ``instant`` in this layout's coding. Empty content
        (requested and some inflight files) gives empty metadata, as Java reads it.

        Raises:
            TimelineError: The content is not commit metadata in the layout's coding, naming
                ``source``.
        """
        if not data:
            return HoodieCommitMetadata()
        if self.commit_metadata_in_avro(instant):
            return HoodieCommitMetadata.from_dict(deserialize(data, source=source))
        return HoodieCommitMetadata.from_json(data, source=source)
