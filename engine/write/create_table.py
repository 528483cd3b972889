"""Creating a table, and removing the metadata table of one when the write disables it.

The first write creates the table under the table lock, right before its instant is requested::

    .hoodie/hoodie.properties     table version 6, key generator, partition fields, payload, the
                                  creation schema (from the write's options and batch)
    .hoodie/{.temp, .aux, archived}

A write with ``hoodie.metadata.enable=false`` (or a version 6 table's write, where the metadata
table is not written) removes the table's metadata table first, as Hudi does when it is
disabled (:func:`engine.metadata.sync.take_over_metadata_table`); otherwise
:mod:`engine.metadata.sync` keeps it.
"""

from __future__ import annotations

from typing import Any

from engine import config
from engine.config import HoodieConfig
from engine.fs.properties import METAFOLDER, write_properties
from engine.fs.storage import Storage
from engine.fs.table_version import require_writable_version, versioned_properties

__all__ = ["create_table", "new_table_properties"]


_BUCKET_INDEX_OPTIONS: tuple[config.ConfigOption[Any], ...] = (
    config.INDEX_TYPE,
    config.BUCKET_INDEX_ENGINE,
    config.BUCKET_INDEX_NUM_BUCKETS,
    config.BUCKET_INDEX_HASH_FIELD,
    # the write config's record key: Hudi checks a bucket index's hash fields against it
    # (HoodieIndexConfig.validateBucketIndexConfig), and its SQL procedures (run_compaction,
    # run_clean) build their write config from these properties alone: without it they fail
    config.RECORDKEY_FIELD,
)


def bucket_index_properties(cfg: HoodieConfig) -> dict[str, str]:
    """The bucket index settings a bucket-index table persists: later writes (ours, and Apache
    Hudi's Spark SQL writes and procedures, which merge the table's properties into their write
    config) keep the bucket layout; none for another index."""
    if not cfg.get(config.INDEX_TYPE).is_bucket:
        return {}
    values = {option.key: cfg.get(option) for option in _BUCKET_INDEX_OPTIONS}
    return {key: config.format_value(v) for key, v in values.items() if v}


def new_table_properties(cfg: HoodieConfig, keygen_class: str, schema: str) -> dict[str, str]:
    """``hoodie.properties`` of a table the first write creates (table version 6)."""
    name = cfg.require(config.TABLE_NAME)
    props: dict[str, str] = {
        config.TABLE_NAME.key: name,
        config.TABLE_TYPE.key: cfg.get(config.WRITE_TABLE_TYPE),
        config.TABLE_VERSION.key: "6",
        config.TIMELINE_LAYOUT_VERSION.key: "1",
    }
    record_fields = cfg.get(config.RECORDKEY_FIELD)
    if record_fields:  # auto-generated keys persist no record key fields
        props[config.RECORDKEY_FIELDS.key] = ",".join(record_fields)
    database = cfg.get(config.DATABASE_NAME)
    if database:
        props[config.DATABASE_NAME.key] = database
    partition_fields = cfg.get(config.PARTITIONPATH_FIELD)
    if partition_fields and keygen_class != config.NON_PARTITIONED_KEYGEN:
        props[config.PARTITION_FIELDS.key] = ",".join(partition_fields)
    ordering = cfg.get(config.WRITE_PRECOMBINE_FIELD)
    if ordering:
        props[config.PRECOMBINE_FIELD.key] = ordering
    props[config.KEYGENERATOR_CLASS.key] = keygen_class
    for option in (config.HIVE_STYLE_PARTITIONING, config.URL_ENCODE_PARTITIONING):
        props[option.key] = config.format_value(cfg.get(option))
    props[config.DROP_PARTITION_COLUMNS.key] = "false"
    props[config.ARCHIVELOG_FOLDER.key] = "archived"
    # the write's payload class, else the default of the persisted one
    payload = cfg.get(config.WRITE_PAYLOAD_CLASS) or cfg.get(config.PAYLOAD_CLASS)
    props[config.PAYLOAD_CLASS.key] = payload
    props[config.RECORD_MERGER_STRATEGY.key] = str(cfg.get(config.RECORD_MERGER_STRATEGY))
    props[config.BASE_FILE_FORMAT.key] = "PARQUET"
    props[config.POPULATE_META_FIELDS.key] = "true"
    props[config.TIMELINE_TIMEZONE.key] = "UTC"
    if keygen_class == config.TIMESTAMP_KEYGEN:
        timestamp_options: tuple[config.ConfigOption[Any], ...] = (
            config.TIMESTAMP_TYPE,
            config.TIMESTAMP_INPUT_DATE_FORMAT,
            config.TIMESTAMP_OUTPUT_DATE_FORMAT,
            config.TIMESTAMP_TIMEZONE,
            config.TIMESTAMP_SCALAR_TIME_UNIT,
        )
        for ts_option in timestamp_options:
            value = cfg.get(ts_option)
            if value:
                props[ts_option.key] = config.format_value(value)
    if cfg.get(config.TABLE_CDC_ENABLED):
        props[config.TABLE_CDC_ENABLED.key] = "true"
        props[config.CDC_SUPPLEMENTAL_LOGGING_MODE.key] = cfg.get(
            config.CDC_SUPPLEMENTAL_LOGGING_MODE
        )
    props.update(bucket_index_properties(cfg))
    props[config.CREATE_SCHEMA.key] = schema
    version = cfg.get(config.WRITE_TABLE_VERSION)
    return versioned_properties(
        props, require_writable_version(version, key=config.WRITE_TABLE_VERSION.key)
    )


def create_table(storage: Storage, props: dict[str, str]) -> None:
    """The metafolder and ``hoodie.properties`` of a new table (the caller holds the lock)."""
    storage.makedirs(METAFOLDER)
    for folder in (".temp", ".aux", "archived"):
        storage.makedirs(f"{METAFOLDER}/{folder}")
    write_properties(storage, props)
