"""Pre-commit validation: write, audit, publish.

Once every file of a write is written and before its completed instant (the commit point), the
write is audited against its **staged snapshot**: the table as the commit would leave it, the
base and log files of the inflight instant merged over the current snapshot. The snapshot is a
:class:`~engine.read.plan.QueryPlan` resolved against a staged timeline, an in-memory copy of the
timeline in which the inflight instant reads as completed (with the commit metadata the commit
would write: its files, the file groups it replaces, its schema). Nothing is written for it: the
staged plan lives in the auditing process, so no other reader, incremental or CDC query, nor
the metadata table sees anything of the write until it commits. A refused write is rolled back
(:func:`engine.write.conflict.rollback_on_error`) and raises
:class:`~engine.errors.PreCommitValidationError`.

Two kinds of audit, run in one place for every write path (:class:`WriteTransaction` calls
:func:`audit_write`):

* Hudi's SQL validators, with Hudi's keys (``hoodie.precommit.validators`` and the queries of
  ``hoodie.precommit.validators.{equality,inequality,single.value}.sql.queries``, several
  separated by ``;``; ``<TABLE_NAME>`` stands for the table), with the semantics of Hudi's
  ``SqlQueryEqualityPreCommitValidator`` (the query's rows before the commit all found after it:
  ``before.intersect(after).count() == before.count()``), ``SqlQueryInequalityPreCommitValidator``
  (the negation) and ``SqlQuerySingleResultPreCommitValidator`` (``query#expected``: the first
  value of the query on the staged table, as Java prints it, equals ``expected``). Every
  validator runs; the error names each one that failed. Unlike Hudi's Spark client, which reads
  the base files of the partitions the write touched only (copy-on-write), the queries see the
  whole table, merge-on-read log files merged.
* Audit hooks (:data:`AuditHook`): callables given the :class:`StagedSnapshot`, raising
  :class:`~engine.errors.PreCommitValidationError` to refuse the write (the dbt adapter runs a
  model's data tests this way).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from engine import config
from engine.config import HoodieConfig
from engine.errors import ConfigError, PreCommitValidationError
from engine.faults import checkpoint
from engine.fs.storage import Storage
from engine.read.plan import QueryPlan, ReadQuery, plan_query
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import Action, Instant, State, completed_action, new_instant_time
from engine.timeline.timeline import Timeline

__all__ = [
    "AuditHook",
    "AuditRunner",
    "CheckFailure",
    "SqlCheck",
    "StagedSnapshot",
    "ValidatorKind",
    "audit_write",
    "configured_checks",
    "staged_timeline",
]

VALIDATOR_PACKAGE = "org.apache.hudi.client.validator."


class ValidatorKind(StrEnum):
    """Hudi's SQL pre-commit validators (simple class names)."""

    EQUALITY = "SqlQueryEqualityPreCommitValidator"
    INEQUALITY = "SqlQueryInequalityPreCommitValidator"
    SINGLE_VALUE = "SqlQuerySingleResultPreCommitValidator"

    @property
    def class_name(self) -> str:
        return VALIDATOR_PACKAGE + self.value

    @property
    def queries_option(self) -> config.ConfigOption[str | None]:
        return _QUERIES[self]


_QUERIES = {
    ValidatorKind.EQUALITY: config.PRECOMMIT_EQUALITY_SQL_QUERIES,
    ValidatorKind.INEQUALITY: config.PRECOMMIT_INEQUALITY_SQL_QUERIES,
    ValidatorKind.SINGLE_VALUE: config.PRECOMMIT_SINGLE_VALUE_SQL_QUERIES,
}


@dataclass(frozen=True)
class SqlCheck:
    """One query of one validator; ``expected`` is the single-value validator's value."""

    kind: ValidatorKind
    query: str
    expected: str | None = None

    def on(self, view: str) -> str:
        """The query with ``<TABLE_NAME>`` standing for ``view``."""
        return self.query.replace(config.VALIDATOR_TABLE_VARIABLE, view)


@dataclass(frozen=True)
class CheckFailure:
    """A check that failed, with what it expected and what it found."""

    check: SqlCheck
    expected: str
    found: str

    def describe(self) -> str:
        return (
            f"{self.check.kind.class_name} failed for query '{self.check.query}': "
            f"expected {self.expected}, found {self.found}"
        )


def configured_checks(cfg: HoodieConfig) -> list[SqlCheck]:
    """The checks ``hoodie.precommit.validators`` names, in its order.

    Raises:
        ConfigError: an unknown validator class, a validator without queries, or a single-value
            query not of the form ``query#expected``.
    """
    checks: list[SqlCheck] = []
    for name in cfg.get(config.PRECOMMIT_VALIDATORS):
        kind = _validator_kind(name)
        raw = (cfg.get(kind.queries_option) or "").strip()
        queries = [q.strip() for q in raw.split(";") if q.strip()]
        if not queries:
            raise ConfigError(
                f"{kind.class_name} is configured ({config.PRECOMMIT_VALIDATORS.key}) but "
                f"{kind.queries_option.key} holds no query"
            )
        for query in queries:
            checks.append(_check(kind, query))
    return checks


def _validator_kind(name: str) -> ValidatorKind:
    simple = name.removeprefix(VALIDATOR_PACKAGE)
    for kind in ValidatorKind:
        if simple == kind.value:
            return kind
    known = ", ".join(k.class_name for k in ValidatorKind)
    raise ConfigError(
        f"Unknown pre-commit validator {name!r} ({config.PRECOMMIT_VALIDATORS.key}); "
        f"expected one of {known}"
    )


