"""Publishing after a commit leaves an unchanged catalog entry as it is.

A Hudi model's catalog entry (a view whose reads fail, naming the base path) is written again
only when its definition changes: its columns, base path or table type, or new docs. Checked
on the catalog itself: a property set on the entry by hand survives a publish that changes
nothing and is gone after one that rewrites it (a new column, new docs); the snapshot view
reads each commit's rows either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.hudi.publish import Comments, existing_comments, publish
from engine import write_hudi
from tests.keyed_table import write_options

pytestmark = [pytest.mark.spark]

SCHEMA = "dbt_hudi_publish_test"


def _write(spark: Any, path: str, rows: list[tuple[Any, ...]], columns: str) -> str | None:
    df = spark.createDataFrame(rows, columns)
    result = write_hudi(
        df, path, write_options("entry", {"hoodie.datasource.write.operation": "upsert"})
    )
    return result.instant_time


def _publish(spark: Any, path: str, instant: str | None, comments: Comments | None = None) -> Any:
    return publish(
        spark,
        schema=SCHEMA,
        identifier="entry",
        base_path=path,
        table_type="COPY_ON_WRITE",
        comments=comments,
        instant_time=instant,
    )


def _mark(spark: Any) -> None:
    spark.sql(f"ALTER VIEW `{SCHEMA}`.`entry` SET TBLPROPERTIES ('probe' = 'kept')")


def _marked(spark: Any) -> bool:
    rows = spark.sql(f"SHOW TBLPROPERTIES `{SCHEMA}`.`entry`").collect()
    return {r["key"]: r["value"] for r in rows}.get("probe") == "kept"


def test_unchanged_entry_is_kept_changed_one_rewritten(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "entry")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`")
    try:
        columns = "id string, dt string, ts long"
        published = _publish(spark, path, _write(spark, path, [("a", "d1", 1)], columns))
        _mark(spark)
        instant = _write(spark, path, [("a", "d1", 2), ("b", "d1", 2)], columns)
        published = _publish(spark, path, instant)
        assert _marked(spark)  # same columns, path and type: not written again
        assert published.instant_time == instant
        snapshot = spark.table(published.snapshot_view).select("id", "ts").collect()
        assert sorted(tuple(r) for r in snapshot) == [("a", 2), ("b", 2)]

        wider = "id string, dt string, ts long, note string"
        published = _publish(spark, path, _write(spark, path, [("c", "d1", 3, "n")], wider))
        assert not _marked(spark)  # a new column: rewritten
        assert "note" in [c.name for c in spark.catalog.listColumns(f"{SCHEMA}.entry")]

        _mark(spark)
        docs = Comments("the entry", {"id": "the key"})
        _publish(spark, path, None, docs)
        assert not _marked(spark)  # new docs: rewritten, and kept by the next publish
        _mark(spark)
        _publish(spark, path, None, docs)
        assert _marked(spark)
        assert existing_comments(spark, SCHEMA, "entry") == docs
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS `{SCHEMA}` CASCADE")
