"""CDC logging of a merge: the ``.cdc`` log file a rewritten file group gets on a CDC table.

Hudi's merge handle with change log records, for every key it touches, how it changed:
``i`` (a key new to the file group), ``u`` (a stored key rewritten, with its before and after
images), ``d`` (a stored key deleted, with its before image); untouched rows log nothing.
The records go to one log file of the new file slice, written in the same task::

    .{file_id}_{instant_time}.log.1_{write_token}.cdc      CDC_DATA_BLOCK(s), header
                                                          INSTANT_TIME + SCHEMA (the CDC schema)

and the write stat's ``cdcStats`` maps its path (relative to the base path) to its size.

No ``.cdc`` file is written where the base file itself is the change, as Hudi's reader
(``HoodieCDCExtractor``) infers those changes from it: a new file group (create handle), a
merge whose written rows are all inserts, and a ``delete`` that removed every row of the group.
A merge that deletes rows while writing only inserts gets a ``.cdc`` file (Hudi's writer skips it
there, and its reader then has no way to read the change).

On merge-on-read tables the same holds for the base files a deltacommit writes (new file groups,
small file groups rewritten with inserts); log appends get no ``.cdc`` file, as in Hudi's Spark
writer: the CDC query reads their changes from the log files (:mod:`engine.read.cdc_log`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.config import HoodieConfig, TableType, WriteOperation
from engine.errors import ConfigError
from engine.fs.filenames import format_log_file_name, partition_file_path
from engine.fs.storage import Storage
from engine.io.logfile import HoodieLogBlockType, encode_avro_data_block
from engine.model.cdc_schema import (
    CDC_AFTER,
    CDC_BEFORE,
    CDC_FILE_SUFFIX,
    CDC_OP,
    CDC_RECORD_KEY,
    CDC_TS,
    CdcOperation,
    SupplementalLoggingMode,
    cdc_avro_schema,
)
from engine.model.schema import HOODIE_META_COLUMNS, RECORD_KEY_COLUMN
from engine.timeline.markers import create_marker

__all__ = [
    "CdcChanges",
    "cdc_file_name",
    "cdc_logging_mode",
    "changes_of_merge",
    "check_cdc_options",
    "needs_cdc_file",
    "write_cdc_file",
]

CDC_LOG_VERSION = 1


def cdc_logging_mode(cfg: HoodieConfig) -> SupplementalLoggingMode | None:
    """The supplemental logging mode of a CDC table's writes; ``None`` without CDC."""
    if not cfg.get(config.TABLE_CDC_ENABLED):
        return None
    return SupplementalLoggingMode(cfg.get(config.CDC_SUPPLEMENTAL_LOGGING_MODE))


def check_cdc_options(
    cfg: HoodieConfig, props: dict[str, str] | None, table_type: TableType, base_path: str
) -> None:
    """CDC is a table property: set when the table is created, never switched on later (its
    change stream would start in the middle). Tables of every version log changes (1.x writes the
    same ``.cdc`` files, listed in its Avro write stats); on merge-on-read, log files are read
    against the slice their deltacommit's write stat names (its base file and log files, which
    versions 8 and 9 name by each delta commit's own instant).

    Raises:
        ConfigError: CDC asked on an existing table created without it, or on a merge-on-read
            table with the bucket index.
    """
    if not cfg.get(config.TABLE_CDC_ENABLED):
        return
    key = config.TABLE_CDC_ENABLED.key
    if props is not None and (props.get(key) or "false").strip().lower() != "true":
        raise ConfigError(
            f"{key}=true on the table at {base_path}, created without CDC: CDC is set when a "
            "table is created (its change stream cannot start in the middle of its history); "
            "recreate the table (--full-refresh) to enable it"
        )
    if table_type == TableType.MERGE_ON_READ:
        _check_merge_on_read(cfg, props, base_path)


def _check_merge_on_read(cfg: HoodieConfig, props: dict[str, str] | None, base_path: str) -> None:
    key = config.TABLE_CDC_ENABLED.key
    if cfg.get(config.INDEX_TYPE) == "BUCKET":
        raise ConfigError(
            f"{key}=true with {config.INDEX_TYPE.key}=BUCKET on the MERGE_ON_READ table at "
            f"{base_path}: Hudi writes the .cdc files of bucket-index merge-on-read tables at "
            "compaction, which is not implemented; use another index type or COPY_ON_WRITE"
        )


@dataclass(frozen=True, slots=True)
class CdcChanges:
    """The changes one merge made to one file group: ``op``, ``record_key`` and the before
    and after images (structs of the data columns, null where the op has none)."""

    table: pa.Table

    @property
    def num_rows(self) -> int:
        return int(self.table.num_rows)


def needs_cdc_file(
    operation: WriteOperation,
    *,
    num_writes: int,
    num_inserts: int,
    num_updates: int,
    num_deletes: int,
) -> bool:
    """Whether a merge of an existing file group logs its changes to a ``.cdc`` file (see the
    module notes for the cases the base file speaks for itself)."""
    if operation == WriteOperation.DELETE and num_writes == 0 and num_deletes > 0:
        return False
    only_inserts = num_updates == 0 and num_deletes == 0 and num_writes == num_inserts
    return not only_inserts


