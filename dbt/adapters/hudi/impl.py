"""The ``hudi`` adapter: dbt-spark plus the methods Hudi materializations call from Jinja.

The macros stay thin (stage the SELECT as a temporary view, run hooks, grants, docs); the work is
here, in Python: validate the model config, reconcile columns (``on_schema_change``), hand the
staged rows to the engine, publish the committed snapshot for downstream ``ref()``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, cast

from dbt.adapters.base.meta import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.exceptions import CompilationError, DbtRuntimeError

from dbt.adapters.hudi.connections import HudiConnectionManager, HudiCredentials
from dbt.adapters.hudi.options import HudiModelConfig, estimated_bytes, parse_model_config
from dbt.adapters.hudi.prewarm import note_write_started
from dbt.adapters.hudi.publish import (
    Comments,
    PublishedTable,
    catalog_base_path,
    get_session,
    publish,
)
from dbt.adapters.hudi.relation import HudiRelation
from dbt.adapters.hudi.schema_change import plan_write
from dbt.adapters.hudi.timing import phase, timed_runner
from engine import (
    HOODIE_META_COLUMNS,
    HudiTable,
    WriteOperation,
    WriteResult,
    explain_text,
    spark_table,
)
from engine import config as hc
from engine.errors import ConfigError, HudiError, SchemaError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = AdapterLogger("Hudi")

SESSION_METHODS_HINT = (
    "Hudi models are written by a SparkSession inside the dbt process: use `method: session` "
    "(embedded Spark, or a cluster through `spark.master` in server_side_parameters, or Spark "
    "Connect with SPARK_REMOTE=sc://host:15002). The thrift, http and odbc methods send SQL to a "
    "remote server, where this adapter's engine does not run"
)


def _model_name(relation: Any) -> str:
    return str(getattr(relation, "identifier", None) or relation)


def _columns_of(df: DataFrame) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


class HudiAdapter(SparkAdapter):
    """dbt-spark's adapter with Hudi materializations (``hudi_upsert``, ``hudi_mor``, ...)."""

    Relation = HudiRelation
    ConnectionManager = HudiConnectionManager

    def __init__(self, config: Any, mp_context: Any) -> None:
        super().__init__(config, mp_context)
        credentials = config.credentials
        if isinstance(credentials, HudiCredentials) and credentials.has_session:
            from dbt.adapters.hudi.prewarm import start_prewarm

            start_prewarm(credentials.server_side_parameters)

    # ---- session -------------------------------------------------------------------------------

    @property
    def _credentials(self) -> HudiCredentials:
        return cast(HudiCredentials, self.config.credentials)

    @available
    def hudi_require_session(self) -> str:
        """Stop at once unless the SparkSession lives in this process.

        Raises:
            DbtRuntimeError: naming the methods that work.
        """
        creds = self._credentials
        if not creds.has_session:
            raise DbtRuntimeError(
                f"Cannot write Hudi models with `method: {creds.method}`. {SESSION_METHODS_HINT}."
            )
        return str(creds.method)

    def _spark(self) -> SparkSession:
        self.hudi_require_session()
        return get_session(self._credentials.server_side_parameters)

    # ---- config --------------------------------------------------------------------------------

    def _parse(
        self, relation: Any, materialization: str, config: Mapping[str, Any]
    ) -> HudiModelConfig:
        try:
            return parse_model_config(_model_name(relation), materialization, dict(config or {}))
        except ConfigError as e:
            raise CompilationError(str(e)) from None

    @available
    def hudi_validate_config(
        self, relation: Any, materialization: str, config: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Validate a model's config; every problem is reported in one compiler error."""
        cfg = self._parse(relation, materialization, config)
        return {
            "table_type": cfg.table_type,
            "unique_key": list(cfg.record_key_fields),
            "partition_by": list(cfg.partition_fields),
            "on_schema_change": cfg.on_schema_change,
        }

    @available
    def hudi_catalog_relation(self, relation: HudiRelation) -> HudiRelation:
        """``relation`` as its catalog table (what DDL, grants and docs address)."""
        catalog = relation.catalog_relation() if isinstance(relation, HudiRelation) else relation
        table = catalog.incorporate(type=self.Relation.Table)
        return cast(HudiRelation, table)

    @available.parse(lambda relation: relation)
    def hudi_snapshot_relation(self, relation: HudiRelation) -> HudiRelation:
        """``relation`` as its latest committed snapshot: the session view of a Hudi model's
        table (see ``relation.py``); any other relation as it is."""
        if not isinstance(relation, HudiRelation):
            return relation
        if self._table_type_of(relation) is not None:
            return relation.snapshot_relation()
        return relation

    @available
    def hudi_model_exists(self, relation: Any) -> bool:
        """Whether ``relation`` is the catalog entry of a built Hudi model (a view that holds
        the table's base path, see ``publish.py``): what ``is_incremental()`` asks."""
        if relation is None or not self._credentials.has_session:
            return False
        return self._table_type_of(relation) is not None

    def _table_type_of(self, relation: HudiRelation) -> str | None:
        """Table type recorded on the catalog table (None when it is not a Hudi model's)."""
        from dbt.adapters.hudi.publish import catalog_table_type

        if not self._credentials.has_session:
            return None
        with phase("introspect: Hudi catalog entry"):
            spark = self._spark()
            return catalog_table_type(spark, str(relation.schema), str(relation.identifier))

    def _base_path(self, relation: Any, cfg: HudiModelConfig, spark: SparkSession) -> str:
        return self._base_path_of(relation, cfg.location, cfg.location_root, spark)

    def _base_path_of(
        self, relation: Any, location: str | None, location_root: str | None, spark: SparkSession
    ) -> str:
        """location > location_root/alias > profile hudi_base_path/schema/alias > warehouse."""
        if location:
            return location
        if location_root:
            return f"{location_root.rstrip('/')}/{relation.identifier}"
        root = self._credentials.hudi_base_path
        if not root:
            root = spark.conf.get("spark.sql.warehouse.dir") or "spark-warehouse"
            if root.startswith("file:"):
                root = root[len("file:") :]
                root = "/" + root.lstrip("/")
        return f"{root.rstrip('/')}/{relation.schema}/{relation.identifier}"

    # ---- guards --------------------------------------------------------------------------------

    @available
    def hudi_guard(
        self,
        relation: Any,
        materialization: str,
        config: Mapping[str, Any],
        base_path: str | None = None,
    ) -> dict[str, Any]:
        """Refuse, before anything runs (pre-hooks included), what the run could not finish:
        grants the platform cannot apply, a location that holds something else than a Hudi
        table. ``base_path`` is the table's when the caller knows it (else from the config).

        Raises:
            CompilationError: naming the model and every offending value; nothing is written.
        """
        with phase("guard: grants, location"):
            return self._guard(relation, materialization, config, base_path)

    def _guard(
        self, relation: Any, materialization: str, config: Mapping[str, Any], base_path: str | None
    ) -> dict[str, Any]:
        from dbt.adapters.hudi.guards import GuardError, grants_problem, location_problem

        spark = self._spark()
        cfg = dict(config or {})
        path = base_path or self._base_path_of(
            relation, cfg.get("location"), cfg.get("location_root"), spark
        )
        problems = [
            grants_problem(
                cfg.get("grants"),
                platform_has_grants=not cfg.get("grants") or self._platform_has_grants(),
            ),
            location_problem(path, _entries(self._table(path))),
        ]
        found = [p for p in problems if p]
        if found:
            error = GuardError(_model_name(relation), materialization, found)
            raise CompilationError(str(error))
        return {"base_path": path}

    def _platform_has_grants(self) -> bool:
        """Whether the session's SQL has GRANT: asked once, with the read-only statement dbt
        would send first (``show grants on``); a parse error means the dialect has none."""
        known = getattr(self, "_has_grants", None)
        if known is None:
            from pyspark.errors import ParseException

            try:
                self._spark().sql("show grants on dbt_hudi_grants_probe").collect()
                known = True
            except ParseException:
                known = False
            except Exception:  # parsed, so the dialect has it (the probe table does not exist)
                known = True
            self._has_grants = known
        return bool(known)

    # ---- write ---------------------------------------------------------------------------------

    @available
    def hudi_write(
        self,
        relation: HudiRelation,
        source_view: str,
        materialization: str,
        config: Mapping[str, Any],
        full_refresh: bool = False,
        operation: str | None = None,
        invocation: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write the rows of temporary view ``source_view`` to the model's Hudi table.

        Validates first (config, then the SELECT's columns), so bad input leaves the table
        untouched; ``full_refresh`` recreates the table and restores the old one if the write
        fails; ``operation`` replaces the materialization's operation on a continued table
        (``file_format='hudi'`` models, see ``spark_compat.py``); ``invocation`` (dbt's
        ``invocation_id`` and the model's ``unique_id``) goes to the commit's extraMetadata.
        """
        from dbt.adapters.hudi.changes import take_checkpoints
        from dbt.adapters.hudi.undo import run_metadata, savepoint_after_write

        note_write_started()
        started = time.monotonic()
        cfg = self._parse(relation, materialization, config)
        spark = self._spark()
        with phase("write: staged columns"):
            df = spark.table(source_view)
            meta = [c for c in df.columns if c.lower() in HOODIE_META_COLUMNS]
            if meta:
                df = df.drop(*meta)
            problems = cfg.check_columns(dict(_columns_of(df)))
        if problems:
            raise CompilationError(str(_config_error(cfg, problems)))
        base_path = self._base_path(relation, cfg, spark)
        with phase("write: open table"):
            table = spark_table(base_path, spark)
            table.runner = timed_runner(table.runner)
            if table.exists and not full_refresh:
                _check_table_type(cfg, table)
        checkpoints = take_checkpoints((str(relation.schema), str(relation.identifier)))
        with phase("write: engine write"):
            result, operation = _write(
                table,
                df,
                cfg,
                relation,
                full_refresh=full_refresh,
                extra_options={**checkpoints, **run_metadata(invocation)},
                operation=operation,
                audit=self._audit_hooks(cfg, relation, invocation),
            )
        with phase("write: savepoint"):
            savepoint_after_write(table, result.instant_time, config, invocation)
        with phase("write: publish"):
            published = self._publish(
                relation, base_path, cfg.table_type, instant_time=result.instant_time
            )
        summary = _summary(result, operation, published, time.monotonic() - started)
        logger.debug(f"hudi_write {relation}: {summary}")
        return summary

    def _audit_hooks(
        self, cfg: HudiModelConfig, relation: Any, invocation: Mapping[str, Any] | None
    ) -> list[Any]:
        """``audit_before_publish``: the model's data tests, compiled now, as the engine's audit
        hook on the staged snapshot (``audit.py``); none without the config."""
        if not cfg.audit_before_publish:
            return []
        from dbt.adapters.hudi.audit import audit_hook, model_tests

        model_id = (invocation or {}).get("unique_id")
        manifest = getattr(self, "_macro_resolver", None)
        if not model_id or manifest is None:
            raise DbtRuntimeError(
                f"audit_before_publish of model '{cfg.model}' needs the project's manifest and "
                "the model's unique_id; nothing was written"
            )
        with phase("write: compile audit tests"):
            tests = model_tests(manifest, self.config, str(model_id))
        if not tests:
            logger.warning(f"audit_before_publish: model '{cfg.model}' has no data test to run")
            return []

        def run_sql(sql: str) -> list[tuple[Any, ...]]:
            _, table = self.execute(sql, fetch=True)
            return [tuple(row) for row in table.rows]

        schema, identifier = str(relation.schema), str(relation.identifier)
        return [audit_hook(cfg.model, schema, identifier, tests, run_sql)]

    # ---- dbt-spark's file_format='hudi' ------------------------------------------------------

    @available
    def hudi_file_format_plan(
        self,
        relation: HudiRelation,
        kind: str,
        config: Mapping[str, Any],
        snapshot_key: str = "dbt_scd_id",
    ) -> dict[str, Any]:
        """How ``hudi_write`` writes a ``file_format='hudi'`` table, seed or incremental model
        or snapshot (``spark_compat.py``): the ``hudi_*`` materialization, config, operation.

        A run that leaves ``options.type`` out continues an existing table in its own type.
        """
        from dbt.adapters.hudi.spark_compat import CompatConfigError, plan_node

        name = _model_name(relation)
        raw = dict(config or {})
        try:
            plan = plan_node(name, kind, raw, snapshot_key=snapshot_key)
            if not plan.full_refresh:
                cfg = self._parse(relation, plan.materialization, plan.config)
                table = self._table(self._base_path(relation, cfg, self._spark()))
                if table.exists:
                    persisted = table.table_type()
                    plan = plan_node(
                        name, kind, raw, persisted_table_type=persisted, snapshot_key=snapshot_key
                    )
        except CompatConfigError as e:
            raise CompilationError(str(e)) from None
        return plan.as_dict()

    @available
    def hudi_stage_seed(self, agate_table: Any, column_types: Mapping[str, str], view: str) -> str:
        """Register a seed's CSV rows as temporary view ``view``, typed as dbt-spark types them."""
        from dbt.adapters.hudi.seeds import stage_seed

        types = {
            name: (column_types or {}).get(name) or self.convert_type(agate_table, i)
            for i, name in enumerate(agate_table.column_names)
        }
        try:
            stage_seed(self._spark(), agate_table, types, view)
        except ValueError as e:
            raise CompilationError(str(e)) from None
        return view

    # ---- consuming an upstream model's changes ------------------------------------------------

    @available
    def hudi_changes(
        self,
        upstream: Any,
        relation: Any,
        config: Mapping[str, Any],
        full_refresh: bool = False,
    ) -> str:
        """A temporary view of ``upstream``'s changes since ``relation``'s checkpoint (see
        ``changes.py``); the new checkpoint is committed with ``relation``'s next write."""
        from dbt.adapters.hudi.changes import changes_frame, checkpoint_key, remember_checkpoint

        spark = self._spark()
        schema, name = str(upstream.schema), str(upstream.identifier)
        upstream_path = catalog_base_path(spark, schema, name)
        upstream_table = self._table(upstream_path) if upstream_path else None
        as_of = upstream_table.latest_instant() if upstream_table else None
        end = upstream_table.latest_completion_time() if upstream_table else None
        if upstream_path is None or as_of is None or end is None:
            raise CompilationError(
                f"hudi_changes: {schema}.{name} is not a Hudi model with a commit; build it first"
            )
        key = checkpoint_key(schema, name)
        own_path = self._base_path_of(
            relation, config.get("location"), config.get("location_root"), spark
        )
        begin = None if full_refresh else self._table(own_path).latest_extra_metadata(key)
        try:
            frame = changes_frame(spark, upstream_path, begin, end, as_of)
        except HudiError as e:
            raise DbtRuntimeError(f"hudi_changes of {schema}.{name} failed: {e}") from e
        view = f"{relation.identifier}__dbt_hudi_changes_{name}"
        frame.createOrReplaceTempView(view)
        remember_checkpoint((str(relation.schema), str(relation.identifier)), key, end)
        logger.debug(f"hudi_changes {schema}.{name} for {relation}: ({begin}, {end}]")
        return view

    # ---- downstream ref() ----------------------------------------------------------------------

    def _table(self, base_path: str) -> HudiTable:
        """The table at ``base_path`` with the session's storage settings (S3 credentials given
        only as ``spark.hadoop.fs.s3a.*`` included): every adapter path opens tables here."""
        return spark_table(base_path, self._spark())

    def _publish(
        self,
        relation: Any,
        base_path: str,
        table_type: str,
        comments: Comments | None = None,
        instant_time: str | None = None,
    ) -> PublishedTable:
        return publish(
            self._spark(),
            schema=str(relation.schema),
            identifier=str(relation.identifier),
            base_path=base_path,
            table_type=table_type,
            comments=comments,
            instant_time=instant_time,
        )

    @available
    def hudi_publish(self, relation: HudiRelation, base_path: str | None = None) -> dict[str, Any]:
        """Make ``relation`` read the table's latest committed snapshot (after any commit).

        The one entry point of the ``ref()`` mechanism (see ``publish.py``): the catalog entry
        (columns, docs, base path; reads refused) and the snapshot view ``ref()`` renders to.
        """
        spark = self._spark()
        path = base_path or catalog_base_path(spark, str(relation.schema), str(relation.identifier))
        if path is None:
            raise DbtRuntimeError(f"{relation} is not a Hudi model's table (no base path recorded)")
        published = self._publish(relation, path, self._table(path).table_type())
        return dict(published.__dict__)

    @available
    def hudi_define_view(self, relation: HudiRelation, sql: str) -> dict[str, str] | None:
        """A ``view`` model over Hudi models (``views.py``): its session view is registered, and
        the catalog view's text and its ``TBLPROPERTIES`` clause, which keeps the session
        view's definition, are returned (``text``, ``properties``); ``None`` for a view that
        reads no Hudi model (dbt-spark's view as it is)."""
        from dbt.adapters.hudi.views import define_view, reads_session_views

        if not reads_session_views(sql):
            return None
        self.hudi_require_session()
        text, properties = define_view(
            str(relation.schema),
            str(relation.identifier),
            sql,
            self._credentials.server_side_parameters,
        )
        return {"text": text, "properties": properties}

    @available
    def hudi_persist_docs(
        self,
        relation: HudiRelation,
        description: str | None,
        column_descriptions: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        """Write a Hudi model's docs on its catalog entry: the entry is published again with
        the table and column comments (a view takes them where it is created)."""
        spark = self._spark()
        schema, identifier = str(relation.schema), str(relation.identifier)
        path = catalog_base_path(spark, schema, identifier)
        if path is None:
            raise DbtRuntimeError(f"{relation} is not a Hudi model's table (no base path recorded)")
        comments = Comments(description or None, dict(column_descriptions or {}))
        published = self._publish(relation, path, self._table(path).table_type(), comments)
        return dict(published.__dict__)

    # ---- docs ------------------------------------------------------------------------------

    def _get_columns_for_catalog(self, relation: Any) -> Iterable[dict[str, Any]]:
        """dbt-spark's catalog rows; a Hudi model's are of type ``table`` and carry the table's
        figures (rows, files, bytes, last completed instant, table type: ``catalog_stats.py``)."""
        rows = list(super()._get_columns_for_catalog(relation))
        if not rows or not self._credentials.has_session:
            return rows
        spark = self._spark()
        path = catalog_base_path(spark, str(relation.schema), str(relation.identifier))
        if path is None:
            return rows
        from dbt.adapters.hudi.catalog_stats import hudi_catalog_stats

        try:
            stats = hudi_catalog_stats(spark, self._table(path))
        except HudiError as e:
            logger.warning(f"Hudi figures of {relation} for the catalog: {e}")
            return rows
        # the entry is a view only so that no file list can go stale: the model is a table
        return [{**row, "table_type": "table", **stats} for row in rows]

    def get_rows_different_sql(
        self,
        relation_a: Any,
        relation_b: Any,
        column_names: list[str] | None = None,
        except_operator: str = "EXCEPT",
    ) -> str:
        """dbt-spark's comparison of two relations, a Hudi model's read at its latest snapshot
        (its catalog entry refuses reads, see ``publish.py``)."""
        return str(
            super().get_rows_different_sql(
                self.hudi_snapshot_relation(relation_a),
                self.hudi_snapshot_relation(relation_b),
                column_names,
                except_operator,
            )
        )

    # ---- run-operations --------------------------------------------------------------------

    def _resolve_model(self, relation: Any) -> tuple[HudiRelation, str]:
        """A run-operation's target ('schema.model', 'model' or a relation) and its base path."""
        if isinstance(relation, str):
            schema, _, identifier = relation.rpartition(".")
            relation = self.Relation.create(
                schema=schema or self._credentials.schema, identifier=identifier
            )
        spark = self._spark()
        path = catalog_base_path(spark, str(relation.schema), str(relation.identifier))
        if path is None:
            raise DbtRuntimeError(
                f"{relation.schema}.{relation.identifier} is not a Hudi model's table "
                "(no catalog table with a recorded base path): build the model first"
            )
        return relation, path

    @available
    def hudi_clean(self, relation: Any, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run the cleaner on a Hudi model's table (``dbt run-operation hudi_clean``)."""
        from dbt.adapters.hudi.services import run_clean

        target, path = self._resolve_model(relation)
        try:
            result = run_clean(path, options)
        except HudiError as e:
            raise DbtRuntimeError(f"Cleaning {target} failed: {e}") from e
        return result

    @available
    def hudi_health(
        self, relation: Any, options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The health view of a Hudi model's table (``dbt run-operation hudi_health``)."""
        from dbt.adapters.hudi.services import table_health

        target, path = self._resolve_model(relation)
        try:
            return table_health(path, options)
        except HudiError as e:
            raise DbtRuntimeError(f"Health of {target} failed: {e}") from e

    @available
    def hudi_compact(
        self, relation: Any, options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Compact a hudi_mor model's table (``dbt run-operation hudi_compact``)."""
        from dbt.adapters.hudi.services import run_compact

        target, path = self._resolve_model(relation)
        try:
            result = run_compact(path, options)
        except HudiError as e:
            raise DbtRuntimeError(f"Compacting {target} failed: {e}") from e
        if result.get("instant_time"):
            self.hudi_publish(target, path)
        return result

    @available
    def hudi_cluster(
        self,
        relation: Any,
        sort_columns: Any = None,
        strategy: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Cluster a Hudi model's table (``dbt run-operation hudi_cluster``)."""
        from dbt.adapters.hudi.services import run_cluster

        target, path = self._resolve_model(relation)
        try:
            result = run_cluster(path, sort_columns, strategy, options)
        except HudiError as e:
            raise DbtRuntimeError(f"Clustering {target} failed: {e}") from e
        if result.get("instant_time"):
            self.hudi_publish(target, path)
        return result

    @available
    def hudi_restore(
        self, invocation_id: str, relations: list[str], dry_run: bool = False, force: bool = False
    ) -> dict[str, Any]:
        """Restore every Hudi table of ``relations`` ('schema.identifier') that dbt invocation
        ``invocation_id`` wrote to its state just before it (``dbt run-operation hudi_restore``);
        the restored tables are published again."""
        from dbt.adapters.hudi.undo import restore_tables

        targets: dict[str, tuple[HudiRelation, str]] = {}
        for name in relations:
            try:
                targets[name] = self._resolve_model(name)
            except DbtRuntimeError:
                continue  # never built, or not a Hudi table: nothing of it to restore
        paths = {name: path for name, (_, path) in targets.items()}
        result = restore_tables(paths, invocation_id, dry_run=dry_run, force=force)
        for name in result["restored"]:
            self.hudi_publish(*targets[name])
        return result


def _entries(table: HudiTable) -> list[str] | None:
    """Names directly under the table's base path (empty when absent, None when a file)."""
    storage = table.storage
    if storage.is_dir(""):
        return [entry.name for entry in storage.list_dir()]
    return None if storage.exists("") else []


def _config_error(cfg: HudiModelConfig, problems: list[str]) -> ConfigError:
    from dbt.adapters.hudi.options import ModelConfigError

    return ModelConfigError(cfg.model, cfg.materialization, problems)


def _reconcile_columns(
    cfg: HudiModelConfig, table: HudiTable, df: DataFrame, options: Mapping[str, str]
) -> DataFrame:
    """The model's columns under ``on_schema_change`` and Hudi's rules, checked before the write.

    Raises:
        CompilationError: a change the mode or Hudi refuses, naming each column and both types.
    """
    from pyspark.sql import functions as F

    from engine import config as hc

    try:
        plan = plan_write(
            cfg.model,
            cfg.on_schema_change,
            table.schema(),
            table.incoming_schema(df),
            hc.parse_options(options),
        )
    except SchemaError as e:
        raise CompilationError(str(e)) from None
    for line in plan.log_lines():
        logger.info(f"Hudi model '{cfg.model}': {line}")
    return df.select(*(F.col(_quoted(src)).alias(dst) for src, dst in plan.columns))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _check_table_type(cfg: HudiModelConfig, table: HudiTable) -> None:
    current = table.table_type()
    if current != cfg.table_type:
        raise CompilationError(
            f"Model '{cfg.model}': the table at {table.base_path} is {current}, but "
            f"{cfg.materialization} writes {cfg.table_type}; run with --full-refresh to "
            "recreate it, or keep the materialization that created it"
        )


def _write(
    table: HudiTable,
    df: DataFrame,
    cfg: HudiModelConfig,
    relation: Any,
    *,
    full_refresh: bool,
    extra_options: Mapping[str, str] | None = None,
    operation: str | None = None,
    audit: Sequence[Any] = (),
) -> tuple[WriteResult, WriteOperation]:
    """Write the model, its columns reconciled with a continued table's; ``full_refresh``
    recreates the table (restored if the write fails). ``extra_options`` (checkpoints of
    ``hudi_changes``) go to the commit's extraMetadata; ``operation`` overrides the
    materialization's operation on a continued table; ``audit`` hooks see the staged snapshot
    before the commit (``audit.py``)."""
    with table.recreate() if full_refresh else nullcontext(False) as recreated:
        continued = table.exists and not recreated
        chosen = (
            WriteOperation(operation)
            if continued and operation
            else cfg.operation(table_exists=continued)
        )
        new_table = not continued and operation is None
        options = cfg.write_options(
            table_name=str(relation.identifier),
            database=relation.schema,
            operation=chosen,
            new_table=new_table,
            batch_bytes=_estimated_bytes(df) if new_table else None,
            table_index=table.properties().get(hc.INDEX_TYPE.key) if continued else None,
        )
        options = {**options, **(extra_options or {})}
        if continued:
            df = _reconcile_columns(cfg, table, df, options)
        try:
            return table.write(df, options, audit=audit), chosen
        except HudiError as e:
            raise DbtRuntimeError(
                f"Hudi {chosen} of model '{relation.identifier}' failed: {e}"
            ) from e


def _estimated_bytes(df: DataFrame) -> int | None:
    """Spark's size estimate of the batch (the root of ``explain(mode='cost')``: file sizes of
    the scans it reads, nothing runs); ``None`` when Spark gives none."""
    try:
        plan = explain_text(df, "cost")
    except Exception:  # an estimate only: the default bucket count then
        return None
    return estimated_bytes(plan)


def _summary(
    result: Any, operation: str, published: PublishedTable, seconds: float
) -> dict[str, Any]:
    stats = list(getattr(result, "write_stats", None) or [])
    inserted = sum(getattr(s, "num_inserts", 0) for s in stats)
    updated = sum(getattr(s, "num_update_writes", 0) for s in stats)
    deleted = sum(getattr(s, "num_deletes", 0) for s in stats)
    files = len({getattr(s, "path", None) or getattr(s, "file_id", "") for s in stats})
    instant_time = str(getattr(result, "instant_time", published.instant_time or ""))
    message = (
        f"{operation} committed {instant_time}: {inserted} inserted, {updated} updated, "
        f"{deleted} deleted, {files} file(s) written in {seconds:.1f}s"
    )
    return {
        "operation": operation,
        "instant_time": instant_time,
        "inserted": inserted,
        "updated": updated,
        "deleted": deleted,
        "files": files,
        "seconds": round(seconds, 2),
        "rows_affected": inserted + updated + deleted,
        "base_path": published.base_path,
        "table_type": published.table_type,
        "message": message,
        "code": operation.upper(),
    }
