"""File names, instants, timeline, properties and commit metadata against Apache Hudi's tables."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from engine import config
from engine.errors import FileNameError, TimelineError
from engine.fs.filenames import (
    format_log_file_name,
    is_base_file,
    is_log_file,
    parse_base_file_name,
    parse_log_file_name,
)
from engine.fs.properties import (
    parse_properties_text,
    read_properties,
    table_checksum,
    write_partition_metadata,
    write_properties,
)
from engine.fs.storage import Storage
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import Action, State, new_instant_time, parse_instant_file_name
from engine.timeline.timeline import Timeline, complete, create_requested, transition_to_inflight

pytestmark = pytest.mark.unit


def test_parse_base_file_name_fixture_name_parsed() -> None:
    name = "26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0_1-13-25_20250121000547796.parquet"
    parsed = parse_base_file_name(name)
    assert parsed.file_id == "26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0"
    assert parsed.write_token == "1-13-25"
    assert parsed.instant_time == "20250121000547796"
    assert parsed.name == name


@pytest.mark.parametrize(
    "name", ["junk.parquet", "a_b.parquet", "a_b_c_d.parquet", "a_b_x.parquet"]
)
def test_parse_base_file_name_malformed_raises(name: str) -> None:
    with pytest.raises(FileNameError, match=name.replace(".", r"\.")):
        parse_base_file_name(name)
    assert not is_base_file(name)


def test_parse_log_file_name_fixture_name_parsed() -> None:
    name = ".26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0_20250121000547796.log.1_0-33-47"
    parsed = parse_log_file_name(name)
    assert (parsed.file_id, parsed.base_instant_time, parsed.version, parsed.write_token) == (
        "26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0",
        "20250121000547796",
        1,
        "0-33-47",
    )
    assert (
        format_log_file_name(
            *parsed.sort_key()[:0], parsed.file_id, "20250121000547796", 1, "0-33-47"
        )
        == name
    )
    assert is_log_file(name)


def test_parse_log_file_name_missing_write_token_raises() -> None:
    with pytest.raises(FileNameError):
        parse_log_file_name(".abc-0_20250121000547796.log.1")


def test_parse_instant_file_name_all_forms() -> None:
    assert parse_instant_file_name("20240418172804498.inflight") == parse_instant_file_name(
        "20240418172804498.inflight"
    )
    i = parse_instant_file_name("20240418172804498.inflight")
    assert i is not None and (i.action, i.state) == (Action.COMMIT, State.INFLIGHT)
    i = parse_instant_file_name("20240418172804498.deltacommit.requested")
    assert i is not None and (i.action, i.state) == (Action.DELTA_COMMIT, State.REQUESTED)
    i = parse_instant_file_name("20240418172804498.replacecommit")
    assert i is not None and i.is_completed and i.file_name == "20240418172804498.replacecommit"
    assert parse_instant_file_name("hoodie.properties") is None
    assert parse_instant_file_name("20240418172804498.compaction") is None


def test_new_instant_time_strictly_after_future_instant() -> None:
    future = "29991231235959999"
    with pytest.raises(TimelineError):
        new_instant_time("not-a-time")
    assert new_instant_time("20000101000000000") > "20000101000000000"
    assert new_instant_time("29991231235959998") == future


def test_table_checksum_matches_fixture() -> None:
    assert table_checksum("default", "v6_simplekeygen_nonhivestyle") == 616688896


def test_parse_properties_text_java_escapes_unescaped() -> None:
    props = parse_properties_text('#c\nk1=a\\:b\\=c\nk2 = {"x"\\:1}\n! other comment\nk3=\\u0041\n')
    assert props == {"k1": "a:b=c", "k2": '{"x":1}', "k3": "A"}


def test_read_properties_corpus_table(corpus_table) -> None:  # type: ignore[no-untyped-def]
    props = read_properties(Storage(str(corpus_table("cow__v6_simplekeygen_nonhivestyle"))))
    assert props[config.TABLE_VERSION.key] == "6"
    assert props[config.KEYGENERATOR_CLASS.key] == config.SIMPLE_KEYGEN
    assert json.loads(props[config.CREATE_SCHEMA.key])["type"] == "record"
    assert int(props[config.TABLE_CHECKSUM.key]) == table_checksum(
        props[config.DATABASE_NAME.key], props[config.TABLE_NAME.key]
    )


def test_write_properties_round_trip_checksum_last(tmp_path) -> None:  # type: ignore[no-untyped-def]
    storage = Storage(str(tmp_path))
    write_properties(storage, {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE"})
    text = (tmp_path / ".hoodie" / "hoodie.properties").read_text()
    assert text.rstrip().splitlines()[-1] == f"hoodie.table.checksum={table_checksum(None, 't')}"
    assert read_properties(storage)["hoodie.table.type"] == "COPY_ON_WRITE"


def test_write_partition_metadata_depth_and_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    storage = Storage(str(tmp_path))
    assert write_partition_metadata(storage, "a=1/b=2", "20240101000000000")
    assert not write_partition_metadata(storage, "a=1/b=2", "20240101000000001")
    text = (tmp_path / "a=1" / "b=2" / ".hoodie_partition_metadata").read_text()
    assert "commitTime=20240101000000000" in text and "partitionDepth=2" in text


@pytest.mark.parametrize("partition", ["", "dt=2024-01-01"])
def test_writers_racing_on_one_partition_metafile_each_rename_a_whole_one(
    tmp_path, partition: str
) -> None:  # type: ignore[no-untyped-def]
    """File groups of one partition written side by side (the driver-side bucket write) each
    mark the partition: the table root's metafile included, no writer fails on another's
    temporary file."""
    storage = Storage(str(tmp_path))
    barrier = threading.Barrier(8)

    def mark(_: int) -> None:
        barrier.wait()
        storage.write_atomic(
            f"{partition}/.hoodie_partition_metadata"
            if partition
            else ".hoodie_partition_metadata",
            b"commitTime=1\n",
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(mark, range(8)))
    root = tmp_path / partition if partition else tmp_path
    assert (root / ".hoodie_partition_metadata").read_bytes() == b"commitTime=1\n"
    assert not list(root.glob("*.tmp"))


def test_timeline_load_corpus_overwrite_table(corpus_table) -> None:  # type: ignore[no-untyped-def]
    storage = Storage(str(corpus_table("mor_parquet__v6_simplekeygen_nonhivestyle_overwritetable")))
    timeline = Timeline.load(storage)
    actions = [i.action for i in timeline.commits_timeline()]
    assert actions == [Action.DELTA_COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT]
    last = timeline.last_completed()
    assert last is not None
    meta = timeline.read_commit_metadata(last)
    assert meta.operation_type == "INSERT_OVERWRITE_TABLE"
    assert len(meta.replaced_file_ids()) == 3
    assert json.loads(meta.to_json()) == json.loads(timeline.read_content(last))


def test_commit_metadata_round_trip_every_corpus_commit(corpus_table, shared_dir) -> None:  # type: ignore[no-untyped-def]
    names = sorted(p.stem for p in (shared_dir / "corpus" / "tables").glob("*.zip"))
    checked = 0
    for name in names:
        storage = Storage(str(corpus_table(name)))
        timeline = Timeline.load(storage)
        if timeline.layout.version >= 2:
            continue  # Avro commit metadata: tests/unit/test_timeline_layout.py
        for instant in timeline.commits_timeline():
            raw = json.loads(timeline.read_content(instant))
            again = json.loads(timeline.read_commit_metadata(instant).to_json())
            assert again == raw, f"{name} {instant}"
            checked += 1
    assert checked > 20


def test_timeline_transitions_in_order(tmp_path) -> None:  # type: ignore[no-untyped-def]
    storage = Storage(str(tmp_path))
    t = "20240101000000000"
    with pytest.raises(TimelineError):
        transition_to_inflight(storage, t, Action.COMMIT)
    create_requested(storage, t, Action.COMMIT)
    with pytest.raises(TimelineError, match=t):
        create_requested(storage, t, Action.COMMIT)
    assert Timeline.load(storage).pending()[0].state is State.REQUESTED
    transition_to_inflight(storage, t, Action.COMMIT)
    assert (tmp_path / ".hoodie" / f"{t}.inflight").exists()
    assert not Timeline.load(storage).is_completed(t)
    complete(storage, t, Action.COMMIT, HoodieCommitMetadata().to_json())
    timeline = Timeline.load(storage)
    assert timeline.is_completed(t) and timeline.pending() == []


def test_storage_drops_hadoops_checksum_of_a_file_it_replaces_or_deletes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Apache Hudi on a local file system leaves ``.<name>.crc`` beside what it writes; a file
    the engine replaces or deletes loses it, or Hudi's next read of it fails its checksum."""
    storage = Storage(str(tmp_path))
    names = (".hoodie/hoodie.properties", "p0/a.parquet", "p0/b.log")
    for rel in names:
        storage.write_bytes(rel, b"hudi's")
        head, _, name = rel.rpartition("/")
        (tmp_path / head / f".{name}.crc").write_bytes(b"crc")
    storage.write_atomic(names[0], b"ours")
    storage.delete(names[1])
    storage.write_bytes(names[2], b"ours", overwrite=True)
    assert sorted(p.name for p in tmp_path.rglob("*.crc")) == []
    assert (tmp_path / names[0]).read_bytes() == b"ours"
    storage.write_bytes("p0/c.parquet", b"new")  # a new file: nothing to drop, nothing fails
