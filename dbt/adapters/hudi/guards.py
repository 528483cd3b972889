"""What a Hudi model must pass before anything is written: one place, every materialization.

A model whose run would fail half-way (data committed, then a ``GRANT`` refused), write where it
must not (into a directory another tool owns) or silently drop part of its config (a dbt-spark
setting no Hudi write reads) is stopped here, before its pre-hooks, with one error naming the model
and the offending value; its table is untouched. The checks that need no Spark are plain functions
(unit-tested on dicts and directories); the adapter's ``hudi_guard`` method feeds them what only the
session knows (does the SQL dialect have ``GRANT``?) and raises their problems as one error.

An enforced contract is checked by dbt's own macro (``get_assert_columns_equivalent``) in the
``dbt_hudi_guard`` macro, so its message has dbt's shape.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import ConfigError

HUDI_MATERIALIZATIONS = ("hudi_upsert", "hudi_insert_overwrite", "hudi_mor")

# The incremental strategy each Hudi materialization *is*: naming it is harmless, naming another
# would promise semantics the write does not have.
_OWN_STRATEGY = {
    "hudi_upsert": "merge",
    "hudi_mor": "merge",
    "hudi_insert_overwrite": "insert_overwrite",
}


@dataclass(frozen=True)
class SparkConfigRule:
    """How a Hudi materialization treats one of dbt-spark's model configs."""

    verdict: str  # "mapped", "meaningful" or "refused"
    why: str


# Every model config dbt-spark reads (SparkConfig and its materializations), and what a Hudi
# materialization does with it. "refused" keys are errors when set: Hudi would otherwise ignore
# them silently. docs/coming-from-dbt-spark.md says the same for users.
SPARK_CONFIGS: Mapping[str, SparkConfigRule] = {
    "file_format": SparkConfigRule(
        "meaningful", "`hudi` (or dbt-spark's default `parquet`): base files are Parquet"
    ),
    "location_root": SparkConfigRule("mapped", "base path `<location_root>/<alias>`"),
    "partition_by": SparkConfigRule("mapped", "partition path field(s)"),
    "unique_key": SparkConfigRule("mapped", "record key field(s)"),
    "on_schema_change": SparkConfigRule("mapped", "Hudi's schema evolution keys"),
    "incremental_strategy": SparkConfigRule(
        "refused",
        "the materialization is the strategy: hudi_upsert and hudi_mor upsert by unique_key "
        "('merge'), hudi_insert_overwrite replaces partitions ('insert_overwrite'); any other "
        "value is refused",
    ),
    "options": SparkConfigRule(
        "refused",
        "dbt-spark's table options are not read by hudi_* models: unique_key is the record key "
        "(primaryKey), precombine_key the ordering field (preCombineField), the materialization "
        "the table type (type), hudi_options the hoodie.* keys",
    ),
    "tblproperties": SparkConfigRule(
        "refused",
        "catalog properties are not kept (the model's catalog entry is published again after "
        "every commit); Hudi's table configs go in hudi_options",
    ),
    "clustered_by": SparkConfigRule(
        "refused",
        "Spark bucketing by columns does not apply: Hudi's index decides the file groups "
        "(index_type='BUCKET' with buckets=N hashes the record key)",
    ),
    "buckets": SparkConfigRule(
        "mapped", "with index_type='BUCKET': file groups per partition of the bucket index"
    ),
    "merge_update_columns": SparkConfigRule(
        "refused",
        "an upsert writes whole records (payload='partial_update' keeps stored values "
        "for null fields)",
    ),
    "merge_exclude_columns": SparkConfigRule(
        "refused",
        "an upsert writes whole records (payload='partial_update' keeps stored values "
        "for null fields)",
    ),
    "incremental_predicates": SparkConfigRule(
        "refused", "an upsert finds stored records by key through Hudi's index, not by predicate"
    ),
    "predicates": SparkConfigRule(
        "refused", "an upsert finds stored records by key through Hudi's index, not by predicate"
    ),
    "sql_header": SparkConfigRule(
        "refused", "the model's SELECT is staged as a view, which a header cannot precede"
    ),
    "persist_docs": SparkConfigRule("meaningful", "comments on the catalog table and columns"),
    "grants": SparkConfigRule(
        "meaningful", "applied after the commit when the platform has GRANT, else refused first"
    ),
    "contract": SparkConfigRule(
        "meaningful", "an enforced contract is checked before the write (dbt's message)"
    ),
}


