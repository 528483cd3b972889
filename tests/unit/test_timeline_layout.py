"""Table versions 8 and 9: timeline layout 2, Avro commit metadata, completion-time slicing,
1.x table properties and the archived LSM history, on the corpus tables Hudi 1.x wrote."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import config
from engine.cli import canonical_json_lines
from engine.errors import QueryError, TimelineError
from engine.fs.filenames import parse_log_file_name
from engine.fs.storage import Storage
from engine.fs.table_version import (
    effective_payload_class,
    ordering_field,
    partition_fields,
    require_readable_base_format,
    table_format,
)
from engine.read.arrow import read_table
from engine.timeline.instant import Action, Instant, State
from engine.timeline.layout import TimelineLayout
from engine.timeline.timeline import Timeline
from engine.view.completion_slicing import slice_logs_by_completion

V2 = TimelineLayout(
    table_format({"hoodie.table.version": "9", "hoodie.timeline.layout.version": "2"})
)
LAYOUT_2_TABLES = (
    "cow__v8_complexkeygen_hivestyle",
    "cow__v9_txns_simple_meta",
    "cow__v9_txns_simple_overwrite",
    "mor_avro__v9_nonpartitioned_rollback",
    "mor_avro__v9_txns_simple_meta",
    "trips_mor_avro__v8_trips_8i3u1d",
)


# ---- names -------------------------------------------------------------------------------------


def test_layout_2_parses_completed_requested_inflight_and_clustering() -> None:
    assert V2.parse("20250101000000000_20250101000001000.deltacommit") == Instant(
        "20250101000000000", Action.DELTA_COMMIT, State.COMPLETED, "20250101000001000"
    )
    assert V2.parse("20250101000000000.inflight") == Instant(
        "20250101000000000", Action.COMMIT, State.INFLIGHT
    )
    clustering = V2.parse("20250101000000000.clustering.requested")
    assert clustering == Instant("20250101000000000", Action.CLUSTERING, State.REQUESTED)
    done = V2.parse("20250101000000000_20250101000002000.replacecommit")
    assert done is not None and done.action is Action.REPLACE_COMMIT
    # a legacy-named completed instant (JSON content) is still an instant, without completion
    assert V2.parse("20250101000000000.commit") == Instant(
        "20250101000000000", Action.COMMIT, State.COMPLETED
    )
    for junk in ("20250101_x.commit", "1_2.compaction", "history", "1_2.commit.requested"):
        assert V2.parse(junk) is None, junk


def test_layout_2_file_names_round_trip() -> None:
    for name in (
        "20250101000000000_20250101000001000.commit",
        "20250101000000000.commit.requested",
        "20250101000000000.inflight",
        "20250101000000000.clustering.inflight",
    ):
        instant = V2.parse(name)
        assert instant is not None and V2.file_name(instant) == name


def test_timeline_folder_follows_timeline_path_property() -> None:
    fmt = table_format(
        {
            "hoodie.table.version": "8",
            "hoodie.timeline.layout.version": "2",
            "hoodie.timeline.path": "tl",
            "hoodie.timeline.history.path": "old",
        }
    )
    assert (fmt.timeline_dir, fmt.history_dir) == (".hoodie/tl", ".hoodie/tl/old")


@pytest.mark.parametrize(
    ("version", "layout"), [("7", "2"), ("8", "1"), ("6", "2"), ("10", "2"), ("4", "1")]
)
def test_unsupported_version_or_layout_names_both(version: str, layout: str) -> None:
    props = {"hoodie.table.version": version, "hoodie.timeline.layout.version": layout}
    with pytest.raises(
        QueryError, match=f"hoodie.table.version={version}.*layout.version={layout}"
    ):
        table_format(props)


# ---- Avro commit metadata ----------------------------------------------------------------------


@pytest.mark.parametrize("name", LAYOUT_2_TABLES)
def test_avro_commit_metadata_of_every_corpus_commit(
    corpus_table: Callable[[str], Path], name: str
) -> None:
    storage = Storage(str(corpus_table(name)))
    timeline = Timeline.load(storage)
    assert timeline.layout.directory == ".hoodie/timeline"
    commits = timeline.commits_timeline()
    assert commits and all(
        i.completion_time and i.completion_time > i.instant_time for i in commits
    )
    for instant in commits:
        raw = next(iter(fastavro.reader(io.BytesIO(timeline.read_content(instant)))))
        metadata = timeline.read_commit_metadata(instant)
        expected = {
            (s["partitionPath"], s["fileId"], s["path"])
            for stats in (raw.get("partitionToWriteStats") or {}).values()
            for s in stats
        }
        ours = {(s.partition_path, s.file_id, s.path) for s in metadata.write_stats()}
        assert ours == expected, instant
        assert metadata.operation_type == raw.get("operationType"), instant
        assert metadata.schema == (raw.get("extraMetadata") or {}).get("schema"), instant


def test_clustering_completes_as_replacecommit(corpus_table: Callable[[str], Path]) -> None:
    timeline = Timeline.load(Storage(str(corpus_table("mor_avro__v9_txns_simple_meta"))))
    clustered = [
        i
        for i in timeline.completed([Action.REPLACE_COMMIT])
        if timeline.read_commit_metadata(i).operation_type == "CLUSTER"
    ]
    assert len(clustered) == 1
    assert clustered[0].instant_time == "20260307162619269"
    assert timeline.read_commit_metadata(clustered[0]).replaced_file_ids()


# ---- file slicing by completion time -----------------------------------------------------------


def _log(instant: str, version: int = 1) -> object:
    return parse_log_file_name(f".fg-0_{instant}.log.{version}_0-1-2")


def test_log_goes_to_slice_by_completion_time() -> None:
    base, compaction = "100", "300"
    logs = [_log("200"), _log("250"), _log("400"), _log("500")]
    completion = {"200": "210", "250": "350", "400": "410"}  # 250 completed after 300
    out = slice_logs_by_completion([base, compaction], logs, completion, pending={"500"})  # type: ignore[arg-type]
    assert [log.base_instant_time for log in out["100"]] == ["200"]
    # requested before the compaction, completed after it: the compaction's slice
    assert [log.base_instant_time for log in out["300"]] == ["250", "400", "500"]


def test_log_older_than_every_base_file_opens_its_own_slice() -> None:
    logs = [_log("050"), _log("060")]
    out = slice_logs_by_completion(["100"], logs, {"050": "055", "060": "070"})  # type: ignore[arg-type]
    assert [log.base_instant_time for log in out["050"]] == ["050", "060"]


def test_logs_ordered_by_completion_time() -> None:
    logs = [_log("200"), _log("210")]
    out = slice_logs_by_completion(["100"], logs, {"200": "290", "210": "230"})  # type: ignore[arg-type]
    assert [log.base_instant_time for log in out["100"]] == ["210", "200"]


# ---- 1.x table properties ----------------------------------------------------------------------


def test_merge_mode_decides_merge_semantics() -> None:
    assert effective_payload_class({"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}) == (
        config.OVERWRITE_WITH_LATEST_PAYLOAD
    )
    assert effective_payload_class(
        {
            "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
            "hoodie.compaction.payload.class": config.OVERWRITE_WITH_LATEST_PAYLOAD,
        }
    ) == (config.DEFAULT_PAYLOAD)
    assert effective_payload_class({}) == config.OVERWRITE_WITH_LATEST_PAYLOAD
    with pytest.raises(QueryError, match=r"hoodie\.record\.merge\.mode=CUSTOM.*com\.acme\.Merger"):
        effective_payload_class(
            {
                "hoodie.record.merge.mode": "CUSTOM",
                "hoodie.record.merge.strategy.id": "com.acme.Merger",
            }
        )


def test_ordering_and_partition_fields_of_1x_properties() -> None:
    assert ordering_field({"hoodie.table.ordering.fields": "ts"}) == "ts"
    assert ordering_field({"hoodie.table.precombine.field": "ts"}) == "ts"
    with pytest.raises(QueryError, match=re.escape("hoodie.table.ordering.fields=a,b")):
        ordering_field({"hoodie.table.ordering.fields": "a,b"})
    props = {"hoodie.table.partition.fields": "region:SIMPLE,day:TIMESTAMP"}
    assert partition_fields(props) == ("region", "day")


@pytest.mark.parametrize(
    ("key", "value"),
    [("hoodie.table.base.file.format", "ORC"), ("hoodie.table.base.file.format", "HFILE"),
     ("hoodie.table.base.file.format", "LANCE"), ("hoodie.table.format", "iceberg")],
)  # fmt: skip
def test_unreadable_base_file_format_names_it(key: str, value: str) -> None:
    with pytest.raises(QueryError, match=re.escape(f"{key}={value}")):
        require_readable_base_format({key: value})


def _with_property(table: Path, key: str, value: str) -> None:
    props = table / ".hoodie" / "hoodie.properties"
    lines = [line for line in props.read_text().splitlines() if not line.startswith(f"{key}=")]
    props.write_text("\n".join([*lines, f"{key}={value}"]) + "\n")


def test_custom_merge_mode_mor_read_fails_naming_it(
    corpus_copy: Callable[[str], Path],
) -> None:
    table = corpus_copy("mor_avro__v9_nonpartitioned_rollback")
    _with_property(table, "hoodie.record.merge.mode", "CUSTOM")
    with pytest.raises(QueryError, match=re.escape("hoodie.record.merge.mode=CUSTOM")):
        read_table(str(table))


def test_orc_table_read_fails_naming_the_format(corpus_copy: Callable[[str], Path]) -> None:
    table = corpus_copy("cow__v9_txns_simple_overwrite")
    _with_property(table, "hoodie.table.base.file.format", "ORC")
    with pytest.raises(QueryError, match=re.escape("hoodie.table.base.file.format=ORC")):
        read_table(str(table))


# ---- archived LSM history ----------------------------------------------------------------------

_LSM_SCHEMA = pa.schema(
    [
        ("instantTime", pa.string()),
        ("completionTime", pa.string()),
        ("action", pa.string()),
        ("metadata", pa.binary()),
        ("plan", pa.binary()),
        ("version", pa.int32()),
    ]
)


def _archive(table: Path, count: int, *, keep_metadata: bool = True) -> list[Instant]:
    """Move the first ``count`` completed commits of a layout-2 table into an LSM history, the
    way Hudi's archiver lays it out (one L0 parquet file, manifest_1, _version_)."""
    storage = Storage(str(table))
    timeline = Timeline.load(storage)
    moved = timeline.commits_timeline()[:count]
    rows = []
    folder = table / ".hoodie" / "timeline"
    for instant in moved:
        rows.append(
            {
                "instantTime": instant.instant_time,
                "completionTime": instant.completion_time,
                "action": instant.action.value,
                "metadata": timeline.read_content(instant) if keep_metadata else None,
                "plan": None,
                "version": 1,
            }
        )
        for f in folder.glob(f"{instant.instant_time}*"):
            f.unlink()
    history = folder / "history"
    history.mkdir(exist_ok=True)
    name = f"{moved[0].instant_time}_{moved[-1].instant_time}_0.parquet"
    pq.write_table(pa.Table.from_pylist(rows, _LSM_SCHEMA), history / name)
    manifest = {"files": [{"fileName": name, "fileLen": (history / name).stat().st_size}]}
    (history / "manifest_1").write_text(json.dumps(manifest))
    (history / "_version_").write_text("1")
    return moved


