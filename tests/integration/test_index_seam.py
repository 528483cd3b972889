"""The index seam: every index of the registry plugs into the one write pipeline.

Each ``hoodie.index.type`` writes a copy-on-write and a merge-on-read table through the write
jobs its answer picks (bulk_insert, an upsert, a delete on the routed job), the jobs the
pipeline ran are recorded as they run, and hudi-rs reads exactly the expected rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import config, write_hudi
from engine.config import WriteOperation, parse_options
from engine.write import pipeline, transaction
from engine.write.index import INDEXES, BucketIndex, KeyIndex, NoLookupIndex, Tagging
from engine.write.pipeline import choose_job
from engine.write.plan import WriteJobKind
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options


def test_the_registry_holds_every_index_type_and_each_answers_for_its_operation() -> None:
    assert sorted(INDEXES) == sorted(config.INDEX_TYPES)
    for name, cls in INDEXES.items():
        index = KeyIndex.of(parse_options({"hoodie.index.type": name.lower()}))
        assert type(index) is cls and index.index_type == name
        for operation in WriteOperation:
            answer = index.for_operation(operation)
            if cls is BucketIndex:  # the write job places every record, whatever it does
                assert answer is index and answer.tagging is Tagging.WRITE_JOB
            elif operation.looks_up_keys:
                assert answer is index and answer.tagging is Tagging.LOOKUP
            else:
                assert isinstance(answer, NoLookupIndex) and answer.tagging is Tagging.NONE
                assert answer.find_keys(None, {}, None) == {}  # type: ignore[arg-type]


def test_the_pipeline_chooses_the_job_from_the_index_answer_alone() -> None:
    cfg = parse_options({})
    bucket, simple = BucketIndex(), KeyIndex.of(cfg)
    no_lookup = simple.for_operation(WriteOperation.BULK_INSERT)
    assert choose_job(bucket, WriteOperation.BULK_INSERT, cfg, None) is WriteJobKind.BY_BUCKET
    assert choose_job(bucket, WriteOperation.INSERT_OVERWRITE, cfg, None) is (
        WriteJobKind.BY_BUCKET
    )
    assert choose_job(no_lookup, WriteOperation.BULK_INSERT, cfg, None) is WriteJobKind.UNROUTED
    combining = parse_options({"hoodie.combine.before.insert": "true"})
    assert choose_job(no_lookup, WriteOperation.BULK_INSERT, combining, None) is (
        WriteJobKind.ROUTED
    )
    assert choose_job(simple, WriteOperation.UPSERT, cfg, None) is WriteJobKind.ROUTED
    no_lookup = simple.for_operation(WriteOperation.INSERT_OVERWRITE)
    assert choose_job(no_lookup, WriteOperation.INSERT_OVERWRITE, cfg, None) is (
        WriteJobKind.ROUTED
    )


def _rows(path: Path) -> list[tuple[str, str, int, str]]:
    return sorted((r["id"], r["dt"], r["ts"], r["v"]) for r in hudi_rs_rows(path))


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("index_type", sorted(INDEXES))
def test_every_index_writes_through_the_one_pipeline(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_type: str, table_type: str
) -> None:
    ran: list[WriteJobKind] = []
    run_write_job = pipeline.run_write_job

    def recorded(kind: WriteJobKind, *args: Any) -> Any:
        ran.append(kind)
        return run_write_job(kind, *args)

    monkeypatch.setattr(transaction, "run_write_job", recorded)
    path = tmp_path / "t"
    options = write_options(
        "seam",
        {
            "hoodie.index.type": index_type,
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.bucket.index.num.buckets": "2",
        },
        # the record index lives in the metadata table: table version 8 or 9
        {"hoodie.write.table.version": "9"} if index_type == "RECORD_INDEX" else {},
    )

    def write(rows: list[tuple[str, str, int, str]], operation: str) -> None:
        frame = spark.createDataFrame(rows, SCHEMA)
        write_hudi(frame, str(path), {**options, "hoodie.datasource.write.operation": operation})

    first = [(f"k{i}", f"p{i % 2}", 1, f"a{i}") for i in range(6)]
    write(first, "bulk_insert")
    write([("k1", "p1", 2, "b1"), ("k2", "p0", 2, "b2"), ("k6", "p0", 2, "b6")], "upsert")
    # the routed job: as when the table is too large for one task per partition
    monkeypatch.setattr(pipeline, "one_job_plan", lambda *args, **kwargs: None)
    write([("k0", "p0", 3, "x"), ("k6", "p0", 3, "x")], "delete")

    expected = {r[0]: r for r in first} | {
        "k1": ("k1", "p1", 2, "b1"),
        "k2": ("k2", "p0", 2, "b2"),
    }
    del expected["k0"]
    assert _rows(path) == sorted(expected.values())
    if index_type == "BUCKET":
        assert ran == [WriteJobKind.BY_BUCKET] * 3
    else:
        assert ran == [WriteJobKind.UNROUTED, WriteJobKind.BY_PARTITION, WriteJobKind.ROUTED]
