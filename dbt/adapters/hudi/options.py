"""dbt model config → engine write options, validated before anything is written.

A model's config comes from ``config()``, ``schema.yml`` and ``dbt_project.yml``; this module
checks every key the Hudi materializations read and reports **every** problem at once (a user
fixing one mistake per ``dbt run`` would pay the Spark start-up each time). It imports neither
dbt nor Spark, so it is unit-tested on plain dicts; the adapter turns :class:`ModelConfigError`
into a dbt compiler error naming the model.

Mapping (Hudi's own keys live in ``engine.config``)::

    unique_key (str | list)       -> record key field(s); none (hudi_insert_overwrite only):
                                     auto-generated record keys
    partition_by (str | list)     -> partition path field(s)
    precombine_key                -> ordering (precombine) field
    payload                       -> payload class: overwrite_latest | event_time | partial_update
    hive_style_partitioning       -> hive-style partition paths (default true)
    compaction_delta_commits      -> inline compaction every N deltacommits (hudi_mor, default 5)
    cluster_every (int)           -> inline clustering every N commits (hoodie.clustering.inline)
    cluster_by (str | list)       -> hoodie.clustering.plan.strategy.sort.columns
    cluster_layout                -> hoodie.layout.optimize.strategy: linear | z-order | hilbert
    overwrite_scope               -> partitions | table (hudi_insert_overwrite)
    on_schema_change              -> the schema evolution keys of schema_change.mode_options
    index_type                    -> hoodie.index.type: SIMPLE | GLOBAL_SIMPLE | BLOOM |
                                     GLOBAL_BLOOM | BUCKET | RECORD_INDEX
    buckets                       -> hoodie.bucket.index.num.buckets (index_type='BUCKET' only)
    hudi_options (dict)           -> raw hoodie.* keys, parsed by engine.config
    audit_before_publish (bool)   -> the model's data tests run on the staged snapshot before
                                     the commit (the adapter's audit hook; docs/audit.md)
    hudi_audit (dict)             -> Hudi's pre-commit validators: single_value, equality,
                                     inequality, each a query or a list of queries ->
                                     hoodie.precommit.validators and their .sql.queries
    (default)                     -> partitioned hudi_upsert / hudi_mor models with the default
                                     payload: hoodie.index.type=GLOBAL_SIMPLE with
                                     hoodie.simple.index.update.partition.path=true (a unique_key
                                     is unique in the table); an explicit index type wins
    (default, new hudi_mor table) -> keyed, unpartitioned or partitioned by unique_key columns
                                     only: hoodie.index.type=BUCKET, buckets from the first
                                     batch's size (default_bucket_count); a continued table
                                     keeps the index it was written with
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dbt.adapters.hudi.guards import SPARK_CONFIGS, ModelProblems, spark_config_problems
from dbt.adapters.hudi.schema_change import mode_options, option_conflicts
from engine import IS_DELETED_COLUMN, IndexType, ValidatorKind, configured_checks
from engine import config as hc
from engine.config import TableType, WriteOperation
from engine.errors import HudiError

Materialization = Literal["hudi_upsert", "hudi_insert_overwrite", "hudi_mor"]
MATERIALIZATIONS: tuple[str, ...] = ("hudi_upsert", "hudi_insert_overwrite", "hudi_mor")

PAYLOADS: Mapping[str, str] = {
    "overwrite_latest": hc.OVERWRITE_WITH_LATEST_PAYLOAD,
    "event_time": hc.EVENT_TIME_PAYLOAD,
    "partial_update": hc.PARTIAL_UPDATE_PAYLOAD,
}
ON_SCHEMA_CHANGE = ("ignore", "fail", "append_new_columns", "sync_all_columns")
OVERWRITE_SCOPES = ("partitions", "table")
DEFAULT_COMPACTION_DELTA_COMMITS = 5


# Keys the materialization decides; setting them through hudi_options would contradict it.
_RESERVED = {
    hc.OPERATION.key: "the materialization chooses the write operation",
    hc.TABLE_TYPE.key: "the materialization chooses the table type (hudi_mor for MERGE_ON_READ)",
    hc.WRITE_TABLE_TYPE.key: (
        "the materialization chooses the table type (hudi_mor for MERGE_ON_READ)"
    ),
}


class ModelConfigError(ModelProblems):
    """One or more config values of a model are invalid; ``problems`` lists each one."""

    def __init__(self, model: str, materialization: str, problems: Sequence[str]) -> None:
        headline = f"Invalid config for {materialization} model '{model}'"
        super().__init__(model, headline, problems)


@dataclass(frozen=True)
class HudiModelConfig:
    """A validated model config: what the adapter hands the engine."""

    model: str
    materialization: str
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    ordering_field: str | None
    payload: str
    hive_style_partitioning: bool
    location: str | None
    location_root: str | None
    on_schema_change: str
    overwrite_scope: str
    compaction_delta_commits: int
    hudi_options: Mapping[str, str] = field(default_factory=dict)
    index_type: IndexType | None = None
    buckets: int | None = None
    audit_before_publish: bool = False
    audit_options: Mapping[str, str] = field(default_factory=dict)
    clustering_options: Mapping[str, str] = field(default_factory=dict)

    @property
    def table_type(self) -> TableType:
        if self.materialization == "hudi_mor":
            return TableType.MERGE_ON_READ
        return TableType.COPY_ON_WRITE

    @property
    def payload_class(self) -> str:
        return PAYLOADS[self.payload]

    def operation(self, *, table_exists: bool) -> WriteOperation:
        """Hudi's write operation for this run."""
        if not table_exists:
            return WriteOperation.BULK_INSERT
        if self.materialization != "hudi_insert_overwrite":
            return WriteOperation.UPSERT
        if self.overwrite_scope == "table" or not self.partition_fields:
            return WriteOperation.INSERT_OVERWRITE_TABLE
        return WriteOperation.INSERT_OVERWRITE

    def write_options(
        self,
        *,
        table_name: str,
        database: str | None,
        operation: str,
        new_table: bool = False,
        batch_bytes: int | None = None,
        table_index: str | None = None,
    ) -> dict[str, str]:
        """The ``hoodie.*`` options of one write (raw ``hudi_options`` first, configs over them).

        ``new_table``: the write creates the table (the only write the default bucket index
        applies to; ``batch_bytes`` estimates its batch). ``table_index``: the index type a
        continued table persists (a bucket-index table does): no default then, the table's own
        setting applies."""
        opts: dict[str, str] = {
            **self.hudi_options,
            **self.audit_options,
            **self.clustering_options,
        }
        opts[hc.TABLE_NAME.key] = table_name
        if database:
            opts[hc.DATABASE_NAME.key] = database
        opts[hc.OPERATION.key] = operation
        opts[hc.WRITE_TABLE_TYPE.key] = self.table_type
        if self.record_key_fields:  # else keyless: auto-generated record keys
            opts[hc.RECORDKEY_FIELD.key] = ",".join(self.record_key_fields)
        if self.partition_fields:
            opts[hc.PARTITIONPATH_FIELD.key] = ",".join(self.partition_fields)
        if self.ordering_field:
            opts[hc.WRITE_PRECOMBINE_FIELD.key] = self.ordering_field
        opts[hc.WRITE_PAYLOAD_CLASS.key] = self.payload_class
        opts[hc.HIVE_STYLE_PARTITIONING.key] = "true" if self.hive_style_partitioning else "false"
        opts.update(mode_options(self.on_schema_change))
        if self.index_type:
            opts[hc.INDEX_TYPE.key] = self.index_type
        in_metadata_table = self.index_type is not None and self.index_type.in_metadata_table
        if in_metadata_table and self.partition_fields:
            # dbt's unique_key is unique in the table: a key whose partition changes moves
            opts.setdefault(hc.RECORD_INDEX_UPDATE_PARTITION_PATH.key, "true")
        if self.buckets is not None:
            opts[hc.BUCKET_INDEX_NUM_BUCKETS.key] = str(self.buckets)
        if new_table and self.default_bucket_index(opts):
            opts[hc.INDEX_TYPE.key] = IndexType.BUCKET
            opts[hc.BUCKET_INDEX_NUM_BUCKETS.key] = str(default_bucket_count(batch_bytes))
        if table_index is None:
            opts.update(self.default_index(opts))
        if self.materialization == "hudi_mor":
            opts.setdefault(hc.INLINE_COMPACT.key, "true")
            opts[hc.INLINE_COMPACT_NUM_DELTA_COMMITS.key] = str(self.compaction_delta_commits)
        return opts

    def default_bucket_index(self, opts: Mapping[str, str]) -> bool:
        """Whether a new ``hudi_mor`` table gets Hudi's bucket index by default: no index
        named, a ``unique_key``, and no partitioning or one by ``unique_key`` columns only (a
        bucket index finds a key in its own partition: a key that cannot change partition is
        unique in the table, as dbt means it). Measured: no index lookup at all, and inserts
        go to log files like updates (docs/performance.md, "hudi_mor's default index")."""
        if self.materialization != "hudi_mor" or hc.INDEX_TYPE.key in opts:
            return False
        if not self.record_key_fields or hc.TABLE_CDC_ENABLED.key in opts:
            return False
        keys = {k.lower() for k in self.record_key_fields}
        return all(p.lower() in keys for p in self.partition_fields)

    def default_index(self, opts: Mapping[str, str]) -> dict[str, str]:
        """dbt's default index where ``opts`` name none: GLOBAL_SIMPLE with
        update.partition.path for partitioned ``hudi_upsert``/``hudi_mor`` models with the
        default payload, so a ``unique_key`` is unique in the whole table, as dbt means it (a
        key whose partition value changes moves instead of being duplicated). The engine's own
        default stays Hudi's SIMPLE; an explicit ``hoodie.index.type`` wins."""
        if hc.INDEX_TYPE.key in opts or self.materialization == "hudi_insert_overwrite":
            return {}
        if not self.partition_fields or self.payload != "overwrite_latest":
            return {}
        return {
            hc.INDEX_TYPE.key: IndexType.GLOBAL_SIMPLE,
            hc.SIMPLE_INDEX_UPDATE_PARTITION_PATH.key: opts.get(
                hc.SIMPLE_INDEX_UPDATE_PARTITION_PATH.key, "true"
            ),
        }

    def check_columns(self, columns: Mapping[str, str]) -> list[str]:
        """Problems with the model's SELECT columns (``name -> simple type``)."""
        lowered = {c.lower(): t for c, t in columns.items()}
        problems = []
        for role, names in (
            ("unique_key", self.record_key_fields),
            ("partition_by", self.partition_fields),
            ("precombine_key", (self.ordering_field,) if self.ordering_field else ()),
        ):
            missing = [n for n in names if n.lower() not in lowered]
            if missing:
                problems.append(
                    f"{role}: column(s) {', '.join(repr(m) for m in missing)} not in the "
                    f"model's columns ({', '.join(columns)})"
                )
        deleted_type = lowered.get(IS_DELETED_COLUMN)
        if deleted_type is not None and deleted_type != "boolean":
            problems.append(
                f"{IS_DELETED_COLUMN}: must be a boolean column (marks deletes), got {deleted_type}"
            )
        return problems


