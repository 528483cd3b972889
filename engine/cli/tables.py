"""``dbt-hudi timeline | commit | partitions | file-groups | properties | schema | health``.

Read-only verbs over the table's files (no Spark): each asks :mod:`engine.inspect` and prints
the answer through :mod:`engine.cli.render`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from engine import inspect
from engine.cli import render
from engine.cli.render import Column, count, seconds, size, text

__all__ = ["add_inspect_parsers", "add_table_argument", "parse_option_args"]

TIMELINE_COLUMNS = (
    Column("instant", "instant_time"),
    Column("action", "action"),
    Column("state", "state"),
    Column("requested", "requested_time", text),
    Column("completed", "completed_time", text),
    Column("took", "duration_seconds", seconds, "right"),
    Column("operation", "operation", text),
    Column("inserted", "rows_inserted", count, "right"),
    Column("updated", "rows_updated", count, "right"),
    Column("deleted", "rows_deleted", count, "right"),
    Column("files", "files_written", count, "right"),
    Column("written", "bytes_written", size, "right"),
    Column("files deleted", "files_deleted", count, "right"),
)
WRITE_STAT_COLUMNS = (
    Column("partition", "partition_path"),
    Column("file group", "file_id"),
    Column("file", "path", text),
    Column("prev commit", "prev_commit"),
    Column("rows", "rows_written", count, "right"),
    Column("inserted", "rows_inserted", count, "right"),
    Column("updated", "rows_updated", count, "right"),
    Column("deleted", "rows_deleted", count, "right"),
    Column("written", "bytes_written", size, "right"),
    Column("log blocks", "log_blocks", count, "right"),
)
PARTITION_COLUMNS = (
    Column("partition", "partition_path"),
    Column("file groups", "file_groups", count, "right"),
    Column("base files", "base_files", count, "right"),
    Column("base size", "base_bytes", size, "right"),
    Column("records", "base_records", count, "right"),
    Column("log files", "log_files", count, "right"),
    Column("log size", "log_bytes", size, "right"),
    Column("small files", "small_base_files", count, "right"),
    Column("files on storage", "files_on_storage", count, "right"),
    Column("bytes on storage", "bytes_on_storage", size, "right"),
)
FILE_GROUP_COLUMNS = (
    Column("partition", "partition_path"),
    Column("file group", "file_id"),
    Column("slice", "base_instant_time"),
    Column("base size", "base_bytes", size, "right"),
    Column("log files", "log_files", lambda v: str(len(v)), "right"),
    Column("log size", "log_bytes", size, "right"),
    Column("delta commits", "delta_commits", count, "right"),
    Column("slices", "slices", count, "right"),
    Column("pending compaction", "pending_compaction", text),
)
SCHEMA_COLUMNS = (
    Column("field", "name"),
    Column("type", "type"),
    Column("nullable", "nullable", lambda v: "yes" if v else "no"),
)
HISTORY_COLUMNS = (
    Column("instant", "instant_time"),
    Column("action", "action"),
    Column("fields", "fields", count, "right"),
    Column("added", "added", text),
    Column("removed", "removed", text),
    Column(
        "changed",
        "changed",
        lambda v: "\n".join(f"{c['name']}: {c['from']} → {c['to']}" for c in v),
    ),
)


def parse_option_args(pairs: Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict (validated later by :func:`engine.config.parse_options`)."""
    options: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            from engine.errors import ConfigError

            raise ConfigError(f"--option takes KEY=VALUE, got {pair!r}")
        options[key.strip()] = value
    return options


def add_table_argument(p: argparse.ArgumentParser, *, options: bool) -> None:
    p.add_argument("table", help="table base path (local directory or URI)")
    if options:
        p.add_argument(
            "--option",
            action="append",
            metavar="KEY=VALUE",
            help="a Hudi option the table's writers use, e.g. a retention (repeatable)",
        )


def _open(args: argparse.Namespace) -> inspect.InspectedTable:
    return inspect.open_table(args.table, parse_option_args(getattr(args, "option", None)))


