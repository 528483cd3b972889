"""Hudi's SQL pre-commit checks on Spark (:mod:`engine.write.precommit` says what they mean).

The rows before the commit and the staged rows are registered as temporary views of the
validating session only, under names no other query uses, and dropped after the checks; each
check's ``<TABLE_NAME>`` stands for them. Equality and inequality compare the query's rows
before and after as Hudi's validators do (``before.intersect(after).count() ==
before.count()``); a single-value check compares the first value of the query on the staged
rows, printed as Java prints it, with the expected text.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import uuid
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from engine.write.precommit import CheckFailure, SqlCheck, ValidatorKind

__all__ = ["java_text", "run_checks"]

_SAMPLE_ROWS = 5
_COUNTER = itertools.count(1)


def run_checks(
    spark: SparkSession, before: DataFrame | None, after: DataFrame, checks: Sequence[SqlCheck]
) -> list[CheckFailure]:
    """The checks that fail on ``before`` (``None``: no row, ``after``'s columns) and
    ``after``, every check run."""
    name = f"hudi_staged_{next(_COUNTER)}_{uuid.uuid4().hex[:8]}"
    before_view, after_view = f"{name}_before", f"{name}_after"
    if before is None:
        before = spark.createDataFrame([], after.schema)
    before.createOrReplaceTempView(before_view)
    after.createOrReplaceTempView(after_view)
    try:
        found = [_run(spark, check, before_view, after_view) for check in checks]
    finally:
        spark.catalog.dropTempView(before_view)
        spark.catalog.dropTempView(after_view)
    return [f for f in found if f is not None]


def _run(spark: SparkSession, check: SqlCheck, before: str, after: str) -> CheckFailure | None:
    if check.kind is ValidatorKind.SINGLE_VALUE:
        rows = spark.sql(check.on(after)).limit(1).collect()
        value = java_text(rows[0][0]) if rows and len(rows[0]) else None
        if value is None or value != check.expected:
            found = "no row" if not rows else (value or "null")
            return CheckFailure(check, str(check.expected), found)
        return None
    old, new = spark.sql(check.on(before)), spark.sql(check.on(after))
    old_count = old.count()
    same = old.intersect(new).count() == old_count
    if check.kind is ValidatorKind.EQUALITY and not same:
        return CheckFailure(check, _sample(old, old_count), _sample(new, new.count()))
    if check.kind is ValidatorKind.INEQUALITY and same:
        expected = f"a result other than before ({_sample(old, old_count)})"
        return CheckFailure(check, expected, f"the same: {_sample(new, new.count())}")
    return None


def _sample(df: DataFrame, count: int) -> str:
    """``count`` rows, and the first few as text."""
    rows = [
        "(" + ", ".join(java_text(v) or "null" for v in row) + ")"
        for row in df.limit(_SAMPLE_ROWS).collect()
    ]
    more = ", ..." if count > len(rows) else ""
    return f"{count} row{'s' if count != 1 else ''} [{', '.join(rows)}{more}]"


def java_text(value: Any) -> str | None:
    """``value`` as Java's ``toString`` prints the value Spark returns (``None`` for null):
    Hudi compares that text with a single-value check's expected value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0").rstrip(".") or str(value)
    return str(value)


def _java_double(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == int(value) and abs(value) < 1e7:
        return f"{int(value)}.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(value)
    exact = decimal.Decimal(repr(value))  # the shortest digits, as Java's Double.toString
    sign, digits, _ = exact.as_tuple()
    text = "".join(str(d) for d in digits).rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{exact.adjusted()}"
