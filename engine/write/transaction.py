"""The write transaction: every write, whatever its operation and table type, in one sequence.

::

    prepare    key generation, then the write job the index's answer picks
               (:mod:`engine.write.pipeline`) and the batch tagged or profiled for it (the
               profile job looks the keys up on the routed job; null keys fail here), then the
               commit schema; nothing is written yet, so an error here leaves the table untouched
    start      lock: [create the table] ──► roll back dead writers' instants ──►
               strategy.before_request (merge-on-read: finish pending compactions) ──►
               [initialize or take over the metadata table] ──►
               <t>.<action>.requested ──► heartbeat; unlock
    execute    [look the keys up again if a write completed since the lookup] ──►
               the chosen job (routed: strategy.execute): <t>.<action>.inflight, partition
               metafiles, the files on the runner
    audit      [pre-commit validators and audit hooks on the staged snapshot, the inflight
               instant merged over the current one (:mod:`engine.write.precommit`); a
               refusal rolls the instant back]
    commit     lock: strategy.replaced (replacecommits) ──► conflict check ──► metadata table
               deltacommit <t> ──► <t>.<action> (the commit point) ──► markers removed; unlock
    services   lock: inline compaction, clean, archive (:mod:`engine.services.inline`); then
               the metadata table's compaction and clean when due

A failure between start and the commit point rolls the instant back at once
(:func:`engine.write.conflict.rollback_on_error`); a killed writer's instant is rolled back by the
next writer once its heartbeat stops. The strategy (:mod:`engine.write.strategy`) is the only part
that differs between copy-on-write, merge-on-read, insert overwrite and delete partition; the
index (:class:`engine.write.index.KeyIndex`) only chooses the write job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from engine import config
from engine.config import HoodieConfig, TableType, WriteOperation
from engine.errors import (
    ConfigError,
    HudiError,
    KeyMovedError,
    TableNotFoundError,
    WriteConflictError,
)
from engine.faults import checkpoint
from engine.fs.properties import PROPERTIES_FILE
from engine.fs.storage import Storage
from engine.metadata.sync import (
    check_metadata_options,
    metadata_enabled,
    prepare_metadata_table,
    take_over_metadata_table,
)
from engine.model.auto_keys import check_auto_keys, write_operation
from engine.model.keygen import KeyGenSpec, keygen_spec_from_config
from engine.model.merge import MergeSpec
from engine.model.ordering import null_ordering_checked
from engine.services.clustering import check_clustering_updates
from engine.services.heartbeat import Heartbeat, is_write_alive
from engine.services.inline import run_table_services, validate_service_options
from engine.services.lock import TableLock
from engine.services.metadata_table import run_metadata_services
from engine.services.restore import finish_pending_restores
from engine.services.rollback import rollback_failed_writes
from engine.timeline.commit_metadata import (
    HoodieCommitMetadata,
    HoodieWriteStat,
    build_commit_metadata,
)
from engine.timeline.instant import Action, new_instant_time
from engine.timeline.markers import remove_unreported_files
from engine.timeline.timeline import Timeline, create_requested
from engine.write.cdc import check_cdc_options
from engine.write.commit import commit_write
from engine.write.commit_schema import commit_schema
from engine.write.conflict import check_write_conflicts, rollback_on_error
from engine.write.copy_on_write import CopyOnWriteWrite
from engine.write.create_table import create_table, new_table_properties
from engine.write.global_index import check_index_options
from engine.write.index import IndexSource, KeyIndex
from engine.write.merge_on_read import MergeOnReadWrite
from engine.write.pipeline import choose_job, one_job_targets, run_write_job, tag_batch
from engine.write.plan import PreparedRecords, WriteJob, WriteJobKind
from engine.write.precommit import AuditHook, audit_write, configured_checks
from engine.write.replace import (
    DeletePartitionWrite,
    InsertOverwriteWrite,
    partitions_to_delete,
    requested_replace_metadata,
)
from engine.write.runner import Runner
from engine.write.strategy import WriteStrategy

__all__ = ["UNSUPPORTED_VALUES", "WriteResult", "WriteTransaction", "strategy_for"]

# values of known keys this engine does not implement: refused rather than ignored
UNSUPPORTED_VALUES: tuple[tuple[config.ConfigOption[Any], Any, str], ...] = (
    (config.PARTITION_METAFILE_USE_BASE_FORMAT, True, "partition metafiles are written as text"),
    (config.COMBINE_BEFORE_UPSERT, False, "upserts always precombine duplicate keys"),
    (config.BULKINSERT_SORT_MODE, "GLOBAL_SORT", "bulk_insert does not sort across files"),
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


def strategy_for(operation: WriteOperation, table_type: TableType) -> WriteStrategy:
    """The strategy of a write: replace operations complete as replacecommits on either table
    type; other operations as commits (copy-on-write) or deltacommits (merge-on-read). The
    index does not change the strategy: it chooses the write job (:mod:`engine.write.pipeline`).
    """
    if operation == WriteOperation.DELETE_PARTITION:
        return DeletePartitionWrite()
    if operation.is_replace:
        return InsertOverwriteWrite()
    if table_type == TableType.MERGE_ON_READ:
        return MergeOnReadWrite()
    return CopyOnWriteWrite()


@dataclass
class _Started:
    """A write whose instant is requested."""

    instant_time: str
    timeline: Timeline  # as it was when the instant was requested
    rolled_back: list[str]
    compacted: list[str]
    heartbeat: Heartbeat


class WriteTransaction:
    """One write on one table (see the module notes).

    Args:
        storage: The table's storage.
        cfg: Table properties merged with the write options.
        props: The persisted table properties; ``None`` when the write creates the table.
        runner: Runs the data work; a write of records, and an inline compaction, need one.
        audit: Hooks given the staged snapshot before the commit; one raising
            :class:`~engine.errors.PreCommitValidationError` refuses the write.
    """

    def __init__(
        self,
        storage: Storage,
        cfg: HoodieConfig,
        props: dict[str, str] | None,
        runner: Runner | None,
        audit: Sequence[AuditHook] = (),
    ) -> None:
        self.storage = storage
        self.audit_hooks = tuple(audit)
        self.cfg = cfg
        self.props = props
        self._runner = runner
        self.operation = write_operation(cfg)  # keyless writes default to bulk_insert
        self.table_type = (
            cfg.get(config.TABLE_TYPE) if props is not None else cfg.get(config.WRITE_TABLE_TYPE)
        )
        # the index, for this operation, says how the records get their file groups
        self.configured_index = KeyIndex.of(cfg)  # the one place the options choose it
        self.index = self.configured_index.for_operation(self.operation)
        self.bucketed = self.index.tags_in_write_job  # the write job tags the batch
        self.strategy = strategy_for(self.operation, self.table_type)
        self.lock = TableLock(storage, cfg)
        self._is_alive = partial(is_write_alive, storage, cfg=cfg)  # other writers' instants

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            raise HudiError(
                f"Operation {self.operation} on {self.storage.base_path} needs a runner "
                "(engine.spark.SparkRunner) for its data work"
            )
        return self._runner

    def run(self, data: Any) -> WriteResult:
        """Prepare, start, execute and commit the write of ``data``, then run the services.

        A one-job global-index write whose batch moves a key to another partition is rolled
        back (:class:`KeyMovedError`) and runs again as the two-job write."""
        try:
            return self._run_once(data, one_job=True)
        except KeyMovedError:
            return self._run_once(data, one_job=False)

    def _run_once(self, data: Any, *, one_job: bool) -> WriteResult:
        records, schema = self._prepare(data, one_job=one_job)
        try:
            started = self._start(records, schema)
            with (
                started.heartbeat,
                rollback_on_error(self.storage, self.lock, started.instant_time),
            ):
                checkpoint("write.requested")
                if records is not None:
                    self._look_up_again(records, started)
                job = WriteJob(
                    self.storage,
                    self._runner,
                    self.cfg,
                    started.timeline,
                    self.operation,
                    started.instant_time,
                    schema,
                    records,
                )
                kind = records.job if records is not None else WriteJobKind.ROUTED
                stats = run_write_job(kind, job, self.strategy)
                checkpoint("write.before_commit")
                self._audit(job, stats)
                self._commit(job, stats)
        finally:
            if records is not None:
                records.profile.release()
                self.runner.release(records.keyed)
        checkpoint("write.after_commit")
        merge_on_read = self.table_type == TableType.MERGE_ON_READ
        compact = self.runner.compact if merge_on_read and self._runner is not None else None
        cluster = self.runner.cluster if self._runner is not None else None
        run_table_services(
            self.storage,
            self.cfg,
            self.lock,
            merge_on_read=merge_on_read,
            compact=compact,
            cluster=cluster,
        )
        with self.lock.hold():  # after the data services, whose instants it records too
            run_metadata_services(self.storage, self.cfg)
        return WriteResult(started.instant_time, self.operation, stats, started.rolled_back)

    # ---- prepare (nothing written) ----------------------------------------------------------

    def _prepare(self, data: Any, *, one_job: bool) -> tuple[PreparedRecords | None, str]:
        """The prepared records (none for delete_partition) and the commit schema."""
        self._check_options()
        if not self.strategy.writes_records:
            if self.props is None:
                raise TableNotFoundError(
                    f"No Hudi table to delete partitions from at {self.storage.base_path}"
                )
            partitions_to_delete(self.cfg)  # raises before anything is written
            return None, Timeline.load(self.storage).latest_schema() or ""
        return self._prepare_records(data, one_job=one_job)

    def _check_options(self) -> None:
        check_auto_keys(self.cfg, self.operation, self.props, self.storage.base_path)
        if self.props is not None and self.cfg.get(config.POPULATE_META_FIELDS) is False:
            raise ConfigError(
                f"Table at {self.storage.base_path} has {config.POPULATE_META_FIELDS.key}=false; "
                "writing tables without meta fields is not yet implemented"
            )
        if self.props is None and not self.cfg.get(config.TABLE_NAME):
            raise ConfigError(f"Missing required config {config.TABLE_NAME.key!r}")
        check_cdc_options(self.cfg, self.props, self.table_type, self.storage.base_path)
        for option, value, why in UNSUPPORTED_VALUES:
            if self.cfg.get(option) == value:
                raise ConfigError(
                    f"{option.key}={config.format_value(value)} is not supported ({why}); "
                    f"the write to {self.storage.base_path} is refused"
                )
        validate_service_options(self.cfg)
        configured_checks(self.cfg)  # misconfigured validators refuse the write up front
        check_metadata_options(self.cfg, self.props)
        payload = self.cfg.get(config.WRITE_PAYLOAD_CLASS) or self.cfg.get(config.PAYLOAD_CLASS)
        partitioned = keygen_spec_from_config(self.cfg).is_partitioned
        check_index_options(self.configured_index, str(payload), partitioned=partitioned)

    def _prepare_records(self, data: Any, *, one_job: bool) -> tuple[PreparedRecords, str]:
        runner, cfg = self.runner, self.cfg
        incoming = runner.incoming(data)
        spec = keygen_spec_from_config(cfg)
        ordering = cfg.get(config.WRITE_PRECOMBINE_FIELD) or cfg.get(config.PRECOMBINE_FIELD)
        payload = cfg.get(config.WRITE_PAYLOAD_CLASS) or cfg.get(config.PAYLOAD_CLASS)
        deleting = self.operation == WriteOperation.DELETE
        if ordering and not deleting and ordering not in incoming.columns:
            raise ConfigError(
                f"Ordering field {ordering!r} ({config.WRITE_PRECOMBINE_FIELD.key}) "
                f"is not a column of the data: {', '.join(incoming.columns)}"
            )
        for name in (*spec.record_key_fields, *spec.partition_fields):
            if name not in incoming.columns:
                raise ConfigError(f"Key field {name!r} is not a column of the data")
        checked = null_ordering_checked(cfg, self.operation, ordering)
        keyed = runner.key_records(incoming, spec, delete_records=deleting, null_ordering=checked)
        try:
            timeline = Timeline.load(self.storage) if self.props is not None else None
            records = self._tag(keyed, spec, timeline, MergeSpec(str(payload), ordering), one_job)
            profile = records.profile
            try:
                schema = commit_schema(
                    incoming,
                    runner,
                    cfg=cfg,
                    table_name=str(cfg.require(config.TABLE_NAME)),
                    timeline=timeline,
                    operation=self.operation,
                    storage=self.storage,
                )
            except BaseException:
                profile.release()
                raise
        except BaseException:
            runner.release(keyed)
            raise
        return records, schema

    def _tag(
        self,
        keyed: Any,
        spec: KeyGenSpec,
        timeline: Timeline | None,
        merge_spec: MergeSpec,
        one_job: bool,
    ) -> PreparedRecords:
        """The write job the index's answer picks (:mod:`engine.write.pipeline`), and the
        batch tagged or profiled for it."""
        index, cfg = self.index, self.cfg
        targets = (
            one_job_targets(
                self.storage, cfg, index, self.operation, self.table_type, spec, timeline
            )
            if one_job
            else None
        )
        kind = choose_job(index, self.operation, cfg, targets)
        # the profile job looks the keys up only on the routed write of a lookup index
        routed_lookup = kind is WriteJobKind.ROUTED and index.looks_up
        source = (
            IndexSource(self.storage, timeline, index)
            if timeline is not None and routed_lookup
            else None
        )
        profile = tag_batch(
            kind,
            self.runner,
            keyed,
            spec,
            cfg,
            source=source,
            one_job=targets,
            ordering=merge_spec.ordering_field,
            base_path=self.storage.base_path,
        )
        return PreparedRecords(keyed, profile, spec, merge_spec, source, kind)

    # ---- start: lock, roll back, requested, heartbeat ---------------------------------------

    def _start(self, records: PreparedRecords | None, schema: str) -> _Started:
        with self.lock.hold():  # start-commit: one writer at a time
            if self.props is None:
                _refuse_created_meanwhile(self.storage)
                class_name = records.spec.class_name if records is not None else ""
                create_table(self.storage, new_table_properties(self.cfg, class_name, schema))
            elif not metadata_enabled(self.cfg, self.props):
                take_over_metadata_table(self.storage, self.props)
            timeline = Timeline.load(self.storage)
            if timeline.pending([Action.RESTORE]):  # a killed restore is finished first
                finish_pending_restores(self.storage)
                timeline = timeline.reload()
            rolled_back = rollback_failed_writes(self.storage, timeline, is_alive=self._is_alive)
            compacted = self.strategy.before_request(self.storage, self._runner)
            if metadata_enabled(self.cfg, self.props):  # after failed writes are rolled back
                prepare_metadata_table(self.storage, self.cfg)
            if rolled_back or compacted:
                timeline = timeline.reload()
            instant_time = new_instant_time(timeline.max_instant_time())
            action = self.strategy.action
            requested = requested_replace_metadata() if action == Action.REPLACE_COMMIT else b""
            create_requested(self.storage, instant_time, action, requested)
            heartbeat = Heartbeat(self.storage, instant_time, self.cfg).start()
        return _Started(instant_time, timeline, rolled_back, compacted, heartbeat)

    def _look_up_again(self, records: PreparedRecords, started: _Started) -> None:
        """Another writer committed after the lookup: look the keys up in the new state."""
        source = records.source
        if source is None or not _written_since(
            source.timeline, started.timeline, started.compacted
        ):
            return
        records.profile.release()
        records.source = replace(source, timeline=started.timeline)
        records.profile = self.runner.locate(records.keyed, records.spec, records.source)

    # ---- audit: the staged snapshot checked before the commit --------------------------------

    def _audit(self, job: WriteJob, stats: list[HoodieWriteStat]) -> None:
        """Run the pre-commit validators and audit hooks on the staged snapshot (the commit
        metadata the commit would write, over the current timeline); nothing when none is
        configured."""
        if not self.audit_hooks and not self.cfg.get(config.PRECOMMIT_VALIDATORS):
            return
        remove_unreported_files(self.storage, job.instant_time, stats)  # as the commit does
        metadata = build_commit_metadata(
            stats,
            schema=job.commit_schema,
            operation=self.operation,
            replaced=self.strategy.replaced(self.storage, job, stats),
            extra=self.commit_extra_metadata(),
        )
        staged = (job.instant_time, self.strategy.action, metadata)
        audit_write(self.storage, self._runner, self.cfg, staged, self.audit_hooks)

    # ---- commit: conflict check, completed instant ------------------------------------------

    def _commit(self, job: WriteJob, stats: list[HoodieWriteStat]) -> None:
        action = self.strategy.action
        with self.lock.hold():  # commit: conflict check, then the completed instant
            check_clustering_updates(self.storage, self.cfg, stats, job.instant_time, action)
            replaced = self.strategy.replaced(self.storage, job, stats)
            check_write_conflicts(
                self.storage,
                job.timeline,
                job.instant_time,
                action,
                stats,
                replaced,
                bucketed=self.bucketed,
            )
            commit_write(
                self.storage,
                job.instant_time,
                action,
                stats,
                schema=job.commit_schema,
                operation=self.operation,
                replaced=replaced,
                extra=self.commit_extra_metadata(),
            )

    def commit_extra_metadata(self) -> dict[str, str]:
        """Write options under ``commitmeta.key.prefix``: kept in the commit's extraMetadata."""
        prefix = self.cfg.get(config.COMMITMETA_KEY_PREFIX)
        if not prefix:
            return {}
        return {k: v for k, v in self.cfg.extra.items() if k.startswith(prefix)}


def _refuse_created_meanwhile(storage: Storage) -> None:
    """A write that prepared its batch for a new table (a bulk_insert, no key lookup) cannot go
    on once another writer created the table: it would insert keys the table may hold already.
    Nothing is written yet (call under the lock)."""
    if storage.exists(PROPERTIES_FILE):
        raise WriteConflictError(
            f"This write on {storage.base_path} conflicts with another writer, which created the "
            "table while this write prepared its batch for a new table; nothing was written, "
            "retry it"
        )


def _written_since(before: Timeline, after: Timeline, compacted: list[str]) -> bool:
    """Whether a write (not one of our ``compacted`` compactions) completed between the two."""
    seen = {i.instant_time for i in before.commits_timeline()}
    return any(
        i.instant_time not in seen and i.instant_time not in compacted
        for i in after.commits_timeline()
    )
