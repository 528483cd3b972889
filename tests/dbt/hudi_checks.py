"""What the dbt tests compare: rows through Spark SQL, rows through hudi-rs, the timeline."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from tests import hudi_rs


def _canon(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    return value


def rows_of(rows: Iterable[Any], columns: list[str]) -> list[tuple[Any, ...]]:
    """``columns`` of every row (a Spark ``Row`` or a dict), sorted."""
    return sorted(tuple(_canon(r[c]) for c in columns) for r in rows)


_WHOLE_RELATION = re.compile(r"^\s*select \* from `?([\w]+)`?\.`?([\w]+)`?\s*$", re.IGNORECASE)


def spark_rows(spark: Any, sql: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """``columns`` of a query's rows, sorted. ``select * from schema.name`` of a Hudi model reads
    its latest committed snapshot through the engine, as ``ref()`` does: the model's catalog
    entry lists no files and refuses reads (``publish.py``)."""
    whole = _WHOLE_RELATION.match(sql)
    if whole and _hudi_base_path(spark, whole.group(1), whole.group(2)):
        from engine import read_hudi

        frame = read_hudi(spark, base_path_of(spark, whole.group(1), whole.group(2)))
        return rows_of(frame.select(*columns).collect(), columns)
    return rows_of(spark.sql(sql).select(*columns).collect(), columns)


def _hudi_base_path(spark: Any, schema: str, identifier: str) -> str | None:
    if not spark.catalog.tableExists(f"{schema}.{identifier}"):
        return None
    rows = spark.sql(f"SHOW TBLPROPERTIES `{schema}`.`{identifier}`").collect()
    return {r["key"]: r["value"] for r in rows}.get("dbt_hudi.base_path")


def hudi_rs_rows(base_path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """``columns`` of the table's snapshot read by hudi-rs, the independent reader, sorted."""
    return rows_of(hudi_rs.hudi_rs_rows(base_path), columns)


def base_path_of(spark: Any, schema: str, identifier: str) -> str:
    rows = spark.sql(f"SHOW TBLPROPERTIES `{schema}`.`{identifier}`").collect()
    props = {r["key"]: r["value"] for r in rows}
    return str(props["dbt_hudi.base_path"])


def completed_instants(base_path: str) -> list[tuple[str, str]]:
    """(instant_time, action) of the completed instants on the active timeline."""
    from engine.fs.storage import Storage
    from engine.timeline.timeline import Timeline

    return [
        (i.instant_time, str(i.action.value)) for i in Timeline.load(Storage(base_path)).completed()
    ]


def files_under(base_path: str) -> list[tuple[str, int]]:
    """(relative path, size) of every file under ``base_path``, sorted: a table is untouched
    when this, its timeline and its rows are what they were."""
    from pathlib import Path

    root = Path(base_path)
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*") if p.is_file()
    )


def table_state(base_path: str, columns: list[str]) -> tuple[Any, ...]:
    """Everything a refused run must leave as it was: files, timeline, rows (through hudi-rs)."""
    return (
        files_under(base_path),
        completed_instants(base_path),
        hudi_rs_rows(base_path, columns),
    )
