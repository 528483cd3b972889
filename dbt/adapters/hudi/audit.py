"""``audit_before_publish``: a model's data tests gate its commit (write-audit-publish).

With ``audit_before_publish: true`` (a model config, or ``+audit_before_publish`` in
``dbt_project.yml``) a Hudi model's own data tests run on its **staged snapshot** (the engine's
pre-commit audit, ``engine.write.precommit``: the table as the commit would leave it, visible
to this session only) after its files are written and before its commit:

* the tests are the manifest's test nodes that depend on the model and are attached to it (or,
  singular tests, attached to none): generic tests (``not_null``, ``unique``,
  ``accepted_values``, ``relationships``, custom and package tests) and singular tests that
  ``ref()`` the model;
* each is compiled by dbt's compiler before the write (a copy of the node: the manifest keeps
  its own), with the model's ``ref()`` rendered as the model's snapshot view, which the audit
  points at the staged rows instead (a session view ``hudi_staged__...``); every other ``ref()``
  reads the published tables as usual;
* each runs wrapped as dbt's test materialization wraps it (``fail_calc``, ``warn_if``,
  ``error_if``, ``limit``); a test of severity ``error`` whose ``error_if`` holds refuses the
  write: the engine rolls it back, the model fails naming each failed test as ``dbt test``
  does, nothing is published and dependent models are skipped. A ``warn`` test that warns
  logs a warning and the write commits.

dbt's own test run after the model (``dbt build``) then tests the published table, as always
(``store_failures`` included). When the audit refuses the write, dbt skips that run: the audit
then writes the failures table of each of the model's tests that stores its failures
(``store_failures``, or ``--store-failures``; ``store_failures_as: table``, the default) as dbt's
test materialization writes it (the test's schema and alias, the failing rows up to ``limit``),
from the staged rows, so the rows that blocked the publish can be queried. A view
(``store_failures_as: view``) cannot stand on rows that were never published: those tests'
failures are not stored by the audit (a warning says so).
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.hudi.relation import format_snapshot_view_name
from dbt.adapters.hudi.timing import phase
from engine import StagedSnapshot
from engine.errors import PreCommitValidationError

__all__ = ["ModelTest", "audit_hook", "model_tests"]

logger = AdapterLogger("Hudi")

STAGED_VIEW_PREFIX = "hudi_staged__"
_COUNTER = itertools.count(1)

# a query's rows, as the adapter's connection returns them
RunSql = Callable[[str], Sequence[Sequence[Any]]]


@dataclass(frozen=True)
class ModelTest:
    """One compiled data test of the model."""

    unique_id: str
    name: str
    path: str
    severity: str  # "error" or "warn"
    sql: str  # the test's query (its rows are failures), the model as its snapshot view
    fail_calc: str = "count(*)"
    warn_if: str = "!= 0"
    error_if: str = "!= 0"
    limit: int | None = None
    # (schema, identifier) of the failures table dbt writes for the test, if it stores them
    failures_table: tuple[str, str] | None = None
    failures_view: bool = False  # store_failures_as: view, which the audit cannot write

    def staged_sql(self, snapshot_view: str, staged_view: str) -> str:
        """The test's query on ``staged_view`` (its rows are the failures), up to ``limit``."""
        main = re.sub(rf"`?\b{re.escape(snapshot_view)}\b`?", f"`{staged_view}`", self.sql)
        limit = f"\n  limit {self.limit}" if self.limit is not None else ""
        return f"{main}{limit}"

    def query(self, snapshot_view: str, staged_view: str) -> str:
        """The test as dbt's test materialization runs it, the model's snapshot view pointed
        at ``staged_view``."""
        calc = self.fail_calc
        return (
            f"select {calc} as failures, {calc} {self.warn_if} as should_warn, "
            f"{calc} {self.error_if} as should_error\nfrom (\n"
            f"{self.staged_sql(snapshot_view, staged_view)}\n) dbt_internal_test"
        )


def model_tests(manifest: Any, runtime_config: Any, model_id: str) -> list[ModelTest]:
    """The model's enabled data tests in ``manifest``, compiled (not written to target/)."""
    from dbt.compilation import Compiler

    compiler = Compiler(runtime_config)
    tests: list[ModelTest] = []
    for node in (getattr(manifest, "nodes", None) or {}).values():
        if str(getattr(node, "resource_type", "")) != "test":
            continue
        config = node.config
        if not getattr(config, "enabled", True) or model_id not in node.depends_on.nodes:
            continue
        if getattr(node, "attached_node", None) not in (None, model_id):
            continue
        compiled = compiler.compile_node(copy.deepcopy(node), manifest, write=False)
        stored_as = _stores_failures_as(config)
        tests.append(
            ModelTest(
                unique_id=node.unique_id,
                name=node.name,
                path=str(getattr(node, "original_file_path", "") or ""),
                severity=str(getattr(config, "severity", "ERROR")).lower(),
                sql=str(compiled.compiled_code),
                fail_calc=str(getattr(config, "fail_calc", None) or "count(*)"),
                warn_if=str(getattr(config, "warn_if", None) or "!= 0"),
                error_if=str(getattr(config, "error_if", None) or "!= 0"),
                limit=getattr(config, "limit", None),
                failures_table=(
                    (str(node.schema), str(node.alias or node.name))
                    if stored_as == "table"
                    else None
                ),
                failures_view=stored_as == "view",
            )
        )
    return sorted(tests, key=lambda t: t.unique_id)


