"""Key generators: the record key and partition path of each incoming row.

Hudi's key generators, on Arrow record batches (one implementation serves the Spark tasks, the
tests and any pure-Arrow writer)::

    simple            record key  = str(value)                 error when null or empty
    complex           record key  = f1:v1,f2:v2                null -> __null__, empty -> __empty__,
                                                               error when every part is null/empty
    non-partitioned   record key as simple (one field) or complex (several); partition path ""
    timestamp-based   partition path = the field read as a time (unix seconds, epoch millis,
                      epoch micros, scalar, or a date string) and formatted with a Java pattern

    partition path    v1/v2 (plain) or f1=v1/f2=v2 (hive style); null or empty value ->
                      __HIVE_DEFAULT_PARTITION__; with url-encoding Hive's escapes (%XX)

Values are rendered as text the way Avro's ``toString`` does for the common types (integers in
decimal, booleans ``true``/``false``, dates ``yyyy-MM-dd``); floating point keys are rendered by
Arrow's cast and may differ from Java in exponent notation.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.config import HoodieConfig
from engine.errors import ConfigError, RecordKeyError
from engine.model.auto_keys import keyless_keygen_class

__all__ = [
    "DEFAULT_PARTITION_PATH",
    "EMPTY_RECORDKEY_PLACEHOLDER",
    "NULL_RECORDKEY_PLACEHOLDER",
    "KeyGenSpec",
    "TimestampSpec",
    "escape_partition_value",
    "format_java_date_pattern",
    "generate_partition_paths",
    "generate_record_keys",
    "invalid_record_key_message",
    "is_single_key",
    "keygen_spec_from_config",
]

DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"
NULL_RECORDKEY_PLACEHOLDER = "__null__"
EMPTY_RECORDKEY_PLACEHOLDER = "__empty__"

KeyGenKind = Literal["simple", "complex", "non_partitioned", "timestamp"]
_KIND_OF_CLASS: dict[str, KeyGenKind] = {
    config.SIMPLE_KEYGEN: "simple",
    config.COMPLEX_KEYGEN: "complex",
    config.NON_PARTITIONED_KEYGEN: "non_partitioned",
    config.TIMESTAMP_KEYGEN: "timestamp",
}

# Hive's FileUtils.escapePathName set: control characters and these.
_ESCAPED = frozenset(chr(c) for c in range(1, 0x20)) | frozenset("\"#%'*/:=?\\\x7f{[]^")


@dataclass(frozen=True, slots=True)
class TimestampSpec:
    """How the timestamp-based key generator reads and formats its partition field."""

    timestamp_type: (
        str  # UNIX_TIMESTAMP | EPOCHMILLISECONDS | EPOCHMICROSECONDS | DATE_STRING | SCALAR
    )
    output_format: str  # Java pattern, e.g. yyyy/MM/dd
    input_formats: tuple[str, ...] = ()
    scalar_unit: str = "SECONDS"
    input_timezone: str = "UTC"
    output_timezone: str = "UTC"


@dataclass(frozen=True, slots=True)
class KeyGenSpec:
    """A key generator, frozen and picklable (it travels to Spark tasks)."""

    kind: KeyGenKind
    class_name: str
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...] = ()
    hive_style: bool = False
    url_encode: bool = False
    timestamp: TimestampSpec | None = None

    @property
    def is_partitioned(self) -> bool:
        return self.kind != "non_partitioned" and bool(self.partition_fields)

    @property
    def auto_keys(self) -> bool:
        """No record key field: the write generates its keys (:mod:`engine.model.auto_keys`)."""
        return not self.record_key_fields


def keygen_spec_from_config(cfg: HoodieConfig) -> KeyGenSpec:
    """Build the key generator from parsed options (table properties already merged in).

    The class is taken from ``hoodie.datasource.write.keygenerator.class`` (or ``.type``, or the
    table's persisted class), else inferred: no partition fields -> non-partitioned, several
    record key fields -> complex, else simple.

    Without a record key field the keys are auto-generated and the generator only makes the
    partition path; it is then inferred from the partition fields alone, as Hudi does.

    Raises:
        ConfigError: the timestamp-based generator lacks its timestamp type or output format.
    """
    record_fields = cfg.get(config.RECORDKEY_FIELD) or cfg.get(config.RECORDKEY_FIELDS) or ()
    # the write's partition fields, else the table's persisted ones
    partition_fields = cfg.get(config.PARTITIONPATH_FIELD) or cfg.get(config.PARTITION_FIELDS)
    class_name = (
        cfg.get(config.WRITE_KEYGENERATOR_CLASS)
        or _class_of_type(cfg.get(config.WRITE_KEYGENERATOR_TYPE))
        or cfg.get(config.KEYGENERATOR_CLASS)
        or _class_of_type(cfg.get(config.KEYGENERATOR_TYPE_TABLE))
    )
    if class_name is None and not record_fields:
        class_name = keyless_keygen_class(partition_fields)
    if class_name is None:
        if not partition_fields:
            class_name = config.NON_PARTITIONED_KEYGEN
        elif len(record_fields) > 1:
            class_name = config.COMPLEX_KEYGEN
        else:
            class_name = config.SIMPLE_KEYGEN
    kind = _KIND_OF_CLASS[class_name]
    if kind == "non_partitioned":
        partition_fields = ()
    timestamp = _timestamp_spec(cfg) if kind == "timestamp" else None
    if kind == "timestamp" and len(partition_fields) != 1:
        raise ConfigError(
            f"Config {config.PARTITIONPATH_FIELD.key!r} must name exactly one field for "
            f"{class_name}, got {','.join(partition_fields)!r}"
        )
    return KeyGenSpec(
        kind=kind,
        class_name=class_name,
        record_key_fields=tuple(record_fields),
        partition_fields=partition_fields,
        hive_style=cfg.get(config.HIVE_STYLE_PARTITIONING) is True,
        url_encode=cfg.get(config.URL_ENCODE_PARTITIONING) is True,
        timestamp=timestamp,
    )


def _class_of_type(key_type: str | None) -> str | None:
    return config.KEYGEN_TYPES.get(key_type) if key_type else None


def _timestamp_spec(cfg: HoodieConfig) -> TimestampSpec:
    ts_type = cfg.get(config.TIMESTAMP_TYPE)
    delimiter = cfg.get(config.TIMESTAMP_INPUT_DATE_FORMAT_LIST_DELIMITER)
    raw_formats = cfg.get(config.TIMESTAMP_INPUT_DATE_FORMAT)
    input_formats = tuple(f for f in re.split(delimiter, raw_formats) if f)
    if ts_type is None:
        # tables written by Hudi persist the formats but not the type: a persisted input
        # format can only mean DATE_STRING
        ts_type = "DATE_STRING" if input_formats else None
    if ts_type is None:
        raise ConfigError(f"Missing required config {config.TIMESTAMP_TYPE.key!r}")
    output = cfg.get(config.TIMESTAMP_OUTPUT_DATE_FORMAT)
    if not output:
        raise ConfigError(f"Missing required config {config.TIMESTAMP_OUTPUT_DATE_FORMAT.key!r}")
    if ts_type == "DATE_STRING" and not input_formats:
        raise ConfigError(f"Missing required config {config.TIMESTAMP_INPUT_DATE_FORMAT.key!r}")
    default_tz = cfg.get(config.TIMESTAMP_TIMEZONE)
    spec = TimestampSpec(
        timestamp_type=ts_type,
        output_format=output,
        input_formats=input_formats,
        scalar_unit=cfg.get(config.TIMESTAMP_SCALAR_TIME_UNIT),
        # an empty input/output time zone means the key generator's default time zone
        input_timezone=cfg.get(config.TIMESTAMP_INPUT_TIMEZONE) or default_tz,
        output_timezone=cfg.get(config.TIMESTAMP_OUTPUT_TIMEZONE) or default_tz,
    )
    for tz_name in (spec.input_timezone, spec.output_timezone):
        _zone(tz_name)
    format_java_date_pattern(spec.output_format)
    return spec


# ---------------------------------------------------------------------------------------------
# record keys


def _as_text(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Column values as Hudi key text (Avro ``toString`` of the common types)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = arr.type
    if pa.types.is_string(t):
        return arr
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.string())
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return arr.cast(pa.string())
    if pa.types.is_dictionary(t):
        return _as_text(arr.dictionary_decode())
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        return arr.cast(pa.string())
    if pa.types.is_date(t):
        return pc.strftime(arr.cast(pa.timestamp("s")), format="%Y-%m-%d")
    if pa.types.is_timestamp(t):
        # Avro timestamp-micros renders as its long value
        return arr.cast(pa.timestamp("us", tz=t.tz)).cast(pa.int64()).cast(pa.string())
    if pa.types.is_decimal(t):
        return arr.cast(pa.string())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return arr.cast(pa.string())
    raise RecordKeyError(f"Cannot build a key from a column of type {t}")


def _column(batch: pa.RecordBatch | pa.Table, name: str) -> pa.Array:
    idx = batch.schema.get_field_index(name)
    if idx < 0:
        raise RecordKeyError(f"Record key or partition field {name!r} is not in the data")
    col = batch.column(idx)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def is_single_key(spec: KeyGenSpec) -> bool:
    """Whether the record key is the field's plain value (else ``field:value`` pairs)."""
    return len(spec.record_key_fields) == 1 and spec.kind in (
        "simple",
        "non_partitioned",
        "timestamp",
    )


def invalid_record_key_message(spec: KeyGenSpec) -> str:
    """Hudi's error for a null/empty record key, naming the field(s) and the config key."""
    fields = spec.record_key_fields
    if is_single_key(spec):
        return (
            f"recordKey value for field {fields[0]!r} cannot be null or empty "
            f"(config {config.RECORDKEY_FIELD.key!r})"
        )
    return (
        f"recordKey values for fields {','.join(fields)!r} cannot be entirely null or empty "
        f"(config {config.RECORDKEY_FIELD.key!r})"
    )


def generate_record_keys(batch: pa.RecordBatch | pa.Table, spec: KeyGenSpec) -> pa.Array:
    """The ``_hoodie_record_key`` of each row.

    Raises:
        RecordKeyError: a key value is null or empty (simple key), or every part of a complex
            key is; the message names the field.
    """
    fields = spec.record_key_fields
    if spec.auto_keys:
        raise RecordKeyError(
            "Auto-generated record keys are made by the runner from the Spark partition and "
            "row of each record, not from the record's fields"
        )
    if is_single_key(spec):
        text = _as_text(_column(batch, fields[0]))
        bad = pc.or_(pc.is_null(text), pc.fill_null(pc.equal(text, ""), False))
        if pc.any(bad).as_py():
            raise RecordKeyError(invalid_record_key_message(spec))
        return text
    parts: list[pa.Array] = []
    all_missing: pa.Array | None = None
    for name in fields:
        text = _as_text(_column(batch, name))
        is_null = pc.is_null(text)
        is_empty = pc.fill_null(pc.equal(text, ""), False)
        value = pc.if_else(
            is_null,
            NULL_RECORDKEY_PLACEHOLDER,
            pc.if_else(is_empty, EMPTY_RECORDKEY_PLACEHOLDER, text),
        )
        parts.append(pc.binary_join_element_wise(f"{name}:", value, ""))
        missing = pc.or_(is_null, is_empty)
        all_missing = missing if all_missing is None else pc.and_(all_missing, missing)
    if all_missing is not None and pc.any(all_missing).as_py():
        raise RecordKeyError(invalid_record_key_message(spec))
    return pc.binary_join_element_wise(*parts, ",")


# ---------------------------------------------------------------------------------------------
# partition paths


def escape_partition_value(value: str) -> str:
    """Hive's path escaping: ``%XX`` (upper-case hex) for characters unsafe in a path segment."""
    if not any(ch in _ESCAPED for ch in value):
        return value
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in value)


