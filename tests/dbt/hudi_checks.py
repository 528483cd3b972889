"""What the dbt tests compare: rows through Spark SQL, rows through hudi-rs, the timeline."""

from __future__ import annotations

from typing import Any

META = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
    "_hoodie_operation",
)


def _canon(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    return value


def spark_rows(spark: Any, sql: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """``columns`` of a query's rows, sorted."""
    rows = spark.sql(sql).select(*columns).collect()
    return sorted(tuple(_canon(r[c]) for c in columns) for r in rows)


def hudi_rs_rows(base_path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """The table's snapshot read by hudi-rs, the independent reader."""
    from hudi import HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(base_path).build()
    out = []
    for batch in table.read():
        for row in batch.to_pylist():
            out.append(tuple(_canon(row[c]) for c in columns))
    return sorted(out)


def base_path_of(spark: Any, schema: str, identifier: str) -> str:
    rows = spark.sql(f"SHOW TBLPROPERTIES `{schema}`.`{identifier}`").collect()
    props = {r["key"]: r["value"] for r in rows}
    return str(props["dbt_hudi.base_path"])


def completed_instants(base_path: str) -> list[tuple[str, str]]:
    """(instant_time, action) of the completed instants on the active timeline."""
    from engine.storage import Storage
    from engine.timeline import Timeline

    return [
        (i.instant_time, str(i.action.value)) for i in Timeline.load(Storage(base_path)).completed()
    ]
