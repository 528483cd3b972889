"""HudiTable: open or create a table at a base path and write Spark DataFrames into it.

A copy-on-write write, on the driver (Spark does the data work, see :mod:`engine.spark.jobs`)::

    options ──► validate against hoodie.properties ──► key generation (Spark)
      ──► batch profile + index lookup (one Spark job; null keys fail here)
      ──► lock: [create table] ──► roll back dead writers' writes ──► <t>.commit.requested
          + heartbeat ──► unlock
      ──► [lookup again if a write completed since] ──► buckets (small files first) ──► <t>.inflight
      ──► partition metafiles ──► one task per file group writes its base file
      ──► lock: conflict check ──► <t>.commit (the commit point) ──► markers removed ──► unlock
      ──► table services under the lock (inline compaction, clean, archival)

Replace operations (insert_overwrite[_table], delete_partition) complete as replacecommits
(:mod:`engine.write.replace`); merge-on-read writes as deltacommits.

Errors found before the instant is requested (bad options, null record keys, unknown fields)
leave the table untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from engine import config
from engine.config import HoodieConfig, TableType, WriteOperation, parse_options
from engine.errors import ConfigError, HudiError, SchemaError, TableNotFoundError
from engine.faults import checkpoint
from engine.fs.properties import (
    METAFOLDER,
    read_properties,
    write_properties,
)
from engine.fs.storage import Storage
from engine.io.parquet import commit_schema_of
from engine.model.keygen import keygen_spec_from_config
from engine.model.merge import MergeSpec
from engine.model.schema import avro_to_arrow_schema, remove_meta_fields, schema_json
from engine.services.compaction import run_pending_compactions
from engine.services.inline import run_table_services, validate_service_options
from engine.services.lock import TableLock
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.instant import Action, new_instant_time
from engine.timeline.timeline import Timeline, create_requested
from engine.write.commit import build_commit_metadata, commit_write
from engine.write.conflict import (
    Heartbeat,
    check_write_conflicts,
    is_write_alive,
    rollback_on_error,
)
from engine.write.copy_on_write import write_copy_on_write
from engine.write.index import IndexSource
from engine.write.merge_on_read import write_merge_on_read
from engine.write.plan import WriteJob
from engine.write.replace import (
    delete_partitions,
    plan_replaced_file_ids,
    requested_replace_metadata,
    write_insert_overwrite,
)
from engine.write.rollback import rollback_failed_writes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from engine.spark.profile import BatchProfile

__all__ = ["HudiTable", "WriteResult", "write_hudi"]

# (write option, persisted table property) pairs that must agree on an existing table
_MUST_MATCH: tuple[tuple[config.ConfigOption[Any], config.ConfigOption[Any]], ...] = (
    (config.WRITE_TABLE_TYPE, config.TABLE_TYPE),
    (config.RECORDKEY_FIELD, config.RECORDKEY_FIELDS),
    (config.PARTITIONPATH_FIELD, config.PARTITION_FIELDS),
    (config.WRITE_PRECOMBINE_FIELD, config.PRECOMBINE_FIELD),
    (config.WRITE_KEYGENERATOR_CLASS, config.KEYGENERATOR_CLASS),
    (config.WRITE_PAYLOAD_CLASS, config.PAYLOAD_CLASS),
    (config.TABLE_NAME, config.TABLE_NAME),
    (config.HIVE_STYLE_PARTITIONING, config.HIVE_STYLE_PARTITIONING),
    (config.URL_ENCODE_PARTITIONING, config.URL_ENCODE_PARTITIONING),
)


@dataclass(frozen=True)
class WriteResult:
    """What a write committed."""

    instant_time: str
    operation: WriteOperation
    write_stats: list[HoodieWriteStat] = field(default_factory=list)
    rolled_back: list[str] = field(default_factory=list)

    @property
    def commit_metadata(self) -> HoodieCommitMetadata:
        return build_commit_metadata(self.write_stats, schema="", operation=self.operation)


def _parse_table_properties(props: Mapping[str, str]) -> HoodieConfig:
    """Persisted properties as a config; keys this engine does not know are kept out."""
    known = {k: v for k, v in props.items() if config.lookup(k) is not None}
    return parse_options(known)


def _check_against_table(options: HoodieConfig, table: HoodieConfig, base_path: str) -> None:
    problems = []
    for write_opt, table_opt in _MUST_MATCH:
        if not options.is_set(write_opt) or not table.is_set(table_opt):
            continue
        given, persisted = options.get(write_opt), table.get(table_opt)
        if given != persisted:
            problems.append(
                f"config {write_opt.key!r}={config.format_value(given)!r} contradicts the table's "
                f"{table_opt.key!r}={config.format_value(persisted)!r}"
            )
    if problems:
        raise ConfigError(f"Table at {base_path}: " + "; ".join(problems))


class HudiTable:
    """A Hudi table (table version 6) at a base path; it may not exist yet."""

    def __init__(self, base_path: str) -> None:
        self.storage = Storage(base_path)
        self.base_path = self.storage.base_path

    @property
    def exists(self) -> bool:
        return self.storage.exists(f"{METAFOLDER}/hoodie.properties")

    def properties(self) -> dict[str, str]:
        return read_properties(self.storage)

    def timeline(self) -> Timeline:
        return Timeline.load(self.storage)

    # ---- configuration ---------------------------------------------------------------------

    def _resolve_config(self, options: HoodieConfig) -> tuple[HoodieConfig, dict[str, str] | None]:
        if not self.exists:
            return options, None
        props = self.properties()
        table_cfg = _parse_table_properties(props)
        _check_against_table(options, table_cfg, self.base_path)
        return table_cfg.merged(options), props

    def _new_table_properties(
        self, cfg: HoodieConfig, keygen_class: str, schema: str
    ) -> dict[str, str]:
        name = cfg.require(config.TABLE_NAME)
        props: dict[str, str] = {
            config.TABLE_NAME.key: name,
            config.TABLE_TYPE.key: cfg.get(config.WRITE_TABLE_TYPE),
            config.TABLE_VERSION.key: "6",
            config.TIMELINE_LAYOUT_VERSION.key: "1",
        }
        record_fields: tuple[str, ...] = cfg.require(config.RECORDKEY_FIELD)
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
        props[config.CREATE_SCHEMA.key] = schema
        return props

    def _take_over_metadata_table(self, props: dict[str, str]) -> None:
        """Hudi's own writers may keep a metadata table this engine does not maintain: disable
        it the way Hudi does with the metadata table switched off (empty partitions property,
        then remove ``.hoodie/metadata``) so no reader trusts a stale file listing."""
        keys = (config.METADATA_PARTITIONS.key, config.METADATA_PARTITIONS_INFLIGHT.key)
        if any(props.get(k) for k in keys):
            updated = dict(props)
            for k in keys:
                if k in updated:
                    updated[k] = ""
            write_properties(self.storage, updated)
        self.storage.delete_dir(f"{METAFOLDER}/metadata")

    # ---- write -----------------------------------------------------------------------------

    def write(self, df: DataFrame, options: Mapping[str, Any] | None = None) -> WriteResult:
        """Write ``df`` with a Hudi operation (``hoodie.datasource.write.operation``).

        Raises:
            ConfigError: an unknown/malformed option, or one contradicting the table.
            RecordKeyError: a record key is null or empty (nothing is committed).
            SchemaError: the data does not fit the table schema.
        """
        from engine.spark import jobs
        from engine.spark.profile import profile_batch

        user = parse_options(options)
        cfg, props = self._resolve_config(user)
        operation = cfg.get(config.OPERATION)
        table_type = cfg.get(config.TABLE_TYPE) if props else cfg.get(config.WRITE_TABLE_TYPE)
        is_mor = table_type == TableType.MERGE_ON_READ  # deltacommits: engine.write.merge_on_read
        if props is not None and cfg.get(config.POPULATE_META_FIELDS) is False:
            raise ConfigError(
                f"Table at {self.base_path} has {config.POPULATE_META_FIELDS.key}=false; "
                "writing tables without meta fields is not yet implemented"
            )
        if props is None and not cfg.get(config.TABLE_NAME):
            raise ConfigError(f"Missing required config {config.TABLE_NAME.key!r}")
        validate_service_options(cfg)
        lock = TableLock(self.storage, cfg)
        is_alive = partial(is_write_alive, self.storage, cfg=cfg)  # other writers' instants
        if operation == WriteOperation.DELETE_PARTITION:
            if props is None:
                raise TableNotFoundError(
                    f"No Hudi table to delete partitions from at {self.base_path}"
                )
            with lock.hold():
                self._take_over_metadata_table(props)
                instant_time, rolled_back = delete_partitions(self.storage, cfg, is_alive)
            run_table_services(self.storage, cfg, lock, merge_on_read=is_mor)
            return WriteResult(instant_time, operation, [], rolled_back)
        spec = keygen_spec_from_config(cfg)
        ordering = cfg.get(config.WRITE_PRECOMBINE_FIELD) or cfg.get(config.PRECOMBINE_FIELD)
        payload = cfg.get(config.WRITE_PAYLOAD_CLASS) or cfg.get(config.PAYLOAD_CLASS)
        merge_spec = MergeSpec(str(payload), ordering)
        if ordering and operation != WriteOperation.DELETE and ordering not in df.columns:
            raise ConfigError(
                f"Ordering field {ordering!r} ({config.WRITE_PRECOMBINE_FIELD.key}) "
                f"is not a column of the data: {', '.join(df.columns)}"
            )
        for name in (*spec.record_key_fields, *spec.partition_fields):
            if name not in df.columns:
                raise ConfigError(f"Key field {name!r} is not a column of the data")

        keyed = jobs.add_record_keys(df, spec, delete_records=operation == WriteOperation.DELETE)
        profile: BatchProfile | None = None
        try:
            timeline = self.timeline() if props is not None else None
            lookup = (
                IndexSource(self.storage, timeline)
                if timeline is not None and operation.looks_up_keys
                else None
            )
            # raises RecordKeyError before any write
            profile = profile_batch(keyed, spec, lookup)
            ranges = profile.ranges
            commit_schema = self._commit_schema(df, cfg, timeline, operation)
            with lock.hold():  # start-commit: one writer at a time
                if props is None:
                    props = self._new_table_properties(cfg, spec.class_name, commit_schema)
                    self.storage.makedirs(METAFOLDER)
                    for folder in (".temp", ".aux", "archived"):
                        self.storage.makedirs(f"{METAFOLDER}/{folder}")
                    write_properties(self.storage, props)
                else:
                    self._take_over_metadata_table(props)
                timeline = self.timeline()
                rolled_back = rollback_failed_writes(self.storage, timeline, is_alive=is_alive)
                # merge-on-read compacts synchronously: a pending compaction is finished first
                compacted = run_pending_compactions(self.storage) if is_mor else []
                if rolled_back or compacted:
                    timeline = self.timeline()
                instant_time = new_instant_time(timeline.max_instant_time())
                action = Action.DELTA_COMMIT if is_mor else Action.COMMIT
                is_replace = operation.is_replace
                if is_replace:
                    action = Action.REPLACE_COMMIT
                create_requested(
                    self.storage,
                    instant_time,
                    action,
                    requested_replace_metadata() if is_replace else b"",
                )
                heartbeat = Heartbeat(self.storage, instant_time, cfg).start()
            with heartbeat, rollback_on_error(self.storage, lock, instant_time):
                checkpoint("write.requested")
                if lookup is not None and _written_since(lookup.timeline, timeline, compacted):
                    # another writer committed after the lookup: look the keys up again
                    profile.release()
                    profile = profile_batch(keyed, spec, IndexSource(self.storage, timeline))
                job = WriteJob(
                    self.storage,
                    keyed,
                    profile,
                    cfg,
                    timeline,
                    operation,
                    instant_time,
                    merge_spec,
                    commit_schema,
                )
                if is_replace:
                    stats = write_insert_overwrite(job)
                elif is_mor:
                    stats = write_merge_on_read(job)
                else:
                    stats = write_copy_on_write(job)
                checkpoint("write.before_commit")
                with lock.hold():  # commit: conflict check, then the completed instant
                    replaced = (
                        plan_replaced_file_ids(
                            self.storage,
                            self.timeline(),
                            operation,
                            [r.partition_path for r in ranges],
                        )
                        if is_replace
                        else None
                    )
                    check_write_conflicts(
                        self.storage, timeline, instant_time, action, stats, replaced
                    )
                    commit_write(
                        self.storage,
                        instant_time,
                        action,
                        stats,
                        schema=commit_schema,
                        operation=operation,
                        replaced=replaced,
                    )
        finally:
            if profile is not None:
                profile.release()
            keyed.unpersist()
        checkpoint("write.after_commit")
        run_table_services(self.storage, cfg, lock, merge_on_read=is_mor)
        return WriteResult(instant_time, operation, stats, rolled_back)

    def _commit_schema(
        self,
        df: DataFrame,
        cfg: HoodieConfig,
        timeline: Timeline | None,
        operation: WriteOperation,
    ) -> str:
        from engine.spark.schema import data_arrow_schema

        incoming = data_arrow_schema(df.schema)
        name = str(cfg.require(config.TABLE_NAME))
        latest = timeline.latest_schema() if timeline is not None else None
        if latest is None:
            if operation == WriteOperation.DELETE:
                raise HudiError(f"Cannot delete from a table without data at {self.base_path}")
            return commit_schema_of(incoming, name)
        if operation == WriteOperation.DELETE:
            return latest
        current = avro_to_arrow_schema(latest)
        _check_castable(incoming, current)
        added = [f for f in incoming if f.name not in current.names]
        if not added:
            return schema_json(remove_meta_fields(latest))
        evolved = pa_schema_append(current, added)
        return commit_schema_of(evolved, name)


def _written_since(before: Timeline, after: Timeline, compacted: list[str]) -> bool:
    """Whether a write (not one of our ``compacted`` compactions) completed between the two."""
    seen = {i.instant_time for i in before.commits_timeline()}
    return any(
        i.instant_time not in seen and i.instant_time not in compacted
        for i in after.commits_timeline()
    )


def _check_castable(incoming: Any, current: Any) -> None:
    """Fail before the write starts when a column cannot become the table's type."""
    import pyarrow as pa

    for column in incoming:
        if column.name not in current.names:
            continue
        target = current.field(column.name).type
        try:
            pa.array([], type=column.type).cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise SchemaError(
                f"Column {column.name!r} of type {column.type} does not fit the table's {target}"
            ) from e


def pa_schema_append(schema: Any, fields: list[Any]) -> Any:
    """``schema`` with ``fields`` appended (schema evolution by added columns)."""
    import pyarrow as pa

    return pa.schema([*schema, *(f.with_nullable(True) for f in fields)])


def write_hudi(df: DataFrame, path: str, options: Mapping[str, Any] | None = None) -> WriteResult:
    """Write a Spark DataFrame into the Hudi table at ``path`` (created on first write).

    Args:
        df: Records to write.
        path: Table base path (local path or URI reachable from every Spark executor).
        options: Hudi datasource options (``hoodie.*``), e.g. record key, partition path,
            precombine field, operation, table type.

    Returns:
        The committed instant and its write stats.
    """
    return HudiTable(path).write(df, options)