def _stores_failures_as(config: Any) -> str | None:
    """How dbt's test materialization stores the test's failures: ``table``, ``view``, or
    ``None`` (not stored), as its ``should_store_failures()`` decides (the test's
    ``store_failures``, else the ``--store-failures`` flag)."""
    from dbt.flags import get_flags

    stores = getattr(config, "store_failures", None)
    if stores is None:
        flags = get_flags()  # type: ignore[no-untyped-call]
        stores = bool(getattr(flags, "STORE_FAILURES", False))
    if not stores:
        return None
    stored_as = getattr(config, "store_failures_as", None) or "table"
    return str(stored_as) if stored_as in ("table", "view") else None


def audit_hook(
    model: str, schema: str, identifier: str, tests: Sequence[ModelTest], run_sql: RunSql
) -> Callable[[StagedSnapshot], None]:
    """The engine audit hook that runs ``tests`` on the staged snapshot of model
    ``schema.identifier`` (``run_sql`` runs a query on the adapter's connection)."""
    snapshot_view = format_snapshot_view_name(schema, identifier)

    def hook(snapshot: StagedSnapshot) -> None:
        staged_view = f"{STAGED_VIEW_PREFIX}{next(_COUNTER)}__{schema}__{identifier}"
        with phase("write: audit tests"):
            with phase("write: audit staged snapshot"):  # planned, not read: lazy
                staged = snapshot.after()
                staged.createOrReplaceTempView(staged_view)
            try:
                results = [(t, run_sql(t.query(snapshot_view, staged_view))[0]) for t in tests]
                failed = _verdict(model, results)
                # dbt skips the refused model's own test run: the audit stores the failures
                stored = (
                    _store_failures(staged.sparkSession, model, tests, snapshot_view, staged_view)
                    if failed
                    else []
                )
            finally:
                staged.sparkSession.catalog.dropTempView(staged_view)
        if failed:
            raise PreCommitValidationError(
                f"audit_before_publish refused model '{model}': {len(failed)} of "
                f"{len(tests)} data tests failed on its staged snapshot, nothing was "
                "published:\n    " + "\n    ".join([*failed, *stored])
            )

    return hook


def _verdict(model: str, results: Sequence[tuple[ModelTest, Sequence[Any]]]) -> list[str]:
    """The failures of error-severity tests, described; warnings logged."""
    failed = []
    for test, (failures, should_warn, should_error) in results:
        if test.severity == "error" and should_error:
            failed.append(_describe(test, failures, "fail", test.error_if))
        elif should_warn:
            logger.warning(
                f"audit_before_publish of model '{model}': "
                f"{_describe(test, failures, 'warn', test.warn_if)} (published all the same)"
            )
    return failed


def _store_failures(
    spark: Any, model: str, tests: Sequence[ModelTest], snapshot_view: str, staged_view: str
) -> list[str]:
    """Write the failures table of each test that stores its failures, as dbt's test
    materialization does (dropped and created again), from the staged rows; one line each
    saying where. A table that cannot be written is said so, and the refusal stands."""
    lines = []
    with phase("write: audit store failures"):
        for test in tests:
            if test.failures_view:
                logger.warning(
                    f"audit_before_publish of model '{model}': the failures of test "
                    f"{test.name} are not stored: store_failures_as 'view' cannot stand on "
                    "rows that were not published (store them as a table)"
                )
            if test.failures_table is None:
                continue
            schema, identifier = test.failures_table
            try:
                _create_failures_table(
                    spark, schema, identifier, test.staged_sql(snapshot_view, staged_view)
                )
            except Exception as e:  # the refusal must not be lost to it
                lines.append(
                    f"Could not store the failures of {test.name} in {schema}.{identifier}: {e}"
                )
                continue
            lines.append(f"Stored the failures of {test.name} in {schema}.{identifier}")
    return lines


def _create_failures_table(spark: Any, schema: str, identifier: str, sql: str) -> None:
    """``schema.identifier`` holds the rows of ``sql``: dbt-spark's ``create table ... as``."""
    name = f"`{schema}`.`{identifier}`"
    spark.sql(f"create schema if not exists `{schema}`")
    if spark.catalog.tableExists(f"{schema}.{identifier}"):
        kind = spark.catalog.getTable(f"{schema}.{identifier}").tableType
        spark.sql(f"drop {'view' if str(kind).upper() == 'VIEW' else 'table'} {name}")
    spark.sql(f"create table {name} as\n{sql}")


def _describe(test: ModelTest, failures: Any, verb: str, condition: str) -> str:
    where = f" ({test.path})" if test.path else ""
    kind = "Failure" if verb == "fail" else "Warning"
    count = int(failures) if failures is not None else 0
    return (
        f"{kind} in test {test.name}{where}: got {count} result{'s' if count != 1 else ''}, "
        f"configured to {verb} if {condition}"
    )
