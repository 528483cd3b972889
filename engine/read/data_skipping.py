"""Data skipping: file slices the ``column_stats`` partition proves hold no matching row.

Hudi's readers (``HoodieFileIndex`` with data skipping on, ``ColumnStatsIndexSupport``) look
up the column stats of every file a query would read and keep the files whose ranges may
satisfy the filters, and every file the index does not cover. This reader does the same on file
slices, after partition pruning:

- a filter ``column op value`` *excludes* a file when the file's stats for ``column`` prove no
  row can match: every value null (nulls never match), or the value outside ``[min, max]``
  (``=``, ``IN``, ``<``...), or ``min == max == value`` (``!=``, ``NOT IN``; never on floating
  point columns, whose Parquet ranges leave NaN out);
- a slice is skipped when one filter excludes **every** file of it (base file and, when logs are
  merged, each log file). Any value of a merged row comes from one of those files, so no merged
  row can match that filter, whatever the merge (partial updates included);
- a file without stats for the column, stats that do not convert to the column's type, or a
  filter value that does not fit it: an unknown, hence a keep. The rows read are filtered again
  afterwards, so skipping only ever saves reads.

Stats and filter values are compared as the Arrow values the row filter compares
(:func:`engine.read.arrow.apply_filters` casts the filter value to the column's type), so a
skipped slice is exactly one whose rows the row filter would all drop.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from engine.metadata.column_stats import ColumnStats, StatValue
from engine.read.filter import ReadFilter
from engine.view.fs_view import FileSlice

__all__ = ["file_may_match", "skip_file_slices"]

_EPOCH = dt.date(1970, 1, 1)
# the unit of a timestamp range: V1's wrapper, or V2's ValueType (TIMESTAMP_MILLIS, _MICROS)
_TIMESTAMP_UNITS: dict[object, str] = {"TimestampMicrosWrapper": "us", 15: "ms", 16: "us"}
_EQUALITY_OPS = ("!=", "NOT IN")


def _decimal(unscaled: bytes | int, scale: int) -> decimal.Decimal:
    number = (
        int.from_bytes(unscaled, "big", signed=True) if isinstance(unscaled, bytes) else unscaled
    )
    return decimal.Decimal(number).scaleb(-scale)


def _stat_scalar(value: StatValue, stats: ColumnStats, dtype: pa.DataType) -> Any:
    """The stat as a Python value of ``dtype`` (what ``pa.scalar(...).as_py()`` gives for a
    row of that column).

    Raises:
        ValueError: A physical value whose meaning the record does not say (a decimal without
            its scale, a timestamp without its unit): an unknown, never a guess.
    """
    wrapper, raw = value
    ordinal, extra = stats.value_type or (None, None)
    if pa.types.is_decimal(dtype) and wrapper in ("BytesWrapper", "IntWrapper", "LongWrapper"):
        if not extra:
            raise ValueError("a decimal range without its scale")
        raw = _decimal(raw, int(extra.split(",")[1]))
    elif pa.types.is_date(dtype) and isinstance(raw, int):
        raw = _EPOCH + dt.timedelta(days=raw)
    elif pa.types.is_timestamp(dtype) and isinstance(raw, int):
        unit = _TIMESTAMP_UNITS.get(wrapper) or _TIMESTAMP_UNITS.get(ordinal)
        if unit is None:
            raise ValueError("a timestamp range without its unit")
        return pa.scalar(raw, pa.timestamp(unit, dtype.tz)).cast(dtype).as_py()
    return pa.scalar(raw).cast(dtype).as_py()


def _literal(value: Any, dtype: pa.DataType) -> Any:
    """The filter value cast as the row filter casts it."""
    if isinstance(value, str) and not pa.types.is_string(dtype):
        return pa.scalar(value, pa.string()).cast(dtype).as_py()
    return pa.scalar(value).cast(dtype).as_py()


def _excludes(low: Any, high: Any, op: str, value: Any) -> bool:
    """No value in ``[low, high]`` satisfies ``x op value``."""
    if op == "=":
        return bool(value < low or value > high)
    if op == "<":
        return bool(low >= value)
    if op == "<=":
        return bool(low > value)
    if op == ">":
        return bool(high <= value)
    if op == ">=":
        return bool(high < value)
    if op == "IN":
        return all(v is None or v < low or v > high for v in value)
    if op == "!=":
        return bool(low == high == value)
    if op == "NOT IN":
        return bool(low == high and low in value)
    return False


def file_may_match(stats: ColumnStats | None, f: ReadFilter, dtype: pa.DataType | None) -> bool:
    """Whether a row of the file these stats describe may satisfy ``f`` (True when unknown)."""
    if stats is None or dtype is None:
        return True
    if stats.all_null:
        return False
    if stats.min_value is None or stats.max_value is None:
        return True
    if f.op in _EQUALITY_OPS and pa.types.is_floating(dtype):
        return True
    try:
        low = _stat_scalar(stats.min_value, stats, dtype)
        high = _stat_scalar(stats.max_value, stats, dtype)
        if f.op in ("IN", "NOT IN"):
            value: Any = tuple(_literal(v, dtype) for v in f.value)
        else:
            value = _literal(f.value, dtype)
        if value is None or low is None or high is None:
            return True
        return not _excludes(low, high, f.op, value)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError):
        return True


def skip_file_slices(
    slices: Sequence[FileSlice],
    filters: Sequence[ReadFilter],
    stats: Mapping[str, Mapping[str, ColumnStats]],
    schema: pa.Schema,
    *,
    with_logs: bool,
) -> list[FileSlice]:
    """The slices some row of which may match every filter, in their order.

    Args:
        slices: The planned slices.
        filters: The query's filters (those on partition columns excluded or not: their stats
            are as valid as any).
        stats: File name -> column -> stats (``read_column_stats``).
        schema: The table's Arrow schema, meta columns included (the row filter's types).
        with_logs: Log files are merged (snapshot of merge-on-read): their stats count too.
    """
    types = {field.name: field.type for field in schema}
    kept: list[FileSlice] = []
    for file_slice in slices:
        files = [file_slice.base_file] if file_slice.base_file else []
        files += list(file_slice.log_files) if with_logs else []
        if not files or not any(_excluded_everywhere(files, f, stats, types) for f in filters):
            kept.append(file_slice)
    return kept


def _excluded_everywhere(
    files: Sequence[str],
    f: ReadFilter,
    stats: Mapping[str, Mapping[str, ColumnStats]],
    types: Mapping[str, pa.DataType],
) -> bool:
    dtype = types.get(f.field)
    return not any(file_may_match(stats.get(name, {}).get(f.field), f, dtype) for name in files)
