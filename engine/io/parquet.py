"""Base files: Parquet with Hudi's five meta columns first.

Layout of a base file this module writes::

    columns   _hoodie_commit_time, _hoodie_commit_seqno, _hoodie_record_key,
              _hoodie_partition_path, _hoodie_file_name, <data columns in table order>
    footer    parquet.avro.schema     writer Avro schema including the meta fields
              hoodie_min_record_key   lexicographic min of _hoodie_record_key
              hoodie_max_record_key   lexicographic max
              org.apache.hudi.bloomfilter    the bloom filter of the file's record keys
              hoodie_bloom_filter_type_code  DYNAMIC_V0 (absent for SIMPLE filters)
    types     as the commit's Avro schema maps them (timestamps as INT64 micros, decimals with
              the table's precision, int8/int16 widened to int32)

The min/max keys let an index skip files whose key range misses the incoming keys; the bloom
filter (:mod:`engine.io.bloom_filter`, built as Hudi builds it from every row's key in write
order) lets Hudi's BLOOM and GLOBAL_BLOOM indexes, ours and Apache Hudi's writers, skip files
that cannot hold a key. No reader needs them. Every base file carries both, whatever the index,
as Apache Hudi's writers do; the Parquet files inside PARQUET_DATA_BLOCKs carry no filter (Hudi
writes none there either).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.config import PARQUET_COMPRESSION_CODEC
from engine.faults import checkpoint
from engine.fs.storage import Storage
from engine.io.bloom_filter import BloomFilter, BloomFilterSpec, decode_footer_filter
from engine.model.promote import promote_array
from engine.model.schema import (
    HOODIE_META_COLUMNS,
    META_COLUMNS,
    RECORD_KEY_COLUMN,
    arrow_to_avro_schema,
    avro_to_arrow_schema,
    schema_json,
)

__all__ = [
    "AVRO_SCHEMA_KEY",
    "MAX_RECORD_KEY",
    "MIN_RECORD_KEY",
    "BaseFileWriter",
    "align_to_schema",
    "encode_parquet_file",
    "read_base_file",
    "read_base_file_with_footer",
    "read_bloom_filter",
    "read_record_key_range",
    "table_arrow_schema",
    "write_base_file",
]

AVRO_SCHEMA_KEY = b"parquet.avro.schema"
MIN_RECORD_KEY = b"hoodie_min_record_key"
MAX_RECORD_KEY = b"hoodie_max_record_key"
ROW_GROUP_ROWS = 1_000_000
# dictionary encoding only for columns whose first rows repeat: measured on a 100k-row base file
# of the benchmark table (zstd), dictionary on every column cost 0.45 s to write and 0.25 s to
# read, on the repeating ones only 0.27 s and 0.17 s, and the file was 13% smaller (random
# strings and keys fill a dictionary page, then fall back to plain encoding anyway)
_DICTIONARY_SAMPLE_ROWS = 10_000


def _nullable(field: pa.Field) -> pa.Field:
    return field.with_nullable(True)


def table_arrow_schema(avro_schema: str | dict[str, Any]) -> pa.Schema:
    """Arrow schema of a base file (meta columns first) for a commit's Avro schema."""
    schema = avro_to_arrow_schema(avro_schema)
    data = [f for f in schema if f.name not in HOODIE_META_COLUMNS]
    meta = [pa.field(name, pa.string()) for name in META_COLUMNS]
    return pa.schema([*meta, *data])


def commit_schema_of(data_schema: pa.Schema, table_name: str) -> str:
    """The commit (Avro, no meta fields) schema JSON of an incoming Arrow schema.

    Top-level data fields are made nullable: Hudi tables written through Spark SQL are, and a
    later batch whose column happens to hold nulls must still fit.
    """
    fields = [_nullable(f) for f in data_schema if f.name not in HOODIE_META_COLUMNS]
    avro = arrow_to_avro_schema(pa.schema(fields), table_name, with_meta=False)
    return schema_json(avro)