def _map_unique(arr: pa.Array, fn: Callable[[str], str]) -> pa.Array:
    """Apply a Python function per distinct value (partition values have few)."""
    encoded = arr.dictionary_encode()
    mapped = pa.array([fn(v) for v in encoded.dictionary.to_pylist()], pa.string())
    return pc.take(mapped, encoded.indices)


def generate_partition_paths(batch: pa.RecordBatch | pa.Table, spec: KeyGenSpec) -> pa.Array:
    """The ``_hoodie_partition_path`` of each row (``""`` for non-partitioned tables)."""
    n = batch.num_rows
    if not spec.is_partitioned:
        return pa.repeat(pa.scalar("", pa.string()), n)
    segments: list[pa.Array] = []
    for name in spec.partition_fields:
        col = _column(batch, name)
        if spec.kind == "timestamp" and spec.timestamp is not None:
            text = _timestamp_partition_values(col, spec.timestamp, name)
        else:
            text = _as_text(col)
        missing = pc.or_(pc.is_null(text), pc.fill_null(pc.equal(text, ""), True))
        value = pc.if_else(missing, DEFAULT_PARTITION_PATH, text)
        if spec.url_encode:
            value = _map_unique(value, escape_partition_value)
        if spec.hive_style:
            value = pc.binary_join_element_wise(f"{name}=", value, "")
        segments.append(value)
    if len(segments) == 1:
        return segments[0]
    return pc.binary_join_element_wise(*segments, "/")


