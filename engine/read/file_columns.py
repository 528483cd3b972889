"""The columns a table's stored data files carry: a base file's Parquet schema, a log file's
first data block's schema, and whether the newest of them carries ``_hoodie_operation`` (as
Hudi's ``TableSchemaResolver.hasOperationField`` learns it from the files, not the properties).

A write (:mod:`engine.write.operation_field`) and a compaction both ask: a table whose files
carry the column keeps it on every later file, so neither drops the values of the records it
copies.
"""

from __future__ import annotations

import pyarrow.parquet as pq

from engine.fs.filenames import is_log_file
from engine.fs.storage import Storage
from engine.io.logfile import HeaderMetadataType, HoodieLogBlockType, read_log_blocks
from engine.model.schema import OPERATION_COLUMN, parse_avro_schema
from engine.timeline.timeline import Timeline

__all__ = ["table_has_operation_field"]

_DATA_BLOCKS = (HoodieLogBlockType.AVRO_DATA_BLOCK, HoodieLogBlockType.PARQUET_DATA_BLOCK)


def table_has_operation_field(storage: Storage, timeline: Timeline) -> bool:
    """Whether the table's newest data file carries ``_hoodie_operation``.

    The newest commit that wrote a base file or a log data block decides (the latest file
    slices hold it, so no cleaner has removed it); a table with no data file has not decided.
    """
    for instant in reversed(timeline.commits_timeline()):
        for stat in timeline.read_commit_metadata(instant).write_stats():
            names = _data_file_columns(storage, stat.path)
            if names is not None:
                return OPERATION_COLUMN in names
    return False


def _data_file_columns(storage: Storage, path: str | None) -> list[str] | None:
    """The columns of a base file or of a log file's first data block (``None``: neither)."""
    if not path or not storage.exists(path):
        return None
    if path.endswith(".parquet"):
        with storage.open_input(path) as f:
            return list(pq.read_schema(f).names)
    if is_log_file(path.rsplit("/", 1)[-1]):
        for block in read_log_blocks(storage.read_bytes(path)):
            schema = block.header.get(HeaderMetadataType.SCHEMA)
            if block.block_type in _DATA_BLOCKS and schema:
                return [f["name"] for f in parse_avro_schema(schema)["fields"]]
    return None
