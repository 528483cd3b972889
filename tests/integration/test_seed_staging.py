"""A seed's CSV rows staged for the engine: typed as dbt-spark types them, nothing lost."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import agate
import pytest

from dbt.adapters.hudi.seeds import stage_seed

pytestmark = pytest.mark.spark


def _table(rows: list[tuple[Any, ...]]) -> agate.Table:
    return agate.Table(
        rows, ["id", "amount", "day"], [agate.Number(), agate.Number(), agate.Date()]
    )


def test_stage_seed_typed_columns_and_nulls(spark: Any) -> None:
    import datetime

    table = _table(
        [(Decimal(1), Decimal("10.5"), datetime.date(2024, 1, 2)), (Decimal(2), None, None)]
    )
    stage_seed(spark, table, {"id": "bigint", "amount": "double", "day": "date"}, "seed_ok")
    df = spark.table("seed_ok")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("id", "bigint"),
        ("amount", "double"),
        ("day", "date"),
    ]
    assert sorted(tuple(r) for r in df.collect())[0] == (1, 10.5, datetime.date(2024, 1, 2))


def test_stage_seed_value_its_type_cannot_hold_is_an_error(spark: Any) -> None:
    table = _table([(Decimal(1), Decimal("10.5"), None)])
    with pytest.raises(ValueError, match=r"'10\.5' of column 'amount' does not fit its type int"):
        stage_seed(spark, table, {"id": "bigint", "amount": "int", "day": "date"}, "seed_bad")
