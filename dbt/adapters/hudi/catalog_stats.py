"""The Hudi figures ``dbt docs generate`` shows beside a Hudi model's columns.

dbt's catalog carries table statistics as ``stats:<id>:label|value|description|include`` keys on
every column row of a table; the docs site shows each included one. A Hudi model's catalog entry
is a view (``publish.py``), so Spark has no statistics for it: these come from the table itself,
read when the catalog is generated — the rows of its latest committed snapshot, the files and
bytes of its latest file slices (base and log files), the last completed instant and the table
type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine import HudiTable, TableType, read_hudi
from engine.inspect import open_table, partitions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _stat(key: str, label: str, value: Any, description: str) -> dict[str, Any]:
    return {
        f"stats:{key}:label": label,
        f"stats:{key}:value": value,
        f"stats:{key}:description": description,
        f"stats:{key}:include": True,
    }


def hudi_catalog_stats(spark: SparkSession, table: HudiTable) -> dict[str, Any]:
    """The ``stats:*`` keys of a Hudi table's catalog rows.

    Rows are exact: a copy-on-write snapshot's are the Parquet footers' counts of its latest
    base files; a merge-on-read snapshot merges log blocks, so its rows are counted by reading it.
    """
    inspected = open_table(table.base_path, None, table.storage_options)
    parts = partitions(inspected)
    table_type = table.table_type()
    if table_type == TableType.COPY_ON_WRITE:
        rows = sum(p.base_records for p in parts)
    else:
        rows = read_hudi(spark, table.base_path).count()
    completed = inspected.timeline.completed()
    last = completed[-1] if completed else None
    return {
        **_stat("hudi_rows", "Rows", rows, "Rows in the latest committed snapshot"),
        **_stat(
            "hudi_files",
            "Files",
            sum(p.base_files + p.log_files for p in parts),
            "Base and log files of the latest file slices",
        ),
        **_stat(
            "hudi_bytes",
            "Bytes",
            sum(p.base_bytes + p.log_bytes for p in parts),
            "Bytes of the latest file slices' base and log files",
        ),
        **_stat(
            "hudi_last_instant",
            "Last completed instant",
            f"{last.instant_time} ({last.action})" if last is not None else "none",
            "The newest completed instant of the table's timeline",
        ),
        **_stat("hudi_table_type", "Hudi table type", str(table_type), "Hudi table type"),
    }
