"""The driver-side write (engine/spark/local_runner.py): on the local test master a small one-job
write runs in the driver, with the same rows as the write in Spark tasks (hudi-rs against an
oracle), the same refusals before anything is written, and Spark's path when it is turned off,
when the batch is over the size bound, or on a runner other than a local classic session's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from engine import config, write_hudi
from engine.config import parse_options
from engine.errors import NullOrderingValueError, RecordKeyError
from engine.fs.filenames import parse_base_file_name, parse_log_file_name
from engine.spark.local_runner import LONG_MAX, LocalRunner, estimated_bytes, runner_for
from engine.spark.runner import SparkRunner
from engine.table import WriteResult
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

pytestmark = [pytest.mark.spark, pytest.mark.interop]

# where the write runs -> the options that put it there
PATHS = {
    "driver": {
        config.WRITE_LOCAL_ENABLED.key: "true",
        config.WRITE_LOCAL_MAX_BYTES.key: str(LONG_MAX),
    },
    "tasks": {config.WRITE_LOCAL_ENABLED.key: "false"},
}


def _rows(path: Path) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["dt"], r["ts"], r["v"]) for r in hudi_rs_rows(path))


def _stages(result: WriteResult) -> set[int]:
    """The stage ids in the write tokens of the files a write wrote (the driver-side write
    names stage 0; a Spark stage of the shared session is never 0 by the time a test writes)."""
    stages = set()
    for stat in result.write_stats:
        name = Path(str(stat.path)).name
        parsed = parse_log_file_name(name) if ".log." in name else parse_base_file_name(name)
        stages.add(int(parsed.write_token.split("-")[1]))
    return stages


def _written(spark: SparkSession, path: Path, options: dict[str, Any]) -> dict[str, Any]:
    rows = [(f"k{i}", f"p{i % 3}", 1, "a") for i in range(30)]
    write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), options)
    return {(f"k{i}", f"p{i % 3}"): (1, "a") for i in range(30)}


@pytest.mark.parametrize("where", sorted(PATHS))
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("index", ["SIMPLE", "GLOBAL_SIMPLE", "BUCKET"])
def test_upsert_rows_are_those_of_the_write_in_tasks(
    spark: SparkSession, tmp_path: Path, where: str, table_type: str, index: str
) -> None:
    path = tmp_path / "t"
    opts = write_options(
        "local",
        {"hoodie.datasource.write.table.type": table_type, "hoodie.index.type": index},
        PATHS[where],
    )
    oracle = _written(spark, path, opts)
    batch = [(f"k{i}", f"p{i % 3}", 2, "b") for i in range(0, 30, 2)]  # updates in every partition
    batch += [(f"n{i}", "p3", 3, "c") for i in range(4)]  # a new partition
    batch += [("k3", "p0", 5, "x"), ("k3", "p0", 4, "y")]  # combined: the larger ts wins
    result = write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), opts)
    oracle.update({(k, dt): (ts, v) for k, dt, ts, v in batch if (k, ts) != ("k3", 4)})
    assert _rows(path) == sorted((k, dt, ts, v) for (k, dt), (ts, v) in oracle.items())
    stages = _stages(result)
    assert (stages == {0}) if where == "driver" else (0 not in stages and stages), stages


@pytest.mark.parametrize("where", sorted(PATHS))
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_bulk_insert_is_profiled_and_written_where_asked(
    spark: SparkSession, tmp_path: Path, where: str, table_type: str
) -> None:
    """A new table's first write (dbt's first run): written by the driver (stage 0 in every
    write token) or by Spark's tasks, the same rows; a bad key refused before any file."""
    path = tmp_path / "t"
    table = {"hoodie.datasource.write.table.type": table_type}
    opts = write_options("local", table, PATHS[where])
    bulk = {**opts, "hoodie.datasource.write.operation": "bulk_insert"}
    rows = [(f"k{i}", f"p{i % 4}", i, "a") for i in range(40)]
    result = write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), bulk)
    assert _rows(path) == sorted(rows)
    # a file group per partition the writer saw: the driver sees all, a task its share
    groups = len(result.write_stats)
    assert groups == 4 if where == "driver" else groups >= 4
    stages = _stages(result)
    assert (stages == {0}) if where == "driver" else (0 not in stages and stages), stages
    bad = [("k0", "p0", 1, "a"), ("", "p1", 2, "b")]
    with pytest.raises(RecordKeyError, match="recordKey value for field 'id'"):
        write_hudi(spark.createDataFrame(bad, SCHEMA), str(tmp_path / "bad"), bulk)
    assert not list((tmp_path / "bad").rglob("*.parquet"))


@pytest.mark.parametrize("where", sorted(PATHS))
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("case", ["insert_overwrite", "cdc_upsert"])
def test_a_two_job_write_is_written_where_asked(
    spark: SparkSession, tmp_path: Path, where: str, table_type: str, case: str
) -> None:
    """The two-job write's write job (routing ByFileGroup): an insert_overwrite (no lookup) and
    an upsert into a CDC-logging table (its records joined with the keys found) give the same
    rows in the driver (stage 0 in every write token) as in Spark's tasks."""
    path = tmp_path / "t"
    table = {"hoodie.datasource.write.table.type": table_type}
    if case == "cdc_upsert":
        table["hoodie.table.cdc.enabled"] = "true"
    opts = write_options("local", table, PATHS[where])
    oracle = _written(spark, path, opts)
    batch = [(f"k{i}", f"p{i % 3}", 2, "b") for i in range(0, 30, 3)]  # every row of p0
    batch += [(f"n{i}", "p0", 3, "c") for i in range(3)] + [("n9", "p3", 3, "c")]
    if case == "insert_overwrite":
        operation = {"hoodie.datasource.write.operation": "insert_overwrite"}
        oracle = {k: v for k, v in oracle.items() if k[1] != "p0"}
    else:
        operation = {}
    result = write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), {**opts, **operation})
    oracle.update({(k, dt): (ts, v) for k, dt, ts, v in batch})
    assert _rows(path) == sorted((k, dt, ts, v) for (k, dt), (ts, v) in oracle.items())
    stages = _stages(result)
    assert (stages == {0}) if where == "driver" else (0 not in stages and stages), stages


