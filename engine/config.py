"""Every ``hoodie.*`` option the engine understands, as typed options.

This is the only module that spells ``hoodie.*`` key strings. Each key is a :class:`ConfigOption`
(exact key, parser, default, doc, aliases); :func:`parse_options` turns user-supplied options
(strings or native Python values, as dbt passes them) into a :class:`HoodieConfig`, rejecting
unknown ``hoodie.*`` keys and malformed values with a :class:`~engine.errors.ConfigError` that
names the key and the value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from engine.errors import ConfigError
from engine.index import IndexType as IndexType

T = TypeVar("T")
E = TypeVar("E", bound=StrEnum)


class TableType(StrEnum):
    """``hoodie.table.type``: how a table stores updates."""

    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


class BloomFilterType(StrEnum):
    """``hoodie.bloom.index.filter.type``: Hudi's ``BloomFilterTypeCode`` of base-file filters."""

    SIMPLE = "SIMPLE"
    DYNAMIC_V0 = "DYNAMIC_V0"


class WriteOperation(StrEnum):
    """``hoodie.datasource.write.operation``, spelled as Hudi's datasource spells it."""

    UPSERT = "upsert"
    INSERT = "insert"
    BULK_INSERT = "bulk_insert"
    DELETE = "delete"
    INSERT_OVERWRITE = "insert_overwrite"
    INSERT_OVERWRITE_TABLE = "insert_overwrite_table"
    DELETE_PARTITION = "delete_partition"

    @property
    def is_replace(self) -> bool:
        """Completes as a replacecommit naming the file groups it replaces."""
        return self in _REPLACE_OPERATIONS

    @property
    def is_insert(self) -> bool:
        """Every record is new: no index lookup of stored keys."""
        return self in (WriteOperation.INSERT, WriteOperation.BULK_INSERT)

    @property
    def packs_small_files(self) -> bool:
        """Inserts fill base files below the small file limit before new file groups."""
        return self in (WriteOperation.UPSERT, WriteOperation.INSERT)

    @property
    def looks_up_keys(self) -> bool:
        """Tags records with the file group holding their key (the index lookup)."""
        return self in (WriteOperation.UPSERT, WriteOperation.DELETE)

    @property
    def type_name(self) -> str:
        """The ``WriteOperationType`` enum name commit metadata carries (``UPSERT``)."""
        return self.name


_REPLACE_OPERATIONS = frozenset(
    {
        WriteOperation.INSERT_OVERWRITE,
        WriteOperation.INSERT_OVERWRITE_TABLE,
        WriteOperation.DELETE_PARTITION,
    }
)


# ---------------------------------------------------------------------------------------------
# parsers: str -> typed value; raise ValueError with a short reason on bad input


def parse_str(value: str) -> str:
    return value


def parse_int(value: str) -> int:
    return int(value.strip())


def parse_positive_int(value: str) -> int:
    number = int(value.strip())
    if number <= 0:
        raise ValueError("expected a positive integer")
    return number


def parse_positive_float(value: str) -> float:
    number = float(value.strip())
    if not 0.0 < number < float("inf"):
        raise ValueError("expected a positive number")
    return number


def parse_non_negative_int(value: str) -> int:
    number = int(value.strip())
    if number < 0:
        raise ValueError("expected a non-negative integer")
    return number


def parse_probability(value: str) -> float:
    """A probability strictly between 0 and 1 (a false positive rate)."""
    number = float(value.strip())
    if not 0.0 < number < 1.0:
        raise ValueError("expected a number strictly between 0 and 1")
    return number


def parse_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ValueError("expected true or false")


def parse_list(value: str) -> tuple[str, ...]:
    """Comma-separated list, Hudi style (``"a,b"``); blanks dropped."""
    return tuple(part.strip() for part in value.split(",") if part.strip())


@dataclass(frozen=True)
class Choice(Generic[T]):
    """Parser for an enum-like option: case-insensitive on ``allowed`` and synonyms, returning
    the canonical value. ``allowed`` is what the config reference lists."""

    allowed: tuple[str, ...]
    canonical: Mapping[str, T]

    def __call__(self, value: str) -> T:
        try:
            return self.canonical[value.strip().lower()]
        except KeyError:
            raise ValueError(f"expected one of {', '.join(self.allowed)}") from None


def choice(*allowed: str, synonyms: Mapping[str, str] | None = None) -> Choice[str]:
    """Parser for an enum-like option: case-insensitive, returns the canonical spelling."""
    canonical = {a.lower(): a for a in allowed}
    for alias, target in (synonyms or {}).items():
        canonical[alias.lower()] = target
    return Choice(tuple(allowed), canonical)


def enum_choice(enum: type[E], synonyms: Mapping[str, E] | None = None) -> Choice[E]:
    """Parser for an enum option: case-insensitive on the members' values and ``synonyms``."""
    canonical: dict[str, E] = {member.value.lower(): member for member in enum}
    for alias, target in (synonyms or {}).items():
        canonical[alias.lower()] = target
    return Choice(tuple(member.value for member in enum), canonical)