def _names(value: Any, key: str, problems: list[str], *, required: bool) -> tuple[str, ...]:
    """A column name or list of names; blanks and non-strings are problems."""
    if value is None or value == "" or value == []:
        if required:
            problems.append(f"{key}: required (a column name or a list of column names)")
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        problems.append(f"{key}: expected a column name or a list of names, got {value!r}")
        return ()
    bad = [v for v in items if not isinstance(v, str) or not v.strip()]
    if bad:
        problems.append(f"{key}: every entry must be a non-empty column name, got {value!r}")
        return ()
    names = tuple(v.strip() for v in items)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append(f"{key}: column(s) listed twice: {', '.join(dupes)}")
    return names


def _choice(value: Any, key: str, allowed: Sequence[str], default: str, problems: list[str]) -> str:
    if value is None:
        return default
    if not isinstance(value, str) or value.strip().lower() not in allowed:
        problems.append(f"{key}: {value!r} is not one of {', '.join(allowed)}")
        return default
    return value.strip().lower()


def _bool(value: Any, key: str, default: bool, problems: list[str]) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    problems.append(f"{key}: expected true or false, got {value!r}")
    return default


def _text(value: Any, key: str, problems: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{key}: expected a non-empty string, got {value!r}")
        return None
    return value.strip()


def _positive_int(value: Any, key: str, default: int, problems: list[str]) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        problems.append(f"{key}: expected a positive integer, got {value!r}")
        return default
    try:
        number = int(value)
    except ValueError:
        problems.append(f"{key}: expected a positive integer, got {value!r}")
        return default
    if number < 1:
        problems.append(f"{key}: expected a positive integer, got {value!r}")
        return default
    return number


def _hudi_options(value: Any, problems: list[str]) -> dict[str, str]:
    """Raw ``hoodie.*`` options: dict, known keys, parseable values, none reserved."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.append(f"hudi_options: expected a mapping of hoodie.* keys, got {value!r}")
        return {}
    raw: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str) or (hc.lookup(key) is None and not _is_hoodie(key)):
            problems.append(f"hudi_options: {key!r} is not a Hudi (hoodie.*) config key")
            continue
        option = hc.lookup(key)
        if option is not None and option.key in _RESERVED:
            problems.append(f"hudi_options: {key!r} cannot be set: {_RESERVED[option.key]}")
            continue
        raw[key] = item
    # parse key by key so that every bad key is reported, not only the first
    parsed: dict[str, str] = {}
    for key, item in raw.items():
        try:
            hc.parse_options({key: item})
        except HudiError as e:
            problems.append(f"hudi_options: {e}")
            continue
        option = hc.lookup(key)
        canonical = option.key if option is not None else key
        parsed[canonical] = hc.format_value(item)
    return parsed


# hudi_audit's keys -> Hudi's validator class (engine.write.precommit) and its queries' key
AUDIT_KINDS: Mapping[str, tuple[ValidatorKind, str]] = {
    "single_value": (
        ValidatorKind.SINGLE_VALUE,
        hc.PRECOMMIT_SINGLE_VALUE_SQL_QUERIES.key,
    ),
    "equality": (ValidatorKind.EQUALITY, hc.PRECOMMIT_EQUALITY_SQL_QUERIES.key),
    "inequality": (ValidatorKind.INEQUALITY, hc.PRECOMMIT_INEQUALITY_SQL_QUERIES.key),
}


def _hudi_audit(value: Any, raw: Mapping[str, str], problems: list[str]) -> dict[str, str]:
    """``hudi_audit`` as Hudi's pre-commit validator keys: ``{single_value: ["select ...#0"],
    equality: "select ...", inequality: [...]}``, ``<TABLE_NAME>`` standing for the table."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not value:
        problems.append(
            f"hudi_audit: expected a mapping of {', '.join(AUDIT_KINDS)} to queries, got {value!r}"
        )
        return {}
    if any(key.startswith(hc.PRECOMMIT_VALIDATORS.key) for key in raw):
        problems.append(
            "hudi_audit: the pre-commit validators are also set in hudi_options; set them once"
        )
    classes: list[str] = []
    options: dict[str, str] = {}
    for name, queries in value.items():
        if name not in AUDIT_KINDS:
            problems.append(f"hudi_audit: {name!r} is not one of {', '.join(AUDIT_KINDS)}")
            continue
        listed = [queries] if isinstance(queries, str) else queries
        if (
            not isinstance(listed, list)
            or not listed
            or not all(isinstance(q, str) and q.strip() for q in listed)
        ):
            problems.append(f"hudi_audit: {name}: expected a query or a list of queries")
            continue
        kind, key = AUDIT_KINDS[name]
        classes.append(kind.class_name)
        options[key] = ";".join(q.strip().rstrip(";") for q in listed)
    if classes:
        options[hc.PRECOMMIT_VALIDATORS.key] = ",".join(classes)
        try:
            configured_checks(hc.parse_options(options))
        except HudiError as e:
            problems.append(f"hudi_audit: {e}")
    return options