def _golden(shared_dir: Path, table: str, query: str) -> str:
    return (shared_dir / "corpus" / "golden" / table / f"{query}.jsonl").read_text()


def _ours(path: Path, options: dict[str, str]) -> str:
    rows = read_table(str(path), options).to_pylist()
    return "".join(line + "\n" for line in canonical_json_lines(rows))


def test_time_travel_and_incremental_into_archived_instants(
    corpus_copy: Callable[[str], Path], shared_dir: Path
) -> None:
    name = "mor_avro__v9_txns_simple_meta"
    table = corpus_copy(name)
    moved = _archive(table, 3)
    assert Timeline.load(Storage(str(table))).commits_timeline()[0].instant_time not in {
        i.instant_time for i in moved
    }
    as_of = moved[1].instant_time
    assert _ours(table, {config.AS_OF_INSTANT: as_of}) == _golden(
        shared_dir, name, f"as_of_{as_of}"
    )
    begin, end = moved[0].completion_time, moved[1].completion_time
    assert begin is not None and end is not None
    incremental = {
        config.QUERY_TYPE.key: "incremental",
        config.READ_BEGIN_INSTANTTIME.key: begin,
        config.READ_END_INSTANTTIME.key: end,
    }
    assert _ours(table, incremental) == _golden(shared_dir, name, f"incr_{begin}_{end}")
    assert _ours(table, {}) == _golden(shared_dir, name, "snapshot")