def _check(kind: ValidatorKind, query: str) -> SqlCheck:
    if kind is not ValidatorKind.SINGLE_VALUE:
        return SqlCheck(kind, query)
    parts = query.split("#")
    if len(parts) != 2:
        raise ConfigError(
            f"Invalid query format {query!r} in {kind.queries_option.key}: expected "
            "'query#expected value'"
        )
    return SqlCheck(kind, parts[0].strip(), parts[1].strip())


# ---- the staged snapshot ----------------------------------------------------------------------


def staged_timeline(
    timeline: Timeline, instant_time: str, action: Action, metadata: HoodieCommitMetadata
) -> Timeline:
    """``timeline`` with the write's instant completed in memory: its commit metadata is
    ``metadata`` (layout 2: it completes after every instant on the timeline). Every other
    instant keeps its state: another writer's requested or inflight instant stays pending, so
    its files are not read, and the audit sees the committed table and this write only."""
    completion = None
    if timeline.layout.version >= 2:
        times = [i.instant_time for i in timeline.instants]
        times += [i.completion_time for i in timeline.instants if i.completion_time]
        completion = new_instant_time(max([instant_time, *times]))
    done = Instant(instant_time, completed_action(action), State.COMPLETED, completion)
    others = [i for i in timeline.instants if i.instant_time != instant_time]
    instants = tuple(sorted([*others, done], key=Instant.sort_key))
    archived = {**timeline.archived, instant_time: metadata.to_json()}
    return Timeline(timeline.storage, instants, timeline.layout, archived)


class AuditRunner(Protocol):
    """What an audit needs of the write's runner (:class:`engine.write.runner.Runner`, which
    names these checks in its own interface): the snapshots as data frames, and the SQL checks
    run on them."""

    def read(self, plan: QueryPlan) -> Any:
        """The rows of a query plan as the runner's data frame."""
        ...

    def validate(
        self, before: QueryPlan | None, after: QueryPlan, checks: Sequence[SqlCheck]
    ) -> list[CheckFailure]:
        """The checks that failed on ``before`` and ``after``."""
        ...


@dataclass
class StagedSnapshot:
    """The table before the write and as the write's commit would leave it.

    Attributes:
        storage: the table's storage.
        instant_time: the write's (inflight) instant.
        before_timeline: the timeline as committed now.
        staged: the staged timeline (:func:`staged_timeline`).
        runner: reads the plans as the runner's data frames.
    """

    storage: Storage
    instant_time: str
    before_timeline: Timeline
    staged: Timeline
    runner: AuditRunner
    _plans: dict[str, QueryPlan | None] = field(default_factory=dict)

    def before_plan(self) -> QueryPlan | None:
        """The committed snapshot; ``None`` when no commit completed yet (a new table)."""
        if "before" not in self._plans:
            empty = self.before_timeline.last_completed() is None
            plan = None if empty else plan_query(self.storage, timeline=self.before_timeline)
            self._plans["before"] = plan
        return self._plans["before"]

    def after_plan(self) -> QueryPlan:
        """The staged snapshot (storage listed: the metadata table holds nothing of it)."""
        if "after" not in self._plans:
            query = ReadQuery(use_metadata_table=False)
            self._plans["after"] = plan_query(self.storage, query, timeline=self.staged)
        plan = self._plans["after"]
        assert plan is not None
        return plan

    def before(self) -> Any:
        """The committed rows as the runner's data frame, ``None`` for a new table."""
        plan = self.before_plan()
        return self.runner.read(plan) if plan is not None else None

    def after(self) -> Any:
        """The staged rows as the runner's data frame (meta columns included)."""
        return self.runner.read(self.after_plan())


AuditHook = Callable[[StagedSnapshot], None]


def audit_write(
    storage: Storage,
    runner: AuditRunner | None,
    cfg: HoodieConfig,
    staged: tuple[str, Action, HoodieCommitMetadata],
    hooks: Sequence[AuditHook] = (),
) -> None:
    """Audit the write ``staged`` (instant time, action, the commit metadata it would commit)
    before its commit: the configured validators, then ``hooks``.

    Raises:
        PreCommitValidationError: a check failed or a hook refused the write; names each.
        ConfigError: the validators are misconfigured.
    """
    checks = configured_checks(cfg)
    if not checks and not hooks:
        return
    instant_time, action, metadata = staged
    if runner is None:
        raise ConfigError(
            f"Pre-commit validation of the write to {storage.base_path} needs a runner "
            "(engine.spark.SparkRunner) to run its queries"
        )
    checkpoint("audit.before_queries")
    timeline = Timeline.load(storage)
    snapshot = StagedSnapshot(
        storage,
        instant_time,
        timeline,
        staged_timeline(timeline, instant_time, action, metadata),
        runner,
    )
    problems: list[str] = []
    if checks:
        failures = runner.validate(snapshot.before_plan(), snapshot.after_plan(), checks)
        problems += [f.describe() for f in failures]
    for hook in hooks:
        try:
            hook(snapshot)
        except PreCommitValidationError as e:
            problems.append(str(e))
    checkpoint("audit.after_queries")
    if problems:
        raise PreCommitValidationError(
            f"Pre-commit validation refused instant {instant_time} on {storage.base_path} "
            "(rolled back, nothing of it is visible):\n  " + "\n  ".join(problems)
        )
