"""``dbt-hudi compact | clean | rollback | archive``: table services, under the table lock.

Each verb opens an existing table, merges its ``--option`` values over the defaults, takes the
table lock and runs one engine service, with a progress bar on a terminal. Output: one line per
result (or a JSON document with ``--json``).
"""

from __future__ import annotations

import argparse
from typing import Any

from engine import HudiTable, spark_table
from engine.cli import render
from engine.cli.progress import progress, quiet_spark
from engine.cli.tables import add_table_argument, parse_option_args
from engine.errors import HudiError, TableNotFoundError

__all__ = ["add_service_parsers", "emit_result", "open_for_service"]


def open_for_service(args: argparse.Namespace) -> tuple[HudiTable, dict[str, str]]:
    """An existing table (its data work on Spark) and the ``--option`` values of the command;
    every verb runs through :class:`engine.HudiTable`, under the table lock, with the table's
    persisted properties merged with the options, as dbt's run-operations do."""
    table = spark_table(args.table)
    if not table.exists:
        raise TableNotFoundError(f"No Hudi table at {table.base_path}")
    return table, parse_option_args(args.option)


def emit_result(args: argparse.Namespace, result: dict[str, Any], lines: list[str]) -> None:
    if args.json:
        render.print_json(result)
    else:
        for line in lines:
            print(line)


def _cmd_compact(args: argparse.Namespace) -> int:
    """Run every pending compaction in ``--order``; with none pending, schedule one (whatever
    the trigger strategy says: the operator asked) and run it, on Spark. With ``--schedule``
    only write the plan."""
    table, options = open_for_service(args)
    if args.schedule:
        planned = table.compact(options, schedule_only=True)
        result: dict[str, Any] = {"scheduled": planned[0] if planned else None, "compacted": []}
        emit_result(args, result, planned or ["nothing to compact"])
        return 0
    quiet_spark()
    pending = table.pending_compactions()
    with progress("compacting", total=len(pending) or None) as advance:
        done = table.compact(options, order=args.order, on_compacted=lambda _: advance(1))
    scheduled = None if pending else (done[0] if done else None)
    result = {"scheduled": scheduled, "compacted": done}
    emit_result(args, result, done or ["nothing to compact"])
    return 0


def _cmd_clean(args: argparse.Namespace) -> int:
    """Finish a pending clean, then plan and run a new one (cleaner policy and retention from
    ``--option``). Prints the clean instant and the number of files deleted."""
    table, options = open_for_service(args)
    with progress("cleaning"):
        outcome = table.clean(options)
    if outcome is None:
        emit_result(args, {"instant_time": None, "deleted": {}, "failed": {}}, ["nothing to clean"])
        return 0
    result = {
        "instant_time": outcome.instant_time,
        "deleted": outcome.deleted,
        "failed": outcome.failed,
    }
    lines = [f"{outcome.instant_time} deleted {outcome.total_deleted} file(s)"]
    lines += [
        f"failed to delete in {partition or '.'}: {', '.join(rels)}"
        for partition, rels in sorted(outcome.failed.items())
    ]
    emit_result(args, result, lines)
    return 0


def _cmd_rollback(args: argparse.Namespace) -> int:
    """Undo a failed (pending) write whose writer is gone, or the latest completed write; with
    ``--failed``, finish pending rollbacks and undo every failed write."""
    if bool(args.instant) == bool(args.failed):
        raise HudiError("rollback takes an INSTANT or --failed (one of them)")
    table, options = open_for_service(args)
    with progress("rolling back"):
        if args.failed:
            rolled = table.rollback_failed(options)
            emit_result(args, {"rolled_back": rolled}, rolled or ["nothing to roll back"])
            return 0
        rollback_time = table.rollback(args.instant, options)
    emit_result(
        args, {"rolled_back": [args.instant], "instant_time": rollback_time}, [rollback_time]
    )
    return 0


def _cmd_archive(args: argparse.Namespace) -> int:
    """Archive the completed instants past ``hoodie.keep.max.commits`` (as after a commit)."""
    table, options = open_for_service(args)
    with progress("archiving"):
        archived = [i.instant_time for i in table.archive(options)]
    emit_result(args, {"archived": archived}, archived or ["nothing to archive"])
    return 0


def add_service_parsers(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compact", parents=parents, help="compact a merge-on-read table (slices to base files)"
    )
    add_table_argument(p, options=True)
    p.add_argument("--schedule", action="store_true", help="only schedule a compaction plan")
    p.add_argument(
        "--order",
        choices=("FIFO", "LIFO"),
        default="FIFO",
        help="order of pending compactions: oldest (FIFO) or newest (LIFO) first",
    )
    p.set_defaults(handler=_cmd_compact)

    p = sub.add_parser(
        "clean", parents=parents, help="delete file slices the retained commits no longer need"
    )
    add_table_argument(p, options=True)
    p.set_defaults(handler=_cmd_clean)

    p = sub.add_parser(
        "rollback", parents=parents, help="roll back a failed write or the latest completed write"
    )
    add_table_argument(p, options=True)
    p.add_argument("instant", nargs="?", help="instant time of the write to roll back")
    p.add_argument(
        "--failed",
        action="store_true",
        help="finish pending rollbacks and roll back every write whose writer is gone",
    )
    p.set_defaults(handler=_cmd_rollback)

    p = sub.add_parser(
        "archive", parents=parents, help="archive instants past hoodie.keep.max.commits"
    )
    add_table_argument(p, options=True)
    p.set_defaults(handler=_cmd_archive)