def _image(rows: pa.Table, data_columns: list[str], idx: pa.Array) -> pa.StructArray:
    """Rows ``idx`` of ``rows`` as a struct array of the data columns (null where idx is)."""
    taken = rows.select(data_columns).take(idx)
    fields = [taken.schema.field(name) for name in data_columns]
    arrays = [
        pa.concat_arrays(taken.column(name).chunks)
        if taken.column(name).num_chunks
        else pa.array([], f.type)
        for name, f in zip(data_columns, fields, strict=True)
    ]
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=pc.is_null(idx))


def _keys(rows: pa.Table) -> pa.Array:
    column = rows.column(RECORD_KEY_COLUMN)
    return (
        column.combine_chunks().cast(pa.string())
        if column.num_chunks
        else pa.array([], pa.string())
    )


def changes_of_merge(
    stored: pa.Table, unchanged: pa.Table, changed: pa.Table, *, appended: bool
) -> CdcChanges:
    """The changes of one merge: ``stored`` rows before, ``unchanged`` stored rows kept as they
    are, ``changed`` rows written (all aligned to the table schema, meta columns first).

    Args:
        appended: an insert write (no index): every changed row is an insert.
    """
    data_columns = [c for c in stored.column_names if c not in HOODIE_META_COLUMNS]
    stored_keys, changed_keys = _keys(stored), _keys(changed)
    if appended:
        before_idx = pa.nulls(changed.num_rows, pa.int64())
    else:
        before_idx = pc.index_in(changed_keys, value_set=stored_keys).cast(pa.int64())
    kept = pa.concat_arrays([_keys(unchanged), changed_keys])
    gone = pc.invert(pc.is_in(stored_keys, value_set=kept))
    deleted_idx = pa.array(np.flatnonzero(gone.to_numpy(zero_copy_only=False)), pa.int64())
    n_changed, n_deleted = changed.num_rows, len(deleted_idx)
    ops = pc.if_else(pc.is_valid(before_idx), CdcOperation.UPDATE.value, CdcOperation.INSERT.value)
    op = pa.concat_arrays(
        [
            ops.cast(pa.string()),
            pa.repeat(pa.scalar(CdcOperation.DELETE.value, pa.string()), n_deleted),
        ]
    )
    table = pa.table(
        {
            CDC_OP: op,
            CDC_RECORD_KEY: pa.concat_arrays([changed_keys, stored_keys.take(deleted_idx)]),
            CDC_BEFORE: _image(stored, data_columns, pa.concat_arrays([before_idx, deleted_idx])),
            CDC_AFTER: _image(
                changed,
                data_columns,
                pa.concat_arrays(
                    [pa.array(np.arange(n_changed), pa.int64()), pa.nulls(n_deleted, pa.int64())]
                ),
            ),
        }
    )
    return CdcChanges(table)


def cdc_file_name(file_id: str, instant_time: str, write_token: str) -> str:
    """The ``.cdc`` log file of the file slice an instant opens (Hudi: version 1)."""
    return format_log_file_name(file_id, instant_time, CDC_LOG_VERSION, write_token) + (
        CDC_FILE_SUFFIX
    )


def cdc_records(changes: CdcChanges, mode: SupplementalLoggingMode, instant_time: str) -> pa.Table:
    """The ``.cdc`` records of ``mode`` (the columns of its Avro schema, in order)."""
    t = changes.table
    if mode is SupplementalLoggingMode.OP_KEY_ONLY:
        return t.select([CDC_OP, CDC_RECORD_KEY])
    if mode is SupplementalLoggingMode.DATA_BEFORE:
        return t.select([CDC_OP, CDC_RECORD_KEY, CDC_BEFORE])
    ts = pa.repeat(pa.scalar(instant_time, pa.string()), t.num_rows)
    return pa.table(
        {
            CDC_OP: t.column(CDC_OP),
            CDC_TS: ts,
            CDC_BEFORE: t.column(CDC_BEFORE),
            CDC_AFTER: t.column(CDC_AFTER),
        }
    )


# size: one straight sequence (name, marker, encode, write, stat entry); splitting hides it
def write_cdc_file(
    storage: Storage,
    *,
    changes: CdcChanges,
    mode: SupplementalLoggingMode,
    table_schema: str,
    partition_path: str,
    file_id: str,
    instant_time: str,
    write_token: str,
) -> tuple[str, int]:
    """Write the ``.cdc`` log file of one merge; returns its path and size for ``cdcStats``."""
    name = cdc_file_name(file_id, instant_time, write_token)
    create_marker(storage, instant_time, partition_path, name, "APPEND")
    schema = cdc_avro_schema(mode, table_schema)
    records = cdc_records(changes, mode, instant_time)
    block = encode_avro_data_block(
        records, schema, instant_time, block_type=HoodieLogBlockType.CDC_DATA_BLOCK
    )
    rel = partition_file_path(partition_path, name)
    storage.write_bytes(rel, block)
    return rel, len(block)
