"""Which slices data skipping drops: only those one filter excludes in every file; an unknown
(no stats, stats of another type, a log file without stats) is a keep."""

from __future__ import annotations

import pyarrow as pa

from engine.metadata.column_stats import ColumnStats
from engine.read.data_skipping import file_may_match, skip_file_slices
from engine.read.filter import ReadFilter
from engine.view.fs_view import FileSlice

SCHEMA = pa.schema([("n", pa.int64()), ("s", pa.string()), ("x", pa.float64())])
SLICE = FileSlice("p", "f1", "001", "base.parquet", (".f1_001.log.1_0-1-1",))
LOG = SLICE.log_files[0]


def _long(file_name: str, column: str, low: int, high: int, nulls: int = 0) -> ColumnStats:
    return ColumnStats(
        file_name, column, ("LongWrapper", low), ("LongWrapper", high), 10, nulls, 1, 1
    )


def _kept(stats: dict[str, dict[str, ColumnStats]], *filters: ReadFilter) -> bool:
    return bool(skip_file_slices([SLICE], filters, stats, SCHEMA, with_logs=True))


def test_a_slice_goes_only_when_every_file_is_excluded() -> None:
    base = {"n": _long("base.parquet", "n", 1, 5)}
    log = {"n": _long(LOG, "n", 7, 9)}
    assert not _kept({"base.parquet": base, LOG: log}, ReadFilter("n", "=", 6))
    assert _kept({"base.parquet": base, LOG: log}, ReadFilter("n", "=", 8))
    # read-optimized reads the base file only
    only_base = skip_file_slices(
        [SLICE], [ReadFilter("n", "=", 8)], {"base.parquet": base}, SCHEMA, with_logs=False
    )
    assert only_base == []


def test_a_log_file_without_stats_keeps_its_slice() -> None:
    base = {"n": _long("base.parquet", "n", 1, 5)}
    assert _kept({"base.parquet": base}, ReadFilter("n", "=", 6))
    assert _kept({"base.parquet": base, LOG: {"s": base["n"]}}, ReadFilter("n", "=", 6))


def test_filters_excluding_different_files_keep_the_slice() -> None:
    """A merged row may take one column from the base file and another from a log (partial
    updates): two filters that each exclude one file prove nothing about it."""

    def text(file_name: str, low: str, high: str) -> ColumnStats:
        return ColumnStats(
            file_name, "s", ("StringWrapper", low), ("StringWrapper", high), 3, 0, 1, 1
        )

    stats = {
        "base.parquet": {
            "n": _long("base.parquet", "n", 1, 5),
            "s": text("base.parquet", "a", "c"),
        },
        LOG: {"n": _long(LOG, "n", 7, 9), "s": text(LOG, "x", "z")},
    }
    assert _kept(stats, ReadFilter("n", "=", 8), ReadFilter("s", "=", "b"))


def test_null_only_columns_match_nothing_and_unknowns_match_anything() -> None:
    nulls = ColumnStats("f", "n", None, None, 10, 10, 1, 1)
    assert not file_may_match(nulls, ReadFilter("n", "!=", 3), pa.int64())
    assert not file_may_match(nulls, ReadFilter("n", "NOT IN", ("3",)), pa.int64())
    no_range = ColumnStats("f", "n", None, None, 10, 2, 1, 1)
    assert file_may_match(no_range, ReadFilter("n", "=", 3), pa.int64())
    assert file_may_match(None, ReadFilter("n", "=", 3), pa.int64())
    foreign = ColumnStats("f", "n", ("StringWrapper", "a"), ("StringWrapper", "b"), 3, 0, 1, 1)
    assert file_may_match(foreign, ReadFilter("n", "=", 3), pa.int64())
    bad_value = _long("f", "n", 1, 5)
    assert file_may_match(bad_value, ReadFilter("n", "=", "not a number"), pa.int64())


def test_equality_ranges_and_floating_point() -> None:
    one = _long("f", "n", 4, 4, nulls=3)
    assert not file_may_match(one, ReadFilter("n", "!=", "4"), pa.int64())
    assert not file_may_match(one, ReadFilter("n", "NOT IN", ("4", "5")), pa.int64())
    assert file_may_match(one, ReadFilter("n", "NOT IN", ("5",)), pa.int64())
    assert not file_may_match(one, ReadFilter("n", "IN", ("1", "5")), pa.int64())
    assert not file_may_match(one, ReadFilter("n", ">", "4"), pa.int64())
    assert file_may_match(one, ReadFilter("n", ">=", "4"), pa.int64())
    # Parquet's float ranges leave NaN out, and NaN != 4 holds
    x = ColumnStats("f", "x", ("DoubleWrapper", 4.0), ("DoubleWrapper", 4.0), 3, 0, 1, 1)
    assert file_may_match(x, ReadFilter("x", "!=", "4"), pa.float64())
    assert not file_may_match(x, ReadFilter("x", "<", "4"), pa.float64())


def test_physical_values_of_unsaid_meaning_are_unknowns() -> None:
    """A decimal range without its scale or a timestamp range without its unit could mean
    anything: the file may match."""
    amount = ColumnStats("f", "a", ("BytesWrapper", b"\x01"), ("BytesWrapper", b"\x02"), 2, 0, 1, 1)
    assert file_may_match(amount, ReadFilter("a", "=", "9"), pa.decimal128(5, 2))
    scaled = ColumnStats(
        "f",
        "a",
        ("BytesWrapper", b"\x01"),
        ("BytesWrapper", b"\x02"),
        2,
        0,
        1,
        1,
        value_type=(10, "5,2"),
    )
    assert not file_may_match(scaled, ReadFilter("a", "=", "9"), pa.decimal128(5, 2))
    assert file_may_match(scaled, ReadFilter("a", "=", "0.02"), pa.decimal128(5, 2))
    moment = pa.timestamp("us", "UTC")
    when = ColumnStats("f", "t", ("LongWrapper", 0), ("LongWrapper", 1000), 2, 0, 1, 1)
    assert file_may_match(when, ReadFilter("t", ">", "2000-01-01T00:00:00Z"), moment)
    micros = ColumnStats(
        "f", "t", ("LongWrapper", 0), ("LongWrapper", 1000), 2, 0, 1, 1, value_type=(16, None)
    )
    assert not file_may_match(micros, ReadFilter("t", ">", "2000-01-01T00:00:00Z"), moment)
