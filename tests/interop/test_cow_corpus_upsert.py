"""Upserts into copies of copy-on-write tables written by Apache Hudi, judged by hudi-rs.

The writer takes everything from the table's persisted properties (record key, partition fields,
key generator, precombine field, hive style); the batch updates one stored record and adds one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine import read_hudi, write_hudi
from engine.fs.properties import parse_properties_text
from engine.model.schema import META_COLUMNS
from tests.hudi_rs import hudi_rs_batches, hudi_rs_rows
from tests.property.oracle import OVERWRITE, Oracle

pytestmark = [pytest.mark.interop, pytest.mark.spark]

CASES = {
    # table -> (field to change, new id for the inserted copy)
    "cow__v6_simplekeygen_nonhivestyle": ("name", 100),
    "cow__v6_complexkeygen_hivestyle": ("isActive", 100),
    "cow__v6_nonpartitioned": ("name", 100),
    "cow__v6_timebasedkeygen_nonhivestyle": ("name", 100),
    "cow__v6_simplekeygen_nonhivestyle_overwritetable": ("name", 100),
}


def properties(path: Path) -> dict[str, str]:
    return parse_properties_text((path / ".hoodie" / "hoodie.properties").read_text("latin-1"))


def key_of(props: dict[str, str]):  # type: ignore[no-untyped-def]
    fields = props["hoodie.table.recordkey.fields"].split(",")
    if len(fields) == 1 and "ComplexKeyGenerator" not in props.get(
        "hoodie.table.keygenerator.class", ""
    ):
        return lambda r: str(r[fields[0]])
    return lambda r: ",".join(f"{f}:{r[f]}" for f in fields)


def hudi_rs_schema(path: Path) -> pa.Schema:
    return hudi_rs_batches(path)[0].schema


def comparable(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    return sorted(repr([r["_hoodie_record_key"], *(r.get(c) for c in columns)]) for r in rows)


@pytest.mark.parametrize("name", sorted(CASES))
def test_upsert_into_hudi_written_table_hudi_rs_reads_model(spark, corpus_copy, name: str) -> None:  # type: ignore[no-untyped-def]
    path = corpus_copy(name)
    props = properties(path)
    before = hudi_rs_rows(str(path))
    assert before, "corpus table has rows"
    data_columns = [c for c in before[0] if c not in META_COLUMNS]
    change, new_id = CASES[name]
    precombine = props["hoodie.table.precombine.field"]

    updated = dict(before[0])
    updated[change] = (not updated[change]) if isinstance(updated[change], bool) else "changed"
    updated[precombine] = updated[precombine] + 1
    inserted = dict(before[-1])
    inserted["id"] = new_id
    batch_rows = [{c: r[c] for c in data_columns} for r in (updated, inserted)]
    schema = hudi_rs_schema(path)
    schema = pa.schema([schema.field(c) for c in data_columns])
    arrow = pa.Table.from_pylist(batch_rows, schema=schema)
    df = spark.createDataFrame(arrow)

    result = write_hudi(df, str(path), {"hoodie.datasource.write.operation": "upsert"})

    record_key = key_of(props)
    existing = {(r["_hoodie_record_key"], r["_hoodie_partition_path"]): r for r in before}
    by_key = {r["_hoodie_record_key"]: r["_hoodie_partition_path"] for r in before}
    new_partition = inserted["_hoodie_partition_path"]

    def identity(r: dict[str, Any]) -> tuple[str, str]:
        key = record_key(r)
        return key, by_key.get(key, new_partition)

    oracle = Oracle(OVERWRITE, precombine, identity, data_columns)
    oracle.rows = {
        k: {**{c: v[c] for c in data_columns}, "_hoodie_commit_time": v["_hoodie_commit_time"]}
        for k, v in existing.items()
    }
    oracle.apply(batch_rows, "upsert", result.instant_time)

    after = hudi_rs_rows(str(path))
    columns = [*data_columns, "_hoodie_commit_time"]
    expected = sorted(
        repr([key, *(row.get(c) for c in columns)]) for (key, _), row in oracle.rows.items()
    )
    assert comparable(after, columns) == expected
    assert len(after) == len(before) + 1
    # Spark's own reader over the latest base files agrees
    spark_rows = read_hudi(spark, str(path)).select("_hoodie_record_key", "id").collect()
    assert sorted(r["_hoodie_record_key"] for r in spark_rows) == sorted(
        r["_hoodie_record_key"] for r in after
    )


def test_upsert_into_table_with_metadata_table_disables_it(spark, corpus_copy) -> None:  # type: ignore[no-untyped-def]
    path = corpus_copy("cow__v6_nonpartitioned")
    props_file = path / ".hoodie" / "hoodie.properties"
    text = props_file.read_text("latin-1").replace(
        "hoodie.table.checksum", "hoodie.table.metadata.partitions=files\nhoodie.table.checksum"
    )
    props_file.write_text(text, "latin-1")
    (path / ".hoodie" / "metadata" / "files").mkdir(parents=True)
    before = hudi_rs_rows(str(path))
    row = {c: v for c, v in before[0].items() if c not in META_COLUMNS}
    row["longField"] += 1
    schema = hudi_rs_schema(path)
    schema = pa.schema([f for f in schema if f.name not in META_COLUMNS])
    arrow = pa.Table.from_pylist([row], schema=schema)
    write_hudi(spark.createDataFrame(arrow), str(path), {})
    assert properties(path).get("hoodie.table.metadata.partitions", "") == ""
    assert not (path / ".hoodie" / "metadata").exists()
    assert len(hudi_rs_rows(str(path))) == len(before)


def test_upsert_into_table_without_meta_fields_raises(spark, corpus_copy) -> None:  # type: ignore[no-untyped-def]
    from engine.errors import ConfigError

    path = corpus_copy("cow__v6_simplekeygen_hivestyle_no_metafields")
    df = spark.createDataFrame([(1, "x", 1)], "id int, name string, longField long")
    with pytest.raises(ConfigError, match=r"hoodie\.populate\.meta\.fields"):
        write_hudi(df, str(path), {})


def test_insert_into_empty_corpus_table_creates_first_commit(spark, corpus_copy) -> None:  # type: ignore[no-untyped-def]
    path = corpus_copy("cow__v6_empty")
    df = spark.createDataFrame(
        [(1, "a", True), (2, "b", False)], "id int, name string, isActive boolean"
    )
    result = write_hudi(df, str(path), {"hoodie.datasource.write.operation": "insert"})
    rows = hudi_rs_rows(str(path))
    assert sorted((r["id"], r["name"], r["_hoodie_commit_time"]) for r in rows) == [
        (1, "a", result.instant_time),
        (2, "b", result.instant_time),
    ]