@pytest.mark.parametrize("where", sorted(PATHS))
def test_deletes_reach_stored_keys_only(spark: SparkSession, tmp_path: Path, where: str) -> None:
    path = tmp_path / "t"
    opts = write_options("local", PATHS[where])
    oracle = _written(spark, path, opts)
    batch = [("k0", "p0", 9, "z"), ("k4", "p1", 9, "z"), ("nope", "p2", 9, "z")]
    delete = {**opts, "hoodie.datasource.write.operation": "delete"}
    write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), delete)
    for key in (("k0", "p0"), ("k4", "p1")):
        del oracle[key]
    assert _rows(path) == sorted((k, dt, ts, v) for (k, dt), (ts, v) in oracle.items())


@pytest.mark.parametrize("where", sorted(PATHS))
def test_a_key_moving_partition_on_a_global_index_moves(
    spark: SparkSession, tmp_path: Path, where: str
) -> None:
    """The one-job write cannot move a key; it is rolled back and the two-job write moves it."""
    path = tmp_path / "t"
    opts = write_options("local", {"hoodie.index.type": "GLOBAL_SIMPLE"}, PATHS[where])
    oracle = _written(spark, path, opts)
    write_hudi(spark.createDataFrame([("k0", "p2", 7, "moved")], SCHEMA), str(path), opts)
    del oracle[("k0", "p0")]
    oracle[("k0", "p2")] = (7, "moved")
    assert _rows(path) == sorted((k, dt, ts, v) for (k, dt), (ts, v) in oracle.items())


@pytest.mark.parametrize("where", sorted(PATHS))
@pytest.mark.parametrize(
    ("row", "error", "message"),
    [
        ((None, "p0", 2, "b"), RecordKeyError, "recordKey value for field 'id'"),
        (("k1", "p1", None, "b"), NullOrderingValueError, "record key 'k1' (partition 'p1')"),
    ],
)
def test_a_bad_record_is_refused_before_anything_is_written(
    spark: SparkSession,
    tmp_path: Path,
    where: str,
    row: tuple[Any, ...],
    error: type[Exception],
    message: str,
) -> None:
    path = tmp_path / "t"
    opts = write_options("local", PATHS[where])
    oracle = _written(spark, path, opts)
    before = sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file())
    batch = [("k0", "p0", 2, "b"), row]
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), opts)
    after = sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file())
    data = [p for p in after if p not in before and ".hoodie" not in p.parts]
    assert data == []  # no data file, no partition metafile
    assert _rows(path) == sorted((k, dt, ts, v) for (k, dt), (ts, v) in oracle.items())


def test_a_batch_over_the_bound_is_written_in_tasks(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = write_options("local", {**PATHS["driver"], config.WRITE_LOCAL_MAX_BYTES.key: "0"})
    _written(spark, path, opts)
    batch = spark.createDataFrame([("k1", "p1", 2, "b")], SCHEMA)
    result = write_hudi(batch, str(path), opts)
    stages = _stages(result)
    assert stages and 0 not in stages


def test_the_runner_is_chosen_by_the_session_and_each_write_options(spark: SparkSession) -> None:
    runner = runner_for(spark)
    assert isinstance(runner, LocalRunner)
    assert runner.max_bytes == config.WRITE_LOCAL_MAX_BYTES.default
    off = runner.for_write(parse_options({config.WRITE_LOCAL_ENABLED.key: "false"}))
    assert type(off) is SparkRunner  # the distributed path, unchanged
    on = {config.WRITE_LOCAL_ENABLED.key: "true", config.WRITE_LOCAL_MAX_BYTES.key: "1000"}
    bound = runner.for_write(parse_options(on))
    assert isinstance(bound, LocalRunner) and bound.max_bytes == 1000


def test_the_size_estimate_is_spark_s_own(spark: SparkSession, tmp_path: Path) -> None:
    """A scan of files is sized by the files; rows made in Python are not sized at all."""
    out = tmp_path / "batch"
    out.mkdir()
    pq.write_table(pa.table({"v": ["x" * 100] * 20_000}), out / "part.parquet")
    size = estimated_bytes(spark.read.parquet(str(out)))
    assert size is not None and 0 < size < 100 * 20_000  # compressed on disk
    unknown = estimated_bytes(spark.createDataFrame([("k1", "p1", 2, "b")], SCHEMA))
    assert unknown is not None and unknown >= LONG_MAX


@pytest.mark.parametrize("value", ["-1", "lots"])
def test_a_malformed_bound_is_refused_naming_the_key(value: str) -> None:
    with pytest.raises(config.ConfigError, match=config.WRITE_LOCAL_MAX_BYTES.key):
        parse_options({config.WRITE_LOCAL_MAX_BYTES.key: value})
