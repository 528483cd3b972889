"""The matrix both directions run: Apache Hudi release and table version, table type, index,
partitioned or not (the selections: :data:`_SHORT`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from tests.hudi_jvm.judge import COW, MOR

INDEXES = ("SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM", "BUCKET", "RECORD_INDEX")
# (Hudi release, table version): Hudi 0.15 writes version 6 only; 1.1 writes 9, and 8 or 6
# when asked (hoodie.write.table.version, without auto-upgrade)
TABLE_VERSIONS = (("0.15.0", 6), ("1.1.1", 6), ("1.1.1", 8), ("1.1.1", 9))


@dataclass(frozen=True)
class Case:
    release: str
    table_version: int
    table_type: str
    index: str
    partitioned: bool

    @property
    def name(self) -> str:
        kind = "cow" if self.table_type == COW else "mor"
        part = "part" if self.partitioned else "nonpart"
        return f"v{self.table_version}-hudi{self.release}-{kind}-{self.index.lower()}-{part}"

    @property
    def metadata(self) -> bool:
        """The engine writes a metadata table on versions 8 and 9."""
        return self.table_version >= 8

    def table_options(self, table_name: str) -> dict[str, Any]:
        """The options both writers write the table with: key, partition, ordering, type,
        index."""
        options: dict[str, Any] = {
            "hoodie.table.name": table_name,
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": self.table_type,
            "hoodie.index.type": self.index,
        }
        if self.partitioned:
            options["hoodie.datasource.write.partitionpath.field"] = "dt"
        if self.index == "BUCKET":
            options["hoodie.bucket.index.num.buckets"] = "2"
        if self.index == "RECORD_INDEX":
            options["hoodie.metadata.record.index.enable"] = "true"
        return options


OURS_FIRST, HUDI_FIRST = "ours_first", "hudi_first"

# What ``make test`` runs (a few minutes on two workers): both releases, both directions, the
# metadata table and record index of versions 8 and 9, with a case that found defects (a version
# 8 metadata table we start); the differential and two-writer tests add Hudi 0.15 on version 6
# tables in both roles. ``make test-long`` adds the rest of a covering selection (a global index
# on Hudi 1.1's version 6 table, which found a defect, the version 8 table Hudi starts, every
# index in each direction, partitioned and not), and ``HUDI_JVM_MATRIX=all`` runs every cell.
_SHORT = {
    OURS_FIRST: (
        Case("0.15.0", 6, MOR, "BLOOM", False),
        Case("1.1.1", 8, MOR, "RECORD_INDEX", False),
    ),
    HUDI_FIRST: (Case("1.1.1", 9, MOR, "RECORD_INDEX", True),),
}
_LONG = {
    OURS_FIRST: (
        Case("0.15.0", 6, COW, "SIMPLE", True),
        Case("1.1.1", 6, MOR, "GLOBAL_SIMPLE", True),
        Case("1.1.1", 9, COW, "BUCKET", True),
        Case("1.1.1", 9, MOR, "GLOBAL_BLOOM", True),
    ),
    HUDI_FIRST: (
        Case("1.1.1", 6, COW, "GLOBAL_SIMPLE", False),
        Case("1.1.1", 8, COW, "SIMPLE", True),
        Case("0.15.0", 6, COW, "BUCKET", False),
        Case("0.15.0", 6, MOR, "GLOBAL_BLOOM", True),
        Case("1.1.1", 9, COW, "BLOOM", False),
    ),
}


def _every(release: str) -> list[Case]:
    return [
        Case(r, version, table_type, index, partitioned)
        for r, version in TABLE_VERSIONS
        if r == release
        for table_type in (COW, MOR)
        for index in INDEXES
        if index != "RECORD_INDEX" or version >= 8
        for partitioned in (True, False)
    ]


def cases(release: str, scenario: str) -> list[Case]:
    """The cases of ``release`` the scenario runs (see :data:`_SHORT`)."""
    if os.environ.get("HUDI_JVM_MATRIX") == "all":
        return _every(release)
    chosen = _SHORT[scenario] + (_LONG[scenario] if os.environ.get("HUDI_TEST_LONG") else ())
    return [c for c in chosen if c.release == release]