def align_to_schema(table: pa.Table, schema: pa.Schema, *, keep: tuple[str, ...] = ()) -> pa.Table:
    """Reorder and promote ``table`` to ``schema`` (never narrowing: :mod:`engine.model.promote`);
    missing columns become nulls.

    Columns named in ``keep`` (internal ones such as delete flags) are carried after the
    schema's columns when present.

    Raises:
        SchemaEvolutionError: a value does not fit the table's type exactly.
    """
    arrays: list[Any] = []
    fields: list[pa.Field] = []
    names = set(table.column_names)
    for field in schema:
        if field.name in names:
            arrays.append(promote_array(table.column(field.name), field.type, field.name))
        else:
            arrays.append(pa.nulls(table.num_rows, field.type))
        fields.append(field.with_nullable(True))
    for name in keep:
        if name in names:
            arrays.append(table.column(name))
            fields.append(table.schema.field(name))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write_base_file(
    storage: Storage,
    rel_path: str,
    table: pa.Table,
    *,
    avro_schema_with_meta: str,
    bloom: BloomFilterSpec,
    compression: str = PARQUET_COMPRESSION_CODEC.default,
    bloom_so_far: BloomFilter | None = None,
) -> int:
    """Write a new base file (never overwriting) and return its size in bytes.

    Args:
        storage: Table storage.
        rel_path: Path relative to the base path (``<partition>/<base file name>``).
        table: Rows with the meta columns first, already aligned to the table schema.
        avro_schema_with_meta: Writer schema recorded in the footer.
        bloom: The bloom filter the footer carries (the write's options).
        compression: Parquet codec (``hoodie.parquet.compression.codec``).
        bloom_so_far: A filter that already holds the keys of the first rows of ``table``
            (:meth:`BloomFilterSpec.continued`); only the later rows' keys are hashed.
    """
    writer = BaseFileWriter(
        storage,
        rel_path,
        table,
        avro_schema_with_meta=avro_schema_with_meta,
        bloom=bloom,
        compression=compression,
        bloom_so_far=bloom_so_far,
    )
    with writer:
        writer.write(table)
        checkpoint("file.mid_write")  # fault tests: a torn file (no footer)
    return writer.size


class BaseFileWriter:
    """One base file written as its rows arrive, in row groups of at most ``ROW_GROUP_ROWS``;
    the footer (Avro schema, min/max record key, bloom filter) is written at the end.

    A writer that streams rows (bulk_insert) holds one row group at a time instead of the
    file's rows; given the rows as one table, the file is what :func:`write_base_file` writes.

    Args:
        first: The first rows (or a sample of them): the dictionary-encoded columns are chosen
            from them unless ``dictionary`` names them; every later table has their schema.
        dictionary: The columns to dictionary-encode (``dictionary`` of an earlier writer of
            similar rows), instead of sampling ``first``.
        bloom_so_far: The filter to go on filling, holding the keys of the first rows the
            writer is given (as many as ``bloom_so_far.num_keys``), instead of an empty one.
    """

    def __init__(
        self,
        storage: Storage,
        rel_path: str,
        first: pa.Table,
        *,
        avro_schema_with_meta: str,
        bloom: BloomFilterSpec,
        compression: str = PARQUET_COMPRESSION_CODEC.default,
        dictionary: bool | list[str] | None = None,
        bloom_so_far: BloomFilter | None = None,
    ) -> None:
        self._storage = storage
        self.rel_path = rel_path
        self._avro = avro_schema_with_meta
        self._bloom = bloom.new_filter() if bloom_so_far is None else bloom_so_far
        self._keys_held = 0 if bloom_so_far is None else bloom_so_far.num_keys
        self._min: str | None = None
        self._max: str | None = None
        self.num_rows = 0
        self.size = 0
        schema = first.schema.remove_metadata()
        self.dictionary = dictionary_columns(first) if dictionary is None else dictionary
        self._out = storage.open_output(rel_path)
        try:
            self._writer = _parquet_writer(self._out, schema, compression, self.dictionary)
        except BaseException:
            self._out.close()
            raise

    def write(self, table: pa.Table) -> None:
        """Append rows (meta columns first, aligned to the table schema)."""
        if table.num_rows == 0:
            return
        lo, hi = _key_range(table)
        self._min = lo if self._min is None else min(self._min, lo)
        self._max = hi if self._max is None else max(self._max, hi)
        held = min(self._keys_held, table.num_rows)
        self._keys_held -= held
        if held < table.num_rows:
            self._bloom.add(table.column(RECORD_KEY_COLUMN).slice(held))
        self._writer.write_table(table.replace_schema_metadata(None), row_group_size=ROW_GROUP_ROWS)
        self.num_rows += table.num_rows

    def close(self) -> int:
        """Write the footer (key/values as Hudi writes them, no ARROW:schema blob) and return
        the file's size in bytes."""
        try:
            footer = _footer(self._avro, self._min, self._max)
            self._writer.add_key_value_metadata({**footer, **self._bloom.footer_entries()})
            self._writer.close()
        finally:
            self._out.close()
        self.size = self._storage.size(self.rel_path)
        return self.size

    def abort(self) -> None:
        """Stop after an error: the file has no Hudi footer keys (its marker names it for the
        rollback, which deletes it)."""
        try:
            self._writer.close()
        finally:
            self._out.close()

    def __enter__(self) -> BaseFileWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _parquet_writer(
    sink: Any, schema: pa.Schema, compression: str, dictionary: bool | list[str]
) -> pq.ParquetWriter:
    """The Parquet writer settings of every file this engine writes with table records."""
    return pq.ParquetWriter(
        sink,
        schema,
        compression="none" if compression == "uncompressed" else compression,
        use_dictionary=dictionary,
        coerce_timestamps="us",
        allow_truncated_timestamps=False,
        store_schema=False,
    )


