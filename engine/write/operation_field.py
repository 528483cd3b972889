"""The ``_hoodie_operation`` meta column: whether a write carries it and the value each record gets.

With ``hoodie.allow.operation.metadata.field=true`` Hudi's writers add ``_hoodie_operation``
(nullable string) after the five meta columns of every base file and log data block
(``HoodieAvroUtils.addMetadataFields(schema, withOperationField)``). The commit schema never holds
it: Hudi's readers learn that a table has it from its data files (``TableSchemaResolver``), so the
option is not a table property. A table whose files carry the column keeps it on every later
write, option or not, so a merge never drops the values of the records it copies.

Values are ``HoodieOperation`` names. A batch writer writes:

======================  ===================================================================
``I`` (insert)          a record whose key the file group did not hold
``U`` (update after)    a record replacing a stored one (merges; every record a log block
                        appends, which Hudi's append handle counts as an update)
kept                    records a merge or a compaction copies keep the value they had
======================  ===================================================================

``-U`` (update before) and ``D`` (delete) belong to changelog writers whose records carry their
row kind: the value Hudi writes is each incoming record's ``HoodieOperation``, and only Flink's
records take theirs from the row kind (``HoodieFlinkRecord.getOperation``; with
``changelog.enabled`` its log files keep ``-U`` and ``D`` rows until compaction merges each key's
changes into one). Hudi 0.14/0.15's Spark writers write no such row: the merge handle drops a
record whose incoming operation is a delete (``HoodieMergeHandle.writeUpdateRecord``), and the
append handle sends every delete payload (the ``delete`` operation's empty payload, a row with
``_hoodie_is_deleted = true``) to the DELETE block (``HoodieAppendHandle.prepareRecord``). This
engine is a batch writer and does the same; no option makes it write ``-U`` or ``D``.
"""

from __future__ import annotations

from enum import StrEnum

import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.config import HoodieConfig
from engine.fs.storage import Storage
from engine.model.schema import OPERATION_COLUMN, RECORD_KEY_COLUMN
from engine.read.file_columns import table_has_operation_field
from engine.timeline.timeline import Timeline

__all__ = [
    "HoodieOperation",
    "stamp_operations",
    "writes_operation_field",
]


class HoodieOperation(StrEnum):
    """What a change did to a record, as ``_hoodie_operation`` names it."""

    INSERT = "I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "U"
    DELETE = "D"


def writes_operation_field(cfg: HoodieConfig, storage: Storage, timeline: Timeline) -> bool:
    """Whether a write carries the column: asked for, or already in the table's files."""
    if cfg.get(config.ALLOW_OPERATION_METADATA_FIELD) is True:
        return True
    return table_has_operation_field(storage, timeline)


def stamp_operations(rows: pa.Table, stored_keys: pa.Array | pa.ChunkedArray | None) -> pa.Table:
    """``rows`` being (re)written by this instant with their ``_hoodie_operation``: ``U`` where
    ``stored_keys`` (the file group's keys before the write; ``None``: every row replaces a
    stored record) holds the key, else ``I``. Rows without the column are returned as they are.
    """
    if OPERATION_COLUMN not in rows.column_names:
        return rows
    n = rows.num_rows
    if stored_keys is None:
        values = pa.repeat(pa.scalar(HoodieOperation.UPDATE_AFTER.value, pa.string()), n)
    else:
        if isinstance(stored_keys, pa.ChunkedArray):
            stored_keys = stored_keys.combine_chunks()
        updated = pc.is_in(rows.column(RECORD_KEY_COLUMN), value_set=stored_keys)
        values = pc.if_else(
            updated, HoodieOperation.UPDATE_AFTER.value, HoodieOperation.INSERT.value
        )
    index = rows.schema.get_field_index(OPERATION_COLUMN)
    return rows.set_column(index, rows.schema.field(index), values)
