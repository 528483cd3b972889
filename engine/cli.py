"""The ``dbt-hudi`` command (``python -m engine.cli``): inspect and read Hudi tables, no Spark.

::

    dbt-hudi read PATH [--as-of T] [--incremental START [END]] [--read-optimized] [--meta]
                       [--filter 'FIELD OP VALUE']... [--columns a,b] [--count]

``read`` prints canonical JSON lines, sorted, the format of the corpus goldens: keys sorted;
decimals as strings; dates ``YYYY-MM-DD``; timestamps in UTC ISO-8601 with microseconds and
``Z``; binary as ``base64:...``; maps with string keys as objects, other maps as ``[[k, v], ...]``;
NaN/Infinity as strings. Exit code 0 on success, 2 on a read error (message on stderr).
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

from engine import META_COLUMNS, HudiTable, config
from engine.errors import HudiError, TableNotFoundError

__all__ = ["canonical_json_lines", "canonical_value", "main"]

# the five meta columns, and the optional operation column of tables that keep it
_HIDDEN_COLUMNS = (*META_COLUMNS, "_hoodie_operation")


def canonical_value(v: Any) -> Any:  # noqa: C901 - one branch per value type of the goldens
    """A JSON-ready value in the canonical form of the corpus goldens."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        return v.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "base64:" + base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, dict):
        return {str(k): canonical_value(x) for k, x in v.items()}
    if isinstance(v, list):
        # pyarrow gives map<k, v> values as lists of (key, value) tuples
        if v and all(isinstance(e, tuple) and len(e) == 2 for e in v):
            if all(isinstance(e[0], str) for e in v):
                return {k: canonical_value(x) for k, x in v}
            return [[canonical_value(k), canonical_value(x)] for k, x in v]
        return [canonical_value(e) for e in v]
    if isinstance(v, tuple):
        return [canonical_value(e) for e in v]
    return str(v)