def _key_range(table: pa.Table) -> tuple[str, str]:
    """Lexicographic min and max record key of non-empty ``table``."""
    bounds = pc.min_max(table.column(RECORD_KEY_COLUMN))
    return str(bounds["min"].as_py()), str(bounds["max"].as_py())


def _footer(avro_schema_with_meta: str, min_key: str | None, max_key: str | None) -> dict[str, str]:
    """Footer key/values as Hudi's Avro write support writes them (no ARROW:schema blob)."""
    metadata = {AVRO_SCHEMA_KEY.decode(): avro_schema_with_meta}
    if min_key is not None and max_key is not None:
        metadata[MIN_RECORD_KEY.decode()] = min_key
        metadata[MAX_RECORD_KEY.decode()] = max_key
    return metadata


def encode_parquet_file(
    table: pa.Table,
    *,
    avro_schema_with_meta: str,
    compression: str = PARQUET_COMPRESSION_CODEC.default,
) -> bytes:
    """The bytes of a Parquet file of ``table`` written as a base file is (codec, dictionary
    choice, timestamp units, footer): the content of a PARQUET_DATA_BLOCK.

    Args:
        table: Rows with the meta columns first, already aligned to the table schema.
        avro_schema_with_meta: Writer schema recorded in the footer.
        compression: Parquet codec (``hoodie.parquet.compression.codec``).
    """
    rows = table.replace_schema_metadata(None)
    sink = pa.BufferOutputStream()
    writer = _parquet_writer(sink, rows.schema, compression, dictionary_columns(rows))
    min_key, max_key = _key_range(rows) if rows.num_rows else (None, None)
    writer.write_table(rows, row_group_size=ROW_GROUP_ROWS)
    writer.add_key_value_metadata(_footer(avro_schema_with_meta, min_key, max_key))
    writer.close()
    return bytes(sink.getvalue())


def dictionary_columns(table: pa.Table) -> bool | list[str]:
    """The columns worth dictionary encoding: at most one distinct value per two rows among the
    first rows. A table with nested columns keeps dictionaries everywhere (Parquet's default)."""
    if any(pa.types.is_nested(f.type) for f in table.schema):
        return True
    sample = table.slice(0, _DICTIONARY_SAMPLE_ROWS)
    if sample.num_rows == 0:
        return True
    limit = sample.num_rows // 2
    return [
        name
        for name in sample.column_names
        if pc.count_distinct(sample.column(name), mode="all").as_py() <= limit
    ]


def read_base_file(storage: Storage, rel_path: str, columns: list[str] | None = None) -> pa.Table:
    """Read a base file (or some of its columns)."""
    with storage.open_input(rel_path) as f:
        table = pq.read_table(f, columns=columns)
    return table.replace_schema_metadata(None)


def read_base_file_with_footer(
    storage: Storage, rel_path: str
) -> tuple[pa.Table, dict[bytes, bytes]]:
    """A base file's rows and its footer key/values, in one read (a rewrite of the file group
    goes on filling the stored bloom filter instead of hashing every stored key again)."""
    with storage.open_input(rel_path) as f:
        table = pq.read_table(f)
    footer = dict(table.schema.metadata or {})
    return table.replace_schema_metadata(None), footer


def read_record_key_range(storage: Storage, rel_path: str) -> tuple[str, str] | None:
    """The footer's min/max record key, or ``None`` when the file carries none."""
    with storage.open_input(rel_path) as f:
        meta = pq.read_metadata(f).metadata or {}
    lo, hi = meta.get(MIN_RECORD_KEY), meta.get(MAX_RECORD_KEY)
    if lo is None or hi is None:
        return None
    return lo.decode(), hi.decode()


def avro_schema_with_meta(commit_schema: str) -> str:
    """Writer schema for footers and log headers: the commit schema plus the meta fields."""
    from engine.model.schema import add_meta_fields

    return schema_json(add_meta_fields(json.loads(commit_schema)))


def read_bloom_filter(storage: Storage, rel_path: str) -> BloomFilter | None:
    """The footer's bloom filter (Hudi's or ours), or ``None`` when the file carries none.

    Raises:
        HudiError: the footer holds a value that is not a filter Hudi serializes.
    """
    with storage.open_input(rel_path) as f:
        meta = pq.read_metadata(f).metadata or {}
    return decode_footer_filter(meta, rel_path)
