"""The record index is read once per write: the one-job write looks its whole batch up before
its partition tasks ask (:meth:`engine.write.index.RecordIndex.prefetch`), the tasks and the
metadata commit are answered from that answer (:func:`engine.metadata.record_index.located`), and
the next write, on a table whose completed instants changed, reads the index again.

``locate`` is wrapped to count what it is asked (the lookup itself runs as it is); hudi-rs reads
the rows each write leaves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.fs.storage import Storage
from engine.metadata import record_index
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_write_reads_the_record_index_once_and_the_next_write_again(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_type: str
) -> None:
    path = tmp_path / "t"
    options = write_options(
        "rli_once",
        {
            "hoodie.index.type": "RECORD_INDEX",
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.write.table.version": "9",
            # the one-job write in this process, whatever the batch's size estimate
            "hoodie.write.local.enabled": "true",
            "hoodie.write.local.max.bytes": str(2**63 - 1),
        },
    )

    def write(rows: list[tuple[str, str, int, str]], operation: str = "upsert") -> None:
        frame = spark.createDataFrame(rows, SCHEMA)
        write_hudi(frame, str(path), {**options, "hoodie.datasource.write.operation": operation})

    first = [(f"k{i}", f"p{i % 3}", 1, f"a{i}") for i in range(9)]
    write(first, "bulk_insert")
    asked: list[list[str]] = []
    locate = record_index.locate

    def counted(storage: Any, timeline: Timeline, keys: Any, metadata_table: Any = None) -> Any:
        keys = list(keys)
        asked.append(sorted(keys))
        return locate(storage, timeline, keys, metadata_table)

    monkeypatch.setattr(record_index, "locate", counted)
    # updates in every partition, an insert in two
    second = [("k0", "p0", 2, "b0"), ("k4", "p1", 2, "b4"), ("k8", "p2", 2, "b8")]
    second += [("n1", "p0", 2, "c1"), ("n2", "p1", 2, "c2")]
    write(second)
    assert asked == [["k0", "k4", "k8", "n1", "n2"]]
    write([("k4", "p1", 3, "d4"), ("n1", "p0", 3, "d1")])
    assert asked[1:] == [["k4", "n1"]]  # the table changed: asked again, once

    expected = {r[0]: r for r in first}
    expected |= {r[0]: r for r in second}
    expected |= {"k4": ("k4", "p1", 3, "d4"), "n1": ("n1", "p0", 3, "d1")}
    got = sorted((r["id"], r["dt"], r["ts"], r["v"]) for r in hudi_rs_rows(path))
    assert got == sorted(expected.values())
    storage = Storage(str(path))
    mapped = record_index.read_record_index(storage, Timeline.load(storage))
    assert mapped is not None and sorted(mapped) == sorted(expected)
