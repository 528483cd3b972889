"""Data skipping never drops a matching row: on the corpus's v9 ``*_meta`` tables (column stats
Apache Hudi 1.1 wrote), random filters over strings, longs, booleans, dates, decimals,
timestamps and a column with nulls, at the latest instant or as of an earlier one (merge-on-read
slices with log files), read with skipping give exactly the rows of the read without skipping,
filtered afterwards (the oracle), and never read more files.

``make test`` runs 40 examples, ``make test-long`` (``HUDI_TEST_LONG=1``) 400.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cli import canonical_json_lines
from engine.fs.storage import Storage
from engine.read.arrow import apply_filters, read_table
from engine.read.filter import FILTER_OPS, ReadFilter
from engine.read.plan import parse_read_query, plan_query

# the subject is what data skipping reads, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.interop, pytest.mark.driver_writes]

LONG = bool(os.environ.get("HUDI_TEST_LONG"))
EXAMPLES = 400 if LONG else 40
NO_SKIPPING = {"hoodie.enable.data.skipping": "false"}
# instants to read as of: merge-on-read slices with log files, and copy-on-write history
AS_OF = {
    "cow__v9_txns_simple_meta": (None, "20260307162440672", "20260307162447985"),
    "mor_avro__v9_txns_simple_meta": (None, "20260307162604102", "20260307162611195"),
}
COLUMNS = (
    "txn_id",
    "account_id",
    "txn_ts",
    "txn_datetime",
    "txn_date",
    "amount",
    "currency",
    "merchant_name",
    "is_international",
    "fee_amount",
    "region",
    "_hoodie_commit_time",
)


def _text(value: Any) -> str:
    """A filter value as a user writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return str(value)


def _near(value: Any) -> list[Any]:
    """Values just around ``value``: where range checks go wrong."""
    if isinstance(value, bool):
        return [value]
    if isinstance(value, int):
        return [value - 1, value, value + 1]
    if isinstance(value, decimal.Decimal):
        step = decimal.Decimal(1).scaleb(value.as_tuple().exponent)  # type: ignore[arg-type]
        return [value - step, value, value + step]
    if isinstance(value, dt.datetime):
        return [value - dt.timedelta(seconds=1), value, value + dt.timedelta(microseconds=1)]
    if isinstance(value, dt.date):
        return [value - dt.timedelta(days=1), value, value + dt.timedelta(days=1)]
    return [value[:-1], value, value + "~"] if value else [value]


def _filter(column: str, op: str, values: list[Any]) -> ReadFilter:
    if op in ("IN", "NOT IN"):
        return ReadFilter(column, op, tuple(_text(v) for v in values))
    return ReadFilter(column, op, _text(values[0]))


@cache
def _full_read(base: str, as_of: str | None) -> pa.Table:
    options = {"as.of.instant": as_of} if as_of else {}
    return read_table(base, {**options, **NO_SKIPPING})


@cache
def _values(base: str, column: str) -> tuple[Any, ...]:
    seen = {v for a in (None, *sum(AS_OF.values(), ())) for v in _observed(base, a, column)}
    near = {n for v in seen for n in _near(v)}
    return tuple(sorted(near, key=repr))


def _observed(base: str, as_of: str | None, column: str) -> list[Any]:
    if as_of is not None and as_of not in AS_OF[Path(base).name]:
        return []
    return [v for v in _full_read(base, as_of)[column].to_pylist() if v is not None]


@st.composite
def _queries(draw: st.DrawFn, table_base: Callable[[str], Path]) -> tuple[str, Any, list[Any]]:
    table = draw(st.sampled_from(sorted(AS_OF)))
    base = str(table_base(table))
    as_of = draw(st.sampled_from(AS_OF[table]))
    filters = []
    for _ in range(draw(st.integers(1, 2))):
        column = draw(st.sampled_from(COLUMNS))
        op = draw(st.sampled_from(FILTER_OPS))
        values = draw(st.lists(st.sampled_from(_values(base, column)), min_size=1, max_size=3))
        filters.append(_filter(column, op, values))
    return base, as_of, filters


def test_skipping_never_drops_a_matching_row(corpus_table: Callable[[str], Path]) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(query=_queries(corpus_table))
    def check(query: tuple[str, str | None, list[ReadFilter]]) -> None:
        base, as_of, filters = query
        options = {"as.of.instant": as_of} if as_of else {}
        expected = apply_filters(_full_read(base, as_of), filters)
        actual = read_table(base, options, filters)
        assert sorted(canonical_json_lines(actual.to_pylist())) == sorted(
            canonical_json_lines(expected.to_pylist())
        ), filters
        storage = Storage(base)
        skipping = plan_query(storage, parse_read_query(options, filters))
        every = plan_query(storage, parse_read_query({**options, **NO_SKIPPING}, filters))
        assert skipping.files_read <= every.files_read

    check()