def _is_hoodie(key: str) -> bool:
    return key.startswith(hc.TABLE_NAME.key.split(".", 1)[0] + ".")


def _conflicts(cfg: HudiModelConfig, problems: list[str]) -> None:
    """A raw option that contradicts a model config is ambiguous: report it."""
    given = {
        hc.RECORDKEY_FIELD.key: ("unique_key", ",".join(cfg.record_key_fields)),
        hc.RECORDKEY_FIELDS.key: ("unique_key", ",".join(cfg.record_key_fields)),
        hc.PARTITIONPATH_FIELD.key: ("partition_by", ",".join(cfg.partition_fields)),
        hc.PARTITION_FIELDS.key: ("partition_by", ",".join(cfg.partition_fields)),
        hc.WRITE_PRECOMBINE_FIELD.key: ("precombine_key", cfg.ordering_field or ""),
        hc.PRECOMBINE_FIELD.key: ("precombine_key", cfg.ordering_field or ""),
        hc.HIVE_STYLE_PARTITIONING.key: (
            "hive_style_partitioning",
            "true" if cfg.hive_style_partitioning else "false",
        ),
        hc.INLINE_COMPACT_NUM_DELTA_COMMITS.key: (
            "compaction_delta_commits",
            str(cfg.compaction_delta_commits),
        ),
    }
    if cfg.index_type:
        given[hc.INDEX_TYPE.key] = ("index_type", cfg.index_type)
    if cfg.buckets is not None:
        given[hc.BUCKET_INDEX_NUM_BUCKETS.key] = ("buckets", str(cfg.buckets))
    for key, raw in cfg.hudi_options.items():
        if key in given:
            config_key, value = given[key]
            if raw.replace(" ", "") != value:
                problems.append(
                    f"hudi_options: {key!r}={raw!r} contradicts {config_key}={value!r}; "
                    f"set it once, with {config_key}"
                )
        if key in (hc.WRITE_PAYLOAD_CLASS.key, hc.PAYLOAD_CLASS.key) and raw != cfg.payload_class:
            problems.append(
                f"hudi_options: {key!r}={raw!r} contradicts payload={cfg.payload!r}; "
                f"use the payload config ({', '.join(PAYLOADS)})"
            )


