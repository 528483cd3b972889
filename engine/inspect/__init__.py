"""Table inspection: what a table's timeline, partitions and file groups hold, and its health.

Pure functions over the table's files (no Spark, nothing written), shared by the ``dbt-hudi``
command and the dbt ``hudi_health`` operation. Every result is a dataclass of plain values, so
its fields give the JSON the command prints. One module per concern: :mod:`.table` (opening a
table, times, settings), :mod:`.timeline` (instants and commits), :mod:`.layout` (partitions and
file groups), :mod:`.schema`, :mod:`.health`.
"""

from engine.inspect.health import (
    Finding,
    HealthReport,
    health,
    health_text,
    metadata_table_state,
)
from engine.inspect.layout import (
    FileGroupRow,
    PartitionRow,
    base_file_sizes,
    file_groups,
    partitions,
)
from engine.inspect.schema import SchemaChange, SchemaField, schema_fields, schema_history
from engine.inspect.table import (
    InspectedTable,
    human_bytes,
    instant_epoch,
    int_setting,
    open_table,
    setting,
    small_file_limit,
)
from engine.inspect.timeline import (
    CommitDetail,
    InstantRow,
    WriteStatRow,
    commit_detail,
    instant_row,
    timeline_rows,
)

__all__ = [
    "CommitDetail",
    "FileGroupRow",
    "Finding",
    "HealthReport",
    "InspectedTable",
    "InstantRow",
    "PartitionRow",
    "SchemaChange",
    "SchemaField",
    "WriteStatRow",
    "base_file_sizes",
    "commit_detail",
    "file_groups",
    "health",
    "health_text",
    "human_bytes",
    "instant_epoch",
    "instant_row",
    "int_setting",
    "metadata_table_state",
    "open_table",
    "partitions",
    "schema_fields",
    "schema_history",
    "setting",
    "small_file_limit",
    "timeline_rows",
]
