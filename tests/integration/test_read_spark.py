"""The Spark readers (``read_hudi`` and ``spark.read.format("hudi")``) against the Arrow reader.

Both must return the same rows on every corpus table for every golden query, and on tables the
engine's writer produced (also judged by hudi-rs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import config, read_hudi
from engine.cli import canonical_json_lines
from engine.read.arrow import apply_filters, read_table
from engine.read.filter import ReadFilter
from tests.hudi_rs import hudi_rs_rows
from tests.interop.test_corpus_read import _golden_cases, _shared, golden_options

# the subject is what the reader returns, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.interop, pytest.mark.driver_writes]


def spark_rows(df: Any) -> list[str]:
    return canonical_json_lines([r.asDict(recursive=True) for r in df.collect()])


def arrow_rows(path: str, options: dict[str, str] | None = None) -> list[str]:
    return canonical_json_lines(read_table(path, options).to_pylist())


@pytest.fixture(scope="module")
def hudi_format(spark: Any) -> Any:
    import engine.spark

    engine.spark.register(spark)
    return spark


def _spark_cases() -> list[tuple[str, str]]:
    """Every table's snapshot, plus read-optimized and the latest incremental range of the
    tables with log files (each query is a Spark job: the full matrix runs on the Arrow path)."""
    cases = _golden_cases(_shared())
    chosen = {(t, q) for t, q in cases if q == "snapshot"}
    for t in {t for t, _ in cases if t.startswith(("trips", "mor_parquet__v6_nonpartitioned"))}:
        queries = sorted(q for tt, q in cases if tt == t)
        chosen.add((t, "read_optimized"))
        chosen.add((t, [q for q in queries if q.startswith("incr_")][-1]))
        chosen.add((t, next(q for q in queries if q.startswith("as_of_"))))
    return sorted(chosen)


@pytest.mark.parametrize(("table", "query"), _spark_cases())
def test_read_hudi_corpus_same_rows_as_arrow_reader(
    spark: Any, corpus_table: Callable[[str], Path], table: str, query: str
) -> None:
    path = str(corpus_table(table))
    options = golden_options(query)
    assert spark_rows(read_hudi(spark, path, options)) == arrow_rows(path, options)


@pytest.mark.parametrize(
    "table",
    [
        "cow__v6_complexkeygen_hivestyle",
        "cow__v6_empty",
        "mor_parquet__v6_nonpartitioned_rollback",
        "trips_mor_avro__v6_trips_8i3d",
    ],
)
def test_format_hudi_corpus_snapshot_same_rows_as_arrow_reader(
    hudi_format: Any, corpus_table: Callable[[str], Path], table: str
) -> None:
    path = str(corpus_table(table))
    df = hudi_format.read.format("hudi").load(path)
    assert spark_rows(df) == arrow_rows(path)


def test_format_hudi_partition_filter_prunes_slices(
    hudi_format: Any, corpus_table: Callable[[str], Path]
) -> None:
    path = str(corpus_table("cow__v6_simplekeygen_nonhivestyle"))
    everything = hudi_format.read.format("hudi").load(path)
    pruned = everything.filter("byteField = 10")
    assert everything.rdd.getNumPartitions() == 3  # one input partition per file slice
    assert pruned.rdd.getNumPartitions() == 1
    assert sorted(r["id"] for r in pruned.collect()) == [1, 3]


def test_format_hudi_filter_skips_slices_by_column_stats(
    hudi_format: Any, corpus_table: Callable[[str], Path]
) -> None:
    """A filter Spark pushes on a non-partition column reads only the slices the column stats
    Hudi 1.1 wrote allow; the rows are those of the Arrow read, filtered."""
    path = str(corpus_table("cow__v9_txns_simple_meta"))
    everything = hudi_format.read.format("hudi").load(path)
    found = everything.filter("txn_id = 'TXN-015'")
    assert everything.rdd.getNumPartitions() == 5
    assert found.rdd.getNumPartitions() == 1
    expected = apply_filters(read_table(path), [ReadFilter("txn_id", "=", "TXN-015")])
    assert spark_rows(found) == canonical_json_lines(expected.to_pylist())
    off = hudi_format.read.format("hudi").option("hoodie.enable.data.skipping", "false")
    assert off.load(path).filter("txn_id = 'TXN-015'").rdd.getNumPartitions() == 5


def test_format_hudi_incremental_options_same_as_read_hudi(
    hudi_format: Any, corpus_table: Callable[[str], Path]
) -> None:
    path = str(corpus_table("trips_mor_avro__v6_trips_8i1u"))
    options = {
        config.QUERY_TYPE.key: "incremental",
        config.READ_BEGIN_INSTANTTIME.key: "20250331030642808",
    }
    via_format = hudi_format.read.format("hudi").options(**options).load(path)
    rows = spark_rows(via_format)
    assert rows == spark_rows(read_hudi(hudi_format, path, options))
    assert len(rows) == 1 and '"rider": "rider-D"' in rows[0]


def test_read_hudi_missing_table_raises_naming_path(spark: Any, tmp_path: Path) -> None:
    from engine.errors import TableNotFoundError

    with pytest.raises(TableNotFoundError, match="nope"):
        read_hudi(spark, str(tmp_path / "nope"))


def test_read_hudi_incremental_without_begin_raises_naming_key(
    spark: Any, corpus_table: Callable[[str], Path]
) -> None:
    from engine.errors import QueryError

    path = str(corpus_table("cow__v6_nonpartitioned"))
    with pytest.raises(QueryError, match=config.READ_BEGIN_INSTANTTIME.key):
        read_hudi(spark, path, {config.QUERY_TYPE.key: "incremental"})


def test_read_hudi_written_by_engine_matches_arrow_and_hudi_rs(spark: Any, tmp_path: Path) -> None:
    from engine import write_hudi

    path = str(tmp_path / "written")
    options = {
        config.TABLE_NAME.key: "written",
        config.RECORDKEY_FIELD.key: "id",
        config.PARTITIONPATH_FIELD.key: "part",
        config.WRITE_PRECOMBINE_FIELD.key: "ts",
    }
    first = spark.createDataFrame(
        [(i, f"v{i}", 1, f"p{i % 2}") for i in range(6)], "id int, v string, ts int, part string"
    )
    c1 = write_hudi(first, path, options)
    update = spark.createDataFrame([(1, "u1", 2, "p1"), (7, "v7", 2, "p1")], first.schema)
    write_hudi(update, path, options)

    ours = spark_rows(read_hudi(spark, path))
    assert ours == arrow_rows(path)
    assert ours == canonical_json_lines(hudi_rs_rows(path))
    assert len(ours) == 7 and any('"v": "u1"' in r for r in ours)

    as_of = {config.AS_OF_INSTANT: c1.instant_time}
    first_rows = spark_rows(read_hudi(spark, path, as_of))
    assert first_rows == arrow_rows(path, as_of) and len(first_rows) == 6
    incremental = {
        config.QUERY_TYPE.key: "incremental",
        config.READ_BEGIN_INSTANTTIME.key: c1.instant_time,
    }
    changes = spark_rows(read_hudi(spark, path, incremental))
    assert changes == arrow_rows(path, incremental)
    assert len(changes) == 2


def test_read_hudi_glob_characters_in_partition_path_read_literally(
    spark: Any, corpus_copy: Callable[[str], Path]
) -> None:
    root = corpus_copy("cow__v6_simplekeygen_nonhivestyle")
    (root / "10").rename(root / "1[0]{a,b}*")
    path = str(root)
    ours = spark_rows(read_hudi(spark, path))
    assert ours == arrow_rows(path)
    assert len(ours) == 4
