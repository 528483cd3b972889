"""``hoodie.index.type`` as a value with predicates (see :mod:`engine.index`)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["IndexType"]


class IndexType(StrEnum):
    """One ``hoodie.index.type`` (Hudi's ``HoodieIndex.IndexType`` names).

    A ``StrEnum``: its text is Hudi's name, as ``hoodie.properties`` and error messages spell it.
    """

    SIMPLE = "SIMPLE"
    GLOBAL_SIMPLE = "GLOBAL_SIMPLE"
    BLOOM = "BLOOM"
    GLOBAL_BLOOM = "GLOBAL_BLOOM"
    BUCKET = "BUCKET"
    RECORD_INDEX = "RECORD_INDEX"

    @property
    def is_global(self) -> bool:
        """A key is unique in the whole table: it is looked up in every partition."""
        return self in _GLOBAL

    @property
    def is_bucket(self) -> bool:
        """The write job hashes each key to its file group: nothing is looked up before it,
        and the layout (bucket count, hash fields) is persisted with the table."""
        return self is IndexType.BUCKET

    @property
    def looks_up_keys(self) -> bool:
        """The index tags a batch by looking its keys up in stored data."""
        return not self.is_bucket

    @property
    def uses_bloom(self) -> bool:
        """Candidate base files are checked with their footer bloom filter first."""
        return self in (IndexType.BLOOM, IndexType.GLOBAL_BLOOM)

    @property
    def indexes_log_files(self) -> bool:
        """The index finds keys a log file holds (Hudi's ``canIndexLogFiles``): merge-on-read
        inserts may go to an existing file group's log files."""
        return self in (IndexType.BUCKET, IndexType.RECORD_INDEX)

    @property
    def in_metadata_table(self) -> bool:
        """The index's storage is the metadata table (its ``record_index`` partition), which
        the write must keep: the table needs a metadata table (versions 8 and 9)."""
        return self is IndexType.RECORD_INDEX

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every index type's name, in Hudi's order."""
        return tuple(member.value for member in cls)


_GLOBAL = frozenset({IndexType.GLOBAL_SIMPLE, IndexType.GLOBAL_BLOOM, IndexType.RECORD_INDEX})