def _to_text(value: Any) -> str:
    """Options arrive as strings (Spark, CLI) or native values (dbt YAML): normalise to text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


# ---------------------------------------------------------------------------------------------
# options


@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """One ``hoodie.*`` key: its exact string, how to parse it, its default and why it exists.

    ``T`` is the type :meth:`HoodieConfig.get` returns: an option declared with
    :func:`_option` has a default of its own type, an option declared with :func:`_optional`
    is ``T | None`` (unset means absent, never a made-up value).
    """

    key: str
    parser: Callable[[str], T]
    default: T
    doc: str
    aliases: tuple[str, ...] = ()

    def parse(self, value: Any, *, given_as: str | None = None) -> T:
        text = _to_text(value)
        try:
            return self.parser(text)
        except ValueError as e:
            raise ConfigError(
                f"Failed to parse {text!r} for config {given_as or self.key!r}: {e}"
            ) from None


_REGISTRY: dict[str, ConfigOption[Any]] = {}


EMPTY: tuple[str, ...] = ()


def _register(opt: ConfigOption[T]) -> ConfigOption[T]:
    for name in (opt.key, *opt.aliases):
        if name in _REGISTRY:
            raise RuntimeError(f"duplicate config key {name}")  # programming error at import
        _REGISTRY[name] = opt
    return opt


def _option(
    key: str,
    parser: Callable[[str], T],
    default: T,
    doc: str,
    aliases: tuple[str, ...] = (),
) -> ConfigOption[T]:
    """An option with a typed default: reading it never yields ``None``."""
    return _register(ConfigOption(key, parser, default, doc, aliases))


def _optional(
    key: str,
    parser: Callable[[str], T],
    doc: str,
    aliases: tuple[str, ...] = (),
) -> ConfigOption[T | None]:
    """An option without a default: reading it yields ``None`` when it is not set."""
    return _register(ConfigOption[T | None](key, parser, None, doc, aliases))


_TABLE_TYPE = enum_choice(
    TableType,
    synonyms={
        "cow": TableType.COPY_ON_WRITE,
        "mor": TableType.MERGE_ON_READ,
        "copy-on-write": TableType.COPY_ON_WRITE,
        "merge-on-read": TableType.MERGE_ON_READ,
    },
)

OVERWRITE_WITH_LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_PAYLOAD = "org.apache.hudi.common.model.EventTimeAvroPayload"
PARTIAL_UPDATE_PAYLOAD = "org.apache.hudi.common.model.PartialUpdateAvroPayload"
OVERWRITE_NON_DEFAULTS_PAYLOAD = (
    "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload"
)
PAYLOAD_CLASSES = (
    OVERWRITE_WITH_LATEST_PAYLOAD,
    DEFAULT_PAYLOAD,
    EVENT_TIME_PAYLOAD,
    PARTIAL_UPDATE_PAYLOAD,
    OVERWRITE_NON_DEFAULTS_PAYLOAD,
)
_PAYLOAD = choice(*PAYLOAD_CLASSES, synonyms={c.rsplit(".", 1)[1]: c for c in PAYLOAD_CLASSES})

SIMPLE_KEYGEN = "org.apache.hudi.keygen.SimpleKeyGenerator"
COMPLEX_KEYGEN = "org.apache.hudi.keygen.ComplexKeyGenerator"
NON_PARTITIONED_KEYGEN = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
TIMESTAMP_KEYGEN = "org.apache.hudi.keygen.TimestampBasedKeyGenerator"
KEYGEN_CLASSES = (SIMPLE_KEYGEN, COMPLEX_KEYGEN, NON_PARTITIONED_KEYGEN, TIMESTAMP_KEYGEN)
KEYGEN_TYPES = {
    "SIMPLE": SIMPLE_KEYGEN,
    "COMPLEX": COMPLEX_KEYGEN,
    "NON_PARTITION": NON_PARTITIONED_KEYGEN,
    "TIMESTAMP": TIMESTAMP_KEYGEN,
}
_KEYGEN_CLASS = choice(
    *KEYGEN_CLASSES,
    synonyms={
        **{c.rsplit(".", 1)[1]: c for c in KEYGEN_CLASSES},
        # Spark SQL writes the "Sql"-prefixed wrapper of the same generators
        **{
            f"org.apache.hudi.keygen.Sql{c.rsplit('.', 1)[1]}": c
            for c in (SIMPLE_KEYGEN, COMPLEX_KEYGEN, NON_PARTITIONED_KEYGEN)
        },
        # Spark SQL writes the Spark-specific generator names into hoodie.properties
        "org.apache.spark.sql.hudi.command.SqlKeyGenerator": COMPLEX_KEYGEN,
    },
)


# --- table properties (hoodie.properties) ---------------------------------------------------
TABLE_NAME = _optional(
    "hoodie.table.name",
    parse_str,
    "Table name; with the database name it makes the checksum.",
    aliases=("hoodie.datasource.write.table.name",),
)
DATABASE_NAME = _optional("hoodie.database.name", parse_str, "Database of the table.")
TABLE_TYPE = _option(
    "hoodie.table.type",
    _TABLE_TYPE,
    TableType.COPY_ON_WRITE,
    "COPY_ON_WRITE or MERGE_ON_READ.",
)
TABLE_VERSION = _option("hoodie.table.version", parse_int, 6, "Table format version.")
TIMELINE_LAYOUT_VERSION = _option(
    "hoodie.timeline.layout.version", parse_int, 1, "Timeline layout; 1 for table version 6."
)
RECORDKEY_FIELDS = _optional(
    "hoodie.table.recordkey.fields", parse_list, "Record key fields, persisted."
)
PARTITION_FIELDS = _option(
    "hoodie.table.partition.fields", parse_list, EMPTY, "Partition fields, persisted."
)
PRECOMBINE_FIELD = _optional(
    "hoodie.table.precombine.field", parse_str, "Ordering field, persisted."
)
KEYGENERATOR_CLASS = _optional(
    "hoodie.table.keygenerator.class",
    _KEYGEN_CLASS,
    "Key generator, persisted.",
)
KEYGENERATOR_TYPE_TABLE = _optional(
    "hoodie.table.keygenerator.type",
    choice(*KEYGEN_TYPES),
    "Key generator type (table version 8 spelling).",
)
HIVE_STYLE_PARTITIONING = _option(
    "hoodie.datasource.write.hive_style_partitioning",
    parse_bool,
    False,
    "Partition paths as field=value.",
)
URL_ENCODE_PARTITIONING = _option(
    "hoodie.datasource.write.partitionpath.urlencode",
    parse_bool,
    False,
    "Percent-encode partition path values.",
)
DROP_PARTITION_COLUMNS = _option(
    "hoodie.datasource.write.drop.partition.columns",
    parse_bool,
    False,
    "Must stay false: readers need partition columns inside the data files.",
)
ARCHIVELOG_FOLDER = _option(
    "hoodie.archivelog.folder", parse_str, "archived", "Archived timeline folder under .hoodie."
)
PAYLOAD_CLASS = _option(
    "hoodie.compaction.payload.class",
    _PAYLOAD,
    OVERWRITE_WITH_LATEST_PAYLOAD,
    "Payload class persisted in the table; decides merge semantics.",
)
RECORD_MERGER_STRATEGY = _option(
    "hoodie.compaction.record.merger.strategy",
    parse_str,
    "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
    "Record merger strategy id.",
)
BASE_FILE_FORMAT = _option(
    "hoodie.table.base.file.format", choice("PARQUET"), "PARQUET", "Base file format."
)
POPULATE_META_FIELDS = _option(
    "hoodie.populate.meta.fields", parse_bool, True, "Write the _hoodie_* meta columns."
)
TIMELINE_TIMEZONE = _option(
    "hoodie.table.timeline.timezone",
    choice("UTC", "LOCAL"),
    "UTC",
    "Time zone of instant times.",
)
CREATE_SCHEMA = _optional("hoodie.table.create.schema", parse_str, "Avro schema at creation.")
METADATA_PARTITIONS = _option(
    "hoodie.table.metadata.partitions",
    parse_list,
    EMPTY,
    "Metadata table partitions that are ready: readers list through `files` when it is named.",
)
METADATA_PARTITIONS_INFLIGHT = _option(
    "hoodie.table.metadata.partitions.inflight", parse_list, EMPTY, "Pending MDT partitions."
)
METADATA_ENABLE = _optional(
    "hoodie.metadata.enable",
    parse_bool,
    "Write the metadata table (its files partition) in each data transaction (table versions "
    "8 and 9); false removes a metadata table the table has, as Hudi does when it is disabled; "
    "unset: a version 8/9 table keeps the metadata table it has current, none is created. "
    "Reads list through a ready metadata table (and skip data by its column stats) unless a "
    "read sets it to false, as Hudi 1.x's readers do.",
)
METADATA_COMPACT_MAX_DELTA_COMMITS = _option(
    "hoodie.metadata.compact.max.delta.commits",
    parse_positive_int,
    10,
    "Metadata table deltacommits since its last compaction that trigger the next one.",
)
METADATA_CLEANER_COMMITS_RETAINED = _option(
    "hoodie.metadata.cleaner.commits.retained",
    parse_positive_int,
    20,
    "Metadata table commits its cleaner keeps readable (KEEP_LATEST_COMMITS); Hudi 1.x keeps "
    "at least 20, and 1.2x the data table's hoodie.cleaner.commits.retained when that is more.",
)
TABLE_CHECKSUM = _optional("hoodie.table.checksum", parse_int, "CRC32 of '<database>.<table>'.")
TABLE_INITIAL_VERSION = _optional(
    "hoodie.table.initial.version", parse_int, "Version the table was created with."
)
PARTITION_METAFILE_USE_BASE_FORMAT = _option(
    "hoodie.partition.metafile.use.base.format",
    parse_bool,
    False,
    "Write .hoodie_partition_metadata as parquet (not supported: always text).",
)
BOOTSTRAP_INDEX_ENABLE = _optional(
    "hoodie.bootstrap.index.enable", parse_bool, "Bootstrap index (persisted by Hudi)."
)
TABLE_CDC_ENABLED = _option(
    "hoodie.table.cdc.enabled",
    parse_bool,
    False,
    "CDC logging: writes .cdc log files beside the base files a write rewrites (set when the "
    "table is created; persisted).",
)
CDC_SUPPLEMENTAL_LOGGING_MODE = _option(
    "hoodie.table.cdc.supplemental.logging.mode",
    choice(
        "OP_KEY_ONLY",
        "DATA_BEFORE",
        "DATA_BEFORE_AFTER",
        synonyms={
            "op_key": "OP_KEY_ONLY",
            "cdc_op_key": "OP_KEY_ONLY",
            "cdc_data_before": "DATA_BEFORE",
            "cdc_data_before_after": "DATA_BEFORE_AFTER",
        },
    ),
    "DATA_BEFORE_AFTER",
    "What a .cdc record holds besides op: the key only, the before image, or both images "
    "(0.13's lowercase names accepted; persisted).",
)

# --- table properties of table versions 8 and 9 (Hudi 1.x) ----------------------------------
TIMELINE_PATH = _option(
    "hoodie.timeline.path", parse_str, "timeline", "Active timeline folder under .hoodie (v8+)."
)
TIMELINE_HISTORY_PATH = _option(
    "hoodie.timeline.history.path",
    parse_str,
    "history",
    "LSM archived timeline folder under the timeline folder (v8+).",
)
ORDERING_FIELDS = _option(
    "hoodie.table.ordering.fields",
    parse_list,
    EMPTY,
    "Ordering field(s), persisted (table version 9 spelling of the precombine field).",
)
RECORD_MERGE_MODE = _optional(
    "hoodie.record.merge.mode",
    choice("COMMIT_TIME_ORDERING", "EVENT_TIME_ORDERING", "CUSTOM"),
    "Merge semantics of records with the same key (v8+): latest commit or greatest ordering "
    "value wins; CUSTOM is a user merger (not supported).",
)
RECORD_MERGE_STRATEGY_ID = _optional(
    "hoodie.record.merge.strategy.id", parse_str, "Record merger strategy id (v8+)."
)
PARTIAL_UPDATE_MODE = _optional(
    "hoodie.table.partial.update.mode",
    parse_str,
    "How a record's missing fields merge (v9): IGNORE_DEFAULTS keeps the stored value of a "
    "null field (partial-update payloads); NONE replaces the whole record.",
)
LEGACY_PAYLOAD_CLASS = _optional(
    "hoodie.table.legacy.payload.class",
    parse_str,
    "The payload class a version-9 table was created with, its merge mode standing in for it.",
)
TABLE_FORMAT = _option(
    "hoodie.table.format", parse_str, "native", "Table format plugin; only native is read."
)
INDEX_DEFS_PATH = _optional(
    "hoodie.table.index.defs.path", parse_str, "Index definitions of the metadata table (v8+)."
)
WRITE_TABLE_VERSION = _option(
    "hoodie.write.table.version",
    parse_int,
    6,
    "Table version a new table is written in (6, 8 or 9); an existing table keeps its own.",
)

# --- write options ----------------------------------------------------------------------------
RECORDKEY_FIELD = _optional(
    "hoodie.datasource.write.recordkey.field",
    parse_list,
    "Record key field(s); several fields make a complex key.",
)
PARTITIONPATH_FIELD = _option(
    "hoodie.datasource.write.partitionpath.field",
    parse_list,
    EMPTY,
    "Partition field(s); none means non-partitioned.",
)
WRITE_PRECOMBINE_FIELD = _optional(
    "hoodie.datasource.write.precombine.field",
    parse_str,
    "Ordering field deciding which version of a record wins.",
)
OPERATION = _option(
    "hoodie.datasource.write.operation",
    enum_choice(WriteOperation),
    WriteOperation.UPSERT,
    "Write operation.",
)
WRITE_TABLE_TYPE = _option(
    "hoodie.datasource.write.table.type",
    _TABLE_TYPE,
    TableType.COPY_ON_WRITE,
    "Table type used when the write creates the table.",
)
WRITE_KEYGENERATOR_CLASS = _optional(
    "hoodie.datasource.write.keygenerator.class",
    _KEYGEN_CLASS,
    "Key generator class; inferred from the key and partition fields when absent.",
)
WRITE_KEYGENERATOR_TYPE = _optional(
    "hoodie.datasource.write.keygenerator.type",
    choice(*KEYGEN_TYPES),
    "Key generator type (SIMPLE, COMPLEX, NON_PARTITION, TIMESTAMP).",
)
WRITE_PAYLOAD_CLASS = _optional(
    "hoodie.datasource.write.payload.class",
    _PAYLOAD,
    "Payload class for this write; persisted as the table's payload on creation.",
)
PARTITIONS_TO_DELETE = _option(
    "hoodie.datasource.write.partitions.to.delete",
    parse_list,
    EMPTY,
    "Partitions removed by delete_partition.",
)
PARQUET_MAX_FILE_SIZE = _option(
    "hoodie.parquet.max.file.size", parse_int, 120 * 1024 * 1024, "Target base file size."
)
PARQUET_SMALL_FILE_LIMIT = _option(
    "hoodie.parquet.small.file.limit",
    parse_int,
    100 * 1024 * 1024,
    "Base files below this size receive new inserts (0 disables).",
)
COPY_ON_WRITE_RECORD_SIZE_ESTIMATE = _option(
    "hoodie.copyonwrite.record.size.estimate",
    parse_int,
    1024,
    "Record size used before any commit gives a measured average.",
)
PARQUET_COMPRESSION_CODEC = _option(
    "hoodie.parquet.compression.codec",
    choice("gzip", "snappy", "zstd", "uncompressed"),
    "zstd",
    "Base file compression. Default zstd, not Hudi's gzip: measured on a 100k-row base file "
    "(bench/codecs.py), zstd writes ~20x faster than gzip into a file of the same size and "
    "reads ~3x faster; snappy is as fast but 30% larger. Every reader of Hudi tables (Spark, "
    "Apache Hudi's Java readers, hudi-rs) decodes it.",
)
ALLOW_OPERATION_METADATA_FIELD = _option(
    "hoodie.allow.operation.metadata.field",
    parse_bool,
    False,
    "Write the _hoodie_operation meta column (I insert, U update) after the five meta columns "
    "of base files and log blocks. A write option, not a table property (Hudi infers it from "
    "the data files); a table whose files carry the column keeps writing it.",
)
COMBINE_BEFORE_INSERT = _option(
    "hoodie.combine.before.insert",
    parse_bool,
    False,
    "Precombine duplicate keys within an insert batch.",
)
BULKINSERT_SORT_MODE = _option(
    "hoodie.bulkinsert.sort.mode",
    choice(
        "NONE",
        "GLOBAL_SORT",
        "PARTITION_SORT",
        "PARTITION_PATH_REPARTITION",
        "PARTITION_PATH_REPARTITION_AND_SORT",
    ),
    "NONE",
    "How bulk_insert lays records out. NONE (Hudi's default): each Spark task writes the "
    "records it reads, no shuffle, as Spark's own Parquet write. The PARTITION_* modes "
    "shuffle the records to file groups of one partition path each, keys sorted in every "
    "file. GLOBAL_SORT (disjoint key ranges across files) is not implemented.",
)
COMBINE_BEFORE_UPSERT = _option(
    "hoodie.combine.before.upsert",
    parse_bool,
    True,
    "Precombine duplicate keys within an upsert batch.",
)
INSERT_DROP_DUPS = _option(
    "hoodie.datasource.write.insert.drop.duplicates",
    parse_bool,
    False,
    "Drop incoming records whose key is already stored: not implemented; true is refused.",
)

# --- the driver-side write (engine.spark.local_runner); the engine's own keys, not Hudi's --------
WRITE_LOCAL_ENABLED = _option(
    "hoodie.write.local.enabled",
    parse_bool,
    True,
    "On a local[*] master (not Spark Connect), the write job of a batch of at most "
    "hoodie.write.local.max.bytes (the one-job write's, the bucket index's, a bulk_insert's, "
    "the two-job write's) is done in the driver process over Arrow (no Python worker round "
    "trip); false: always in Spark tasks.",
)
WRITE_LOCAL_MAX_BYTES = _option(
    "hoodie.write.local.max.bytes",
    parse_non_negative_int,
    128 * 1024 * 1024,
    "Largest batch, as Spark's optimizer estimates its size, written in the driver process on "
    "a local master (see hoodie.write.local.enabled); a batch Spark cannot size is not, unless "
    "this is 9223372036854775807 (Long.MaxValue: every batch).",
)

# --- index (engine.write.index, engine.write.global_index) -----------------------------------
BLOOM_FILTER_TYPE = _option(
    "hoodie.bloom.index.filter.type",
    enum_choice(BloomFilterType),
    BloomFilterType.DYNAMIC_V0,
    "The bloom filter of record keys every base file carries in its footer "
    "(org.apache.hudi.bloomfilter), read by Hudi's BLOOM and GLOBAL_BLOOM indexes: DYNAMIC_V0 "
    "(Hudi's default: a new filter row every hoodie.index.bloom.num_entries keys, up to "
    "hoodie.bloom.index.filter.dynamic.max.entries) or SIMPLE (one filter).",
)
BLOOM_FILTER_NUM_ENTRIES = _option(
    "hoodie.index.bloom.num_entries",
    parse_positive_int,
    60_000,
    "Keys a base file's bloom filter (a row of a DYNAMIC_V0 filter) is sized for.",
)
BLOOM_FILTER_FPP = _option(
    "hoodie.index.bloom.fpp",
    parse_probability,
    1e-9,
    "False positive rate of a bloom filter holding hoodie.index.bloom.num_entries keys.",
)
BLOOM_FILTER_DYNAMIC_MAX_ENTRIES = _option(
    "hoodie.bloom.index.filter.dynamic.max.entries",
    parse_positive_int,
    100_000,
    "DYNAMIC_V0: rows are added while rows x num_entries is below this; past it the rows take "
    "keys in turn and the false positive rate grows.",
)
BLOOM_INDEX_PRUNE_BY_RANGES = _option(
    "hoodie.bloom.index.prune.by.ranges",
    parse_bool,
    True,
    "BLOOM and GLOBAL_BLOOM: only the base files whose footer key range (min/max record key) "
    "covers an incoming key are checked; false checks the bloom filter of every file.",
)
BLOOM_INDEX_UPDATE_PARTITION_PATH = _option(
    "hoodie.bloom.index.update.partition.path",
    parse_bool,
    True,
    "GLOBAL_BLOOM: a key arriving with a new partition path is deleted from its old partition "
    "and written to the new one; false updates it in place in its old partition.",
)
SIMPLE_INDEX_UPDATE_PARTITION_PATH = _option(
    "hoodie.simple.index.update.partition.path",
    parse_bool,
    True,
    "GLOBAL_SIMPLE: a key arriving with a new partition path is deleted from its old partition "
    "and written to the new one; false updates it in place in its old partition.",
)

RECORD_INDEX_ENABLE = _optional(
    "hoodie.metadata.record.index.enable",
    parse_bool,
    "Keep the metadata table's record_index partition (every record key -> its partition and "
    "file group; table versions 8 and 9, with hoodie.metadata.enable). Hudi's default is off; "
    "unset, a table keeps the record index it has; hoodie.index.type=RECORD_INDEX turns it on.",
)
RECORD_INDEX_UPDATE_PARTITION_PATH = _option(
    "hoodie.record.index.update.partition.path",
    parse_bool,
    False,
    "RECORD_INDEX: a key arriving with a new partition path is deleted from its old partition "
    "and written to the new one; false (Hudi's default) updates it in place in its old "
    "partition.",
)
RECORD_INDEX_MIN_FILE_GROUP_COUNT = _option(
    "hoodie.metadata.record.index.min.filegroup.count",
    parse_positive_int,
    10,
    "record_index: the fewest file groups the partition is created with (fixed for its life); "
    "equal to the max count it is the count, whatever the table's size.",
    aliases=("hoodie.metadata.global.record.level.index.min.filegroup.count",),
)
RECORD_INDEX_MAX_FILE_GROUP_COUNT = _option(
    "hoodie.metadata.record.index.max.filegroup.count",
    parse_positive_int,
    10_000,
    "record_index: the most file groups the partition is created with.",
    aliases=("hoodie.metadata.global.record.level.index.max.filegroup.count",),
)
RECORD_INDEX_MAX_FILE_GROUP_SIZE = _option(
    "hoodie.metadata.record.index.max.filegroup.size",
    parse_positive_int,
    1024 * 1024 * 1024,
    "record_index: bytes a file group may reach (at 48 bytes a mapping) before the estimate "
    "at creation adds one; a large file group takes longer to compact.",
)
RECORD_INDEX_GROWTH_FACTOR = _option(
    "hoodie.metadata.record.index.growth.factor",
    parse_positive_float,
    2.0,
    "record_index: the table's record count is multiplied by this when the file group count "
    "is estimated at creation, room for the table to grow into.",
)

TIMESTAMP_TYPE = _optional(
    "hoodie.keygen.timebased.timestamp.type",
    choice("UNIX_TIMESTAMP", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS", "DATE_STRING", "SCALAR"),
    "How the timestamp-based key generator reads the partition field.",
    aliases=("hoodie.deltastreamer.keygen.timebased.timestamp.type",),
)
TIMESTAMP_SCALAR_TIME_UNIT = _option(
    "hoodie.keygen.timebased.timestamp.scalar.time.unit",
    choice("NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS"),
    "SECONDS",
    "Unit of SCALAR timestamps.",
    aliases=("hoodie.deltastreamer.keygen.timebased.timestamp.scalar.time.unit",),
)
TIMESTAMP_INPUT_DATE_FORMAT = _option(
    "hoodie.keygen.timebased.input.dateformat",
    parse_str,
    "",
    "Input pattern(s) for DATE_STRING timestamps.",
    aliases=("hoodie.deltastreamer.keygen.timebased.input.dateformat",),
)
TIMESTAMP_INPUT_DATE_FORMAT_LIST_DELIMITER = _option(
    "hoodie.keygen.timebased.input.dateformat.list.delimiter.regex",
    parse_str,
    ",",
    "Separator between several input patterns.",
    aliases=("hoodie.deltastreamer.keygen.timebased.input.dateformat.list.delimiter.regex",),
)
TIMESTAMP_OUTPUT_DATE_FORMAT = _option(
    "hoodie.keygen.timebased.output.dateformat",
    parse_str,
    "",
    "Output pattern of the partition path (Java date pattern).",
    aliases=("hoodie.deltastreamer.keygen.timebased.output.dateformat",),
)
TIMESTAMP_TIMEZONE = _option(
    "hoodie.keygen.timebased.timezone",
    parse_str,
    "UTC",
    "Default key generator time zone.",
    aliases=("hoodie.deltastreamer.keygen.timebased.timezone",),
)
TIMESTAMP_INPUT_TIMEZONE = _option(
    "hoodie.keygen.timebased.input.timezone",
    parse_str,
    "",
    "Time zone of input strings.",
    aliases=("hoodie.deltastreamer.keygen.timebased.input.timezone",),
)
TIMESTAMP_OUTPUT_TIMEZONE = _option(
    "hoodie.keygen.timebased.output.timezone",
    parse_str,
    "",
    "Time zone of the output path.",
    aliases=("hoodie.deltastreamer.keygen.timebased.output.timezone",),
)

# --- table services ---------------------------------------------------------------------------
CLEANER_POLICIES = ("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS")
CLEANER_POLICY = _option(
    "hoodie.cleaner.policy",
    choice(*CLEANER_POLICIES),
    "KEEP_LATEST_COMMITS",
    "Which older file slices the cleaner deletes.",
)
CLEANER_COMMITS_RETAINED = _option(
    "hoodie.cleaner.commits.retained",
    parse_int,
    10,
    "KEEP_LATEST_COMMITS: commits whose file slices stay readable (time travel, incremental).",
)
CLEANER_FILEVERSIONS_RETAINED = _option(
    "hoodie.cleaner.fileversions.retained",
    parse_int,
    3,
    "KEEP_LATEST_FILE_VERSIONS: file slices kept per file group.",
)
CLEAN_AUTOMATIC = _option(
    "hoodie.clean.automatic", parse_bool, True, "Clean after every commit when due."
)
KEEP_MIN_COMMITS = _option(
    "hoodie.keep.min.commits", parse_int, 20, "Archival keeps at least this many instants."
)
KEEP_MAX_COMMITS = _option(
    "hoodie.keep.max.commits", parse_int, 30, "Archival starts once this many are active."
)
TIMELINE_COMPACTION_BATCH_SIZE = _option(
    "hoodie.timeline.compaction.batch.size",
    parse_int,
    10,
    "Archived timeline (v8+): this many files of one LSM level are merged into the next level.",
)

# --- merge-on-read: log files and compaction --------------------------------------------------
LOGFILE_DATA_BLOCK_MAX_SIZE = _option(
    "hoodie.logfile.data.block.max.size",
    parse_int,
    256 * 1024 * 1024,
    "Estimated bytes of records buffered before a log data block is flushed.",
)
LOGFILE_MAX_SIZE = _option(
    "hoodie.logfile.max.size",
    parse_int,
    1024 * 1024 * 1024,
    "A log file past this size rolls over to the next log version.",
)
LOGFILE_TO_PARQUET_COMPRESSION_RATIO = _option(
    "hoodie.logfile.to.parquet.compression.ratio",
    parse_positive_float,
    0.35,
    "Merge-on-read on an index that finds keys in log files (RECORD_INDEX): a file slice's "
    "log bytes count this fraction of their size when the slice is sized as a small file "
    "that may take inserts (base file + logs x ratio < hoodie.parquet.max.file.size).",
)


LOG_BLOCK_FORMATS = ("avro", "parquet")
_LOG_BLOCK_FORMAT = choice(*LOG_BLOCK_FORMATS)


def parse_log_block_format(value: str) -> str:
    """``avro`` or ``parquet``; HFile blocks are refused (Hudi writes them for the metadata
    table only, whose files this engine never writes)."""
    lowered = value.strip().lower()
    if lowered == "hfile":
        raise ValueError(
            "hfile data blocks are written for the metadata table only; "
            "a data table's log blocks are avro or parquet"
        )
    return _LOG_BLOCK_FORMAT(lowered)


LOGFILE_DATA_BLOCK_FORMAT = _option(
    "hoodie.logfile.data.block.format",
    parse_log_block_format,
    "avro",
    "Encoding of the data blocks merge-on-read appends write: avro (AVRO_DATA_BLOCK, Hudi's "
    "default) or parquet (PARQUET_DATA_BLOCK: a Parquet file written with the base files' codec "
    "and dictionary settings). Avro stays the default because Parquet is not faster to write "
    "at the block sizes upserts produce: on the benchmark table's rows (CPU medians, zstd) a "
    "100k-row block encodes in 0.05 s against Avro's 0.11 s, but a 12.5k-row block (a bucket "
    "of a 100k-row batch into 2 partitions) in 10.1 ms against 8.9 ms, and that upsert takes "
    "the same time either way. Parquet blocks are 2.6x smaller and decode 3-4x faster (a "
    "100k-row slice merges in 0.07 s against 0.17 s): set parquet for read-heavy tables. Apache "
    "Hudi's readers and hudi-rs read both. Delete blocks stay delete blocks, CDC blocks Avro.",
)
INDEX_TYPES = IndexType.names()
INDEX_TYPE = _option(
    "hoodie.index.type",
    enum_choice(IndexType),
    IndexType.SIMPLE,
    "How a write finds the file group of a stored key: SIMPLE joins the batch with the record "
    "keys of the touched partitions' latest base files; GLOBAL_SIMPLE with those of every "
    "partition (a key is unique in the whole table); BLOOM and GLOBAL_BLOOM look the keys up "
    "in the same files, pruned by the footers' key ranges and bloom filters first (Hudi's "
    "HoodieBloomIndex and HoodieGlobalBloomIndex); BUCKET hashes the key to one of "
    "hoodie.bucket.index.num.buckets file groups per partition (no lookup); RECORD_INDEX looks "
    "keys up in the metadata table's record_index partition (global; table versions 8 and 9, "
    "turns the metadata table and its record index on). Persisted in hoodie.properties when "
    "BUCKET.",
)
BUCKET_INDEX_ENGINE = _option(
    "hoodie.bucket.index.engine",
    choice("SIMPLE"),
    "SIMPLE",
    "Bucket index engine: SIMPLE, a fixed number of buckets per partition "
    "(CONSISTENT_HASHING is not implemented).",
)
BUCKET_INDEX_NUM_BUCKETS = _option(
    "hoodie.bucket.index.num.buckets",
    parse_int,
    4,
    "Bucket index: file groups (buckets) per partition; fixed for the table's life.",
)
BUCKET_INDEX_HASH_FIELD = _optional(
    "hoodie.bucket.index.hash.field",
    parse_list,
    "Bucket index: record key fields hashed to the bucket (default: the record key fields).",
)
MERGE_SMALL_FILE_GROUP_CANDIDATES_LIMIT = _option(
    "hoodie.merge.small.file.group.candidates.limit",
    parse_int,
    1,
    "Merge-on-read: how many small file groups (without log files) may take inserts.",
)
COMPACTION_TRIGGER_STRATEGIES = ("NUM_COMMITS", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME")
INLINE_COMPACT = _option(
    "hoodie.compact.inline",
    parse_bool,
    False,
    "Schedule and run compaction right after a merge-on-read write when it is due.",
)
INLINE_COMPACT_NUM_DELTA_COMMITS = _option(
    "hoodie.compact.inline.max.delta.commits",
    parse_int,
    5,
    "Delta commits since the last compaction that make a compaction due.",
)
INLINE_COMPACT_TIME_DELTA_SECONDS = _option(
    "hoodie.compact.inline.max.delta.seconds",
    parse_int,
    3600,
    "Seconds since the last compaction that make a compaction due.",
)
INLINE_COMPACT_TRIGGER_STRATEGY = _option(
    "hoodie.compact.inline.trigger.strategy",
    choice(*COMPACTION_TRIGGER_STRATEGIES),
    "NUM_COMMITS",
    "How delta commits and elapsed time combine into 'compaction due'.",
)

# ---- clustering (Hudi's HoodieClusteringConfig, HoodieLayoutConfig) ----
INLINE_CLUSTERING = _option(
    "hoodie.clustering.inline",
    parse_bool,
    False,
    "Schedule and run clustering after a write once hoodie.clustering.inline.max.commits "
    "commits completed since the last clustering.",
    aliases=("hoodie.datasource.clustering.inline.enable",),
)
INLINE_CLUSTERING_MAX_COMMITS = _option(
    "hoodie.clustering.inline.max.commits",
    parse_positive_int,
    4,
    "Commits since the last clustering that make an inline clustering due.",
)
SCHEDULE_INLINE_CLUSTERING = _option(
    "hoodie.clustering.schedule.inline",
    parse_bool,
    False,
    "Only schedule (plan) clustering after a write when due; a later run executes it.",
)
CLUSTERING_PLAN_STRATEGY_CLASS = _option(
    "hoodie.clustering.plan.strategy.class",
    choice("org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy"),
    "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy",
    "How file slices are picked and grouped (the size-based strategy is the one implemented).",
)
CLUSTERING_EXECUTION_STRATEGY_CLASS = _option(
    "hoodie.clustering.execution.strategy.class",
    choice("org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"),
    "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
    "How a plan is executed: sort each group, write files of the target size (recorded in "
    "the plan for Hudi's executors).",
)
CLUSTERING_SMALL_FILE_LIMIT = _option(
    "hoodie.clustering.plan.strategy.small.file.limit",
    parse_non_negative_int,
    300 * 1024 * 1024,
    "Base files below this many bytes are candidates for clustering.",
)
CLUSTERING_TARGET_FILE_MAX_BYTES = _option(
    "hoodie.clustering.plan.strategy.target.file.max.bytes",
    parse_positive_int,
    1024 * 1024 * 1024,
    "Target size of the files clustering writes: a group writes ceil(bytes / this) files.",
)
CLUSTERING_MAX_BYTES_PER_GROUP = _option(
    "hoodie.clustering.plan.strategy.max.bytes.per.group",
    parse_positive_int,
    2 * 1024 * 1024 * 1024,
    "Most bytes of input file slices in one clustering group.",
)
CLUSTERING_MAX_NUM_GROUPS = _option(
    "hoodie.clustering.plan.strategy.max.num.groups",
    parse_positive_int,
    30,
    "Most groups in one clustering plan.",
)
CLUSTERING_SINGLE_GROUP_ENABLED = _option(
    "hoodie.clustering.plan.strategy.single.group.clustering.enabled",
    parse_bool,
    True,
    "Whether a group of a single file slice is clustered (rewritten sorted) too.",
)
CLUSTERING_SORT_COLUMNS = _option(
    "hoodie.clustering.plan.strategy.sort.columns",
    parse_list,
    EMPTY,
    "Columns clustering sorts each group by (linearly or along a curve); none: row order kept.",
)
CLUSTERING_PARTITION_FILTER_MODE = _option(
    "hoodie.clustering.plan.partition.filter.mode",
    choice("NONE", "RECENT_DAYS", "SELECTED_PARTITIONS"),
    "NONE",
    "Which partitions a plan looks at: all, the most recent (day-based paths, by "
    "hoodie.clustering.plan.strategy.daybased.*), or a begin..end range.",
)
CLUSTERING_DAYBASED_LOOKBACK_PARTITIONS = _option(
    "hoodie.clustering.plan.strategy.daybased.lookback.partitions",
    parse_non_negative_int,
    2,
    "RECENT_DAYS: how many of the latest partitions a plan looks at.",
)
CLUSTERING_DAYBASED_SKIP_FROM_LATEST = _option(
    "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions",
    parse_non_negative_int,
    0,
    "RECENT_DAYS: how many of the latest partitions are skipped first.",
)
CLUSTERING_BEGIN_PARTITION = _optional(
    "hoodie.clustering.plan.strategy.cluster.begin.partition",
    parse_str,
    "SELECTED_PARTITIONS: the first partition path clustered (inclusive).",
)
CLUSTERING_END_PARTITION = _optional(
    "hoodie.clustering.plan.strategy.cluster.end.partition",
    parse_str,
    "SELECTED_PARTITIONS: the last partition path clustered (inclusive).",
)
CLUSTERING_PARTITION_SELECTED = _option(
    "hoodie.clustering.plan.strategy.partition.selected",
    parse_list,
    EMPTY,
    "Only these partition paths are clustered (comma-separated).",
)
CLUSTERING_PARTITION_REGEX_PATTERN = _optional(
    "hoodie.clustering.plan.strategy.partition.regex.pattern",
    parse_str,
    "Only partition paths matching this regular expression are clustered.",
)
CLUSTERING_PRESERVE_COMMIT_METADATA = _option(
    "hoodie.clustering.preserve.commit.metadata",
    parse_bool,
    True,
    "Clustered rows keep their _hoodie_commit_time and _hoodie_commit_seqno.",
)
REJECT_UPDATE_STRATEGY = (
    "org.apache.hudi.client.clustering.update.strategy.SparkRejectUpdateStrategy"
)
ALLOW_UPDATE_STRATEGY = "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"
CLUSTERING_UPDATES_STRATEGY = _option(
    "hoodie.clustering.updates.strategy",
    choice(REJECT_UPDATE_STRATEGY, ALLOW_UPDATE_STRATEGY),
    REJECT_UPDATE_STRATEGY,
    "An update or delete of a file group under pending clustering: rejected, or allowed (the "
    "clustering then fails its conflict check and is rolled back).",
)
LAYOUT_OPTIMIZE_STRATEGY = _option(
    "hoodie.layout.optimize.strategy",
    choice("linear", "z-order", "hilbert", synonyms={"zorder": "z-order"}),
    "linear",
    "How clustering orders rows by the sort columns: lexicographically, or along a z-order "
    "or Hilbert curve of the columns.",
)
LAYOUT_OPTIMIZE_CURVE_METHOD = _option(
    "hoodie.layout.optimize.build.curve.method",
    choice("direct", "sample"),
    "direct",
    "How column values become curve coordinates: from the values themselves (direct: "
    "numbers scaled between their min and max, text by its first bytes) or from their rank "
    "in the group (sample).",
)

LOCK_WAIT_TIME_MS = _option(
    "hoodie.write.lock.wait_time_ms",
    parse_int,
    60000,
    "How long a writer waits for the table lock before failing.",
)
LOCK_FILESYSTEM_EXPIRE = _option(
    "hoodie.write.lock.filesystem.expire",
    parse_int,
    0,
    "Minutes after which a file lock counts as abandoned (0: only a dead local holder).",
)
LOCK_FILESYSTEM_PATH = _optional(
    "hoodie.write.lock.filesystem.path",
    parse_str,
    "Folder of the file lock. Only the table's .hoodie (Hudi's default, also when unset) is "
    "accepted: that is where this engine's lock and Hudi's FileSystemBasedLockProvider meet.",
)
SINGLE_WRITER = "SINGLE_WRITER"
OPTIMISTIC_CONCURRENCY_CONTROL = "OPTIMISTIC_CONCURRENCY_CONTROL"
WRITE_CONCURRENCY_MODE = _option(
    "hoodie.write.concurrency.mode",
    choice(SINGLE_WRITER, OPTIMISTIC_CONCURRENCY_CONTROL),
    SINGLE_WRITER,
    "Whether several writers may write the table at once (optimistic concurrency control: "
    "needs a lock that is safe on the table's storage).",
)
FILE_SYSTEM_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
STORAGE_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"
LOCK_PROVIDERS = (FILE_SYSTEM_LOCK_PROVIDER, STORAGE_LOCK_PROVIDER)
LOCK_PROVIDER = _optional(
    "hoodie.write.lock.provider",
    choice(*LOCK_PROVIDERS, synonyms={c.rsplit(".", 1)[1]: c for c in LOCK_PROVIDERS}),
    "The table lock: a file created exclusively (local and POSIX file systems), or an object "
    "written with a conditional put (If-None-Match, safe on S3); unset picks by storage.",
)
LOCK_STORAGE_VALIDITY_SECS = _option(
    "hoodie.write.lock.storage.validity.timeout.secs",
    parse_int,
    300,
    "Seconds a conditional-write lock stays valid unless its holder renews it.",
)
LOCK_STORAGE_RENEW_INTERVAL_SECS = _option(
    "hoodie.write.lock.storage.renew.interval.secs",
    parse_int,
    30,
    "How often the holder of a conditional-write lock renews it.",
    aliases=("hoodie.write.lock.storage.heartbeat.poll.secs",),
)
AWS_ACCESS_KEY = _optional(
    "hoodie.aws.access.key", parse_str, "AWS access key of a table on S3 (as fs.s3a.access.key)."
)
AWS_SECRET_KEY = _optional(
    "hoodie.aws.secret.key", parse_str, "AWS secret key of a table on S3 (as fs.s3a.secret.key)."
)
AWS_SESSION_TOKEN = _optional(
    "hoodie.aws.session.token",
    parse_str,
    "AWS session token of a table on S3 (as fs.s3a.session.token).",
)

# --- multi-writer: heartbeats of inflight writes, automatic archival ---------------------------
HEARTBEAT_INTERVAL_MS = _option(
    "hoodie.client.heartbeat.interval_in_ms",
    parse_int,
    60000,
    "How often a writer refreshes the heartbeat of its inflight instant.",
)
HEARTBEAT_TOLERABLE_MISSES = _option(
    "hoodie.client.heartbeat.tolerable.misses",
    parse_int,
    2,
    "Missed heartbeats after which another host's inflight write counts as failed.",
)
ARCHIVE_AUTOMATIC = _option(
    "hoodie.archive.automatic", parse_bool, True, "Archive old instants after every commit."
)

# --- schema evolution (engine.model.schema_evolution) ------------------------------------------
RECONCILE_SCHEMA = _option(
    "hoodie.datasource.write.reconcile.schema",
    parse_bool,
    False,
    "Legacy reconciliation: a batch that is a projection of the table writes with the table's "
    "schema (missing columns null); any other batch's schema becomes the writer schema.",
)
SET_NULL_FOR_MISSING_COLUMNS = _option(
    "hoodie.write.set.null.for.missing.columns",
    parse_bool,
    False,
    "Columns of the table missing from the batch are kept and written as null "
    "(otherwise a missing column fails the write).",
    aliases=("hoodie.datasource.write.set.null.for.missing.columns",),
)
AVRO_SCHEMA_VALIDATE = _option(
    "hoodie.avro.schema.validate",
    parse_bool,
    False,
    "Validate the batch schema against the table's with Avro reader/writer compatibility "
    "(top-level columns may only be dropped with column drop allowed).",
)
SCHEMA_ALLOW_AUTO_EVOLUTION_COLUMN_DROP = _option(
    "hoodie.datasource.write.schema.allow.auto.evolution.column.drop",
    parse_bool,
    False,
    "A column missing from the batch is dropped from the table schema instead of failing.",
)
SCHEMA_ON_READ_ENABLE = _option(
    "hoodie.schema.on.read.enable",
    parse_bool,
    False,
    "Schema-on-read evolution (internal schema in commit metadata): not implemented; true is "
    "refused.",
)

# --- read options -----------------------------------------------------------------------------
QUERY_TYPE = _option(
    "hoodie.datasource.query.type",
    choice("snapshot", "read_optimized", "incremental"),
    "snapshot",
    "Query type.",
)
READ_BEGIN_INSTANTTIME = _optional(
    "hoodie.datasource.read.begin.instanttime",
    parse_str,
    "Incremental query start (exclusive).",
)
READ_END_INSTANTTIME = _optional(
    "hoodie.datasource.read.end.instanttime",
    parse_str,
    "Incremental query end (inclusive).",
)
COMMITMETA_KEY_PREFIX = _option(
    "hoodie.datasource.write.commitmeta.key.prefix",
    parse_str,
    "_",
    "Write options whose key starts with this prefix are added, key and value as given, to the "
    "commit's extraMetadata (how a consumer keeps its checkpoint in its own commits).",
)
# ---- pre-commit validators (write-audit-publish) --------------------------------------------

VALIDATOR_TABLE_VARIABLE = "<TABLE_NAME>"
PRECOMMIT_VALIDATORS = _option(
    "hoodie.precommit.validators",
    parse_list,
    EMPTY,
    "Comma-separated class names of the validators run before a write commits (Hudi's "
    "org.apache.hudi.client.validator.SqlQuery{Equality,Inequality,SingleResult}"
    "PreCommitValidator); a failing one rolls the write back.",
)
PRECOMMIT_EQUALITY_SQL_QUERIES = _optional(
    "hoodie.precommit.validators.equality.sql.queries",
    parse_str,
    "Queries (separated by ';') whose result must be the same before and after the commit; "
    "<TABLE_NAME> stands for the table.",
)
PRECOMMIT_INEQUALITY_SQL_QUERIES = _optional(
    "hoodie.precommit.validators.inequality.sql.queries",
    parse_str,
    "Queries (separated by ';') whose result must change with the commit; <TABLE_NAME> stands "
    "for the table.",
)
PRECOMMIT_SINGLE_VALUE_SQL_QUERIES = _optional(
    "hoodie.precommit.validators.single.value.sql.queries",
    parse_str,
    "Queries 'query#expected' (separated by ';') run on the table as the commit leaves it; "
    "each must return one value whose text is the expected one.",
)
QUERY_INCREMENTAL_FORMAT = _option(
    "hoodie.datasource.query.incremental.format",
    choice("latest_state", "cdc"),
    "latest_state",
    "Incremental query output: the latest state of changed records, or the change stream "
    "(op, ts_ms, before, after) of a CDC table.",
)

ENABLE_DATA_SKIPPING = _option(
    "hoodie.enable.data.skipping",
    parse_bool,
    True,
    "Snapshot reads of a table whose metadata table has column_stats skip the file slices whose "
    "stats prove no row matches the filters (Hudi 1.x's default: on). A read's "
    "hoodie.metadata.enable=false turns it off with the listing through the metadata table.",
)
COLUMN_STATS_ENABLE = _optional(
    "hoodie.metadata.index.column.stats.enable",
    parse_bool,
    "Keep the metadata table's column_stats partition (per base file and column a value range, "
    "for data skipping; table versions 8 and 9, with hoodie.metadata.enable). Hudi's writer "
    "default is off; unset, a table keeps the column stats it has.",
)
COLUMN_STATS_COLUMN_LIST = _option(
    "hoodie.metadata.index.column.stats.column.list",
    parse_list,
    EMPTY,
    "Columns the column_stats partition indexes besides the three meta columns always indexed; "
    "empty: the first max.columns.to.index columns of a supported type.",
)
COLUMN_STATS_MAX_COLUMNS = _option(
    "hoodie.metadata.index.column.stats.max.columns.to.index",
    parse_positive_int,
    32,
    "Without a column list, how many data columns column_stats indexes (Hudi 1.x: 32).",
)
COLUMN_STATS_FILE_GROUP_COUNT = _option(
    "hoodie.metadata.index.column.stats.file.group.count",
    parse_positive_int,
    2,
    "File groups of the column_stats partition; a key's group is its hash modulo this "
    "(Hudi 1.x: 2).",
)

# Non-hoodie read key that Hudi's Spark datasource accepts for time travel.
AS_OF_INSTANT = "as.of.instant"


# ---------------------------------------------------------------------------------------------
# parsed configuration


@dataclass(frozen=True)
class HoodieConfig:
    """Parsed options keyed by canonical key; typed access through :meth:`get`."""

    values: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)  # non-hoodie keys, verbatim

    def get(self, option: ConfigOption[T]) -> T:
        """The parsed value of ``option``, else its default (``None`` only for options
        declared without one)."""
        if option.key in self.values:
            value: T = self.values[option.key]
            return value
        return option.default

    def require(self, option: ConfigOption[T | None]) -> T:
        """The value of an option the caller cannot do without.

        Raises:
            ConfigError: naming the key, when it is unset or empty.
        """
        value = self.get(option)
        if value is None or value == ():
            raise ConfigError(f"Missing required config {option.key!r}")
        return value

    def is_set(self, option: ConfigOption[Any]) -> bool:
        return option.key in self.values

    def merged(self, other: HoodieConfig) -> HoodieConfig:
        """``other``'s values override this config's."""
        return HoodieConfig({**self.values, **other.values}, {**self.extra, **other.extra})

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)


def lookup(key: str) -> ConfigOption[Any] | None:
    """The option registered under ``key`` (exact key or alias), if any."""
    return _REGISTRY.get(key)


def known_options() -> list[ConfigOption[Any]]:
    """Every registered option once (aliases folded)."""
    seen: dict[str, ConfigOption[Any]] = {}
    for opt in _REGISTRY.values():
        seen.setdefault(opt.key, opt)
    return list(seen.values())


# keys of Hudi's other writers naming behaviour this batch writer does not have: refused when
# turned on, never passed through as if they did something
_OTHER_WRITERS_KEYS = {
    "changelog.enabled": "Flink's changelog mode, whose rows carry _hoodie_operation -U and D; "
    "this engine writes as Hudi's Spark writers do (I and U; a deleted record is removed, or "
    "put in a DELETE block on merge-on-read)",
}


def parse_options(raw: Mapping[str, Any] | None) -> HoodieConfig:
    """Validate and parse user options.

    Raises:
        ConfigError: for an unknown ``hoodie.*`` key or a malformed value; the message names
            every offending key and value at once.
    """
    values: dict[str, Any] = {}
    extra: dict[str, str] = {}
    problems: list[str] = []
    for key, value in (raw or {}).items():
        opt = _REGISTRY.get(key)
        if opt is None:
            if key.startswith("hoodie."):
                problems.append(f"Unknown config {key!r} (value {_to_text(value)!r})")
            elif key in _OTHER_WRITERS_KEYS and _to_text(value).strip().lower() != "false":
                problems.append(f"{key}={_to_text(value)!r}: {_OTHER_WRITERS_KEYS[key]}")
            else:
                extra[key] = _to_text(value)
            continue
        if value is None:
            continue
        try:
            values[opt.key] = opt.parse(value, given_as=key)
        except ConfigError as e:
            problems.append(str(e))
    if problems:
        raise ConfigError("; ".join(problems))
    return HoodieConfig(values, extra)


def format_value(value: Any) -> str:
    """Text form of a parsed value, as written to ``hoodie.properties``."""
    return _to_text(value)
