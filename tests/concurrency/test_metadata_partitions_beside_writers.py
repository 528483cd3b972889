"""Under optimistic concurrency control a write never drops metadata table partitions it does
not keep: another writer (Apache Hudi's, which builds ``partition_stats`` by default on 1.x)
may be building or writing them, and its metadata commit would then fail. The write is refused
before it writes anything; a single writer drops them as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.errors import ConfigError
from engine.fs.properties import read_properties, write_properties
from engine.fs.storage import Storage
from engine.timeline.timeline import Timeline

pytestmark = pytest.mark.spark

OPTIONS = {
    "hoodie.table.name": "beside",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.write.table.version": "9",
    "hoodie.metadata.enable": "true",
}
PARTITIONS = "hoodie.table.metadata.partitions"


def test_a_write_beside_other_writers_never_drops_their_metadata_partitions(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    frame = spark.createDataFrame([("a", 1, "x")], "id string, ts long, v string")
    write_hudi(frame, path, OPTIONS)
    storage = Storage(path)
    props = read_properties(storage)
    theirs = {**props, PARTITIONS: f"{props[PARTITIONS]},partition_stats"}
    write_properties(storage, theirs)  # what a Hudi 1.x writer keeps besides ours
    before = Timeline.load(storage).instants
    concurrent = {**OPTIONS, "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL"}
    with pytest.raises(ConfigError, match="partition_stats"):
        write_hudi(frame, path, concurrent)
    assert Timeline.load(storage).instants == before, "the refused write left an instant"
    assert read_properties(storage)[PARTITIONS] == theirs[PARTITIONS]
    write_hudi(frame, path, OPTIONS)  # one writer: dropped, as Hudi drops a disabled partition
    assert "partition_stats" not in read_properties(storage)[PARTITIONS]
