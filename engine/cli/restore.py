"""``dbt-hudi savepoint | savepoints | savepoint-delete | restore | restore-run``.

Savepoints pin a commit's file slices against the cleaner; a restore rolls a table back to a
savepoint or any completed instant whose files are still on storage, as one ``restore`` instant
Hudi's readers understand; ``restore-run`` restores every table a dbt invocation wrote to its
state just before the invocation, after printing the plan (``--dry-run``: only the plan). None of
them needs Spark. Output: one line per result, rich tables for lists, ``--json`` for scripts.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from engine import HudiTable
from engine.cli import render
from engine.cli.tables import add_table_argument
from engine.errors import HudiError, TableNotFoundError

__all__ = ["add_restore_parsers"]

SAVEPOINT_COLUMNS = (
    render.Column("instant", "instant_time"),
    render.Column("savepointed by", "savepointed_by"),
    render.Column("at (UTC)", "at"),
    render.Column("files", "file_count", render.count, "right"),
    render.Column("comments", "comments"),
)
PLAN_COLUMNS = (
    render.Column("table", "base_path"),
    render.Column("status", "status"),
    render.Column("models", "models", render.text),
    render.Column("restore to", "target", render.text),
    render.Column("rolls back", "rolled_back", render.text),
    render.Column("later writers", "later", render.text),
)


def _open(path: str) -> HudiTable:
    table = HudiTable(path)
    if not table.exists:
        raise TableNotFoundError(f"No Hudi table at {table.base_path}")
    return table


def _savepoint_row(sp: Any) -> dict[str, Any]:
    at = dt.datetime.fromtimestamp(sp.savepointed_at / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    files = sum(len(v) for v in sp.files.values())
    return {**render.plain(sp), "at": at, "file_count": files}


def _cmd_savepoint(args: argparse.Namespace) -> int:
    """Savepoint the latest completed commit, or ``--instant``."""
    sp = _open(args.table).savepoint(args.instant, comment=args.comment or "")
    row = _savepoint_row(sp)
    if args.json:
        render.print_json(row)
    else:
        print(f"savepoint {sp.instant_time}: {row['file_count']} file(s) pinned")
    return 0


def _cmd_savepoints(args: argparse.Namespace) -> int:
    rows = [_savepoint_row(sp) for sp in _open(args.table).savepoints()]
    render.print_listing(args.json, f"savepoints of {args.table}", SAVEPOINT_COLUMNS, rows)
    return 0


def _cmd_savepoint_delete(args: argparse.Namespace) -> int:
    _open(args.table).delete_savepoint(args.instant)
    if args.json:
        render.print_json({"deleted": args.instant})
    else:
        print(f"deleted savepoint {args.instant}")
    return 0


def _cmd_restore(args: argparse.Namespace) -> int:
    """Restore a table to ``--to`` (refused, with nothing changed, when its files are gone);
    ``--dry-run`` prints what would be rolled back and changes nothing."""
    table = _open(args.table)
    if args.dry_run:
        plan = table.restore_plan(args.to)
        planned = [i.instant_time for i in plan.instants]
        if args.json:
            render.print_json({"restore_to": plan.target, "would_roll_back": planned})
        else:
            print(
                f"{args.table} would be restored to {plan.target}, rolling back "
                f"{len(planned)} instant(s) ({', '.join(planned) or 'none'}); nothing changed"
            )
        return 0
    result = table.restore(args.to)
    rolled = [i.instant_time for i in result.rolled_back]
    if args.json:
        render.print_json(
            {
                "instant_time": result.instant_time,
                "restored_to": result.target,
                "rolled_back": rolled,
                "savepoints_deleted": list(result.savepoints_deleted),
            }
        )
    else:
        print(
            f"restore {result.instant_time}: {args.table} restored to {result.target}, "
            f"{len(rolled)} instant(s) rolled back ({', '.join(rolled) or 'none'})"
        )
    return 0


def _plan_row(plan: Any) -> dict[str, Any]:
    later = [f"{instant} by {who}" for instant, who in plan.later_writers]
    return {**render.plain(plan), "status": plan.status, "later": later}


def _cmd_restore_run(args: argparse.Namespace) -> int:
    """Plan every table first; restore only when no plan is refused (nothing changed else)."""
    tables = [_open(path) for path in args.tables]
    plans = [t.plan_run_restore(args.invocation, force=args.force) for t in tables]
    rows = [_plan_row(p) for p in plans]
    if not args.json:
        render.print_rows(f"restore of dbt invocation {args.invocation}", PLAN_COLUMNS, rows)
    refused = [p.refusal for p in plans if p.refusal]
    if refused:
        raise HudiError(" | ".join(refused) + " (nothing was restored)")
    if not any(p.written for p in plans):
        raise HudiError(f"dbt invocation {args.invocation} wrote none of these tables")
    done: list[dict[str, Any]] = []
    if not args.dry_run:
        for table, plan in zip(tables, plans, strict=True):
            if plan.written:
                _, result = table.restore_run(args.invocation, force=args.force)
                done.append({"table": plan.base_path, "restore": result and result.instant_time})
    if args.json:
        render.print_json({"plan": rows, "restored": done, "dry_run": args.dry_run})
    else:
        for entry in done:
            print(f"restore {entry['restore']}: {entry['table']}")
    return 0


def add_restore_parsers(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "savepoint", parents=parents, help="pin a commit's files against the cleaner"
    )
    add_table_argument(p, options=False)
    p.add_argument("--instant", help="the completed commit to savepoint (default: the latest)")
    p.add_argument("--comment", help="a note kept in the savepoint")
    p.set_defaults(handler=_cmd_savepoint)

    p = sub.add_parser("savepoints", parents=parents, help="list a table's savepoints")
    add_table_argument(p, options=False)
    p.set_defaults(handler=_cmd_savepoints)

    p = sub.add_parser("savepoint-delete", parents=parents, help="delete a savepoint")
    add_table_argument(p, options=False)
    p.add_argument("--instant", required=True, help="the savepoint's instant time")
    p.set_defaults(handler=_cmd_savepoint_delete)

    p = sub.add_parser(
        "restore", parents=parents, help="roll a table back to a savepoint or completed instant"
    )
    add_table_argument(p, options=False)
    p.add_argument("--to", required=True, metavar="INSTANT", help="the instant to restore to")
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.set_defaults(handler=_cmd_restore)

    p = sub.add_parser(
        "restore-run",
        parents=parents,
        help="restore every table a dbt invocation wrote to its state just before it",
    )
    p.add_argument("--invocation", required=True, metavar="ID", help="dbt's invocation_id")
    p.add_argument("tables", nargs="+", metavar="PATH", help="table base paths to consider")
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.add_argument("--force", action="store_true", help="also remove commits later writers made")
    p.set_defaults(handler=_cmd_restore_run)
