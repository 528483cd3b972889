"""Null ordering values: a write that combines records refuses them before anything is written
(Hudi's payloads cannot be ordered without them); inserts that do not combine take them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.errors import NullOrderingValueError
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def _timeline(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file())


@pytest.mark.parametrize(
    ("table_type", "index"),
    [("COPY_ON_WRITE", "SIMPLE"), ("MERGE_ON_READ", "SIMPLE"), ("MERGE_ON_READ", "BUCKET")],
)
def test_upsert_with_null_ordering_value_is_refused_table_untouched(
    spark: Any, tmp_path: Path, table_type: str, index: str
) -> None:
    """On the bucket index the write job's map stage refuses it, before any task writes."""
    path = tmp_path / "t"
    opts = write_options(
        "nulls", {"hoodie.datasource.write.table.type": table_type, "hoodie.index.type": index}
    )
    rows = [("a", "p1", 1, "x"), ("b", "p2", None, "y")]
    # an insert does not combine: the null ordering value is taken, as Hudi takes it
    write_hudi(
        spark.createDataFrame(rows, SCHEMA),
        str(path),
        {**opts, "hoodie.datasource.write.operation": "insert"},
    )
    before = _timeline(path)
    batch = [("a", "p1", 2, "x2"), ("c", "p2", 3, "z"), ("d", "p3", None, "w")]
    with pytest.raises(NullOrderingValueError) as caught:
        write_hudi(spark.createDataFrame(batch, SCHEMA), str(path), opts)  # upsert
    message = str(caught.value)
    assert "'ts'" in message and "'d'" in message and "'p3'" in message, message
    assert "nothing was written" in message
    assert _timeline(path) == before
    assert sorted((r["id"], r["ts"]) for r in hudi_rs_rows(path)) == [("a", 1), ("b", None)]
    with pytest.raises(NullOrderingValueError, match=r"hoodie\.combine\.before\.insert"):
        write_hudi(
            spark.createDataFrame(batch, SCHEMA),
            str(path),
            {
                **opts,
                "hoodie.datasource.write.operation": "insert",
                "hoodie.combine.before.insert": "true",
            },
        )
    assert _timeline(path) == before
