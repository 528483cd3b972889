"""engine.model.schema against the schemas Apache Hudi wrote into the corpus (commits, footers)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.errors import SchemaError
from engine.model.schema import (
    META_COLUMNS,
    add_meta_fields,
    arrow_to_avro_schema,
    avro_to_arrow_schema,
    decimal_fixed_size,
    meta_arrow_schema,
    record_name_and_namespace,
    remove_meta_fields,
    sanitize_avro_name,
    schema_json,
    with_meta_columns,
)
from tests.hudi_rs import hudi_rs_table

CORPUS_TABLES = [
    "cow__v6_complexkeygen_hivestyle",
    "cow__v6_nonpartitioned",
    "cow__v6_simplekeygen_hivestyle_no_metafields",
    "cow__v6_simplekeygen_nonhivestyle",
    "cow__v6_simplekeygen_nonhivestyle_overwritetable",
    "cow__v6_timebasedkeygen_nonhivestyle",
    "mor_parquet__v6_complexkeygen_hivestyle",
    "mor_parquet__v6_nonpartitioned",
    "mor_parquet__v6_nonpartitioned_rollback",
    "mor_parquet__v6_simplekeygen_hivestyle_no_metafields",
    "mor_parquet__v6_simplekeygen_nonhivestyle",
    "mor_parquet__v6_simplekeygen_nonhivestyle_overwritetable",
    "trips_mor_avro__v6_trips_8i1u",
    "trips_mor_avro__v6_trips_8i3d",
]
COMPLETED_SUFFIXES = (".commit", ".deltacommit", ".replacecommit")


def commit_schemas(base: Path) -> list[tuple[str, str]]:
    """(instant file name, extraMetadata.schema) of every completed commit that has one."""
    out = []
    for path in sorted((base / ".hoodie").iterdir()):
        if path.is_file() and path.name.endswith(COMPLETED_SUFFIXES):
            meta = json.loads(path.read_text() or "{}")
            schema = (meta.get("extraMetadata") or {}).get("schema")
            if schema:
                out.append((path.name, schema))
    return out


def table_name_of(schema_text: str) -> str:
    return str(json.loads(schema_text)["name"]).removesuffix("_record")


def normalize_parquet_type(dtype: pa.DataType) -> pa.DataType:
    """Undo Parquet-only differences: 2-level lists (non-null 'array' items), map entry names."""
    if pa.types.is_list(dtype):
        return pa.list_(pa.field("element", normalize_parquet_type(dtype.value_type), True))
    if pa.types.is_map(dtype):
        value = dtype.item_field
        return pa.map_(
            pa.field("key", dtype.key_type, False),
            value.with_type(normalize_parquet_type(value.type)).with_name("value"),
        )
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(normalize_parquet_type(f.type)) for f in dtype])
    return dtype


def normalize_parquet_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(normalize_parquet_type(f.type)) for f in schema])


@pytest.mark.unit
@pytest.mark.parametrize("name", CORPUS_TABLES)
def test_schema_corpus_commit_schemas_round_trip_exactly(
    corpus_table: Callable[[str], Path], name: str
) -> None:
    schemas = commit_schemas(corpus_table(name))
    assert schemas, f"{name} has no commit schema"
    for instant_file, text in schemas:
        assert schema_json(text) == text, instant_file
        arrow = avro_to_arrow_schema(text)
        back = arrow_to_avro_schema(arrow, table_name_of(text), with_meta=False)
        assert schema_json(back) == text, instant_file
        with_meta = arrow_to_avro_schema(arrow, table_name_of(text), with_meta=True)
        assert schema_json(with_meta) == schema_json(add_meta_fields(text))
        assert schema_json(remove_meta_fields(with_meta)) == text
        fastavro.parse_schema(with_meta)


@pytest.mark.unit
@pytest.mark.parametrize("name", CORPUS_TABLES)
def test_schema_corpus_parquet_files_match_avro_schema(
    corpus_table: Callable[[str], Path], name: str
) -> None:
    base = corpus_table(name)
    latest_schema = commit_schemas(base)[-1][1]
    files = [p for p in base.rglob("*.parquet") if ".hoodie" not in p.parts]
    assert files
    for path in files:
        parquet_schema = pq.read_schema(path)
        normalized = normalize_parquet_schema(parquet_schema)
        has_meta = META_COLUMNS[0] in parquet_schema.names
        footer = (parquet_schema.metadata or {}).get(b"parquet.avro.schema")
        if footer is not None:
            # written by Hudi's Avro writer: the footer schema is the file's exact schema
            text = footer.decode()
            assert schema_json(text) == text
            assert avro_to_arrow_schema(text).equals(normalized), path.name
        else:
            # written by Spark's row writer: same schema as the commit, narrower ints allowed
            text = schema_json(add_meta_fields(latest_schema) if has_meta else latest_schema)
            expected = avro_to_arrow_schema(text)
            assert expected.names == normalized.names
        back = arrow_to_avro_schema(normalized, table_name_of(text), with_meta=has_meta)
        assert schema_json(back) == text, path.name


@pytest.mark.interop
@pytest.mark.parametrize(
    "name", ["mor_parquet__v6_complexkeygen_hivestyle", "cow__v6_nonpartitioned"]
)
def test_avro_to_arrow_schema_corpus_matches_hudi_rs_schema(
    corpus_table: Callable[[str], Path], name: str
) -> None:
    pytest.importorskip("hudi")
    base = corpus_table(name)
    table = hudi_rs_table(base)
    ours = avro_to_arrow_schema(add_meta_fields(commit_schemas(base)[-1][1]))
    theirs = table.get_schema_with_meta_fields()
    # hudi-rs marks meta columns not-null; the Avro schema makes them nullable
    theirs = pa.schema([f.with_nullable(True) if f.name in META_COLUMNS else f for f in theirs])
    assert ours.equals(theirs)


@pytest.mark.unit
def test_arrow_to_avro_schema_all_types_follow_spark_convention() -> None:
    schema = pa.schema(
        [
            pa.field("b", pa.bool_()),
            pa.field("i8", pa.int8(), nullable=False),
            pa.field("i64", pa.int64()),
            pa.field("f", pa.float32()),
            pa.field("s", pa.large_string()),
            pa.field("bin", pa.binary()),
            pa.field("d", pa.decimal128(38, 10)),
            pa.field("day", pa.date32()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("ts_ntz", pa.timestamp("us")),
            pa.field("tags", pa.list_(pa.field("element", pa.string(), nullable=False))),
            pa.field(
                "nested",
                pa.struct([pa.field("inner", pa.struct([pa.field("x", pa.decimal128(5, 2))]))]),
            ),
            pa.field("m", pa.map_(pa.string(), pa.list_(pa.int32()))),
        ]
    )
    avro = arrow_to_avro_schema(schema, "t", with_meta=False)
    fields = {f["name"]: f for f in avro["fields"]}
    assert (avro["name"], avro["namespace"]) == ("t_record", "hoodie.t")
    assert fields["i8"] == {"name": "i8", "type": "int"}
    assert fields["b"] == {"name": "b", "type": ["null", "boolean"], "default": None}
    assert fields["s"]["type"] == ["null", "string"]
    assert fields["d"]["type"][1] == {
        "type": "fixed",
        "name": "fixed",
        "namespace": "hoodie.t.t_record.d",
        "size": 16,
        "logicalType": "decimal",
        "precision": 38,
        "scale": 10,
    }
    assert fields["ts"]["type"][1] == {"type": "long", "logicalType": "timestamp-micros"}
    assert fields["ts_ntz"]["type"][1]["logicalType"] == "local-timestamp-micros"
    assert fields["tags"]["type"][1] == {"type": "array", "items": "string"}
    inner = fields["nested"]["type"][1]["fields"][0]["type"][1]
    assert (inner["name"], inner["namespace"]) == ("inner", "hoodie.t.t_record.nested")
    assert inner["fields"][0]["type"][1]["namespace"] == "hoodie.t.t_record.nested.inner.x"
    assert fields["m"]["type"][1] == {
        "type": "map",
        "values": ["null", {"type": "array", "items": ["null", "int"]}],
    }
    fastavro.parse_schema(avro)
    back = avro_to_arrow_schema(avro)
    assert back.field("i8").type == pa.int32() and not back.field("i8").nullable
    assert back.field("ts").type == pa.timestamp("us", tz="UTC")
    assert back.field("ts_ntz").type == pa.timestamp("us")
    assert back.field("d").type == pa.decimal128(38, 10)
    assert schema_json(arrow_to_avro_schema(back, "t", with_meta=False)) == schema_json(avro)


@pytest.mark.unit
def test_arrow_to_avro_schema_meta_columns_first_and_not_duplicated() -> None:
    schema = with_meta_columns(pa.schema([pa.field("id", pa.int32())]))
    assert schema.names == [*META_COLUMNS, "id"]
    avro = arrow_to_avro_schema(schema, "t", with_meta=True)
    assert [f["name"] for f in avro["fields"]] == [*META_COLUMNS, "id"]
    assert avro["fields"][0] == {
        "name": "_hoodie_commit_time",
        "type": ["null", "string"],
        "doc": "",
        "default": None,
    }
    without = arrow_to_avro_schema(schema, "t", with_meta=False)
    assert [f["name"] for f in without["fields"]] == ["id"]
    assert meta_arrow_schema().names == list(META_COLUMNS)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("field", "fragment"),
    [
        (pa.field("bad name", pa.int32()), "bad name"),
        (pa.field("m", pa.map_(pa.int32(), pa.int32())), "string keys"),
        (pa.field("u", pa.dense_union([pa.field("a", pa.int32())])), "no Avro mapping"),
        (pa.field("dur", pa.duration("s")), "no Avro mapping"),
    ],
)
def test_arrow_to_avro_schema_unsupported_input_raises(field: pa.Field, fragment: str) -> None:
    with pytest.raises(SchemaError, match=fragment):
        arrow_to_avro_schema(pa.schema([field]), "t", with_meta=False)


@pytest.mark.unit
def test_avro_to_arrow_schema_java_variants_are_read() -> None:
    text = json.dumps(
        {
            "type": "record",
            "name": "r",
            "namespace": "ns",
            "fields": [
                {"name": "a", "type": ["long", "null"]},
                {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
                {"name": "f", "type": {"type": "fixed", "name": "F", "size": 4}},
                {"name": "g", "type": ["null", "ns.F"]},
                {"name": "h", "type": "F"},
                {"name": "bd", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4}},
                {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {"name": "s", "type": {"type": "string", "avro.java.string": "String"}},
                {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
            ],
        }
    )
    schema = avro_to_arrow_schema(text)
    assert schema.field("a").nullable and schema.field("a").type == pa.int64()
    assert schema.field("e").type == pa.string()
    assert schema.field("f").type == pa.binary() and not schema.field("f").nullable
    assert schema.field("g").type == pa.binary() and schema.field("g").nullable
    assert schema.field("h").type == pa.binary()
    assert schema.field("bd").type == pa.decimal128(4, 0)
    assert schema.field("ms").type == pa.timestamp("ms", tz="UTC")
    assert schema.field("s").type == pa.string()
    assert schema.field("t").type == pa.time32("ms")


@pytest.mark.unit
@pytest.mark.parametrize(
    "text",
    [
        '"int"',
        "not json",
        '{"type":"record","name":"r","fields":[{"name":"u","type":["int","string"]}]}',
        '{"type":"record","name":"r","fields":[{"name":"u","type":"Unknown"}]}',
    ],
)
def test_avro_to_arrow_schema_unsupported_schema_raises(text: str) -> None:
    with pytest.raises(SchemaError):
        avro_to_arrow_schema(text)


@pytest.mark.unit
def test_schema_json_java_order_namespace_elision_and_name_references() -> None:
    schema = {
        "fields": [
            {
                "default": None,
                "type": ["null", {"size": 2, "name": "F", "type": "fixed"}],
                "name": "a",
            },
            {"type": "F", "name": "b"},
            {
                "name": "c",
                "type": {"type": "record", "name": "C", "namespace": "ns", "fields": []},
            },
            {"name": "d", "type": {"type": "int"}},
        ],
        "namespace": "ns",
        "name": "R",
        "type": "record",
    }
    assert schema_json(schema) == (
        '{"type":"record","name":"R","namespace":"ns","fields":['
        '{"name":"a","type":["null",{"type":"fixed","name":"F","size":2}],"default":null},'
        '{"name":"b","type":"F"},'
        '{"name":"c","type":{"type":"record","name":"C","fields":[]}},'
        '{"name":"d","type":"int"}]}'
    )


@pytest.mark.unit
@pytest.mark.parametrize(
    ("precision", "size"), [(1, 1), (2, 1), (3, 2), (9, 4), (10, 5), (18, 8), (19, 9), (38, 16)]
)
def test_decimal_fixed_size_matches_spark(precision: int, size: int) -> None:
    assert decimal_fixed_size(precision) == size


@pytest.mark.unit
def test_record_name_and_namespace_sanitizes_like_hudi() -> None:
    assert record_name_and_namespace("trips") == ("trips_record", "hoodie.trips")
    assert sanitize_avro_name("1st-table") == "__st__table"
    assert record_name_and_namespace("db.t") == ("db__t_record", "hoodie.db__t")
    with pytest.raises(SchemaError):
        sanitize_avro_name("")
