"""``dbt-hudi report PATH -o report.html``: one self-contained page about a table.

Pictures where people would rather look than read: commits over time (rows and bytes), the
size of every latest base file per partition against ``hoodie.parquet.small.file.limit`` and
``hoodie.parquet.max.file.size``, and log files per file group; then the health findings, the
partitions and the timeline as tables. Charts are plotly figures; plotly.js (shipped inside the
plotly package) is inlined once, so the page needs no network. The page is a jinja2 template
(``templates/report.html.j2``) that escapes every value it prints.
"""

from __future__ import annotations

import argparse
import datetime as dt
import webbrowser
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from engine import inspect
from engine.cli import render
from engine.cli.tables import (
    PARTITION_COLUMNS,
    TIMELINE_COLUMNS,
    add_table_argument,
    parse_option_args,
)

__all__ = ["CHART_IDS", "add_report_parser", "build_report"]

CHART_IDS = ("chart-commits", "chart-file-sizes", "chart-log-files")
TEMPLATE = "report.html.j2"


@dataclass(frozen=True)
class _RowsTable:
    """A table of the page: the columns the terminal tables use, and each row's cells as
    those columns format them."""

    columns: Sequence[render.Column]
    rows: list[list[str]]


def _rows_table(columns: Sequence[render.Column], rows: Iterable[Any]) -> _RowsTable:
    cells = [[c.fmt(values.get(c.key)) for c in columns] for values in map(render.plain, rows)]
    return _RowsTable(columns, cells)


def _template() -> jinja2.Template:
    """The page's template; every value it prints is escaped, charts and plotly.js are marked
    safe where they are made."""
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("engine.cli", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    return environment.get_template(TEMPLATE)


def _figure_html(fig: Any, div_id: str) -> Markup:
    import plotly.io as pio

    return Markup(
        pio.to_html(
            fig,
            include_plotlyjs=False,
            full_html=False,
            div_id=div_id,
            config={"displaylogo": False, "responsive": True},
        )
    )


def _commits_figure(rows: Sequence[inspect.InstantRow]) -> Any:
    import plotly.graph_objects as go

    writes = [r for r in rows if r.bytes_written is not None]
    x = [r.requested_time for r in writes]
    labels = [f"{r.instant_time} {r.action} {r.operation}" for r in writes]
    fig = go.Figure()
    for name, attr, colour in (
        ("rows inserted", "rows_inserted", "#2a9d8f"),
        ("rows updated", "rows_updated", "#e9c46a"),
        ("rows deleted", "rows_deleted", "#e76f51"),
    ):
        fig.add_bar(
            x=x,
            y=[getattr(r, attr) for r in writes],
            name=name,
            marker_color=colour,
            hovertext=labels,
        )
    fig.add_scatter(
        x=x,
        y=[r.bytes_written for r in writes],
        name="bytes written",
        mode="lines+markers",
        yaxis="y2",
        line={"color": "#264653"},
        hovertext=labels,
    )
    fig.update_layout(
        barmode="stack",
        title="Commits over time: rows (bars) and bytes written (line)",
        yaxis={"title": "rows"},
        yaxis2={"title": "bytes", "overlaying": "y", "side": "right"},
        legend={"orientation": "h"},
        height=420,
    )
    return fig


def _file_sizes_figure(sizes: dict[str, list[int]], limit: int, max_size: int) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for partition, values in sizes.items():
        if values:
            fig.add_box(
                y=values,
                name=partition or "(non-partitioned)",
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                hoverinfo="y+name",
            )
    lines = [(limit, "small-file limit", "dash"), (max_size, "max file size", "dot")]
    for value, _, dash in lines:
        if value:
            fig.add_hline(y=value, line_dash=dash, line_color="#b00020")
    fig.update_layout(
        title="Latest base file sizes per partition"
        + "".join(
            f" · {dash}: {label} {inspect.human_bytes(value)}"
            for value, label, dash in lines
            if value
        ),
        yaxis={"title": "bytes", "type": "log"},
        showlegend=False,
        height=420,
    )
    return fig


def _log_files_figure(groups: Sequence[inspect.FileGroupRow]) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    by_partition: dict[str, list[inspect.FileGroupRow]] = {}
    for g in groups:
        by_partition.setdefault(g.partition_path, []).append(g)
    for partition, rows in by_partition.items():
        fig.add_bar(
            x=[f"{partition}/{g.file_id}" if partition else g.file_id for g in rows],
            y=[len(g.log_files) for g in rows],
            name=partition or "(non-partitioned)",
            hovertext=[f"{inspect.human_bytes(g.log_bytes)} in logs" for g in rows],
        )
    fig.update_layout(
        title="Log files in the latest slice of each file group",
        yaxis={"title": "log files"},
        xaxis={"showticklabels": len(groups) <= 40},
        height=420,
    )
    return fig


def build_report(table: inspect.InspectedTable) -> str:
    """The HTML page of ``table`` (a complete document; plotly.js inlined)."""
    from plotly.offline import get_plotlyjs

    rows = inspect.timeline_rows(table)
    groups = inspect.file_groups(table)
    health = inspect.health(table)
    sizes = inspect.base_file_sizes(table)
    limit = inspect.small_file_limit(table)
    max_size = int(health.facts.get("max_file_size") or 0)
    facts = _rows_table(
        (render.Column("fact", "fact"), render.Column("value", "value", render.text)),
        ({"fact": k, "value": v} for k, v in health.facts.items()),
    )
    return _template().render(
        title=f"{table.info.table_name}: Hudi table report",
        base_path=table.base_path,
        table_type=table.info.table_type,
        table_version=table.table_version,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        plotly_js=Markup(get_plotlyjs()),
        findings=health.findings,
        facts=facts,
        commits_chart=_figure_html(_commits_figure(rows), CHART_IDS[0]),
        file_sizes_chart=_figure_html(_file_sizes_figure(sizes, limit, max_size), CHART_IDS[1]),
        log_files_chart=(
            _figure_html(_log_files_figure(groups), CHART_IDS[2]) if table.info.is_mor else None
        ),
        log_files_chart_id=CHART_IDS[2],
        partitions=_rows_table(PARTITION_COLUMNS, inspect.partitions(table)),
        timeline=_rows_table(TIMELINE_COLUMNS, rows[-200:]),
    )


def _cmd_report(args: argparse.Namespace) -> int:
    table = inspect.open_table(args.table, parse_option_args(args.option))
    page = build_report(table)
    out = Path(args.output)
    out.write_text(page, encoding="utf-8")
    if args.json:
        render.print_json({"report": str(out.resolve()), "bytes": out.stat().st_size})
    else:
        print(out.resolve())
    if args.open:
        webbrowser.open(out.resolve().as_uri())
    return 0


def add_report_parser(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("report", parents=parents, help="write a self-contained HTML report")
    add_table_argument(p, options=True)
    p.add_argument("-o", "--output", default="report.html", help="HTML file to write")
    p.add_argument("--open", action="store_true", help="open the page in a browser")
    p.set_defaults(handler=_cmd_report)
