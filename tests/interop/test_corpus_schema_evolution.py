"""Schema evolution continuing tables written by Apache Hudi: an upsert into a copy of a corpus
table adds a column and widens others; hudi-rs reads the result as the model says.

The commit's schema (commit metadata ``schema``) and the new base files' footer schema are the
schema the files were written with, so Apache Hudi's writer resolves the evolved table schema
from the timeline as it does for its own commits; ``hoodie.table.create.schema`` keeps the
schema the table was created with (Hudi never rewrites it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import read_hudi, write_hudi
from engine.model.schema import META_COLUMNS
from engine.read.arrow import read_table
from engine.table import HudiTable
from tests.hudi_rs import hudi_rs_batches, hudi_rs_rows

pytestmark = [pytest.mark.interop, pytest.mark.spark]

CASES = {
    # table -> {column: widened Arrow type}; every case also adds `added_note string`
    "cow__v6_simplekeygen_nonhivestyle": {"intField": pa.int64(), "floatField": pa.float64()},
    "mor_parquet__v6_simplekeygen_nonhivestyle": {},
}
WIDE_VALUES = {"intField": 5_000_000_000, "floatField": 0.1}


def data_schema(path: Path) -> pa.Schema:
    schema = pa.Table.from_batches(hudi_rs_batches(path)).schema
    return pa.schema([f for f in schema if f.name not in META_COLUMNS])


def by_key(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["_hoodie_record_key"]: r for r in rows}


@pytest.mark.parametrize("name", sorted(CASES))
def test_upsert_adds_and_widens_columns_of_hudi_written_table(
    spark, corpus_copy, name: str
) -> None:  # type: ignore[no-untyped-def]
    path = corpus_copy(name)
    widened = CASES[name]
    before = hudi_rs_rows(path)
    props = (path / ".hoodie" / "hoodie.properties").read_text("latin-1")
    precombine = next(
        line.split("=", 1)[1]
        for line in props.splitlines()
        if line.startswith("hoodie.table.precombine.field=")
    )
    old_schema = data_schema(path)
    fields = [pa.field(f.name, widened.get(f.name, f.type)) for f in old_schema] + [
        pa.field("added_note", pa.string())
    ]
    schema = pa.schema(fields)
    updated = {c: before[0][c] for c in old_schema.names}
    updated[precombine] += 1
    updated.update({c: WIDE_VALUES[c] for c in widened})
    updated["added_note"] = "evolved"
    arrow = pa.Table.from_pylist([updated], schema=schema)

    result = write_hudi(spark.createDataFrame(arrow), str(path), {})

    after = hudi_rs_rows(path)
    assert len(after) == len(before)
    rs_schema = data_schema(path)
    for column, dtype in widened.items():
        assert rs_schema.field(column).type == dtype
    assert rs_schema.field("added_note").type == pa.string()
    key = before[0]["_hoodie_record_key"]
    rows = by_key(after)
    assert rows[key]["added_note"] == "evolved"
    for column in widened:
        assert rows[key][column] == WIDE_VALUES[column]
    assert rows[key]["_hoodie_commit_time"] == result.instant_time
    for old in before[1:]:
        row = rows[old["_hoodie_record_key"]]
        assert row["added_note"] is None
        assert {c: row[c] for c in old_schema.names} == {c: old[c] for c in old_schema.names}
    # the engine's readers agree with hudi-rs
    arrow_rows = by_key(read_table(str(path)).to_pylist())
    spark_rows = by_key([r.asDict(recursive=True) for r in read_hudi(spark, str(path)).collect()])
    for k, row in rows.items():
        for column in ("added_note", *widened):
            assert arrow_rows[k][column] == row[column] == spark_rows[k][column]
    # the commit records the schema the new files were written with
    commit = (
        path / ".hoodie" / f"{result.instant_time}.{'deltacommit' if 'mor' in name else 'commit'}"
    )
    metadata = json.loads(commit.read_text())
    written = HudiTable(str(path)).schema()
    assert written is not None
    assert [
        f["name"] for f in json.loads(metadata["extraMetadata"]["schema"])["fields"]
    ] == written.names
    assert written.field("added_note").type == pa.string()
    for column, dtype in widened.items():
        assert written.field(column).type == dtype
    for stat in (s for stats in metadata["partitionToWriteStats"].values() for s in stats):
        if stat["path"].endswith(".parquet"):
            footer = pq.read_schema(path / stat["path"]).metadata[b"parquet.avro.schema"]
            names = [f["name"] for f in json.loads(footer)["fields"]]
            assert names == [*META_COLUMNS, *written.names]