class ModelProblems(ConfigError):
    """A model cannot run: ``problems`` lists each reason, all reported at once."""

    def __init__(self, model: str, headline: str, problems: Sequence[str]) -> None:
        self.model = model
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__(f"{headline} ({count} problem{'s' if count != 1 else ''}):\n{lines}")


class GuardError(ModelProblems):
    """A model cannot run as configured; nothing has been written."""

    def __init__(self, model: str, materialization: str, problems: Sequence[str]) -> None:
        headline = f"{materialization} model '{model}' was not run, nothing was written"
        super().__init__(model, headline, problems)


def _is_set(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def spark_config_problems(
    materialization: str, config: Mapping[str, Any], *, mapped: Collection[str] = ()
) -> list[str]:
    """dbt-spark configs a Hudi materialization would silently ignore, one problem each.

    Args:
        materialization: the model's; a Hudi materialization accepts its own
            ``incremental_strategy``.
        config: the model's config.
        mapped: refused keys the calling materialization does translate (dbt-spark's own
            materializations writing ``file_format='hudi'``: ``incremental_strategy``,
            ``options``...).
    """
    problems = []
    for key, rule in SPARK_CONFIGS.items():
        value = config.get(key)
        if rule.verdict != "refused" or key in mapped or not _is_set(value):
            continue
        if key == "incremental_strategy" and _own_strategy(materialization, value):
            continue
        problems.append(f"{key}: {value!r} is not applied by {materialization}: {rule.why}")
    return problems


def _own_strategy(materialization: str, value: Any) -> bool:
    own = _OWN_STRATEGY.get(materialization)
    return isinstance(value, str) and value.strip().lower() == own


def grants_problem(grants: Any, *, platform_has_grants: bool) -> str | None:
    """Non-empty ``grants`` on a platform whose SQL has no ``GRANT`` (open-source Spark: its
    parser refuses GRANT/REVOKE/SHOW GRANTS whatever the catalog). dbt would apply them after
    the commit and fail with the data already written, so they are refused first."""
    if not _is_set(grants) or platform_has_grants:
        return None
    if not isinstance(grants, Mapping):
        return f"grants: expected a mapping of privilege -> grantees, got {grants!r}"
    given = {k: v for k, v in grants.items() if _is_set(v)}
    if not given:
        return None
    listed = ", ".join(f"{privilege}: {grantees!r}" for privilege, grantees in given.items())
    return (
        f"grants: {{{listed}}} cannot be applied: this Spark session's SQL has no GRANT "
        "(Spark's own parser refuses GRANT, REVOKE and SHOW GRANTS with any catalog); remove "
        "`grants` from the model (or its +grants in dbt_project.yml), or manage access on the "
        "table's storage"
    )


def location_problem(base_path: str, entries: Sequence[str] | None) -> str | None:
    """A base path that holds something other than a Hudi table: writing there would mix the
    table's files with another tool's (and a full refresh would move them aside).

    Args:
        base_path: where the model's table lives.
        entries: the names directly under it; empty when it does not exist, None when it is a
            file.
    """
    if entries is None:
        return f"location: {base_path} is a file, not a directory; choose another location"
    if not entries or ".hoodie" in entries:
        return None
    shown = ", ".join(sorted(entries)[:5]) + (", ..." if len(entries) > 5 else "")
    return (
        f"location: {base_path} is a non-empty directory that is not a Hudi table (no .hoodie/; "
        f"it holds {shown}); choose another location (or location_root), or empty the directory"
    )
