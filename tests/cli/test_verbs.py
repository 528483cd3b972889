"""Every inspection verb's ``--json`` output, field by field against the table's own files.

Tables: the two the engine writes for these tests (tests/cli/conftest.py) and every table-version
6 table of the Apache Hudi corpus (no Spark needed for those).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.cli import oracle
from tests.cli.conftest import cli_json, run_cli
from tests.conftest import SHARED

# every table-version-6 table of the corpus (later versions: see the error test below)
CORPUS_V6 = (
    sorted(p.stem for p in (SHARED / "corpus" / "tables").glob("*__v6_*.zip")) if SHARED else []
)
WRITTEN = ["cow_table", "mor_table"]


@pytest.fixture(
    params=[pytest.param(name, marks=pytest.mark.spark) for name in WRITTEN]
    + [pytest.param(name, marks=pytest.mark.interop) for name in CORPUS_V6]
)
def table(request: pytest.FixtureRequest) -> Path:
    """Base path of one written or corpus table."""
    if request.param in WRITTEN:
        return Path(request.getfixturevalue(request.param))
    corpus_table: Callable[[str], Path] = request.getfixturevalue("corpus_table")
    return corpus_table(request.param)


def _expected_instant(path: Path, raw: oracle.RawInstant) -> dict[str, Any]:
    t = raw.instant_time
    expected: dict[str, Any] = {"instant_time": t, "action": raw.action, "state": raw.state}
    if raw.state == "completed":
        done = path / ".hoodie" / f"{t}.{raw.action}"
        expected["completed_time"] = oracle.iso_mtime(done)
        requested = oracle.requested_file(path, raw)
        if requested is not None:
            millis = oracle.mtime_ms(done) - oracle.mtime_ms(requested)
            expected["duration_seconds"] = millis / 1000
    else:
        expected["completed_time"] = None
    if raw.state == "completed" and raw.action in oracle.WRITE_ACTIONS:
        meta = oracle.commit_json(path, t, raw.action)
        stats = oracle.stats_of(meta)
        expected.update(
            operation=meta["operationType"],
            partitions=len(meta["partitionToWriteStats"]),
            rows_inserted=sum(s["numInserts"] for s in stats),
            rows_updated=sum(s["numUpdateWrites"] for s in stats),
            rows_deleted=sum(s["numDeletes"] for s in stats),
            files_written=len({s["path"] for s in stats}),
            bytes_written=sum(s["totalWriteBytes"] for s in stats),
        )
    return expected


def test_timeline_json_matches_instant_files(table: Path) -> None:
    rows = cli_json("timeline", str(table))
    raw = oracle.instants(table)
    assert [r["instant_time"] for r in rows] == [i.instant_time for i in raw]
    tz = oracle.properties(table).get("hoodie.table.timeline.timezone", "UTC")
    for row, instant in zip(rows, raw, strict=True):
        for key, value in _expected_instant(table, instant).items():
            assert row[key] == value, (instant, key)
        t = instant.instant_time
        if tz == "UTC":
            assert row["requested_time"] == (
                f"{t[:4]}-{t[4:6]}-{t[6:8]}T{t[8:10]}:{t[10:12]}:{t[12:14]}.{t[14:17]}Z"
            )


def test_commit_json_has_each_write_stat_of_the_commit_file(table: Path) -> None:
    writes = [
        i
        for i in oracle.instants(table)
        if i.state == "completed" and i.action in oracle.WRITE_ACTIONS
    ]
    for instant in writes:
        detail = cli_json("commit", str(table), instant.instant_time)
        meta = oracle.commit_json(table, instant.instant_time, instant.action)
        expected = sorted(
            (
                p,
                s["fileId"],
                s["path"],
                s["numWrites"],
                s["numInserts"],
                s["numUpdateWrites"],
                s["numDeletes"],
                s["totalWriteBytes"],
                s["fileSizeInBytes"],
                s.get("totalLogBlocks", 0),
            )
            for p, stats in meta["partitionToWriteStats"].items()
            for s in stats
        )
        got = sorted(
            (
                s["partition_path"],
                s["file_id"],
                s["path"],
                s["rows_written"],
                s["rows_inserted"],
                s["rows_updated"],
                s["rows_deleted"],
                s["bytes_written"],
                s["file_size"],
                s["log_blocks"],
            )
            for s in detail["write_stats"]
        )
        assert got == expected
        assert (
            detail["timeline"]
            == cli_json("timeline", str(table))[
                [i.instant_time for i in oracle.instants(table)].index(instant.instant_time)
            ]
        )
        replaced = meta.get("partitionToReplaceFileIds") or {}
        assert sorted(
            (r["partition_path"], r["file_id"]) for r in detail["replaced_file_groups"]
        ) == sorted((p, f) for p, ids in replaced.items() for f in ids)


def test_file_groups_json_matches_latest_slices_on_storage(table: Path) -> None:
    rows = cli_json("file-groups", str(table))
    expected = oracle.latest_slices(table)
    assert {(r["partition_path"], r["file_id"]) for r in rows} == set(expected)
    all_groups = oracle.groups(table)
    for r in rows:
        key = (r["partition_path"], r["file_id"])
        instant, base, logs = expected[key]
        assert (r["base_instant_time"], r["base_file"], sorted(r["log_files"])) == (
            instant,
            base,
            logs,
        )
        folder = table / r["partition_path"]
        assert r["base_bytes"] == ((folder / base).stat().st_size if base else 0)
        assert r["log_bytes"] == sum((folder / n).stat().st_size for n in logs)
        group = all_groups[key]
        assert r["slices"] == len(set(group.base_files) | set(group.log_files))
        assert r["pending_compaction"] is None
    for partition in {r["partition_path"] for r in rows}:
        only = cli_json("file-groups", str(table), partition)
        assert only == [r for r in rows if r["partition_path"] == partition]


def test_partitions_json_matches_partition_directories(table: Path) -> None:
    rows = cli_json("partitions", str(table))
    slices = oracle.latest_slices(table)
    groups = oracle.groups(table)
    assert [r["partition_path"] for r in rows] == sorted({p for p, _ in groups})
    for r in rows:
        p = r["partition_path"]
        mine = {k: v for k, v in slices.items() if k[0] == p}
        bases = [table / p / b for _, b, _ in mine.values() if b]
        logs = [table / p / n for _, _, names in mine.values() for n in names]
        files = [
            table / p / n
            for k, g in groups.items()
            if k[0] == p
            for n in [*g.base_files.values(), *(x for v in g.log_files.values() for x in v)]
        ]
        assert r["file_groups"] == len(mine)
        assert r["base_files"] == len(bases)
        assert r["base_bytes"] == sum(f.stat().st_size for f in bases)
        assert r["base_records"] == sum(pq.read_metadata(f).num_rows for f in bases)
        assert r["log_files"] == len(logs)
        assert r["log_bytes"] == sum(f.stat().st_size for f in logs)
        assert r["small_base_files"] == sum(
            1 for f in bases if f.stat().st_size < 100 * 1024 * 1024
        )
        assert r["files_on_storage"] == len(files)
        assert r["bytes_on_storage"] == sum(f.stat().st_size for f in files)


def test_properties_json_is_hoodie_properties(table: Path) -> None:
    assert cli_json("properties", str(table)) == oracle.properties(table)


def test_schema_json_fields_and_history_from_commit_metadata(table: Path) -> None:
    import json

    writes = [
        i
        for i in oracle.instants(table)
        if i.state == "completed" and i.action in oracle.WRITE_ACTIONS
    ]
    schemas = [
        (
            i.instant_time,
            oracle.commit_json(table, i.instant_time, i.action)
            .get("extraMetadata", {})
            .get("schema"),
        )
        for i in writes
    ]
    schemas = [(t, s) for t, s in schemas if s]
    latest = (
        schemas[-1][1] if schemas else oracle.properties(table).get("hoodie.table.create.schema")
    )
    if not latest:
        status, _, err = run_cli("schema", str(table))
        assert status == 2 and "No schema recorded" in err
        return
    got = cli_json("schema", str(table), "--history")
    avro = json.loads(latest)
    assert [f["name"] for f in got["fields"]] == [f["name"] for f in avro["fields"]]
    for field, raw in zip(got["fields"], avro["fields"], strict=True):
        assert field["nullable"] == (isinstance(raw["type"], list) and "null" in raw["type"])
    changed = [t for k, (t, s) in enumerate(schemas) if k == 0 or s != schemas[k - 1][1]]
    # an instant is listed when its fields differ from the one before (not merely its text)
    assert {h["instant_time"] for h in got["history"]} <= set(changed)
    if schemas:
        assert got["history"][0]["instant_time"] == schemas[0][0]
        assert got["history"][0]["added"] == [
            f["name"] for f in json.loads(schemas[0][1])["fields"]
        ]


@pytest.mark.spark
def test_written_tables_timeline_counts_what_the_writes_did(
    cow_table: Path, mor_table: Path
) -> None:
    cow = cli_json("timeline", str(cow_table))
    assert [(r["action"], r["operation"]) for r in cow] == [
        ("commit", "UPSERT"),
        ("commit", "UPSERT"),
        ("commit", "DELETE"),
    ]
    assert [(r["rows_inserted"], r["rows_updated"], r["rows_deleted"]) for r in cow] == [
        (3000, 0, 0),
        (0, 40, 0),
        (0, 0, 5),
    ]
    mor = cli_json("timeline", str(mor_table))
    assert [r["action"] for r in mor] == ["deltacommit"] * 3
    assert sum(r["rows_updated"] for r in mor) > 0
    groups = cli_json("file-groups", str(mor_table))
    assert all(g["delta_commits"] >= 1 for g in groups)
    assert any(g["log_files"] for g in groups)


@pytest.mark.spark
def test_healthy_written_tables_have_no_findings(cow_table: Path, mor_table: Path) -> None:
    for path in (cow_table, mor_table):
        status, out, err = run_cli("health", str(path), "--json")
        assert (status, err) == (0, "")
        import json

        report = json.loads(out)
        assert report["findings"] == [] and report["healthy"] is True
        assert report["facts"]["metadata_table"] == "absent"
        assert report["facts"]["completed_commits"] == 3
        status, text, _ = run_cli("health", str(path))
        assert status == 0 and "healthy: nothing to act on" in text


@pytest.mark.spark
def test_terminal_free_output_is_plain_text(cow_table: Path) -> None:
    status, out, _ = run_cli("timeline", str(cow_table))
    assert status == 0 and "\x1b[" not in out
    for row in cli_json("timeline", str(cow_table)):
        assert row["instant_time"] in out
    assert all(line == line.rstrip() for line in out.splitlines())


def test_corpus_tables_of_later_versions_report_completion_times(
    corpus_table: Callable[[str], Path],
) -> None:
    """Table versions 8 and 9 name each completed instant ``<requested>_<completed>.<action>``
    under ``.hoodie/timeline``: the timeline verb reports exactly those times."""
    for name in ("cow__v8_simplekeygen_nonhivestyle", "mor_avro__v9_txns_simple_meta"):
        table = corpus_table(name)
        completed = {}
        for entry in (table / ".hoodie" / "timeline").iterdir():
            stem, _, _action = entry.name.partition(".")
            if "_" in stem and entry.is_file():
                requested, _, completion = stem.partition("_")
                completed[requested] = completion
        timeline = cli_json("timeline", str(table))
        assert {r["instant_time"] for r in timeline if r["state"] == "completed"} == set(completed)
        for row in timeline:
            if row["state"] != "completed":
                continue
            c = completed[row["instant_time"]]
            assert row["completed_time"] == (
                f"{c[0:4]}-{c[4:6]}-{c[6:8]}T{c[8:10]}:{c[10:12]}:{c[12:14]}.{c[14:17]}Z"
            )
            assert row["duration_seconds"] is not None and row["duration_seconds"] >= 0
        for verb in ("health", "partitions"):
            status, out, err = run_cli(verb, str(table), "--json")
            assert status in (0, 1) and err == "", err
            assert json.loads(out)


def test_bad_arguments_fail_with_one_line(
    corpus_table: Callable[[str], Path], tmp_path: Path
) -> None:
    table = str(corpus_table("cow__v6_simplekeygen_nonhivestyle"))
    cases = [
        (("timeline", str(tmp_path / "nope")), "TableNotFoundError"),
        (("commit", table, "20000101000000000"), "No completed write instant 20000101000000000"),
        (("file-groups", table, "no/such"), "No partition 'no/such'"),
        (("health", table, "--option", "hoodie.not.a.key=1"), "Unknown config 'hoodie.not.a.key'"),
        (("health", table, "--option", "hoodie.parquet.small.file.limit=big"), "small.file.limit"),
        (("partitions", table, "--option", "novalue"), "--option takes KEY=VALUE"),
        (("timeline",), "dbt-hudi timeline: the following arguments are required: table"),
        (("frob", table), "argument VERB: invalid choice: 'frob'"),
        (("rollback", table), "rollback takes an INSTANT or --failed"),
        (("read", table, "--incremental", "1", "2", "3"), "--incremental takes START [END]"),
    ]
    for argv, message in cases:
        status, out, err = run_cli(*argv)
        assert status == 2, argv
        assert out == "" and err.count("\n") == 1 and message in err, (argv, err)
