"""Change data capture on copy-on-write tables: the ``.cdc`` log files (decoded independently,
with fastavro over the block payload), ``cdcStats``, the table properties, the CDC query through
every reader, and what cleaning and rollback do with ``.cdc`` files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import read_hudi, write_hudi
from engine.errors import ConfigError, QueryError
from engine.read.arrow import read_table
from tests.hudi_rs import hudi_rs_rows
from tests.integration.metafolder import instant_metadata, table_properties, write_stats
from tests.keyed_table import SCHEMA, write_options
from tests.unit.test_append import avro_records, parse_blocks

# the subject is the change records each write makes, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.driver_writes]

CDC_QUERY = {
    "hoodie.datasource.query.type": "incremental",
    "hoodie.datasource.query.incremental.format": "cdc",
}
DATA = ("id", "dt", "ts", "v")


@pytest.fixture(scope="module")
def hudi_format(spark: Any) -> Any:
    import engine.spark

    engine.spark.register(spark)
    return spark


def opts(
    mode: str = "DATA_BEFORE_AFTER", operation: str = "upsert", **extra: str
) -> dict[str, Any]:
    return write_options(
        "orders",
        {
            "hoodie.datasource.write.operation": operation,
            "hoodie.table.cdc.enabled": "true",
            "hoodie.table.cdc.supplemental.logging.mode": mode,
        },
        extra,
    )


def cdc_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob(".*.cdc"))


def decode_cdc_file(data: bytes) -> list[tuple[int, dict[int, str], list[dict[str, Any]]]]:
    """Blocks of a log file as (type, header, records): framing read by hand, records by
    fastavro with the block's SCHEMA header (independent of the engine's decoder)."""
    blocks = parse_blocks(data)
    assert all(b["version"] == 1 and b["reverse_ok"] and b["footer_count"] == 0 for b in blocks)
    return [(b["type"], b["header"], avro_records(b)) for b in blocks]


def changes(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """CDC rows as (op, ts_ms, before data, after data), images projected on data columns."""

    def data(image: str | None) -> tuple[Any, ...] | None:
        return None if image is None else tuple(json.loads(image)[c] for c in DATA)

    return sorted((r["op"], r["ts_ms"], data(r["before"]), data(r["after"])) for r in rows)


@pytest.mark.parametrize("mode", ["OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER"])
def test_cdc_files_layout_stats_and_query_per_logging_mode(spark, tmp_path, mode) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    t1 = write_hudi(
        spark.createDataFrame([("k1", "p", 1, "a"), ("k2", "p", 1, "b")], SCHEMA),
        str(path),
        opts(mode),
    ).instant_time
    props = table_properties(path)
    assert props["hoodie.table.cdc.enabled"] == "true"
    assert props["hoodie.table.cdc.supplemental.logging.mode"] == mode
    # inserts into a new file group: the base file is the change, no .cdc file
    assert cdc_files(path) == []
    assert [s["cdcStats"] for s in write_stats(instant_metadata(path, t1, "commit"))] == [None]

    t2 = write_hudi(
        spark.createDataFrame([("k1", "p", 2, "a2"), ("k3", "p", 2, "c")], SCHEMA),
        str(path),
        opts(mode),
    ).instant_time
    t3 = write_hudi(
        spark.createDataFrame([("k2", "p", 3, "b")], SCHEMA), str(path), opts(mode, "delete")
    ).instant_time
    files = cdc_files(path)
    assert len(files) == 2
    for f, t in zip(
        files and sorted(files, key=lambda f: f.name.split("_")[1]), (t2, t3), strict=True
    ):
        (stat,) = write_stats(instant_metadata(path, t, "commit"))
        file_id = stat["fileId"]
        assert f.name.startswith(f".{file_id}_{t}.log.1_") and f.name.endswith(".cdc")
        assert stat["cdcStats"] == {f"p/{f.name}": f.stat().st_size}
        ((block_type, header, records),) = decode_cdc_file(f.read_bytes())
        assert block_type == 6  # CDC_DATA_BLOCK
        assert header[0] == t
        schema = json.loads(header[2])
        names = [fld["name"] for fld in schema["fields"]]
        if mode == "OP_KEY_ONLY":
            assert schema["name"] == "Record" and names == ["op", "record_key"]
            assert all(fld["type"] == ["string", "null"] for fld in schema["fields"])
        else:
            assert schema["name"] == "CDC"
            expected = (
                ["op", "ts_ms", "before", "after"]
                if mode == "DATA_BEFORE_AFTER"
                else ["op", "record_key", "before"]
            )
            assert names == expected
            image = schema["fields"][2]["type"][1]
            assert [fld["name"] for fld in image["fields"]] == list(DATA)
        ops = sorted(
            (r["op"], r.get("record_key") or (r.get("before") or r.get("after"))["id"])
            for r in records
        )
        assert ops == ([("i", "k3"), ("u", "k1")] if t == t2 else [("d", "k2")])

    expected = [
        ("d", t3, ("k2", "p", 1, "b"), None),
        ("i", t1, None, ("k1", "p", 1, "a")),
        ("i", t1, None, ("k2", "p", 1, "b")),
        ("i", t2, None, ("k3", "p", 2, "c")),
        ("u", t2, ("k1", "p", 1, "a"), ("k1", "p", 2, "a2")),
    ]
    everything = {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": "000"}
    assert changes(read_table(str(path), everything).to_pylist()) == expected
    assert (
        changes([r.asDict() for r in read_hudi(spark, str(path), everything).collect()]) == expected
    )
    from_t1 = {
        **CDC_QUERY,
        "hoodie.datasource.read.begin.instanttime": t1,
        "hoodie.datasource.read.end.instanttime": t2,
    }
    assert changes(read_table(str(path), from_t1).to_pylist()) == [
        e for e in expected if e[1] == t2
    ]
    # other engines read the copy-on-write table as before
    assert sorted((r["id"], r["v"]) for r in hudi_rs_rows(str(path))) == [("k1", "a2"), ("k3", "c")]


def test_cdc_query_through_the_data_source_and_insert_overwrite(
    spark, hudi_format, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    t1 = write_hudi(
        spark.createDataFrame([("k1", "p", 1, "a"), ("k2", "q", 1, "b")], SCHEMA), str(path), opts()
    ).instant_time
    t2 = write_hudi(
        spark.createDataFrame([("k9", "p", 2, "z")], SCHEMA),
        str(path),
        opts(operation="insert_overwrite"),
    ).instant_time
    query = {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": t1}
    df = hudi_format.read.format("hudi").options(**query).load(str(path))
    assert df.columns == ["op", "ts_ms", "before", "after"]
    assert changes([r.asDict() for r in df.collect()]) == [
        ("d", t2, ("k1", "p", 1, "a"), None),
        ("i", t2, None, ("k9", "p", 2, "z")),
    ]


def test_cdc_mode_names_of_0_13_are_accepted_and_persisted_canonically(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    write_hudi(
        spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA), str(path), opts("cdc_data_before")
    )
    assert table_properties(path)["hoodie.table.cdc.supplemental.logging.mode"] == "DATA_BEFORE"
    with pytest.raises(ConfigError, match=r"supplemental\.logging\.mode"):
        write_hudi(
            spark.createDataFrame([("k1", "p", 2, "a")], SCHEMA), str(path), opts("OP_KEY_ONLY")
        )


def test_cdc_is_refused_where_it_would_be_short_and_query_fails_without_cdc(
    spark, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA)
    path = tmp_path / "plain"
    plain = write_options("orders", {"hoodie.datasource.write.operation": "upsert"})
    t1 = write_hudi(df, str(path), plain).instant_time
    before = sorted(str(p) for p in path.rglob("*"))
    with pytest.raises(ConfigError, match=r"created without CDC"):
        write_hudi(spark.createDataFrame([("k2", "p", 1, "b")], SCHEMA), str(path), opts())
    assert sorted(str(p) for p in path.rglob("*")) == before
    with pytest.raises(QueryError, match=r"hoodie\.table\.cdc\.enabled=false"):
        read_table(str(path), {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": "000"})
    # the latest_state incremental query is unchanged
    rows = read_table(
        str(path),
        {
            **CDC_QUERY,
            "hoodie.datasource.query.incremental.format": "latest_state",
            "hoodie.datasource.read.begin.instanttime": "000",
        },
    ).to_pylist()
    assert [(r["id"], r["_hoodie_commit_time"]) for r in rows] == [("k1", t1)]


def test_clean_and_rollback_remove_cdc_files(spark, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import engine.write.transaction

    path = tmp_path / "t"
    options = opts(
        **{
            "hoodie.cleaner.commits.retained": "1",
            "hoodie.keep.min.commits": "2",
            "hoodie.keep.max.commits": "3",
        }
    )
    write_hudi(
        spark.createDataFrame([("k1", "p", 1, "a"), ("k2", "p", 1, "b")], SCHEMA),
        str(path),
        options,
    )
    write_hudi(spark.createDataFrame([("k1", "p", 2, "a2")], SCHEMA), str(path), options)
    first_cdc = cdc_files(path)
    assert len(first_cdc) == 1

    def die(*args: object, **kwargs: object) -> None:
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(engine.write.transaction, "commit_write", die)
    with pytest.raises(RuntimeError):
        write_hudi(spark.createDataFrame([("k2", "p", 3, "b3")], SCHEMA), str(path), options)
    monkeypatch.undo()
    assert cdc_files(path) == first_cdc  # the failed write's .cdc file was rolled back

    for ts in (4, 5):
        write_hudi(spark.createDataFrame([("k1", "p", ts, f"a{ts}")], SCHEMA), str(path), options)
    remaining = cdc_files(path)
    assert first_cdc[0] not in remaining  # cleaned with its file slice
    names = {p.name for p in (path / "p").iterdir()}
    for f in remaining:
        file_id, instant = f.name[1:].split(".log.")[0].rsplit("_", 1)
        assert any(n.startswith(file_id) and n.endswith(f"_{instant}.parquet") for n in names)
    assert sorted((r["id"], r["v"]) for r in hudi_rs_rows(str(path))) == [("k1", "a5"), ("k2", "b")]
    # archived commits cannot be read back: a range reaching before them fails, naming the start
    assert any((path / ".hoodie" / "archived").iterdir())
    with pytest.raises(QueryError, match=r"were archived"):
        read_table(str(path), {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": "000"})
    active = sorted(p.name.split(".")[0] for p in (path / ".hoodie").glob("*.commit"))
    rows = read_table(
        str(path), {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": active[0]}
    )
    assert changes(rows.to_pylist()) == [
        ("u", active[-1], ("k1", "p", 4, "a4"), ("k1", "p", 5, "a5"))
    ]


def _fail_at_the_commit_point(*args: object, **kwargs: object) -> None:
    raise RuntimeError("the writer failed at its commit point")


def test_cdc_on_table_version_9_stats_rollback_clean_and_archival(
    spark, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Version 9: the Avro write stat lists the ``.cdc`` file (``cdcStats``, a map of path to
    size, read back with fastavro); rollback and cleaning remove ``.cdc`` files; commits archived
    into the LSM history cannot be read back, and ranges are completion times."""
    import fastavro

    import engine.write.transaction
    from engine.fs.storage import Storage
    from engine.timeline.timeline import Timeline

    path = tmp_path / "t"
    options = opts(
        **{
            "hoodie.write.table.version": "9",
            "hoodie.cleaner.commits.retained": "1",
            "hoodie.keep.min.commits": "2",
            "hoodie.keep.max.commits": "3",
        }
    )
    rows = [("k1", "p", 1, "a"), ("k2", "p", 1, "b")]
    write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), options)
    t2 = write_hudi(spark.createDataFrame([("k1", "p", 2, "a2")], SCHEMA), str(path), options)
    first_cdc = cdc_files(path)
    assert len(first_cdc) == 1 and f"_{t2.instant_time}.log.1_" in first_cdc[0].name
    (commit_file,) = (path / ".hoodie" / "timeline").glob(f"{t2.instant_time}_*.commit")
    with open(commit_file, "rb") as f:
        (record,) = list(fastavro.reader(f))
    (stat,) = record["partitionToWriteStats"]["p"]
    assert stat["cdcStats"] == {f"p/{first_cdc[0].name}": first_cdc[0].stat().st_size}

    failing = spark.createDataFrame([("k2", "p", 3, "b3")], SCHEMA)
    with monkeypatch.context() as m, pytest.raises(RuntimeError, match="commit point"):
        m.setattr(engine.write.transaction, "commit_write", _fail_at_the_commit_point)
        write_hudi(failing, str(path), options)
    assert cdc_files(path) == first_cdc  # the failed write's .cdc file was rolled back

    for ts in (4, 5, 6):
        write_hudi(spark.createDataFrame([("k1", "p", ts, f"a{ts}")], SCHEMA), str(path), options)
    assert first_cdc[0] not in cdc_files(path)  # cleaned with its file slice
    assert sorted((r["id"], r["v"]) for r in hudi_rs_rows(str(path))) == [("k1", "a6"), ("k2", "b")]
    timeline = Timeline.load(Storage(str(path)))
    assert any((path / ".hoodie" / "timeline" / "history").iterdir())
    with pytest.raises(QueryError, match=r"was archived"):
        read_table(str(path), {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": "000"})
    active = timeline.commits_timeline()
    begin = active[-2].completion_time
    assert begin is not None
    got = read_table(str(path), {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": begin})
    assert changes(got.to_pylist()) == [
        ("u", active[-1].instant_time, ("k1", "p", 5, "a5"), ("k1", "p", 6, "a6"))
    ]
    # a bound between the last write's instant and completion times: completion time decides
    between = read_table(
        str(path),
        {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": active[-1].instant_time},
    )
    assert changes(between.to_pylist()) == changes(got.to_pylist())


def test_cdc_query_through_the_command(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    path = tmp_path / "t"
    write_hudi(spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA), str(path), opts())
    t2 = write_hudi(
        spark.createDataFrame([("k1", "p", 2, "b")], SCHEMA), str(path), opts()
    ).instant_time
    out = subprocess.run(
        [sys.executable, "-m", "engine.cli", "read", str(path), "--incremental", "000", "--cdc"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r for r in changes(rows) if r[0] == "u"] == [
        ("u", t2, ("k1", "p", 1, "a"), ("k1", "p", 2, "b"))
    ]


def test_cdc_query_from_an_instant_a_restore_removed_is_refused(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from engine import spark_table

    path = tmp_path / "t"
    t1 = write_hudi(
        spark.createDataFrame([("k1", "p", 1, "a")], SCHEMA), str(path), opts()
    ).instant_time
    t2 = write_hudi(
        spark.createDataFrame([("k1", "p", 2, "b")], SCHEMA), str(path), opts()
    ).instant_time
    spark_table(str(path), spark).restore(t1)
    # a consumer that read up to t2 holds "b"; no change after t2 says it is gone
    with pytest.raises(QueryError, match=f"incremental query from instant {t2}.*removed.*{t2}"):
        read_table(str(path), {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": t2})
    assert (
        read_table(
            str(path), {**CDC_QUERY, "hoodie.datasource.read.begin.instanttime": t1}
        ).num_rows
        == 0
    )
    assert [(r["id"], r["v"]) for r in hudi_rs_rows(str(path))] == [("k1", "a")]
