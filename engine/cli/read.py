"""``dbt-hudi read``: a table's rows as canonical JSON lines (the corpus goldens' form), no Spark.

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
from collections.abc import Sequence
from typing import Any

from engine import META_COLUMNS, config

__all__ = ["add_read_parser", "canonical_json_lines", "canonical_value"]

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
        if args.cdc:
            options[config.QUERY_INCREMENTAL_FORMAT.key] = "cdc"
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
    if args.cdc and not args.incremental:
        print("ERROR: --cdc needs --incremental START [END]", file=sys.stderr)
        return 2
    filters = [parse_filter(f) for f in args.filter or []]
    table = read_table(args.table, _read_options(args), filters)
    if not args.meta:
        table = table.select([c for c in table.column_names if c not in _HIDDEN_COLUMNS])
    if args.columns:
        table = table.select([c.strip() for c in args.columns.split(",") if c.strip()])
    if args.count:
        print(json.dumps({"count": table.num_rows}) if args.json else table.num_rows)
        return 0
    out = sys.stdout
    for line in canonical_json_lines(table.to_pylist()):
        out.write(line + "\n")
    return 0


def add_read_parser(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("read", parents=parents, help="print a table's rows as canonical JSON lines")
    p.add_argument("table", help="table base path (local directory or URI)")
    p.add_argument("--as-of", metavar="INSTANT", help="time travel: the table as of INSTANT")
    p.add_argument(
        "--incremental",
        nargs="+",
        metavar="INSTANT",
        help="incremental query: changes in (START, END]; END defaults to the latest commit",
    )
    p.add_argument(
        "--cdc",
        action="store_true",
        help="with --incremental: the change stream of a CDC table (op, ts_ms, before, after)",
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
