"""How the command prints: JSON for scripts, rich tables for people.

A verb hands its result here as plain values (dataclasses of the inspection module or dicts).
With ``--json`` the result is printed as one JSON document; otherwise as rich tables, coloured on
a terminal and plain (wide, no escape codes) in a pipe or a file.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from engine.inspect import HealthReport, human_bytes

__all__ = [
    "Column",
    "console",
    "emit",
    "plain",
    "print_health",
    "print_json",
    "print_mapping",
    "print_rows",
]

Formatter = Callable[[Any], str]
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def plain(value: Any) -> Any:
    """A JSON-ready value: dataclasses as dicts (their properties kept out), the rest as is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(plain(value), indent=2, sort_keys=False) + "\n")


def console(file: Any = None) -> Console:
    """Rich console on stdout: the terminal's width there, a wide plain one elsewhere."""
    out = file or sys.stdout
    if out.isatty():
        return Console(file=out)
    return Console(file=out, width=240, color_system=None, no_color=True, highlight=False)


@dataclasses.dataclass(frozen=True)
class Column:
    """A table column: its header, the row key it shows and how to format the value."""

    header: str
    key: str
    fmt: Formatter = str
    justify: str = "left"


def size(value: Any) -> str:
    return "" if value is None else human_bytes(value)


def count(value: Any) -> str:
    return "" if value is None else f"{value:,}"


def text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def seconds(value: Any) -> str:
    return "" if value is None else f"{value:.1f}s"


def emit(out: Console, renderable: Any, *, soft: bool = False) -> None:
    """Print on ``out``; off a terminal without the padding rich adds to fill the width.
    ``soft``: long lines are left whole (a command must stay copyable)."""
    if out.is_terminal:
        out.print(renderable, soft_wrap=soft)
        return
    with out.capture() as captured:
        out.print(renderable, soft_wrap=soft)
    out.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def print_rows(
    title: str, columns: Sequence[Column], rows: Sequence[Any], *, out: Console | None = None
) -> None:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for c in columns:
        # fold, never ellipsize: a file id or an instant must stay whole to be copied
        table.add_column(c.header, justify=c.justify, overflow="fold")  # type: ignore[arg-type]
    for row in rows:
        values = plain(row)
        table.add_row(*(c.fmt(values.get(c.key)) for c in columns))
    emit(out or console(), table)


def print_listing(
    as_json: bool, title: str, columns: Sequence[Column], rows: Sequence[Any]
) -> None:
    """A verb's rows: one JSON document with ``--json``, else a table titled ``title``."""
    if as_json:
        print_json(rows)
    else:
        print_rows(title, columns, rows)


def print_mapping(title: str, values: Mapping[str, Any], *, out: Console | None = None) -> None:
    target = out or console()
    emit(target, Text(title, style="bold"))
    table = Table(box=box.SIMPLE_HEAD, show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    for key, value in values.items():
        table.add_row(key, text(value))
    emit(target, table)


def print_health(report: HealthReport, *, out: Console | None = None) -> None:
    """The health view: the table's facts, then every finding with its fix."""
    target = out or console()
    print_mapping(
        f"{report.table_name} ({report.table_type}, table version {report.table_version}) "
        f"at {report.base_path}",
        report.facts,
        out=target,
    )
    if not report.findings:
        emit(target, Text("healthy: nothing to act on", style="bold green"))
        return
    # one block per finding (no table: messages and commands are long and must not wrap)
    emit(target, Text(f"{len(report.findings)} finding(s)", style="bold"))
    for f in report.findings:
        line = Text("  ")
        line.append(f"[{f.severity}]", style=SEVERITY_STYLE.get(f.severity, ""))
        line.append(f" {f.check} ({f.subject}): ", style="bold")
        line.append(f.message)
        emit(target, line, soft=True)
        fix = Text("      fix: ")
        fix.append(f.fix, style="bold")
        emit(target, fix, soft=True)
