"""The row checks of a write: the records it refuses before any file is written.

Two refusals, in this order, whatever the write job (the routed write's profile, the insert
profile, the map stage of the one-job and bucket-index writes, the driver-side write):

1. a null or empty record key (every key field null or empty for a complex key):
   :class:`RecordKeyError` with Hudi's text
   (:func:`engine.model.keygen.invalid_record_key_message`);
2. a null ordering value where the write combines records (:mod:`engine.model.ordering`):
   :class:`NullOrderingValueError` naming one sample record (:func:`null_ordering_error`).

Key generation flags each record: ``__bad_key`` and, for a write that checks its ordering
values, ``__null_ordering``. Whoever reads the flags first refuses the batch here: an Arrow
task or the driver with :func:`checked_rows`, a Spark aggregate with :func:`refuse` (the facts
it gathered), a Spark expression with the texts of :func:`task_error_text` and
:data:`NULL_ORDERING_PARTS`. The flags never reach a file.
"""

from __future__ import annotations

from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import HudiError, RecordKeyError
from engine.model.keygen import KeyGenSpec, invalid_record_key_message
from engine.model.ordering import NULL_ORDERING_PARTS, null_ordering_error
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN

__all__ = [
    "BAD_KEY_COLUMN",
    "CHECK_COLUMNS",
    "NULL_ORDERING_COLUMN",
    "NULL_ORDERING_PARTS",
    "checked_rows",
    "first_null_ordering",
    "refuse",
    "task_error_text",
    "without_checks",
]

#: a record whose key is null or empty (set by key generation)
BAD_KEY_COLUMN = "__bad_key"
#: a record whose ordering value is null, on a write that refuses it
NULL_ORDERING_COLUMN = "__null_ordering"
CHECK_COLUMNS = (BAD_KEY_COLUMN, NULL_ORDERING_COLUMN)

Rows = TypeVar("Rows", pa.Table, pa.RecordBatch)


def refuse(spec: KeyGenSpec, *, bad_key: bool, null_ordering: tuple[object, object] | None) -> None:
    """Raise the refusal the facts call for (a bad key first), else nothing.

    Args:
        spec: The key generator (the bad key's text names its fields).
        bad_key: Some record key is null or empty.
        null_ordering: (record key, partition path) of a record with a null ordering value.

    Raises:
        RecordKeyError, NullOrderingValueError: see the module notes.
    """
    if bad_key:
        raise RecordKeyError(invalid_record_key_message(spec))
    if null_ordering is not None:
        raise null_ordering_error(*null_ordering)


def first_null_ordering(records: pa.Table | pa.RecordBatch) -> tuple[object, object] | None:
    """(record key, partition path) of the first record flagged ``__null_ordering``."""
    if NULL_ORDERING_COLUMN not in records.schema.names:
        return None
    flags = pc.fill_null(records.column(NULL_ORDERING_COLUMN), False)
    if not pc.any(flags).as_py():
        return None
    first = records.filter(flags).slice(0, 1)
    return (
        first.column(RECORD_KEY_COLUMN)[0].as_py(),
        first.column(PARTITION_PATH_COLUMN)[0].as_py(),
    )


def checked_rows(records: Rows, spec: KeyGenSpec) -> Rows:
    """``records`` without the check flags, after refusing them (see the module notes)."""
    names = records.schema.names
    bad = BAD_KEY_COLUMN in names and bool(
        pc.any(pc.fill_null(records.column(BAD_KEY_COLUMN), False)).as_py()
    )
    refuse(spec, bad_key=bad, null_ordering=None if bad else first_null_ordering(records))
    return without_checks(records)


def without_checks(records: Rows) -> Rows:
    """``records`` without the check flags."""
    names = records.schema.names
    if not any(c in names for c in CHECK_COLUMNS):
        return records
    return records.select([n for n in names if n not in CHECK_COLUMNS])


def task_error_text(error: HudiError) -> str:
    """How a refusal raised inside a Spark task reads in the job's failure, which
    :func:`engine.spark.jobs.run_job` turns back into the error."""
    return f"{type(error).__name__}: {error}"
