"""Timeline records: every ``.avsc`` loads and round-trips a record; ``HoodieWriteStat`` is the
record Hudi 1.x writes; the layout, never the bytes, decides whether commit metadata is JSON or
Avro; the corpus' instants decode to the records their files hold."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest

from engine.errors import TimelineError
from engine.fs.storage import Storage
from engine.fs.table_version import table_format
from engine.timeline.avro_metadata import (
    COMMIT_METADATA_SCHEMA,
    NAMESPACE,
    SCHEMA_DIR,
    TIMELINE_SCHEMAS,
    WRITE_STAT_SCHEMA,
    TimelineSchema,
    deserialize,
    serialize,
)
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat, WrittenKeys
from engine.timeline.instant import Action, Instant, State
from engine.timeline.layout import TimelineLayout
from engine.timeline.timeline import Timeline

pytestmark = pytest.mark.unit

V1 = TimelineLayout()
V2 = TimelineLayout(
    table_format({"hoodie.table.version": "9", "hoodie.timeline.layout.version": "2"})
)
CORPUS_TABLES = (
    "cow__v6_complexkeygen_hivestyle",
    "mor_parquet__v6_nonpartitioned_rollback",
    "trips_mor_avro__v6_trips_8i3d",
    "cow__v8_complexkeygen_hivestyle",
    "cow__v9_txns_simple_overwrite",
    "mor_avro__v9_nonpartitioned_rollback",
    "mor_avro__v9_txns_simple_meta",
    "trips_mor_avro__v8_trips_8i3u1d",
)
_COMMITS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)


def _example(node: Any, named: dict[str, Any], depth: int = 0) -> Any:
    """A value of every field of ``node`` (the non-null branch of each union), distinct per
    field so that a field read back in another's place shows."""
    if isinstance(node, str):
        primitives = {"string": f"s{depth}", "long": 10 + depth, "int": depth, "double": 0.5}
        primitives |= {"boolean": True, "bytes": b"b", "null": None}
        return primitives[node] if node in primitives else _example(named[node], named, depth)
    if isinstance(node, list):
        return _example(next(t for t in node if t != "null"), named, depth)
    kind = node["type"]
    if kind == "record":
        named[f"{node['namespace']}.{node['name']}"] = node
        return {
            f["name"]: _example(f["type"], named, depth + i) for i, f in enumerate(node["fields"])
        }
    if kind == "array":
        return [_example(node["items"], named, depth + 1)]
    if kind == "map":
        return {"k": _example(node["values"], named, depth + 1)}
    return _example(kind, named, depth)


def test_every_schema_file_has_its_record_type() -> None:
    files = {p.name for p in SCHEMA_DIR.glob("*.avsc")}
    assert files == {s.path.name for s in TIMELINE_SCHEMAS}
    assert all(s.full_name == f"{NAMESPACE}.{s.name}" for s in TIMELINE_SCHEMAS)


@pytest.mark.parametrize("schema", TIMELINE_SCHEMAS, ids=lambda s: s.name)
def test_each_schema_loads_and_round_trips_a_record(schema: TimelineSchema) -> None:
    record = _example(schema.as_dict, {})
    assert deserialize(serialize(schema, record), source=schema.name) == record
    # the JSON text headers carry parses back to the same schema
    assert fastavro.parse_schema(json.loads(schema.json)) == fastavro.parse_schema(schema.as_dict)


def test_a_missing_schema_file_is_named() -> None:
    with pytest.raises(TimelineError, match="HoodieNoSuchRecord"):
        serialize(TimelineSchema("HoodieNoSuchRecord"), {})


def test_write_stat_is_the_record_hudi_1x_writes(corpus_table: Callable[[str], Path]) -> None:
    """The one HoodieWriteStat: field for field the writer schema of a Hudi 1.1 deltacommit."""
    storage = Storage(str(corpus_table("mor_avro__v9_txns_simple_meta")))
    timeline = Timeline.load(storage)
    instant = timeline.completed([Action.DELTA_COMMIT])[-1]
    reader = fastavro.reader(io.BytesIO(timeline.read_content(instant)))
    written = json.loads(reader.metadata["avro.schema"])
    stats = next(f for f in written["fields"] if f["name"] == "partitionToWriteStats")
    hudi = stats["type"][1]["values"]["items"]
    ours = WRITE_STAT_SCHEMA.as_dict
    assert [f["name"] for f in ours["fields"]] == [f["name"] for f in hudi["fields"]]
    assert [f["name"] for f in COMMIT_METADATA_SCHEMA.as_dict["fields"]] == [
        f["name"] for f in written["fields"]
    ]


