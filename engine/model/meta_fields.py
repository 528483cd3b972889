"""The meta fields a writer stamps on the records it writes.

Every record Hudi writes carries ``_hoodie_commit_time`` (the writing instant),
``_hoodie_commit_seqno`` (``{instant_time}_{id}_{n}``: the instant, the writer's partition or
bucket number, and the record's position) and ``_hoodie_file_name`` (the base file's name, or the
file id in a log block). Records a merge keeps unchanged keep their commit time and seqno but take
the new base file's name. The values are built by Arrow (a repeated scalar, a cast range), never
from Python lists: a 100k-row column costs microseconds instead of a tenth of a second. Fields
keep the schema's definition (the meta fields are nullable strings).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.model.schema import COMMIT_SEQNO_COLUMN, COMMIT_TIME_COLUMN, FILE_NAME_COLUMN

__all__ = ["stamp_commit", "stamp_file_name"]


def stamp_commit(rows: pa.Table, instant_time: str, seqno_id: int, start: int = 0) -> pa.Table:
    """Give ``rows`` the instant's commit time and seqnos ``{instant_time}_{seqno_id}_{n}``,
    ``n`` counting from ``start``."""
    n = rows.num_rows
    seq = pc.cast(pa.array(np.arange(start, start + n, dtype=np.int64)), pa.string())
    seqno = pc.binary_join_element_wise(f"{instant_time}_{seqno_id}_", seq, "")
    rows = _set(rows, COMMIT_TIME_COLUMN, pa.repeat(pa.scalar(instant_time, pa.string()), n))
    return _set(rows, COMMIT_SEQNO_COLUMN, seqno)


def stamp_file_name(rows: pa.Table, file_name: str) -> pa.Table:
    """Give every row of ``rows`` the file name (a log block's records: the file id)."""
    return _set(rows, FILE_NAME_COLUMN, pa.repeat(pa.scalar(file_name, pa.string()), rows.num_rows))


def _set(rows: pa.Table, name: str, values: pa.Array) -> pa.Table:
    index = rows.schema.get_field_index(name)
    return rows.set_column(index, rows.schema.field(index), values)
