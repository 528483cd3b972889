"""HudiTable: the engine's facade, what the adapter and the CLI use of a table.

::

    HudiTable(base_path, runner=SparkRunner(spark))
      .options(options)        persisted table properties merged with options (a write option
                               contradicting a persisted property is an error)
      .write(data, options)    one write transaction (engine.write.transaction)
      .read(options)           a query plan, read by the runner (a Spark DataFrame)
      .compact / .clean / .rollback / .rollback_failed / .archive(options)
                               table services under the table lock, with the persisted properties
      .savepoint / .savepoints / .delete_savepoint / .restore(instant) / .restore_run(id)
                               pin a commit against the cleaner; roll the table back to an
                               instant, or to its state before a dbt run
      .recreate()              --full-refresh: the table moved aside, restored if the new write
                               fails
      .timeline() / .properties() / .schema() / .table_type()

Every method that changes the timeline takes the table lock; every method reads the table's
persisted properties first, so the adapter and the CLI behave the same. A table is written by
the write transaction; the data work runs on the table's runner (:mod:`engine.write.runner`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, Literal

import pyarrow as pa

from engine import config
from engine.config import HoodieConfig, TableType, parse_options
from engine.errors import ConfigError, HudiError, TableNotFoundError, TimelineError
from engine.fs.properties import PROPERTIES_FILE, read_properties
from engine.fs.s3 import is_s3_uri, resolve_s3_settings
from engine.fs.storage import Storage
from engine.fs.table_version import write_view_of_properties
from engine.io.bloom_filter import BloomFilterSpec
from engine.metadata.sync import prepare_metadata_table
from engine.model.schema import avro_to_arrow_schema, remove_meta_fields
from engine.read.filter import ReadFilter
from engine.read.plan import QueryPlan, parse_read_query, plan_query
from engine.services.archival import archive
from engine.services.clean import CleanResult, clean
from engine.services.clustering import (
    execute_clustering,
    run_pending_clustering,
    schedule_clustering,
)
from engine.services.clustering_plan import ClusteringPlan, pending_clustering, plan_clustering
from engine.services.compaction import (
    compacting_file_groups,
    pending_compactions,
    run_pending_compactions,
    schedule_compaction,
)
from engine.services.heartbeat import is_write_alive
from engine.services.lock import TableLock
from engine.services.restore import (
    RestorePlan,
    RestoreResult,
    finish_pending_restores,
    plan_restore,
    restore,
)
from engine.services.restore_run import RUN_ID_KEY, RUN_NODE_KEY, RunRestorePlan, plan_run_restore
from engine.services.rollback import rollback_failed_writes, rollback_instant, rollback_last_commit
from engine.services.savepoint import (
    Savepoint,
    create_savepoint,
    delete_savepoint,
    list_savepoints,
)
from engine.timeline.instant import Action, Instant
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSystemView
from engine.write.precommit import AuditHook
from engine.write.runner import Runner, runner_for_write
from engine.write.transaction import WriteResult, WriteTransaction

__all__ = [
    "RUN_ID_KEY",
    "RUN_NODE_KEY",
    "HudiTable",
    "RestorePlan",
    "RestoreResult",
    "RunRestorePlan",
    "Savepoint",
    "WriteResult",
    "resolve_options",
]

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
    (config.CDC_SUPPLEMENTAL_LOGGING_MODE, config.CDC_SUPPLEMENTAL_LOGGING_MODE),
    (config.INDEX_TYPE, config.INDEX_TYPE),
    (config.BUCKET_INDEX_NUM_BUCKETS, config.BUCKET_INDEX_NUM_BUCKETS),
    (config.BUCKET_INDEX_HASH_FIELD, config.BUCKET_INDEX_HASH_FIELD),
)
# where --full-refresh keeps the previous table until the new one is committed
BACKUP_SUFFIX = ".__dbt_hudi_previous"
_WRITE_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING)


def resolve_options(
    props: Mapping[str, str] | None, options: Mapping[str, Any] | None, base_path: str
) -> HoodieConfig:
    """Persisted table properties (the keys the engine knows) overridden by ``options``.

    Raises:
        ConfigError: an unknown or malformed option, or a write option contradicting a
            persisted property (another record key, another table type...).
    """
    given = parse_options(options)
    if props is None:
        return given
    known = write_view_of_properties(props)
    table = parse_options({k: v for k, v in known.items() if config.lookup(k) is not None})
    _check_table_version(given, props, base_path)
    problems = []
    for write_opt, table_opt in _MUST_MATCH:
        if not given.is_set(write_opt) or not table.is_set(table_opt):
            continue
        value, persisted = given.get(write_opt), table.get(table_opt)
        if value != persisted:
            problems.append(
                f"config {write_opt.key!r}={config.format_value(value)!r} contradicts the table's "
                f"{table_opt.key!r}={config.format_value(persisted)!r}"
            )
    if problems:
        raise ConfigError(f"Table at {base_path}: " + "; ".join(problems))
    return table.merged(given)


def _check_table_version(options: HoodieConfig, props: Mapping[str, str], base_path: str) -> None:
    """An existing table is written in its own version: asking for another one is an error
    (upgrading a table version 6 to 8/9 is Hudi's upgrade procedure, not done here)."""
    if not options.is_set(config.WRITE_TABLE_VERSION):
        return
    asked = options.get(config.WRITE_TABLE_VERSION)
    current = int(props.get(config.TABLE_VERSION.key) or config.TABLE_VERSION.default)
    if asked != current:
        raise ConfigError(
            f"Table at {base_path} is table version {current}: config "
            f"{config.WRITE_TABLE_VERSION.key!r}={asked} would need an upgrade or downgrade, "
            "which is not supported (drop the option to continue the table in its version)"
        )


def _clustering_options(
    options: Mapping[str, Any] | None,
    *,
    sort_columns: Sequence[str] | str | None = None,
    strategy: str | None = None,
    partitions: Sequence[str] | str | None = None,
) -> dict[str, Any]:
    """``options`` with the clustering shorthands spelled as Hudi's keys."""
    merged = dict(options or {})
    shorthands = (
        (config.CLUSTERING_SORT_COLUMNS, sort_columns),
        (config.LAYOUT_OPTIMIZE_STRATEGY, strategy),
        (config.CLUSTERING_PARTITION_SELECTED, partitions),
    )
    for option, value in shorthands:
        if value:
            merged[option.key] = value if isinstance(value, str) else ",".join(value)
    return merged


class HudiTable:
    """A Hudi table (table version 6) at a base path; it may not exist yet.

    Args:
        base_path: Table base path (local path or URI reachable from every runner task).
        runner: Runs the data work of writes, compactions and reads
            (:class:`engine.spark.SparkRunner`); timeline-only services need none.
        storage_options: Where an ``s3://``/``s3a://`` table's endpoint, region and
            credentials come from before the environment and the AWS profile: ``fs.s3a.*`` (or
            ``spark.hadoop.fs.s3a.*``) and ``hoodie.aws.*`` keys (:mod:`engine.fs.s3`).
    """

    def __init__(
        self,
        base_path: str,
        *,
        runner: Runner | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        s3 = resolve_s3_settings(storage_options) if is_s3_uri(base_path) else None
        self.storage = Storage(base_path, s3)
        self.storage_options: dict[str, Any] = dict(storage_options or {})
        self.base_path = self.storage.base_path
        self.runner = runner

    @property
    def exists(self) -> bool:
        return self.storage.exists(PROPERTIES_FILE)

    def properties(self) -> dict[str, str]:
        return read_properties(self.storage)

    def timeline(self) -> Timeline:
        return Timeline.load(self.storage)

    @property
    def uri(self) -> str:
        """The base path as a URI (what a catalog table's location holds)."""
        return self.storage.uri()

    def latest_base_file_names(self) -> tuple[list[str], str | None]:
        """Names of the latest committed base file of every live file group, and the latest
        completed instant (what a snapshot of base files alone reads)."""
        timeline = self.timeline()
        view = FileSystemView(self.storage, timeline)
        names = [s.base_file for s in view.latest_base_files() if s.base_file]
        last = timeline.last_completed()
        return names, last.instant_time if last is not None else None

    def timeline_hash(self) -> str:
        """A digest of the completed instants of the active timeline (Hudi's ``timelineHash``):
        it changes whenever a writer, a table service or a rollback completes an instant, so a
        reader that planned at one hash knows its plan is stale at another. ``""`` without a
        table."""
        if not self.exists:
            return ""
        digest = hashlib.sha256()
        for instant in self.timeline().completed():
            digest.update(
                f"{instant.instant_time}.{instant.action}.{instant.completion_time or ''};".encode()
            )
        return digest.hexdigest()

    def latest_instant(self) -> str | None:
        """The latest completed write instant (commit, deltacommit, replacecommit); ``None``
        before the first commit or without a table."""
        if not self.exists:
            return None
        commits = self.timeline().commits_timeline()
        return commits[-1].instant_time if commits else None

    def latest_completion_time(self) -> str | None:
        """When the latest completed write completed: the end of an incremental range that
        includes every completed write (table versions 8 and 9 range on completion time; on
        version 6 an instant completes at its instant time). ``None`` before the first commit."""
        if not self.exists:
            return None
        done = self.timeline().commits_timeline()
        return max((i.completion_time or i.instant_time for i in done), default=None)

    def latest_extra_metadata(self, key: str) -> str | None:
        """``key`` in the extraMetadata of the latest completed commit that carries it (how a
        consumer finds its checkpoint, as Hudi's streamer does); ``None`` when none does."""
        if not self.exists:
            return None
        timeline = self.timeline()
        for instant in reversed(timeline.commits_timeline()):
            value = timeline.read_commit_metadata(instant).extra_metadata.get(key)
            if value is not None:
                return value
        return None

    @property
    def cdc_enabled(self) -> bool:
        """Whether the table keeps a change log (``hoodie.table.cdc.enabled``)."""
        value = self.properties().get(config.TABLE_CDC_ENABLED.key) if self.exists else None
        return (value or "false").strip().lower() == "true"

    def schema(self) -> pa.Schema | None:
        """The table's latest data schema (no meta columns); ``None`` without data."""
        if not self.exists:
            return None
        latest = self.timeline().latest_schema()
        return avro_to_arrow_schema(remove_meta_fields(latest)) if latest else None

    def incoming_schema(self, data: Any) -> pa.Schema:
        """The Arrow schema a write of ``data`` (the runner's records) brings to the table."""
        return self._require_runner("Reading a batch's schema").incoming(data).arrow_schema

    def pending_compactions(self) -> list[str]:
        """Instant times of the compactions scheduled and not completed, oldest first."""
        return [i.instant_time for i in pending_compactions(self.timeline())]

    def table_type(self) -> TableType:
        """The persisted table type.

        Raises:
            TableNotFoundError: no table at the base path.
        """
        return self._existing_options(None).get(config.TABLE_TYPE)

    def options(self, options: Mapping[str, Any] | None = None) -> HoodieConfig:
        """The persisted properties merged with ``options`` (see :func:`resolve_options`)."""
        props = self.properties() if self.exists else None
        return resolve_options(props, options, self.base_path)

    def _existing_options(self, options: Mapping[str, Any] | None) -> HoodieConfig:
        if not self.exists:
            raise TableNotFoundError(f"No Hudi table at {self.base_path}")
        return resolve_options(self.properties(), options, self.base_path)

    def _require_runner(self, what: str) -> Runner:
        if self.runner is None:
            raise HudiError(f"{what} on {self.base_path} needs a runner (engine.spark.SparkRunner)")
        return self.runner

    # ---- write and read ----------------------------------------------------------------------

    def write(
        self,
        data: Any,
        options: Mapping[str, Any] | None = None,
        *,
        audit: Sequence[AuditHook] = (),
    ) -> WriteResult:
        """Write ``data`` (the runner's records, e.g. a Spark DataFrame) with a Hudi operation
        (``hoodie.datasource.write.operation``); the table is created by its first write.
        ``audit`` hooks see the staged snapshot before the commit
        (:mod:`engine.write.precommit`), as the ``hoodie.precommit.validators`` do.

        Raises:
            ConfigError: an unknown/malformed option, or one contradicting the table.
            RecordKeyError: a record key is null or empty (nothing is committed).
            SchemaError: the data does not fit the table schema.
            PreCommitValidationError: a validator or audit hook refused the write (rolled
                back).
        """
        props = self.properties() if self.exists else None
        cfg = resolve_options(props, options, self.base_path)
        runner = runner_for_write(self.runner, cfg)
        return WriteTransaction(self.storage, cfg, props, runner, audit).run(data)

    def read(
        self, options: Mapping[str, Any] | None = None, filters: Sequence[ReadFilter] = ()
    ) -> Any:
        """The table's rows for a query (``hoodie.datasource.query.type``, ``as.of.instant``,
        incremental instants) as the runner's data frame, meta columns included.

        ``filters`` keep the rows matching every one of them; known before planning, they
        prune partitions and skip the file slices the metadata table's column stats prove hold
        no match (data skipping), so only the files :meth:`plan_read` counts are opened.

        Raises:
            TableNotFoundError: no table at the base path.
            QueryError: an unsupported table or malformed query.
        """
        runner = self._require_runner("Reading")
        query = parse_read_query(options, filters)
        if query.is_cdc:
            return runner.read_changes(self.storage, str(query.begin), query.end)
        return runner.read(plan_query(self.storage, query))

    def plan_read(
        self, options: Mapping[str, Any] | None = None, filters: Sequence[ReadFilter] = ()
    ) -> QueryPlan:
        """The plan :meth:`read` runs for the same arguments, not read: its ``files_read``
        (the data files opened) and ``skipped_slices`` (the slices data skipping left out)
        say what a layout saves a query, as Hudi's data skipping reports files pruned."""
        return plan_query(self.storage, parse_read_query(options, filters))

    # ---- table services ----------------------------------------------------------------------

    @contextmanager
    def _service_lock(self, cfg: HoodieConfig) -> Iterator[None]:
        """The table lock for a service, the metadata table made ready first as a write makes
        it ready (:func:`engine.metadata.sync.prepare_metadata_table`): kept and updated by
        the service's instants when enabled, else removed, so no reader trusts a stale one."""
        with TableLock(self.storage, cfg).hold():
            prepare_metadata_table(self.storage, cfg)
            yield

    def compact(
        self,
        options: Mapping[str, Any] | None = None,
        *,
        order: Literal["FIFO", "LIFO"] = "FIFO",
        schedule_only: bool = False,
        on_compacted: Callable[[str], None] | None = None,
    ) -> list[str]:
        """Run the pending compactions of a merge-on-read table in ``order``; when none is
        pending, schedule one (whatever the trigger strategy: the caller asked) and run it.

        ``on_compacted`` is called with each compaction instant once it completes (progress).

        Returns:
            The compaction instants run (with ``schedule_only``: the one scheduled).

        Raises:
            ConfigError: the table is copy-on-write.
        """
        cfg = self._existing_options(options)
        table_type = cfg.get(config.TABLE_TYPE)
        if table_type != TableType.MERGE_ON_READ:
            raise ConfigError(
                f"Table at {self.base_path} is {table_type}: only MERGE_ON_READ tables "
                "are compacted"
            )
        with self._service_lock(cfg):
            if schedule_only:
                scheduled = schedule_compaction(self.storage, cfg, force=True)
                return [scheduled] if scheduled else []
            compact = self._require_runner("Compaction").compact
            run = partial(
                run_pending_compactions,
                self.storage,
                runner=compact,
                order=order,
                done=on_compacted,
                bloom=BloomFilterSpec.of(cfg),
            )
            completed = run()
            if not completed and schedule_compaction(self.storage, cfg, force=True) is not None:
                completed = run()
        return completed

    def pending_clustering(self) -> list[str]:
        """Instant times of the clusterings planned and not completed, oldest first."""
        return [i.instant_time for i in pending_clustering(self.storage, self.timeline())]

    def plan_clustering(
        self, options: Mapping[str, Any] | None = None, **layout: Any
    ) -> ClusteringPlan:
        """The clustering plan ``options`` (and ``layout``: see :meth:`cluster`) would schedule
        now (nothing written: a dry run)."""
        cfg = self._existing_options(_clustering_options(options, **layout))
        timeline = self.timeline()
        busy = compacting_file_groups(self.storage, timeline)
        return plan_clustering(self.storage, timeline, cfg, busy=busy)

    def cluster(
        self,
        options: Mapping[str, Any] | None = None,
        *,
        schedule_only: bool = False,
        on_planned: Callable[[str, ClusteringPlan], None] | None = None,
        on_clustered: Callable[[str], None] | None = None,
        **layout: Any,
    ) -> list[str]:
        """Run the requested clusterings, oldest first; when none is pending, plan one (whatever
        ``hoodie.clustering.inline.max.commits`` says: the caller asked) and run it.

        ``layout`` are shorthands over ``options``: ``sort_columns`` (a list or a
        comma-separated text), ``strategy`` (linear, z-order, hilbert) and ``partitions`` (the
        partition paths to cluster). ``on_planned`` gets a new plan before it runs;
        ``on_clustered`` each completed instant.

        Returns:
            The clustering instants run (with ``schedule_only``: the one scheduled).
        """
        cfg = self._existing_options(_clustering_options(options, **layout))
        with self._service_lock(cfg):
            if schedule_only:
                scheduled = schedule_clustering(self.storage, cfg, force=True)
                return [scheduled[0]] if scheduled else []
            runner = self._require_runner("Clustering").cluster
            done = run_pending_clustering(self.storage, cfg, runner=runner, done=on_clustered)
            if done:
                return done
            scheduled = schedule_clustering(self.storage, cfg, force=True)
            if scheduled is None:
                return []
            if on_planned is not None:
                on_planned(*scheduled)
            execute_clustering(self.storage, scheduled[0], cfg, runner=runner)
            if on_clustered is not None:
                on_clustered(scheduled[0])
            return [scheduled[0]]

    def clean(self, options: Mapping[str, Any] | None = None) -> CleanResult | None:
        """Finish a pending clean, then plan and run a new one under the table lock
        (``hoodie.cleaner.*`` options apply); ``None`` when nothing was due."""
        cfg = self._existing_options(options)
        with self._service_lock(cfg):
            return clean(self.storage, cfg)

    def rollback(self, instant_time: str, options: Mapping[str, Any] | None = None) -> str:
        """Undo a failed (pending) write whose writer is gone, or the latest completed write.

        Returns:
            The rollback instant.

        Raises:
            HudiError: no such write, or its writer is still running.
            TimelineError: a completed write that is not the latest.
        """
        cfg = self._existing_options(options)
        with self._service_lock(cfg):
            timeline = self.timeline()
            instant = timeline.get(instant_time)
            if instant is None or instant.action not in _WRITE_ACTIONS:
                raise HudiError(
                    f"No write instant {instant_time} on the timeline of {self.base_path}"
                )
            if instant.is_completed:
                return rollback_last_commit(self.storage, instant_time)
            if is_write_alive(self.storage, instant, cfg):
                raise HudiError(f"Write {instant_time} is still running (its heartbeat is alive)")
            return rollback_instant(self.storage, instant, timeline.max_instant_time())

    def rollback_failed(self, options: Mapping[str, Any] | None = None) -> list[str]:
        """Finish pending rollbacks, then roll back every pending write whose writer is gone
        (its heartbeat stopped); the instants rolled back."""
        cfg = self._existing_options(options)
        with self._service_lock(cfg):
            is_alive = partial(is_write_alive, self.storage, cfg=cfg)
            finish_pending_restores(self.storage)
            return rollback_failed_writes(self.storage, self.timeline(), is_alive=is_alive)

    def savepoint(
        self,
        instant_time: str | None = None,
        *,
        user: str | None = None,
        comment: str = "",
        options: Mapping[str, Any] | None = None,
    ) -> Savepoint:
        """Pin a completed commit (default: the latest) against the cleaner, so the table can
        be restored to it; the savepoint written.

        Raises:
            TimelineError: no such commit, savepointed already, or its files were cleaned.
        """
        cfg = self._existing_options(options)
        with TableLock(self.storage, cfg).hold():
            return create_savepoint(self.storage, instant_time, user=user, comment=comment)

    def savepoints(self) -> list[Savepoint]:
        """The table's savepoints, oldest first."""
        return list_savepoints(self.timeline()) if self.exists else []

    def delete_savepoint(self, instant_time: str, options: Mapping[str, Any] | None = None) -> None:
        """Remove a savepoint; the slices it pinned go at a later clean.

        Raises:
            TimelineError: no savepoint at that instant.
        """
        cfg = self._existing_options(options)
        with TableLock(self.storage, cfg).hold():
            delete_savepoint(self.storage, instant_time)

    def restore_plan(self, instant_time: str) -> RestorePlan:
        """What :meth:`restore` would roll back (nothing is written).

        Raises:
            TimelineError: the table cannot be restored to that instant (see :meth:`restore`).
        """
        cfg = self._existing_options(None)
        is_alive = partial(is_write_alive, self.storage, cfg=cfg)
        return plan_restore(self.storage, self.timeline(), instant_time, is_alive=is_alive)

    def restore(self, instant_time: str, options: Mapping[str, Any] | None = None) -> RestoreResult:
        """Roll the table back to a completed instant (a savepoint, or any commit whose files
        are still on storage): one ``restore`` instant rolling back every later write, newest
        first, under the table lock.

        Raises:
            TimelineError: not a completed write, its slices cleaned and not savepointed, or a
                later write still running (nothing is changed then).
        """
        cfg = self._existing_options(options)
        with TableLock(self.storage, cfg).hold():
            is_alive = partial(is_write_alive, self.storage, cfg=cfg)
            return restore(self.storage, instant_time, is_alive=is_alive)

    def archive(self, options: Mapping[str, Any] | None = None) -> list[Instant]:
        """Archive the completed instants past ``hoodie.keep.max.commits`` (as after a commit),
        under the table lock; the instants archived."""
        cfg = self._existing_options(options)
        with self._service_lock(cfg):
            return archive(self.storage, cfg)

    def plan_run_restore(self, invocation_id: str, *, force: bool = False) -> RunRestorePlan:
        """What :meth:`restore_run` would do (nothing is written); a refused plan says why."""
        cfg = self._existing_options(None)
        is_alive = partial(is_write_alive, self.storage, cfg=cfg)
        return plan_run_restore(self.storage, invocation_id, force=force, is_alive=is_alive)

    def restore_run(
        self, invocation_id: str, *, force: bool = False
    ) -> tuple[RunRestorePlan, RestoreResult | None]:
        """Restore the table to its state just before dbt invocation ``invocation_id`` (see
        :mod:`engine.services.restore_run`); no restore when the run did not write it.

        Raises:
            TimelineError: the plan is refused (nothing is changed then).
        """
        cfg = self._existing_options(None)
        with TableLock(self.storage, cfg).hold():
            is_alive = partial(is_write_alive, self.storage, cfg=cfg)
            plan = plan_run_restore(self.storage, invocation_id, force=force, is_alive=is_alive)
            if plan.refusal:
                raise TimelineError(plan.refusal)
            if plan.target is None:
                return plan, None
            return plan, restore(self.storage, plan.target, is_alive=is_alive)

    @contextmanager
    def recreate(self) -> Iterator[bool]:
        """Recreate the table (``--full-refresh``): its files are moved aside for the body, which
        writes the new table; they are restored if the body fails and dropped once it succeeds.

        Yields:
            Whether a table existed (and was moved aside).
        """
        backup = self.storage.root + BACKUP_SUFFIX
        existed = self.exists
        if existed:
            try:
                self.storage.fs.delete_dir(backup)
            except FileNotFoundError:
                pass
            self.storage.fs.move(self.storage.root, backup)
        try:
            yield existed
        except BaseException:
            if existed:
                try:
                    self.storage.fs.delete_dir(self.storage.root)
                except FileNotFoundError:
                    pass
                self.storage.fs.move(backup, self.storage.root)
            raise
        if existed:
            self.storage.fs.delete_dir(backup)