def _cmd_timeline(args: argparse.Namespace) -> int:
    rows = inspect.timeline_rows(_open(args))
    render.print_listing(args.json, f"timeline of {args.table}", TIMELINE_COLUMNS, rows)
    return 0


def _cmd_commit(args: argparse.Namespace) -> int:
    detail = inspect.commit_detail(_open(args), args.instant)
    if args.json:
        render.print_json(detail)
        return 0
    out = render.console()
    render.print_mapping(
        f"{detail.timeline.action} {args.instant}", render.plain(detail.timeline), out=out
    )
    render.print_rows(
        "write stats by partition and file group", WRITE_STAT_COLUMNS, detail.write_stats, out=out
    )
    if detail.replaced_file_groups:
        render.print_rows(
            "replaced file groups",
            (Column("partition", "partition_path"), Column("file group", "file_id")),
            detail.replaced_file_groups,
            out=out,
        )
    return 0


def _cmd_partitions(args: argparse.Namespace) -> int:
    table = _open(args)
    rows = inspect.partitions(table)
    if args.json:
        render.print_json(rows)
    else:
        limit = inspect.small_file_limit(table)
        title = f"partitions of {args.table} (small file: under {inspect.human_bytes(limit)})"
        render.print_rows(title, PARTITION_COLUMNS, rows)
    return 0


def _cmd_file_groups(args: argparse.Namespace) -> int:
    rows = inspect.file_groups(_open(args), args.partition)
    if args.json:
        render.print_json(rows)
    else:
        where = f" in {args.partition!r}" if args.partition is not None else ""
        render.print_rows(f"file groups{where}: latest slices", FILE_GROUP_COLUMNS, rows)
    return 0


def _cmd_properties(args: argparse.Namespace) -> int:
    props = dict(sorted(_open(args).info.properties.items()))
    if args.json:
        render.print_json(props)
    else:
        render.print_mapping(f"{args.table}/.hoodie/hoodie.properties", props)
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    table = _open(args)
    fields = inspect.schema_fields(table)
    history = inspect.schema_history(table) if args.history else None
    if args.json:
        render.print_json({"fields": fields, **({"history": history} if args.history else {})})
        return 0
    out = render.console()
    render.print_rows("schema of the latest commit", SCHEMA_COLUMNS, fields, out=out)
    if history is not None:
        render.print_rows(
            "schema changes on the active timeline", HISTORY_COLUMNS, history, out=out
        )
    return 0


def _cmd_health(args: argparse.Namespace) -> int:
    """Exit status 0 when nothing needs acting on, 1 when a finding is a warning or an error."""
    report = inspect.health(_open(args))
    if args.json:
        render.print_json({**render.plain(report), "healthy": report.healthy})
    else:
        render.print_health(report)
    return 0 if report.healthy else 1


def add_inspect_parsers(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    def verb(name: str, help_: str, handler: Any, *, options: bool = False) -> Any:
        p = sub.add_parser(name, parents=parents, help=help_)
        add_table_argument(p, options=options)
        p.set_defaults(handler=handler)
        return p

    verb("timeline", "instants with what each wrote, when and how long it took", _cmd_timeline)
    p = verb("commit", "one commit's write stats by partition and file group", _cmd_commit)
    p.add_argument("instant", help="instant time of a completed commit/deltacommit/replacecommit")
    verb(
        "partitions",
        "per partition: file groups, sizes, small files",
        _cmd_partitions,
        options=True,
    )
    p = verb(
        "file-groups",
        "latest slice of each file group: base, logs, pending compaction",
        _cmd_file_groups,
    )
    p.add_argument("partition", nargs="?", help="only this partition path")
    verb("properties", "the table properties (.hoodie/hoodie.properties)", _cmd_properties)
    p = verb("schema", "the latest commit schema", _cmd_schema)
    p.add_argument("--history", action="store_true", help="also each commit that changed it")
    verb(
        "health",
        "what to act on: small files, compaction, pending or failed instants, "
        "clean, archival, metadata table (exit 1 when something is)",
        _cmd_health,
        options=True,
    )