def _locations(config: Mapping[str, Any], problems: list[str]) -> tuple[str | None, str | None]:
    """``location`` and ``location_root``; at most one may be set."""
    location = _text(config.get("location"), "location", problems)
    location_root = _text(config.get("location_root"), "location_root", problems)
    if location and location_root:
        problems.append(
            f"location: {location!r} and location_root {location_root!r} are both set; "
            "set one (location is the full base path)"
        )
    return location, location_root


def _only_for(
    config: Mapping[str, Any], key: str, owner: str, materialization: str, problems: list[str]
) -> None:
    """A key only the ``owner`` materialization reads is an error anywhere else."""
    if config.get(key) is not None and materialization != owner:
        problems.append(f"{key}: only applies to {owner}, not {materialization}")


def _check_file_format(config: Mapping[str, Any], problems: list[str]) -> None:
    file_format = config.get("file_format")
    if file_format not in (None, "parquet", "hudi"):
        problems.append(
            f"file_format: {file_format!r} does not apply to Hudi models (base files are parquet)"
        )


def _payload(config: Mapping[str, Any], ordering: str | None, problems: list[str]) -> str:
    """The payload name; those that order records need precombine_key."""
    payload = _choice(
        config.get("payload"), "payload", tuple(PAYLOADS), "overwrite_latest", problems
    )
    if payload in ("event_time", "partial_update") and ordering is None:
        problems.append(f"payload: {payload!r} orders records by precombine_key, which is not set")
    return payload


INDEX_TYPES = hc.INDEX_TYPES  # the dbt config takes the values of hoodie.index.type


# bytes of a new table's first batch per bucket of the default bucket index: base files near
# Hudi's hoodie.parquet.max.file.size (120 MB) once compacted
_BYTES_PER_DEFAULT_BUCKET = 128 * 1024 * 1024
_MAX_DEFAULT_BUCKETS = 256
# Spark's estimate of a batch it cannot size (spark.sql.defaultSizeInBytes) is this large
_UNKNOWN_SIZE = 1 << 62


