"""Undo a bad run: what a dbt run records in its commits, ``savepoint: true``, and the
``hudi_restore`` run-operation.

Every commit a run makes carries dbt's ``invocation_id`` and the model's ``unique_id`` in its
extraMetadata (the engine's ``RUN_ID_KEY`` / ``RUN_NODE_KEY``). ``hudi_restore`` plans, for
every Hudi table of the project, its restore to the state just before that invocation
(:meth:`engine.HudiTable.plan_run_restore`), logs the plan, and only when no table is refused
restores them one by one; ``dry_run`` stops after the plan. A table a later writer also changed
is refused, naming the instant and who wrote it, unless ``force``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import CompilationError, DbtRuntimeError

from engine import RUN_ID_KEY, RUN_NODE_KEY, HudiTable
from engine.errors import HudiError

__all__ = ["plan_restores", "restore_tables", "run_metadata", "savepoint_after_write"]

logger = AdapterLogger("Hudi")


def run_metadata(invocation: Mapping[str, Any] | None) -> dict[str, str]:
    """The extraMetadata entries of a run's commit: dbt's invocation id and the node."""
    if not invocation:
        return {}
    entries = {
        RUN_ID_KEY: invocation.get("invocation_id"),
        RUN_NODE_KEY: invocation.get("unique_id"),
    }
    return {k: str(v) for k, v in entries.items() if v}


def savepoint_after_write(
    table: HudiTable,
    instant_time: str,
    config: Mapping[str, Any],
    invocation: Mapping[str, Any] | None,
) -> str | None:
    """With ``savepoint: true`` in the model config, savepoint the commit the run just made;
    the savepoint's instant, else ``None``.

    Raises:
        CompilationError: ``savepoint`` is not a boolean.
        DbtRuntimeError: the savepoint could not be written (the commit stays).
    """
    wanted = config.get("savepoint", False)
    if not isinstance(wanted, bool):
        raise CompilationError(f"Config 'savepoint' must be true or false, not {wanted!r}")
    if not wanted:
        return None
    who = run_metadata(invocation)
    comment = f"{who.get(RUN_NODE_KEY, 'a dbt model')} in dbt invocation {who.get(RUN_ID_KEY, '?')}"
    try:
        return table.savepoint(instant_time, user="dbt", comment=comment).instant_time
    except HudiError as e:
        raise DbtRuntimeError(f"Commit {instant_time} is done, its savepoint failed: {e}") from e


def _plan_line(name: str, plan: Any) -> str:
    if plan.refusal:
        return f"  {name}: REFUSED: {plan.refusal}"
    later = "".join(f"; also removes {t} by {who}" for t, who in plan.later_writers)
    rolled = ", ".join(plan.rolled_back)
    return f"  {name}: restore to {plan.target}, rolling back {rolled}{later}"


def plan_restores(
    paths: Mapping[str, str], invocation_id: str, *, force: bool
) -> tuple[dict[str, Any], str]:
    """Plan every table the invocation wrote (name -> plan) and the plan as text.

    Raises:
        DbtRuntimeError: the invocation wrote none of the tables.
    """
    plans: dict[str, Any] = {}
    for name, path in paths.items():
        try:
            plan = HudiTable(path).plan_run_restore(invocation_id, force=force)
        except HudiError as e:
            raise DbtRuntimeError(f"Planning the restore of {name} failed: {e}") from e
        if plan.written:
            plans[name] = plan
    if not plans:
        raise DbtRuntimeError(
            f"dbt invocation {invocation_id} wrote none of this project's {len(paths)} Hudi "
            "table(s): nothing to restore"
        )
    lines = [f"Restore of dbt invocation {invocation_id}:"]
    lines += [_plan_line(name, plan) for name, plan in sorted(plans.items())]
    return plans, "\n".join(lines)


def restore_tables(
    paths: Mapping[str, str], invocation_id: str, *, dry_run: bool, force: bool
) -> dict[str, Any]:
    """Log the plan, then (unless ``dry_run``) restore every planned table.

    Returns:
        ``plan`` (name -> target, rolled back instants), ``restored`` (name -> restore
        instant), ``text``.

    Raises:
        DbtRuntimeError: a table is refused (nothing is restored then) or a restore fails.
    """
    plans, text = plan_restores(paths, invocation_id, force=force)
    logger.info(text)
    refused = [p.refusal for p in plans.values() if p.refusal]
    if refused:
        raise DbtRuntimeError("Nothing was restored: " + " | ".join(refused))
    summary = {
        n: {"target": p.target, "rolled_back": list(p.rolled_back)} for n, p in plans.items()
    }
    restored: dict[str, str] = {}
    if not dry_run:
        for name in sorted(plans):
            try:
                _, result = HudiTable(paths[name]).restore_run(invocation_id, force=force)
            except HudiError as e:
                raise DbtRuntimeError(
                    f"Restoring {name} failed: {e} (restored so far: {sorted(restored) or 'none'})"
                ) from e
            if result is not None:
                restored[name] = result.instant_time
                logger.info(
                    f"  {name}: restored to {result.target} by restore {result.instant_time}"
                )
    return {"plan": summary, "restored": restored, "dry_run": dry_run, "text": text}
