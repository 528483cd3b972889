"""A restore killed midway (SIGKILL of the process running it) is completed by the next writer.

The table is written in process (copy-on-write table version 9, merge-on-read table version 6,
whose rolled-back log files get rollback COMMAND blocks), then a writer process restores it to
its first commit with a kill point armed. The next write completes the pending restore from its
plan before its own instant: afterwards hudi-rs and ``read_hudi`` read the first commit's rows
plus the new write, one completed restore names every rolled-back instant, and no pending instant
or orphan file is left.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.fs.storage import Storage
from engine.timeline.avro_metadata import deserialize
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from tests.faults.harness import assert_no_orphans, assert_reads, run_writer
from tests.keyed_table import SCHEMA, write_options

pytestmark = [pytest.mark.spark]

CASES = [
    ("MERGE_ON_READ", 6, "rollback.mid_delete"),
    ("MERGE_ON_READ", 6, "restore.before_complete"),
    ("COPY_ON_WRITE", 9, "restore.mid_rollback"),
]


def _rows(ts: int, tag: str, ids: range) -> list[tuple[str, str, int, str]]:
    return [(f"k{i}", f"2024-01-0{i % 2 + 1}", ts, f"{tag}{i}") for i in ids]


@pytest.mark.parametrize(("table_type", "version", "point"), CASES)
def test_killed_restore_is_completed_by_the_next_writer(
    spark: Any, tmp_path: Path, table_type: str, version: int, point: str
) -> None:
    path = str(tmp_path / "t")
    options = write_options(
        "rf",
        {
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.write.table.version": str(version),
            "hoodie.clean.automatic": "false",
        },
    )

    def write(rows: list[tuple[str, str, int, str]]) -> str:
        return write_hudi(spark.createDataFrame(rows, SCHEMA), path, options).instant_time

    target = write(_rows(1, "a", range(4)))
    later = [write(_rows(2, "b", range(3))), write(_rows(3, "c", range(2, 6)))]
    killed, log = run_writer(
        tmp_path / "t", tmp_path / "work", [{"kind": "restore", "to": target}], point
    )
    assert killed, f"restore was not killed at {point}\n{log}"
    assert Timeline.load(Storage(path)).pending([Action.RESTORE]), "no pending restore"

    write(_rows(4, "d", range(8, 9)))
    expected = {
        r[0]: (r[1], r[2], r[3]) for r in _rows(1, "a", range(4)) + _rows(4, "d", range(8, 9))
    }
    assert_reads(spark, path, expected, f"restore killed at {point}, then a write")
    timeline = Timeline.load(Storage(path))
    restores = timeline.completed([Action.RESTORE])
    assert len(restores) == 1
    metadata = deserialize(timeline.read_content(restores[0]))
    assert metadata["instantsToRollback"] == sorted(later, reverse=True)
    assert set(metadata["hoodieRestoreMetadata"]) <= set(later)
    assert not timeline.completed([Action.ROLLBACK])
    assert_no_orphans(path)