def canonical_json_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Rows as canonical JSON text, sorted (the order-free form goldens are compared in)."""
    return sorted(json.dumps(canonical_value(r), sort_keys=True, ensure_ascii=False) for r in rows)


def _read_options(args: argparse.Namespace) -> dict[str, str]:
    options: dict[str, str] = {}
    if args.incremental:
        options[config.QUERY_TYPE.key] = "incremental"
        options[config.READ_BEGIN_INSTANTTIME.key] = args.incremental[0]
        if len(args.incremental) > 1:
            options[config.READ_END_INSTANTTIME.key] = args.incremental[1]
    elif args.read_optimized:
        options[config.QUERY_TYPE.key] = "read_optimized"
    if args.as_of and not args.incremental:
        options[config.AS_OF_INSTANT] = args.as_of
    for kv in args.option or []:
        key, _, value = kv.partition("=")
        options[key] = value
    return options


def _cmd_read(args: argparse.Namespace) -> int:
    from engine import parse_filter, read_table

    if args.incremental and len(args.incremental) > 2:
        print("ERROR: --incremental takes START [END]", file=sys.stderr)
        return 2
    filters = [parse_filter(f) for f in args.filter or []]
    table = read_table(args.table, _read_options(args), filters)
    if not args.meta:
        table = table.select([c for c in table.column_names if c not in _HIDDEN_COLUMNS])
    if args.columns:
        table = table.select([c.strip() for c in args.columns.split(",") if c.strip()])
    if args.count:
        print(table.num_rows)
        return 0
    out = sys.stdout
    for line in canonical_json_lines(table.to_pylist()):
        out.write(line + "\n")
    return 0


def _add_read_parser(sub: Any) -> None:
    p = sub.add_parser("read", help="print a table's rows as canonical JSON lines")
    p.add_argument("table", help="table base path (local directory or URI)")
    p.add_argument("--as-of", metavar="INSTANT", help="time travel: the table as of INSTANT")
    p.add_argument(
        "--incremental",
        nargs="+",
        metavar="INSTANT",
        help="incremental query: changes in (START, END]; END defaults to the latest commit",
    )
    p.add_argument("--read-optimized", action="store_true", help="MOR: base files only")
    p.add_argument("--meta", action="store_true", help="keep the _hoodie_* meta columns")
    p.add_argument(
        "--filter",
        action="append",
        metavar="'FIELD OP VALUE'",
        help="repeatable; ops: = != < <= > >= IN NOT IN (IN values comma-separated)",
    )
    p.add_argument("--columns", help="comma-separated projection")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="extra read option")
    p.add_argument("--count", action="store_true", help="print only the row count")
    p.set_defaults(handler=_cmd_read)


# Subcommands register here: name -> parser builder (compact, clean, rollback, timeline follow).
SUBCOMMANDS: dict[str, Callable[[Any], None]] = {"read": _add_read_parser}


def _cmd_compact(args: argparse.Namespace) -> int:
    """``compact PATH [--schedule] [--order FIFO|LIFO] [--option K=V]``.

    Without ``--schedule``: run every pending compaction in ``--order``; when none is pending,
    schedule one (whatever the trigger strategy: the operator asked) and run it, on Spark.
    With ``--schedule``: only write the plan. Prints the compaction instants, one a line.
    Runs under the table lock with the table's persisted properties, as dbt's run-operation.
    """
    from engine import spark_table

    table = spark_table(args.table)
    done = table.compact(_options(args), order=args.order, schedule_only=args.schedule)
    for instant_time in done:
        print(instant_time)
    if not done:
        print("nothing to compact")
    return 0


def _add_compact_parser(sub: Any) -> None:
    p = sub.add_parser("compact", help="compact a merge-on-read table (file slices to base files)")
    p.add_argument("table", help="table base path (local directory or URI)")
    p.add_argument("--schedule", action="store_true", help="only schedule a compaction plan")
    p.add_argument(
        "--order",
        choices=("FIFO", "LIFO"),
        default="FIFO",
        help="order of pending compactions: oldest (FIFO) or newest (LIFO) first",
    )
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="Hudi config option")
    p.set_defaults(handler=_cmd_compact)


SUBCOMMANDS["compact"] = _add_compact_parser


def _options(args: argparse.Namespace) -> dict[str, str]:
    """The ``--option KEY=VALUE`` pairs of a service command."""
    pairs = (kv.partition("=") for kv in args.option or [])
    return {key: value for key, _, value in pairs}


def _existing_table(args: argparse.Namespace) -> HudiTable:
    table = HudiTable(args.table)
    if not table.exists:
        raise TableNotFoundError(f"No Hudi table at {table.base_path}")
    return table


def _cmd_clean(args: argparse.Namespace) -> int:
    """``clean PATH [--option K=V]``: finish a pending clean, then plan and run a new one under
    the table lock (cleaner policy and retention from ``--option``). Prints the clean instant
    and the number of files deleted, or ``nothing to clean``."""
    result = _existing_table(args).clean(_options(args))
    if result is None:
        print("nothing to clean")
        return 0
    print(f"{result.instant_time} deleted {result.total_deleted} file(s)")
    for partition, rels in sorted(result.failed.items()):
        print(f"failed to delete in {partition or '.'}: {', '.join(rels)}", file=sys.stderr)
    return 0


def _add_clean_parser(sub: Any) -> None:
    p = sub.add_parser("clean", help="delete file slices the retained commits no longer need")
    p.add_argument("table", help="table base path (local directory or URI)")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="Hudi config option")
    p.set_defaults(handler=_cmd_clean)


SUBCOMMANDS["clean"] = _add_clean_parser


def _cmd_rollback(args: argparse.Namespace) -> int:
    """``rollback PATH INSTANT``: undo a failed (pending) write whose writer is gone, or the
    latest completed write. Prints the rollback instant."""
    print(_existing_table(args).rollback(args.instant, _options(args)))
    return 0


def _add_rollback_parser(sub: Any) -> None:
    p = sub.add_parser("rollback", help="roll back a failed write or the latest completed write")
    p.add_argument("table", help="table base path (local directory or URI)")
    p.add_argument("instant", help="instant time of the write to roll back")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="Hudi config option")
    p.set_defaults(handler=_cmd_rollback)


SUBCOMMANDS["rollback"] = _add_rollback_parser


def _cmd_timeline(args: argparse.Namespace) -> int:
    """``timeline PATH``: the active timeline, one instant a line: time, action, state."""
    for instant in _existing_table(args).timeline().instants:
        print(f"{instant.instant_time} {instant.action.value} {instant.state.value}")
    return 0


def _add_timeline_parser(sub: Any) -> None:
    p = sub.add_parser("timeline", help="list the instants of the active timeline")
    p.add_argument("table", help="table base path (local directory or URI)")
    p.set_defaults(handler=_cmd_timeline, option=None)


SUBCOMMANDS["timeline"] = _add_timeline_parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dbt-hudi",
        description="Inspect and read Apache Hudi tables (table versions 6, 8 and 9).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS.values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dbt-hudi`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except HudiError as e:
        print(f"ERROR: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
