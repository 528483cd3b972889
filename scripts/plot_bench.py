"""The performance page's plots, drawn from ``bench/results.json`` (written by ``make bench`` and
``make bench-dbt``) as SVG with matplotlib.

    python scripts/plot_bench.py OUT_DIR     # the SVG files, for a look without the site

``mkdocs build`` draws them through ``scripts/mkdocs_hooks.py`` (``svgs``) and puts
``figures_md`` where the performance page says ``<!-- generated: performance-figures -->``,
so a bench run followed by ``make docs`` refreshes the page.
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results.json"
IMAGE_DIR = "img"

# contenders in the order the bars show them, with the name a reader knows them by
LABELS = {
    "cow": "hudi_upsert (COW, dbt's defaults)",
    "mor": "hudi_mor (MOR, dbt's defaults)",
    "cow-simple": "COW, SIMPLE index",
    "mor-simple": "MOR, SIMPLE index",
    "cow-bloom": "COW, BLOOM",
    "mor-bloom": "MOR, BLOOM",
    "cow-gbloom": "COW, GLOBAL_BLOOM",
    "mor-gbloom": "MOR, GLOBAL_BLOOM",
    "cow-bucket": "COW, BUCKET",
    "mor-bucket": "MOR, BUCKET",
    "cow-gsimple9": "COW, GLOBAL_SIMPLE (v9)",
    "cow-rli": "COW, RECORD_INDEX (v9)",
    "mor-gsimple9": "MOR, GLOBAL_SIMPLE (v9)",
    "mor-rli": "MOR, RECORD_INDEX (v9)",
    "spark-io": "dbt-spark insert-overwrite",
    "delta-merge": "delta-rs MERGE",
    # Apache Hudi's own Spark writer (bench/hudi_spark.py): 0.15.0 on table version 6, 1.1.1 on 9
    **{
        f"hudi{release}-{kind}{index}": f"Hudi {release} on Spark, {kind.upper()}, {label}"
        for release in ("0.15", "1.1")
        for kind in ("cow", "mor")
        for index, label in (
            ("", "GLOBAL_SIMPLE"),
            ("-default", "its default index"),
            ("-bucket", "BUCKET"),
            ("-rli", "RECORD_INDEX"),
        )
    },
}
ANCHORS = ("spark-io", "delta-merge", *(n for n in LABELS if n.startswith("hudi")))
LABELS_DBT = {
    "first_wall": "first run, wall",
    "next_wall": "next runs, wall",
    "first_model": "first run, model",
    "next_model": "next runs, model",
}


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    shapes: tuple[str, ...]
    caption: str


FIGURES = (
    Figure(
        "bench-upserts",
        "Upserts with dbt's defaults against the anchors",
        ("uniform", "hot2", "small", "large"),
        "One upsert into a table of `rows` rows: `uniform` spreads the batch over all 10 "
        "partitions, `hot2` puts it in the last 2, `small` is a 2,000-row batch in one partition "
        "(a dbt incremental run), `large` a 5× table.",
    ),
    Figure(
        "bench-indexes",
        "Index choice on time-ordered keys",
        ("recent", "recent-large"),
        "Keys grow with time and updates hit the newest tenth: the case bloom indexes are made "
        "for ([index choice](#index-choice-on-time-ordered-keys)).",
    ),
    Figure(
        "bench-record-index",
        "The record index against GLOBAL_SIMPLE (table version 9)",
        ("rli", "rli-large"),
        "One 20,000-row batch into 1M- and 5M-row tables "
        "([the record index's cost](#the-record-indexs-cost)).",
    ),
)


def load(path: Path = RESULTS) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def _order(names: list[str]) -> list[str]:
    known = [n for n in LABELS if n in names]
    return known + sorted(n for n in names if n not in LABELS)


def _svg(fig: Any, salt: str) -> str:
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = salt  # stable ids: the same figures, the same file
    out = io.StringIO()
    fig.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    return out.getvalue()


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, small
    import matplotlib.pyplot as plt

    return plt


def upsert_svg(figure: Figure, results: dict[str, Any]) -> str:
    """One panel per shape: a horizontal bar per contender, seconds (lower is better)."""
    plt = _pyplot()
    shapes = [s for s in figure.shapes if s in results.get("upsert", {})]
    fig, axes = plt.subplots(len(shapes), 1, figsize=(8, 1.2 + 2.4 * len(shapes)), squeeze=False)
    for ax, shape in zip(axes[:, 0], shapes, strict=True):
        entry = results["upsert"][shape]
        names = _order(list(entry["seconds"]))
        seconds = [entry["seconds"][n] for n in names]
        colors = ["#9e9e9e" if n in ANCHORS else "#3f51b5" for n in names]
        bars = ax.barh([LABELS.get(n, n) for n in names], seconds, color=colors)
        ax.bar_label(bars, fmt="%.2f s", padding=3, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(
            f"{shape}: {entry['rows']:,} rows, {entry['batch']:,}-row batch "
            f"({entry['date']}, load {entry['load']})",
            fontsize=9,
            loc="left",
        )
        ax.tick_params(labelsize=8)
        ax.set_xlabel("seconds (median)", fontsize=8)
        ax.set_xlim(0, max(seconds) * 1.2)
    fig.suptitle(figure.title, fontsize=11, x=0.01, ha="left")
    fig.tight_layout()
    svg = _svg(fig, figure.name)
    plt.close(fig)
    return svg


def dbt_svg(results: dict[str, Any]) -> str:
    """Wall time and model time of a dbt run, first and next runs, per materialization."""
    plt = _pyplot()
    entry = next(iter(results["dbt"].values()))
    models = list(entry["seconds"])
    columns = ("first_wall", "next_wall", "first_model", "next_model")
    fig, ax = plt.subplots(figsize=(8, 3.2))
    height = 0.8 / len(models)
    for i, model in enumerate(models):
        values = [entry["seconds"][model][c] for c in columns]
        positions = [c + i * height for c in range(len(columns))]
        bars = ax.barh(positions, values, height=height, label=model)
        ax.bar_label(bars, fmt="%.1f s", padding=3, fontsize=7)
    ax.set_yticks([c + height * (len(models) - 1) / 2 for c in range(len(columns))])
    ax.set_yticklabels([LABELS_DBT[c] for c in columns])
    ax.invert_yaxis()
    ax.tick_params(labelsize=8)
    ax.set_xlabel("seconds (median)", fontsize=8)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(
        f"The seconds a user waits: a {entry['rows']:,}-row model, each dbt run a fresh process "
        f"({entry['date']}, load {entry['load']})",
        fontsize=9,
        loc="left",
    )
    fig.tight_layout()
    svg = _svg(fig, "bench-dbt")
    plt.close(fig)
    return svg


def svgs(results: dict[str, Any] | None = None) -> dict[str, str]:
    """File name (under ``IMAGE_DIR``) -> SVG text, for every figure the results hold."""
    results = load() if results is None else results
    out = {
        f"{f.name}.svg": upsert_svg(f, results)
        for f in FIGURES
        if any(s in results.get("upsert", {}) for s in f.shapes)
    }
    if results.get("dbt"):
        out["bench-dbt.svg"] = dbt_svg(results)
    return out


def _measured(entries: list[dict[str, Any]]) -> str:
    dates = sorted({e["date"] for e in entries})
    machines = sorted({e["machine"] for e in entries})
    return f"measured {', '.join(dates)} on {'; '.join(machines)}"


def figures_md(results: dict[str, Any] | None = None) -> str:
    """The page's figures: each plot with what was measured, when and on what machine."""
    results = load() if results is None else results
    lines = []
    upserts = results.get("upsert", {})
    for figure in FIGURES:
        entries = [upserts[s] for s in figure.shapes if s in upserts]
        if not entries:
            continue
        lines += [
            f"![{figure.title}]({IMAGE_DIR}/{figure.name}.svg)",
            "",
            f"{figure.caption} Medians, one JVM, A B A B, every result verified; "
            f"{_measured(entries)}.",
            "",
        ]
    if results.get("dbt"):
        entry = next(iter(results["dbt"].values()))
        lines += [
            f"![The seconds a user waits]({IMAGE_DIR}/bench-dbt.svg)",
            "",
            f"`make bench-dbt`: medians of {entry['runs']['first']} first and "
            f"{entry['runs']['next']} next runs, contenders interleaved; {_measured([entry])}.",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "site-plots"
    out.mkdir(parents=True, exist_ok=True)
    for name, svg in svgs().items():
        (out / name).write_text(svg)
        print(out / name)


if __name__ == "__main__":
    main()
