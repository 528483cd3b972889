"""Null ordering values: which writes refuse them, and how the refusal reads.

Hudi orders the versions of a record by its ordering (precombine) field whenever a write
combines records: upserts, and inserts with ``hoodie.combine.before.insert``. Its payloads cannot
be built without that value (``BaseAvroPayload``: "Ordering value is null for record"), so such a
write with a null ordering value fails before anything is written. Inserts, bulk inserts and
overwrites that do not combine never read the field and take nulls, as Hudi's do.

The check rides on the first stage that reads the batch: the keyed batch carries a flag per
record, and the batch profile (two-job write), the insert profile (writes that look nothing up)
or the map stage of the one-job and bucket-index writes refuses it, naming one sample record key
(:func:`null_ordering_error`), before any file is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from engine import config
from engine.config import HoodieConfig, WriteOperation
from engine.errors import NullOrderingValueError

__all__ = [
    "NULL_ORDERING_PARTS",
    "naming_ordering_field",
    "null_ordering_checked",
    "null_ordering_error",
]

#: the text of a refusal around the quoted record key and partition path (a Spark expression
#: builds the same text from them: :mod:`engine.model.row_checks`)
NULL_ORDERING_PARTS = ("Ordering value is null for record key ", " (partition ", ")")


def null_ordering_checked(
    cfg: HoodieConfig, operation: WriteOperation, ordering: str | None
) -> str | None:
    """The ordering field whose null values the write refuses, ``None`` when it takes them."""
    if not ordering:
        return None
    if operation == WriteOperation.UPSERT:
        return ordering
    writes_new = operation.is_insert or operation in (
        WriteOperation.INSERT_OVERWRITE,
        WriteOperation.INSERT_OVERWRITE_TABLE,
    )
    return ordering if writes_new and cfg.get(config.COMBINE_BEFORE_INSERT) else None


def null_ordering_error(record_key: object, partition: object) -> NullOrderingValueError:
    """The refusal of a null ordering value, naming one record that has it (every write path
    that checks the values raises this one text)."""
    before_key, before_partition, after = NULL_ORDERING_PARTS
    return NullOrderingValueError(
        f"{before_key}{record_key!r}{before_partition}{partition!r}{after}"
    )


@contextmanager
def naming_ordering_field(ordering: str | None, base_path: str) -> Iterator[None]:
    """Re-raise a null ordering value refusal naming the field, its config key and the table."""
    try:
        yield
    except NullOrderingValueError as e:
        raise NullOrderingValueError(
            f"Ordering field {ordering!r} ({config.WRITE_PRECOMBINE_FIELD.key}): {e}; Hudi "
            f"refuses null ordering values in writes that combine records (upsert, "
            f"{config.COMBINE_BEFORE_INSERT.key}); nothing was written to {base_path}"
        ) from None
