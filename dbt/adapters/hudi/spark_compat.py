"""dbt-spark's ``file_format='hudi'`` models, seeds and snapshots, written by the engine.

A dbt-spark project with the Hudi bundle configures Hudi through dbt-spark's configs and Hudi's
Spark SQL table properties (``options``). This module reads that config and says which Hudi
write gives the semantics dbt-spark's SQL gets from Hudi's Spark SQL, as a :class:`CompatPlan`
that the ``hudi_*`` hand-off (``HudiAdapter.hudi_write``) executes::

    table models, seeds     CREATE TABLE .. USING hudi AS SELECT -> a fresh table, bulk_insert
    incremental, 1st run    CREATE TABLE .. USING hudi AS SELECT -> bulk_insert
    merge                   MERGE INTO .. UPDATE SET * / INSERT * -> upsert
    insert_overwrite        INSERT OVERWRITE, dynamic partitions -> insert_overwrite
                            (unpartitioned table)                -> insert_overwrite_table
    append                  INSERT INTO                          -> insert
    snapshots               MERGE INTO .. ON dbt_scd_id          -> upsert keyed by dbt_scd_id

``options`` keys are Hudi's Spark SQL table properties (``HoodieOptionConfig``): ``primaryKey``,
``type`` (``cow`` | ``mor``), ``preCombineField``, ``payloadClass``, plus any ``hoodie.*`` key.
They persist in ``hoodie.properties`` on the first write; a later run that contradicts them is an
error (the engine compares every write with the persisted properties), and a later run that
leaves them out continues the table as it is (its table type included).

Pure: no dbt, no Spark, so it is unit-tested on plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.hudi.guards import spark_config_problems
from dbt.adapters.hudi.options import PAYLOADS
from engine.config import TableType, WriteOperation

FILE_FORMAT = "hudi"
KINDS = ("table", "incremental", "seed", "snapshot")
STRATEGIES = ("append", "merge", "insert_overwrite")
DEFAULT_STRATEGY = "append"  # dbt-spark's default

# Hudi's Spark SQL table properties (HoodieOptionConfig, release-0.14)
SQL_PRIMARY_KEY = "primaryKey"
SQL_TABLE_TYPE = "type"
SQL_PRECOMBINE_FIELD = "preCombineField"
SQL_PAYLOAD_CLASS = "payloadClass"
SQL_RECORD_MERGER_STRATEGY = "recordMergerStrategy"
SQL_TABLE_TYPES: Mapping[str, TableType] = {
    "cow": TableType.COPY_ON_WRITE,
    "mor": TableType.MERGE_ON_READ,
}

# dbt-spark configs this module reads and replaces by the hudi_* configs
_CONSUMED = ("file_format", "options", "incremental_strategy")


class CompatConfigError(ValueError):
    """Config values of a ``file_format='hudi'`` node that no Hudi write can honour."""

    def __init__(self, node: str, kind: str, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"Invalid config for Hudi {kind} '{node}' (file_format='hudi'):\n{lines}")


@dataclass(frozen=True)
class CompatPlan:
    """How the engine writes one run of a ``file_format='hudi'`` node.

    Attributes:
        materialization: the ``hudi_*`` materialization whose validation and options apply.
        config: the node's config as ``hudi_*`` models spell it (``unique_key``,
            ``precombine_key``, ``payload``, ``hudi_options``...).
        full_refresh: every run writes a fresh table (``table``, seeds).
        operation: the write operation of a run that continues the table (``None``: the
            materialization's own).
    """

    materialization: str
    config: dict[str, Any]
    full_refresh: bool
    operation: str | None = None
    table_type: str = TableType.COPY_ON_WRITE

    def as_dict(self) -> dict[str, Any]:
        return {
            "materialization": self.materialization,
            "config": self.config,
            "full_refresh": self.full_refresh,
            "operation": self.operation,
            "table_type": self.table_type,
        }


def is_hudi_file_format(config: Mapping[str, Any]) -> bool:
    value = config.get("file_format")
    return isinstance(value, str) and value.strip().lower() == FILE_FORMAT


def _key_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v).strip() for v in value]


def _sql_options(options: Any, problems: list[str]) -> tuple[dict[str, str], dict[str, Any]]:
    """Hudi's Spark SQL keys and the ``hoodie.*`` keys of ``options``; unknown keys are
    problems."""
    if options is None:
        return {}, {}
    if not isinstance(options, Mapping):
        problems.append(f"options: expected a mapping of Hudi table properties, got {options!r}")
        return {}, {}
    sql: dict[str, str] = {}
    hoodie: dict[str, Any] = {}
    known = (SQL_PRIMARY_KEY, SQL_TABLE_TYPE, SQL_PRECOMBINE_FIELD, SQL_PAYLOAD_CLASS)
    for key, value in options.items():
        if key in known:
            sql[key] = str(value).strip()
        elif isinstance(key, str) and key.startswith("hoodie."):
            hoodie[key] = value
        elif key == SQL_RECORD_MERGER_STRATEGY:
            problems.append(
                f"options: {key!r}={value!r}: record mergers are not supported; the payload "
                f"class ({SQL_PAYLOAD_CLASS}) decides how records merge"
            )
        else:
            problems.append(
                f"options: {key!r} is not a Hudi table property (Hudi's Spark SQL keys: "
                f"{', '.join(known)}, or a hoodie.* key)"
            )
    return sql, hoodie


def _record_key(
    config: Mapping[str, Any], sql: Mapping[str, str], problems: list[str]
) -> list[str]:
    """``unique_key``, or ``options.primaryKey``; both given must agree (as dbt-spark checks)."""
    unique_key = _key_list(config.get("unique_key"))
    primary_key = _key_list(sql.get(SQL_PRIMARY_KEY))
    if unique_key and primary_key and unique_key != primary_key:
        problems.append(
            f"options: {SQL_PRIMARY_KEY}={','.join(primary_key)!r} contradicts "
            f"unique_key={','.join(unique_key)!r}; set one of them"
        )
    return unique_key or primary_key


def _table_type(sql: Mapping[str, str], persisted: str | None, problems: list[str]) -> TableType:
    """``options.type``; when absent, the existing table's type (else copy-on-write)."""
    value = sql.get(SQL_TABLE_TYPE)
    if value is None:
        return TableType(persisted) if persisted else TableType.COPY_ON_WRITE
    table_type = SQL_TABLE_TYPES.get(value.lower())
    if table_type is None:
        problems.append(f"options: {SQL_TABLE_TYPE}={value!r} must be 'cow' or 'mor'")
        return TableType.COPY_ON_WRITE
    return table_type


def _ordering_and_payload(
    config: Mapping[str, Any], sql: Mapping[str, str], problems: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    precombine = sql.get(SQL_PRECOMBINE_FIELD)
    given = config.get("precombine_key")
    if precombine and given and precombine != given:
        problems.append(
            f"options: {SQL_PRECOMBINE_FIELD}={precombine!r} contradicts "
            f"precombine_key={given!r}; set one of them"
        )
    if precombine or given:
        out["precombine_key"] = given or precombine
    payload_class = sql.get(SQL_PAYLOAD_CLASS)
    if payload_class:
        names = [name for name, cls in PAYLOADS.items() if cls == payload_class]
        if not names:
            problems.append(
                f"options: {SQL_PAYLOAD_CLASS}={payload_class!r} is not supported (one of "
                f"{', '.join(PAYLOADS.values())})"
            )
        else:
            out["payload"] = names[0]
    return out


def _hudi_options(
    config: Mapping[str, Any], hoodie: Mapping[str, Any], problems: list[str]
) -> dict[str, Any]:
    merged = dict(config.get("hudi_options") or {})
    for key, value in hoodie.items():
        if key in merged and str(merged[key]) != str(value):
            problems.append(
                f"options: {key!r}={value!r} contradicts hudi_options {key!r}={merged[key]!r}"
            )
        merged[key] = value
    return merged


def _strategy(kind: str, config: Mapping[str, Any], problems: list[str]) -> str | None:
    if kind != "incremental":
        return None
    raw = config.get("incremental_strategy") or DEFAULT_STRATEGY
    strategy = str(raw).strip().lower()
    if strategy not in STRATEGIES:
        problems.append(
            f"incremental_strategy: {raw!r} is not one of {', '.join(STRATEGIES)} "
            "(the strategies dbt-spark runs on Hudi tables)"
        )
        return None
    return strategy


def _operation(
    strategy: str | None, table_type: TableType, partitioned: bool, keyed: bool
) -> tuple[str, str | None]:
    """(hudi_* materialization, operation of a continued table) of a run.

    A copy-on-write table without a record key (a table, seed, append or insert_overwrite
    model with neither unique_key nor primaryKey) is written as hudi_insert_overwrite, the
    materialization whose writes need no key (Hudi generates one per record).
    """
    mor = table_type == TableType.MERGE_ON_READ
    base = "hudi_mor" if mor else ("hudi_upsert" if keyed else "hudi_insert_overwrite")
    if strategy == "append":
        return base, WriteOperation.INSERT
    if strategy == "insert_overwrite":
        operation = (
            WriteOperation.INSERT_OVERWRITE
            if partitioned
            else WriteOperation.INSERT_OVERWRITE_TABLE
        )
        return ("hudi_mor" if mor else "hudi_insert_overwrite"), operation
    return base, None


def plan_node(
    node: str,
    kind: str,
    config: Mapping[str, Any],
    *,
    persisted_table_type: str | None = None,
    snapshot_key: str = "dbt_scd_id",
) -> CompatPlan:
    """The Hudi write of one run of a ``file_format='hudi'`` node.

    Args:
        node: the model, seed or snapshot name (in errors).
        kind: ``table``, ``incremental``, ``seed`` or ``snapshot``.
        config: the node's config.
        persisted_table_type: the existing table's type, when it exists.
        snapshot_key: the snapshot's ``dbt_scd_id`` column name (its record key).

    Raises:
        CompatConfigError: every config value no Hudi write honours, at once.
    """
    problems: list[str] = []
    sql, hoodie = _sql_options(config.get("options"), problems)
    # dbt-spark configs no Hudi write reads (merge_update_columns, ...): refused, not ignored
    problems.extend(spark_config_problems(kind, config, mapped=_CONSUMED))
    strategy = _strategy(kind, config, problems)
    table_type = _table_type(sql, persisted_table_type, problems)
    out = {k: v for k, v in config.items() if k not in _CONSUMED}
    out.update(_ordering_and_payload(config, sql, problems))
    out["hudi_options"] = _hudi_options(config, hoodie, problems)
    if kind == "snapshot":
        if table_type != TableType.COPY_ON_WRITE:
            problems.append("options: snapshots keep their history in a copy-on-write table")
        if sql.get(SQL_PRIMARY_KEY):
            problems.append(
                f"options: {SQL_PRIMARY_KEY} cannot be set on a snapshot: its record key is "
                f"{snapshot_key!r}"
            )
        out["unique_key"] = snapshot_key
        out["on_schema_change"] = "append_new_columns"  # new source columns join the history
    else:
        key = _record_key(config, sql, problems)
        out["unique_key"] = key or None
        if strategy == "merge" and not key:
            problems.append(
                "incremental_strategy: 'merge' needs unique_key (or options.primaryKey): "
                "Hudi merges by record key"
            )
    partitioned = bool(_key_list(config.get("partition_by")))
    keyed = kind == "snapshot" or bool(out.get("unique_key"))
    materialization, operation = _operation(strategy, table_type, partitioned, keyed)
    if problems:
        raise CompatConfigError(node, kind, problems)
    return CompatPlan(
        materialization=materialization,
        config=out,
        full_refresh=kind in ("table", "seed"),
        operation=operation,
        table_type=table_type,
    )
