"""What a write task sends back to the driver: the write stats of the files it wrote.

Every task that writes files (a write's, a compaction's, a clustering's) returns rows of
:data:`RESULT_SCHEMA`; the driver, which alone completes the instant, decodes them. A row holds
one write stat (its JSON with the keys the file wrote and deleted,
:meth:`~engine.timeline.commit_metadata.HoodieWriteStat.to_wire`) or, for a one-job write on a
global index, one partition's distinct incoming keys as a single Arrow IPC cell (one binary
cell crosses the JVM as it is, where a row per key would be converted twice).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.timeline.commit_metadata import HoodieWriteStat

__all__ = [
    "KEYS_SCHEMA",
    "RESULT_SCHEMA",
    "decode_keys",
    "decode_stats",
    "encode_keys",
    "encode_stats",
]

_STAT = "stat"
_KEYS = "keys"
#: the rows a write task returns: a write stat, or a partition's distinct incoming keys
RESULT_SCHEMA = pa.schema([(_STAT, pa.string()), (_KEYS, pa.binary())])
#: the keys one partition received: (record key, partition path)
KEYS_SCHEMA = pa.schema([(RECORD_KEY_COLUMN, pa.string()), (PARTITION_PATH_COLUMN, pa.string())])


def encode_stats(stats: Sequence[HoodieWriteStat]) -> pa.RecordBatch:
    """The rows of a task's write stats."""
    return pa.RecordBatch.from_pydict(
        {_STAT: [s.to_wire() for s in stats], _KEYS: [None] * len(stats)}, schema=RESULT_SCHEMA
    )


def encode_keys(rows: pa.Table, partition: str) -> pa.RecordBatch:
    """The row of the distinct incoming keys of ``rows``, one ``partition``'s records."""
    keys = pc.unique(rows.column(RECORD_KEY_COLUMN).combine_chunks()).cast(pa.string())
    table = pa.table(
        [keys, pa.repeat(pa.scalar(partition, pa.string()), len(keys))], schema=KEYS_SCHEMA
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, KEYS_SCHEMA) as writer:
        writer.write_table(table)
    return pa.RecordBatch.from_pydict(
        {_STAT: [None], _KEYS: [sink.getvalue().to_pybytes()]}, schema=RESULT_SCHEMA
    )


def decode_stats(rows: Iterable[Any]) -> list[HoodieWriteStat]:
    """The write stats of the collected rows (key rows skipped)."""
    return [HoodieWriteStat.from_wire(r[_STAT]) for r in rows if r[_STAT] is not None]


def decode_keys(rows: Iterable[Any]) -> pa.Table:
    """Every partition's distinct keys the collected rows carry, as one table."""
    tables = [pa.ipc.open_stream(r[_KEYS]).read_all() for r in rows if r[_KEYS] is not None]
    return pa.concat_tables(tables) if tables else KEYS_SCHEMA.empty_table()