def default_bucket_count(batch_bytes: int | None) -> int:
    """The bucket count of a default bucket index: one bucket per 128 MB of the first batch
    (Spark's size estimate of its plan), never fewer than Hudi's default 4
    (``hoodie.bucket.index.num.buckets``) nor more than 256; 4 when the size is unknown."""
    floor = int(hc.BUCKET_INDEX_NUM_BUCKETS.default)
    if batch_bytes is None or batch_bytes <= 0 or batch_bytes >= _UNKNOWN_SIZE:
        return floor
    wanted = -(-batch_bytes // _BYTES_PER_DEFAULT_BUCKET)
    return max(floor, min(_MAX_DEFAULT_BUCKETS, wanted))


_SIZE = re.compile(r"sizeInBytes=([0-9.]+)\s*(B|KiB|MiB|GiB|TiB|PiB|EiB)\b")
_UNITS = {"B": 0, "KiB": 1, "MiB": 2, "GiB": 3, "TiB": 4, "PiB": 5, "EiB": 6}


def estimated_bytes(cost_plan: str) -> int | None:
    """The root's ``sizeInBytes`` of a plan Spark printed with ``explain(mode='cost')``."""
    match = _SIZE.search(cost_plan)
    if match is None:
        return None
    return int(float(match.group(1)) * 1024 ** _UNITS[match.group(2)])


def _index_text(index_type: IndexType | None) -> str | None:
    """The index type as the model's config spells it (``None`` when not given)."""
    return None if index_type is None else str(index_type)


def _index(config: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """``index_type`` (upper-cased) and ``buckets`` (only with ``index_type='BUCKET'``)."""
    raw = config.get("index_type")
    index_type = None
    if raw is not None:
        if isinstance(raw, str) and raw.strip().upper() in INDEX_TYPES:
            index_type = IndexType(raw.strip().upper())
        else:
            problems.append(f"index_type: {raw!r} is not one of {', '.join(INDEX_TYPES)}")
    buckets = None
    if config.get("buckets") is not None:
        buckets = _positive_int(config.get("buckets"), "buckets", 1, problems)
        if index_type is None or not index_type.is_bucket:
            given = _index_text(index_type)
            problems.append(f"buckets: only applies with index_type='BUCKET', not {given!r}")
    return {"index_type": index_type, "buckets": buckets}


def _materialization_configs(
    config: Mapping[str, Any], materialization: str, problems: list[str]
) -> tuple[str, int]:
    """``overwrite_scope`` and ``compaction_delta_commits``, each valid for one materialization."""
    scope = _choice(
        config.get("overwrite_scope"), "overwrite_scope", OVERWRITE_SCOPES, "partitions", problems
    )
    _only_for(config, "overwrite_scope", "hudi_insert_overwrite", materialization, problems)
    compaction = _positive_int(
        config.get("compaction_delta_commits"),
        "compaction_delta_commits",
        DEFAULT_COMPACTION_DELTA_COMMITS,
        problems,
    )
    _only_for(config, "compaction_delta_commits", "hudi_mor", materialization, problems)
    return scope, compaction


CLUSTER_LAYOUTS = ("linear", "z-order", "hilbert")


def _clustering(config: Mapping[str, Any], problems: list[str]) -> dict[str, str]:
    """``cluster_every``, ``cluster_by`` and ``cluster_layout`` as Hudi's clustering keys: the
    model clusters itself inline every N commits, ordering rows by the columns."""
    out: dict[str, str] = {}
    if config.get("cluster_every") is not None:
        every = _positive_int(config.get("cluster_every"), "cluster_every", 1, problems)
        out[hc.INLINE_CLUSTERING.key] = "true"
        out[hc.INLINE_CLUSTERING_MAX_COMMITS.key] = str(every)
    columns = _names(config.get("cluster_by"), "cluster_by", problems, required=False)
    if columns:
        out[hc.CLUSTERING_SORT_COLUMNS.key] = ",".join(columns)
    if config.get("cluster_layout") is not None:
        layout = _choice(
            config.get("cluster_layout"), "cluster_layout", CLUSTER_LAYOUTS, "linear", problems
        )
        out[hc.LAYOUT_OPTIMIZE_STRATEGY.key] = layout
    return out


def _unique_key(
    config: Mapping[str, Any], materialization: str, problems: list[str]
) -> tuple[str, ...]:
    """The record key fields; an insert overwrite needs none (Hudi then generates the keys),
    an upsert or merge-on-read model cannot do without."""
    required = materialization != "hudi_insert_overwrite"
    return _names(config.get("unique_key"), "unique_key", problems, required=required)


def parse_model_config(
    model: str, materialization: str, config: Mapping[str, Any]
) -> HudiModelConfig:
    """Validate ``config`` for ``materialization``; every problem is collected first.

    Raises:
        ModelConfigError: listing each invalid key with its value.
    """
    problems: list[str] = []
    if materialization not in MATERIALIZATIONS:
        allowed = ", ".join(MATERIALIZATIONS)
        problems.append(f"materialized: {materialization!r} is not one of {allowed}")
    keys = _unique_key(config, materialization, problems)
    parts = _names(config.get("partition_by"), "partition_by", problems, required=False)
    ordering = _text(config.get("precombine_key"), "precombine_key", problems)
    payload = _payload(config, ordering, problems)
    hive_style = _bool(
        config.get("hive_style_partitioning"), "hive_style_partitioning", True, problems
    )
    location, location_root = _locations(config, problems)
    on_schema_change = _choice(
        config.get("on_schema_change"), "on_schema_change", ON_SCHEMA_CHANGE, "ignore", problems
    )
    scope, compaction = _materialization_configs(config, materialization, problems)
    _check_file_format(config, problems)
    problems.extend(spark_config_problems(materialization, config))
    raw = _hudi_options(config.get("hudi_options"), problems)
    if config.get("compaction_delta_commits") is None:
        # parsed above; hudi_options may set it when compaction_delta_commits is not given
        compaction = int(raw.get(hc.INLINE_COMPACT_NUM_DELTA_COMMITS.key, compaction))
    cfg = HudiModelConfig(
        model=model,
        materialization=materialization,
        record_key_fields=keys,
        partition_fields=parts,
        ordering_field=ordering,
        payload=payload,
        hive_style_partitioning=hive_style,
        location=location,
        location_root=location_root,
        on_schema_change=on_schema_change,
        overwrite_scope=scope,
        compaction_delta_commits=compaction,
        hudi_options=raw,
        **_index(config, problems),
        audit_before_publish=_bool(
            config.get("audit_before_publish"), "audit_before_publish", False, problems
        ),
        audit_options=_hudi_audit(config.get("hudi_audit"), raw, problems),
        clustering_options=_clustering(config, problems),
    )
    _conflicts(cfg, problems)
    problems.extend(option_conflicts(on_schema_change, raw))
    if problems:
        raise ModelConfigError(model, materialization, problems)
    return cfg


# ---------------------------------------------------------------------------------------------
# the model config reference: every config a Hudi model (or a dbt-spark model, seed or snapshot
# written as Hudi) reads, described once here; docs/config-reference.md is generated from it and
# a test fails when a config the adapter reads has no entry


@dataclass(frozen=True)
class ModelConfigDoc:
    """One model config as the reference page shows it (Markdown in every text field)."""

    name: str
    applies_to: str
    values: str
    default: str
    hudi_keys: str
    description: str
    allowed: tuple[str, ...] = ()


def _listed(values: Sequence[str]) -> str:
    return ", ".join(f"`{v}`" for v in values)


_INDEX_DESCRIPTION = (
    "`SIMPLE` looks stored keys up in the record's partition; `GLOBAL_SIMPLE` in every "
    "partition (a key that changes partition moves); `BLOOM` / `GLOBAL_BLOOM` are Hudi's bloom "
    "indexes: the same lookups, reading only the files whose footer key range and bloom filter "
    "may hold a key (`hoodie.bloom.index.prune.by.ranges`, and "
    "`hoodie.bloom.index.update.partition.path` for the global one, in `hudi_options`); "
    "`BUCKET` is Hudi's bucket index: the key's hash picks the file group, no lookup; "
    "`RECORD_INDEX` is Hudi's record level index: a global index kept in the metadata table's "
    "`record_index` partition, so a lookup reads the index entries of the batch's keys, not "
    "every partition's key column. It needs `hudi_options={'hoodie.write.table.version': '9'}` "
    "(or 8); on a partitioned model a key whose partition changes moves "
    "(`hoodie.record.index.update.partition.path=true`, see "
    "[the record index](table-services.md#the-record-index)). A continued table keeps the index "
    "it was written with."
)

_INDEX_DEFAULT = (
    "`GLOBAL_SIMPLE` with `hoodie.simple.index.update.partition.path=true` for partitioned "
    "`hudi_upsert`/`hudi_mor` models with the default payload (see "
    "[keys that change partition](materializations.md#keys-that-change-partition)); `BUCKET` "
    "for a **new** `hudi_mor` table with a `unique_key`, unpartitioned or partitioned by "
    "`unique_key` columns only (see "
    "[hudi_mor's default index](performance.md#hudi_mors-default-index)); else Hudi's `SIMPLE`"
)

_DBT_SPARK_REFUSED = tuple(k for k, rule in SPARK_CONFIGS.items() if rule.verdict == "refused")

MODEL_CONFIGS: tuple[ModelConfigDoc, ...] = (
    ModelConfigDoc(
        "materialized",
        "Hudi models",
        "the Hudi materialization",
        "–",
        "`hoodie.datasource.write.table.type` (kept as `hoodie.table.type`), "
        "`hoodie.datasource.write.operation`",
        "Which table a model writes and how each run writes it: `hudi_upsert` (copy-on-write, "
        "upsert by `unique_key`), `hudi_mor` (merge-on-read, updates as log blocks, inline "
        "compaction), `hudi_insert_overwrite` (copy-on-write, replaces the partitions the rows "
        "touch). See [materializations](materializations.md).",
        MATERIALIZATIONS,
    ),
    ModelConfigDoc(
        "unique_key",
        "Hudi models, `file_format='hudi'` models",
        "column or list of columns (the record key); unique in the whole table",
        "required for `hudi_upsert` and `hudi_mor`; without it a `hudi_insert_overwrite` table "
        "is keyless (Hudi's auto-generated record keys `<instant>_<task>_<row>`, nothing "
        "persisted)",
        "`hoodie.datasource.write.recordkey.field` (kept as `hoodie.table.recordkey.fields`)",
        "Several columns make a complex record key. See "
        "[keys that change partition](materializations.md#keys-that-change-partition).",
    ),
    ModelConfigDoc(
        "partition_by",
        "Hudi models, `file_format='hudi'` models",
        "column or list of columns",
        "none (non-partitioned)",
        "`hoodie.datasource.write.partitionpath.field` (kept as `hoodie.table.partition.fields`)",
        "The partition path fields of the table.",
    ),
    ModelConfigDoc(
        "precombine_key",
        "Hudi models, `file_format='hudi'` models",
        "column (the ordering field)",
        "none",
        "`hoodie.datasource.write.precombine.field` (kept as `hoodie.table.precombine.field`)",
        "The latest version of a key wins by this field. A null value in a run that upserts is "
        "refused before any file is written.",
    ),
    ModelConfigDoc(
        "payload",
        "Hudi models",
        "`overwrite_latest`; `event_time` (keeps the stored row when it is newer); "
        "`partial_update` (null fields keep stored values). The last two need `precombine_key`",
        "`overwrite_latest`",
        "`hoodie.datasource.write.payload.class`: "
        + ", ".join(f"`{cls.rsplit('.', 1)[1]}`" for cls in PAYLOADS.values()),
        "How an incoming record merges with the stored one.",
        tuple(PAYLOADS),
    ),
    ModelConfigDoc(
        "hive_style_partitioning",
        "Hudi models",
        "`true` (`order_date=2026-01-01/`), `false`",
        "`true`",
        "`hoodie.datasource.write.hive_style_partitioning`",
        "Whether partition folders are named `field=value`.",
        ("true", "false"),
    ),
    ModelConfigDoc(
        "location",
        "Hudi models",
        "the table's full base path",
        "`<hudi_base_path or warehouse>/<schema>/<alias>`",
        "the table's base path",
        "Refused when it is a file or a non-empty directory without `.hoodie/`. Set "
        "`location` or `location_root`, not both.",
    ),
    ModelConfigDoc(
        "location_root",
        "Hudi models, `file_format='hudi'` models",
        "a folder: the base path is `<location_root>/<alias>`",
        "`<hudi_base_path or warehouse>/<schema>`",
        "the table's base path",
        "As dbt-spark's `location_root`; the same refusals as `location`.",
    ),
    ModelConfigDoc(
        "on_schema_change",
        "Hudi models, `file_format='hudi'` models",
        "what a run may change in the table's schema, on top of Hudi's rules",
        "`ignore`",
        "`hoodie.write.set.null.for.missing.columns`, "
        "`hoodie.datasource.write.schema.allow.auto.evolution.column.drop`, "
        "`hoodie.datasource.write.reconcile.schema`",
        "dbt's meaning, on every materialization; see "
        "[schema changes](schema-changes.md#schema-changes-on_schema_change).",
        ON_SCHEMA_CHANGE,
    ),
    ModelConfigDoc(
        "compaction_delta_commits",
        "`hudi_mor`",
        "positive integer",
        str(DEFAULT_COMPACTION_DELTA_COMMITS),
        "`hoodie.compact.inline.max.delta.commits` (with `hoodie.compact.inline=true`)",
        "Inline compaction runs every this many deltacommits.",
    ),
    ModelConfigDoc(
        "cluster_every",
        "Hudi models",
        "positive integer",
        "none (no clustering)",
        "`hoodie.clustering.inline=true`, `hoodie.clustering.inline.max.commits`",
        "The model's table clusters itself after a run once this many commits completed since "
        "its last clustering: small file groups rewritten into files of "
        "`hoodie.clustering.plan.strategy.target.file.max.bytes`, ordered by `cluster_by` (see "
        "[clustering](table-services.md#clustering)). Not on the bucket index (a new keyed "
        "`hudi_mor` table's default): give such a model another `index_type`.",
    ),
    ModelConfigDoc(
        "cluster_by",
        "Hudi models (the clusterings their runs plan: `cluster_every`, or "
        "`hoodie.clustering.schedule.inline` in `hudi_options`)",
        "a column or a list of columns",
        "none (rows keep their order)",
        "`hoodie.clustering.plan.strategy.sort.columns`",
        "The columns clustering orders rows by: a selective filter on them then reads few "
        "files (data skipping through column stats).",
    ),
    ModelConfigDoc(
        "cluster_layout",
        "Hudi models (as `cluster_by`)",
        "how rows are ordered by `cluster_by`",
        "`linear`",
        "`hoodie.layout.optimize.strategy`",
        "`linear` sorts by the columns in turn; `z-order` and `hilbert` order along a "
        "space-filling curve of all of them, so a filter on any one column skips files.",
        CLUSTER_LAYOUTS,
    ),
    ModelConfigDoc(
        "overwrite_scope",
        "`hudi_insert_overwrite`",
        "what a run replaces: the partitions its rows touch, or the whole table",
        "`partitions`",
        "`hoodie.datasource.write.operation`: `insert_overwrite`, `insert_overwrite_table`",
        "An unpartitioned model always replaces the whole table.",
        OVERWRITE_SCOPES,
    ),
    ModelConfigDoc(
        "index_type",
        "Hudi models",
        "Hudi's index types (case-insensitive)",
        _INDEX_DEFAULT,
        "`hoodie.index.type` (`BUCKET` persisted in `hoodie.properties`)",
        _INDEX_DESCRIPTION,
        INDEX_TYPES,
    ),
    ModelConfigDoc(
        "buckets",
        "Hudi models with `index_type='BUCKET'`",
        "positive integer",
        "Hudi's 4; for `hudi_mor`'s default bucket index one bucket per 128 MB of the first "
        "run's batch (Spark's size estimate of the model's plan), at least 4, at most 256",
        "`hoodie.bucket.index.num.buckets`",
        "File groups per partition of the bucket index, fixed for the table's life.",
    ),
    ModelConfigDoc(
        "hudi_options",
        "Hudi models, `file_format='hudi'` models",
        "a mapping of raw `hoodie.*` keys (see [Hudi keys](#hudi-keys) below)",
        "`{}`",
        "the keys themselves",
        "Validated against the engine's options; a key that contradicts a config above (or the "
        "materialization's operation and table type) is an error.",
    ),
    ModelConfigDoc(
        "file_format",
        "every model",
        "`hudi`, or dbt-spark's default `parquet` (base files are Parquet); anything else is "
        "an error on a Hudi model",
        "`parquet`",
        "–",
        "On a dbt-spark `table`, `incremental`, seed or snapshot, `hudi` writes it with the "
        "engine; see [dbt-spark's `file_format='hudi'`]"
        "(coming-from-dbt-spark.md#dbt-sparks-file_formathudi).",
        ("hudi", "parquet"),
    ),
    ModelConfigDoc(
        "incremental_strategy",
        "Hudi models, `file_format='hudi'` models",
        "only the materialization's own: `merge` for `hudi_upsert` and `hudi_mor`, "
        "`insert_overwrite` for `hudi_insert_overwrite`; anything else is an error",
        "none",
        "–",
        "On a dbt-spark `incremental` model with `file_format='hudi'`: `merge`, "
        "`insert_overwrite` or `append` (dbt-spark's default).",
    ),
    ModelConfigDoc(
        "options",
        "`file_format='hudi'` models (refused on Hudi models)",
        "Hudi's Spark SQL table properties: `type` (`cow` | `mor`), `primaryKey`, "
        "`preCombineField`, `payloadClass`, any `hoodie.*` key",
        "`{}`",
        "`hoodie.table.type`, `hoodie.table.recordkey.fields`, `hoodie.table.precombine.field`, "
        "`hoodie.datasource.write.payload.class`",
        "Kept in `hoodie.properties` on the first write; a later run that contradicts them is "
        "an error. On a `hudi_*` model it is refused: `unique_key` for `primaryKey`, "
        "`precombine_key` for `preCombineField`, the materialization for `type`, "
        "`hudi_options` for `hoodie.*` keys.",
    ),
    ModelConfigDoc(
        "grants",
        "every model",
        "dbt's grants",
        "`{}`",
        "–",
        "Applied after the commit where the platform has `GRANT`; refused before anything runs "
        "on Spark, whose SQL has none (with any catalog).",
    ),
    ModelConfigDoc(
        "contract",
        "every model",
        "`{enforced: true}`",
        "not enforced",
        "–",
        "dbt's check of the SELECT's column names and types against the YAML, before anything "
        "runs (dbt's message); the table is written in the contract's column order. "
        "Constraints are not enforced: a warning names each.",
    ),
    ModelConfigDoc(
        "persist_docs",
        "every model",
        "dbt's `{relation: true, columns: true}`",
        "`{}`",
        "–",
        "Table and column comments on the model's catalog entry (written where it is created, "
        "after each commit).",
    ),
    ModelConfigDoc(
        "savepoint",
        "Hudi models",
        "`true`, `false`",
        "`false`",
        "–",
        "`true`: after the run's commit, a Hudi savepoint pins it (see [undo a bad run](undo.md)).",
        ("true", "false"),
    ),
    ModelConfigDoc(
        "audit_before_publish",
        "Hudi models",
        "`true`, `false`",
        "`false`",
        "–",
        "`true`: the model's data tests run on the table as the commit would leave it, before the "
        "commit; a failing error-severity test refuses the write, nothing is published and "
        "downstream models are skipped (see [audit before publish](audit.md)).",
        ("true", "false"),
    ),
    ModelConfigDoc(
        "hudi_audit",
        "Hudi models",
        "`{single_value: [...], equality: [...], inequality: [...]}`",
        "none",
        "`hoodie.precommit.validators` and its `.sql.queries` keys",
        "Hudi's SQL pre-commit validators, `<TABLE_NAME>` standing for the table; a failing "
        "one refuses the write (see [audit before publish](audit.md)).",
    ),
    ModelConfigDoc(
        "column_types",
        "seeds with `file_format: hudi`",
        "dbt's: column -> type",
        "`{}`",
        "–",
        "Columns typed as dbt-spark types them; each `dbt seed` writes a fresh table.",
    ),
    ModelConfigDoc(
        "strategy",
        "snapshots with `file_format='hudi'`",
        "dbt's: `timestamp`, `check`",
        "–",
        "–",
        "With dbt's meaning; the snapshot is a copy-on-write table keyed by `dbt_scd_id`.",
    ),
    ModelConfigDoc(
        "snapshot_table_column_names",
        "snapshots with `file_format='hudi'`",
        "dbt's",
        "dbt's",
        "–",
        "With dbt's meaning.",
    ),
    ModelConfigDoc(
        "dbt_valid_to_current",
        "snapshots with `file_format='hudi'`",
        "dbt's",
        "null",
        "–",
        "With dbt's meaning.",
    ),
    *(
        ModelConfigDoc(
            key,
            "Hudi models (refused)",
            "dbt-spark's",
            "–",
            "–",
            f"A dbt-spark config a Hudi write cannot honour: set, it is an error "
            f"saying what to use instead ({SPARK_CONFIGS[key].why}).",
        )
        for key in _DBT_SPARK_REFUSED
        if key not in ("options", "incremental_strategy")
    ),
)
