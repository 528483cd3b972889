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
(``store_failures`` included).
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

    def query(self, snapshot_view: str, staged_view: str) -> str:
        """The test as dbt's test materialization runs it, the model's snapshot view pointed
        at ``staged_view``."""
        main = re.sub(rf"`?\b{re.escape(snapshot_view)}\b`?", f"`{staged_view}`", self.sql)
        limit = f"\n  limit {self.limit}" if self.limit is not None else ""
        calc = self.fail_calc
        return (
            f"select {calc} as failures, {calc} {self.warn_if} as should_warn, "
            f"{calc} {self.error_if} as should_error\nfrom (\n{main}{limit}\n) dbt_internal_test"
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
            )
        )
    return sorted(tests, key=lambda t: t.unique_id)


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
            finally:
                staged.sparkSession.catalog.dropTempView(staged_view)
        failed = []
        for test, (failures, should_warn, should_error) in results:
            if test.severity == "error" and should_error:
                failed.append(_describe(test, failures, "fail", test.error_if))
            elif should_warn:
                logger.warning(
                    f"audit_before_publish of model '{model}': "
                    f"{_describe(test, failures, 'warn', test.warn_if)} (published all the same)"
                )
        if failed:
            raise PreCommitValidationError(
                f"audit_before_publish refused model '{model}': {len(failed)} of "
                f"{len(tests)} data tests failed on its staged snapshot, nothing was "
                "published:\n    " + "\n    ".join(failed)
            )

    return hook


def _describe(test: ModelTest, failures: Any, verb: str, condition: str) -> str:
    where = f" ({test.path})" if test.path else ""
    kind = "Failure" if verb == "fail" else "Warning"
    count = int(failures) if failures is not None else 0
    return (
        f"{kind} in test {test.name}{where}: got {count} result{'s' if count != 1 else ''}, "
        f"configured to {verb} if {condition}"
    )