# ---------------------------------------------------------------------------------------------
# timestamp-based key generator

_JAVA_TOKENS: tuple[tuple[str, str], ...] = (
    ("yyyy", "%Y"),
    ("yy", "%y"),
    ("MMM", "%b"),
    ("MM", "%m"),
    ("dd", "%d"),
    ("DDD", "%j"),
    ("HH", "%H"),
    ("hh", "%I"),
    ("mm", "%M"),
    ("ss", "%S"),
    ("SSS", "%f"),
    ("a", "%p"),
    ("XXX", "%z"),
    ("XX", "%z"),
    ("X", "%z"),
    ("ZZ", "%z"),
    ("Z", "%z"),
    ("z", "%Z"),
)


def format_java_date_pattern(pattern: str) -> str:
    """Translate a Java date pattern (``yyyy/MM/dd'T'HH``) to a ``strftime`` format.

    Raises:
        ConfigError: the pattern uses a letter this translation does not know.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise ConfigError(f"Unterminated quote in date format {pattern!r}")
            literal = pattern[i + 1 : end] or "'"
            out.append(literal.replace("%", "%%"))
            i = end + 1
            continue
        if ch.isalpha():
            for token, directive in _JAVA_TOKENS:
                if pattern.startswith(token, i):
                    out.append(directive)
                    i += len(token)
                    break
            else:
                raise ConfigError(f"Unsupported letter {ch!r} in date format {pattern!r}")
            continue
        out.append("%%" if ch == "%" else ch)
        i += 1
    return "".join(out)


def _zone(name: str) -> dt.tzinfo:
    if name.upper() in ("UTC", "GMT", "Z"):
        return dt.UTC
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError) as e:
        raise ConfigError(
            f"Unknown time zone {name!r} for {config.TIMESTAMP_TIMEZONE.key!r}"
        ) from e


_UNIT_MICROS = {
    "NANOSECONDS": 0.001,
    "MICROSECONDS": 1,
    "MILLISECONDS": 1_000,
    "SECONDS": 1_000_000,
    "MINUTES": 60_000_000,
    "HOURS": 3_600_000_000,
    "DAYS": 86_400_000_000,
}


def _to_epoch_micros(col: pa.Array, ts: TimestampSpec, field: str) -> pa.Array:
    """Epoch microseconds (int64) of a timestamp-keygen input column."""
    t = col.type
    if pa.types.is_timestamp(t):
        return col.cast(pa.timestamp("us", tz=t.tz)).cast(pa.int64())
    if pa.types.is_date(t):
        return pc.multiply(col.cast(pa.int32()).cast(pa.int64()), 86_400_000_000)
    if ts.timestamp_type == "DATE_STRING":
        return _parse_date_strings(_as_text(col), ts, field)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        col = col.cast(pa.float64())
    factor = {
        "UNIX_TIMESTAMP": 1_000_000,
        "EPOCHMILLISECONDS": 1_000,
        "EPOCHMICROSECONDS": 1,
        "SCALAR": _UNIT_MICROS[ts.scalar_unit],
    }[ts.timestamp_type]
    micros = pc.multiply(col.cast(pa.float64()), float(factor))
    return pc.round(micros).cast(pa.int64())


def _parse_date_strings(text: pa.Array, ts: TimestampSpec, field: str) -> pa.Array:
    formats = [format_java_date_pattern(f) for f in ts.input_formats]
    zone = _zone(ts.input_timezone)

    def parse(value: str) -> int:
        candidate = value
        for fmt in formats:
            try:
                moment = dt.datetime.strptime(candidate, fmt)
            except ValueError:
                continue
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=zone)
            delta = moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
            return delta // dt.timedelta(microseconds=1)
        raise RecordKeyError(
            f"Partition field {field!r} value {value!r} matches none of the formats "
            f"{','.join(ts.input_formats)!r} ({config.TIMESTAMP_INPUT_DATE_FORMAT.key!r})"
        )

    encoded = text.dictionary_encode()
    values = encoded.dictionary.to_pylist()
    mapped = pa.array([parse(v) for v in values], pa.int64())
    return pc.take(mapped, encoded.indices)


def _timestamp_partition_values(col: pa.Array, ts: TimestampSpec, field: str) -> pa.Array:
    micros = _to_epoch_micros(col, ts, field)
    fmt = format_java_date_pattern(ts.output_format)
    tz = ts.output_timezone
    zone_name = "UTC" if tz.upper() in ("UTC", "GMT", "Z") else tz
    # Arrow's %S prints fractional seconds for sub-second units; format whole seconds and put
    # the milliseconds in by hand when the pattern asks for them.
    if "%f" in fmt:
        millis = pc.cast(
            pc.divide(
                pc.subtract(micros, pc.multiply(pc.divide(micros, 1_000_000), 1_000_000)), 1_000
            ),
            pa.int64(),
        )
        parts = fmt.split("%f")
        seconds = pc.divide(micros, 1_000_000).cast(pa.timestamp("s", tz=zone_name))
        texts = [pc.strftime(seconds, format=p) if p else None for p in parts]
        millis_text = pc.utf8_lpad(millis.cast(pa.string()), 3, "0")
        pieces: list[pa.Array] = []
        for k, piece in enumerate(texts):
            if piece is not None:
                pieces.append(piece)
            if k < len(texts) - 1:
                pieces.append(millis_text)
        return pc.binary_join_element_wise(*pieces, "")
    seconds = pc.divide(micros, 1_000_000).cast(pa.timestamp("s", tz=zone_name))
    return pc.strftime(seconds, format=fmt)