def test_archived_instant_without_metadata_fails_naming_it(
    corpus_copy: Callable[[str], Path],
) -> None:
    table = corpus_copy("mor_avro__v9_txns_simple_meta")
    moved = _archive(table, 2, keep_metadata=False)
    options = {
        config.QUERY_TYPE.key: "incremental",
        config.READ_BEGIN_INSTANTTIME.key: "0",
        config.READ_END_INSTANTTIME.key: str(moved[1].completion_time),
    }
    # the reader may meet either archived instant first (the schema as of the end instant is
    # resolved before the range is planned); the error names the one it met
    named = "|".join(m.instant_time for m in moved)
    with pytest.raises(TimelineError, match=f"Archived instant \\[({named})__"):
        read_table(str(table), options)


def test_incremental_ranges_on_completion_time(corpus_table: Callable[[str], Path]) -> None:
    """Hudi 1.x: a commit is in (begin, end] by its completion time, not its requested time."""
    path = str(corpus_table("mor_avro__v9_txns_simple_meta"))
    requested, completed = "20260307162604102", "20260307162605084"

    def commit_times(begin: str, end: str) -> set[str]:
        options = {
            config.QUERY_TYPE.key: "incremental",
            config.READ_BEGIN_INSTANTTIME.key: begin,
            config.READ_END_INSTANTTIME.key: end,
        }
        return set(read_table(path, options).column("_hoodie_commit_time").to_pylist())

    # begin after the requested time, end at the completion time: the commit is in range
    assert commit_times("20260307162604500", completed) == {requested}
    # the requested time inside the range, the completion after it: not in range
    assert commit_times("20260307162604000", "20260307162604500") == set()
