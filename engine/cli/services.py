"""``dbt-hudi compact | clean | rollback | archive``: table services, under the table lock.

Each verb opens an existing table, merges its ``--option`` values over the defaults, takes the
table lock and runs one engine service, with a progress bar on a terminal. Output: one line per
result (or a JSON document with ``--json``).
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli import render
from engine.cli.progress import progress, quiet_spark
from engine.cli.tables import add_table_argument, parse_option_args
from engine.errors import HudiError, TableNotFoundError

__all__ = ["add_service_parsers"]


def _open_for_service(args: argparse.Namespace) -> tuple[Any, Any]:
    """(storage, config) of an existing table; CLI ``--option`` values override defaults."""
    from engine.config import parse_options
    from engine.fs.properties import PROPERTIES_FILE
    from engine.fs.storage import Storage

    storage = Storage(args.table)
    if not storage.exists(PROPERTIES_FILE):
        raise TableNotFoundError(f"No Hudi table at {storage.base_path}")
    return storage, parse_options(parse_option_args(args.option))


def _emit(args: argparse.Namespace, result: dict[str, Any], lines: list[str]) -> None:
    if args.json:
        render.print_json(result)
    else:
        for line in lines:
            print(line)


def _cmd_compact(args: argparse.Namespace) -> int:
    """Run every pending compaction in ``--order``; with none pending, schedule one (whatever
    the trigger strategy says: the operator asked) and run it, on Spark. With ``--schedule``
    only write the plan."""
    from engine.services.compaction import (
        execute_compaction,
        pending_compactions,
        schedule_compaction,
    )
    from engine.services.lock import TableLock
    from engine.timeline.timeline import Timeline

    storage, cfg = _open_for_service(args)
    with TableLock(storage, cfg).hold():
        pending = [i.instant_time for i in pending_compactions(Timeline.load(storage))]
        scheduled = None
        if args.schedule or not pending:
            scheduled = schedule_compaction(storage, cfg, force=True)
        if args.schedule:
            result: dict[str, Any] = {"scheduled": scheduled, "compacted": []}
            _emit(args, result, [scheduled or "nothing to compact"])
            return 0
        todo = pending or ([scheduled] if scheduled else [])
        if args.order == "LIFO":
            todo.reverse()
        if todo:
            quiet_spark()
        done: list[str] = []
        with progress("compacting", total=len(todo)) as advance:
            for instant_time in todo:
                execute_compaction(storage, instant_time)
                done.append(instant_time)
                advance(1)
    result = {"scheduled": scheduled, "compacted": done}
    _emit(args, result, done or ["nothing to compact"])
    return 0


def _cmd_clean(args: argparse.Namespace) -> int:
    """Finish a pending clean, then plan and run a new one (cleaner policy and retention from
    ``--option``). Prints the clean instant and the number of files deleted."""
    from engine.services.clean import clean
    from engine.services.lock import TableLock

    storage, cfg = _open_for_service(args)
    with TableLock(storage, cfg).hold(), progress("cleaning"):
        outcome = clean(storage, cfg)
    if outcome is None:
        _emit(args, {"instant_time": None, "deleted": {}, "failed": {}}, ["nothing to clean"])
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
    _emit(args, result, lines)
    return 0


def _cmd_rollback(args: argparse.Namespace) -> int:
    """Undo a failed (pending) write whose writer is gone, or the latest completed write; with
    ``--failed``, finish pending rollbacks and undo every failed write."""
    from engine.services.lock import TableLock
    from engine.timeline.timeline import Timeline
    from engine.write.conflict import is_write_alive
    from engine.write.rollback import (
        rollback_failed_writes,
        rollback_instant,
        rollback_last_commit,
    )

    if bool(args.instant) == bool(args.failed):
        raise HudiError("rollback takes an INSTANT or --failed (one of them)")
    storage, cfg = _open_for_service(args)
    with TableLock(storage, cfg).hold(), progress("rolling back"):
        timeline = Timeline.load(storage)
        if args.failed:
            rolled = rollback_failed_writes(
                storage, timeline, is_alive=lambda i: is_write_alive(storage, i, cfg)
            )
            _emit(args, {"rolled_back": rolled}, rolled or ["nothing to roll back"])
            return 0
        instant = timeline.get(args.instant)
        if instant is None or instant.action.value not in (
            "commit",
            "deltacommit",
            "replacecommit",
        ):
            raise HudiError(
                f"No write instant {args.instant} on the timeline of {storage.base_path}"
            )
        if instant.is_completed:
            rollback_time = rollback_last_commit(storage, args.instant)
        elif is_write_alive(storage, instant, cfg):
            raise HudiError(f"Write {args.instant} is still running (its heartbeat is alive)")
        else:
            rollback_time = rollback_instant(storage, instant, timeline.max_instant_time())
    _emit(args, {"rolled_back": [args.instant], "instant_time": rollback_time}, [rollback_time])
    return 0


def _cmd_archive(args: argparse.Namespace) -> int:
    """Archive the completed instants past ``hoodie.keep.max.commits`` (as after a commit)."""
    from engine.services.archival import archive
    from engine.services.lock import TableLock

    storage, cfg = _open_for_service(args)
    with TableLock(storage, cfg).hold(), progress("archiving"):
        archived = [i.instant_time for i in archive(storage, cfg)]
    _emit(args, {"archived": archived}, archived or ["nothing to archive"])
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