def _metadata(*, replace: bool) -> HoodieCommitMetadata:
    base = HoodieWriteStat(
        file_id="fg-1", path="p/fg-1_0-1-2_001.parquet", partition_path="p", num_writes=3
    )
    base = HoodieWriteStat.from_dict(base.to_dict() | {"runtimeStats": {"totalScanTime": 1}})
    log = HoodieWriteStat(
        file_id="fg-2",
        path="p/.fg-2_001.log.1_0-1-2",
        partition_path="p",
        prev_commit="001",
        log_version=1,
        log_offset=0,
        base_file="fg-2_0-1-2_001.parquet",
        log_files=(".fg-2_001.log.1_0-1-2",),
        cdc_stats={"p/.fg-2.cdc": 12},
    )
    return HoodieCommitMetadata(
        {"p": [base, log]},
        extra_metadata={"schema": "{}"},
        operation_type="UPSERT",
        partition_to_replace_file_ids={"p": ["fg-0"]} if replace else None,
    )


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("layout", [V1, V2], ids=["layout 1", "layout 2"])
def test_commit_metadata_round_trips_in_the_layouts_coding(
    layout: TimelineLayout, replace: bool
) -> None:
    metadata = _metadata(replace=replace)
    data = layout.encode_commit_metadata(metadata)
    assert data.startswith(b"Obj\x01") is (layout is V2)
    again = layout.decode_commit_metadata(data, source="t")
    assert again == metadata
    if layout is V2:
        written = json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])
        name = "HoodieReplaceCommitMetadata" if replace else "HoodieCommitMetadata"
        assert written["name"] == f"{NAMESPACE}.{name}"


def test_the_layout_not_the_bytes_decides_the_coding() -> None:
    metadata = _metadata(replace=False)
    done = Instant("001", Action.COMMIT, State.COMPLETED, "002")
    with pytest.raises(TimelineError, match=r"Avro 001\.commit"):
        V2.decode_commit_metadata(metadata.to_json(), done, source="001.commit")
    with pytest.raises(TimelineError, match=r"JSON commit metadata of 001\.commit"):
        V1.decode_commit_metadata(V2.encode_commit_metadata(metadata), source="001.commit")
    # layout 2 under a legacy name (no completion time): JSON, as Hudi wrote it before upgrading
    legacy = Instant("001", Action.COMMIT, State.COMPLETED)
    assert V2.decode_commit_metadata(metadata.to_json(), legacy, source="x") == metadata
    for layout in (V1, V2):
        assert layout.decode_commit_metadata(b"", done, source="x") == HoodieCommitMetadata()


def _raw(layout: TimelineLayout, data: bytes) -> dict[str, Any]:
    if layout.version >= 2:
        return next(iter(fastavro.reader(io.BytesIO(data))))  # type: ignore[return-value]
    return json.loads(data) if data.strip() else {}  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", CORPUS_TABLES)
def test_corpus_commit_metadata_decodes_to_the_records_its_files_hold(
    corpus_table: Callable[[str], Path], name: str
) -> None:
    """Each completed commit of the table and of its metadata table, in its layout's coding,
    gives every write stat with the counts and sizes the file holds."""
    base = corpus_table(name)
    roots = [base, *([base / ".hoodie/metadata"] if (base / ".hoodie/metadata").is_dir() else [])]
    checked = 0
    for root in roots:
        timeline = Timeline.load(Storage(str(root)))
        for instant in timeline.completed(list(_COMMITS)):
            raw = _raw(timeline.layout, timeline.read_content(instant))
            metadata = timeline.read_commit_metadata(instant)
            expected = [
                (p, s["fileId"], s["path"], s["numWrites"], s["fileSizeInBytes"], s["prevCommit"])
                for p, stats in (raw.get("partitionToWriteStats") or {}).items()
                for s in stats
            ]
            ours = [
                (p, s.file_id, s.path, s.num_writes, s.file_size_in_bytes, s.prev_commit)
                for p, stats in metadata.partition_to_write_stats.items()
                for s in stats
            ]
            assert ours == expected, instant
            assert metadata.extra_metadata == (raw.get("extraMetadata") or {}), instant
            assert metadata.compacted is bool(raw.get("compacted")), instant
            checked += 1
    assert checked


def test_written_keys_go_back_from_tasks_but_never_into_a_commit() -> None:
    """A stat's written keys travel from a Spark task to the driver (:meth:`to_wire`) and are
    no part of the commit metadata Hudi reads (its JSON and Avro)."""
    keys = WrittenKeys(("k1", "é☃"), ("k0",))
    stat = HoodieWriteStat(file_id="f-0", path="p/f.parquet", partition_path="p", written_keys=keys)
    assert HoodieWriteStat.from_wire(stat.to_wire()).written_keys == keys
    assert (
        HoodieWriteStat.from_wire(
            HoodieWriteStat(file_id="f", path=None, partition_path="").to_wire()
        ).written_keys
        is None
    )
    commit = HoodieCommitMetadata(partition_to_write_stats={"p": [stat]})
    assert b"k1" not in commit.to_json() and "writtenKeys" not in str(commit.to_avro())
    assert HoodieCommitMetadata.from_json(commit.to_json()).write_stats()[0].written_keys is None
