"""The performance page's plots follow ``bench/results.json``: what a bench run records there
(``bench/bench_results.record``, as ``make bench`` and ``make bench-dbt`` call it) is what the
next build draws, with its date and machine."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bench import bench_results
from scripts import plot_bench

pytestmark = pytest.mark.unit


def test_the_committed_results_draw_every_figure() -> None:
    results = plot_bench.load()
    svgs = plot_bench.svgs(results)
    assert set(svgs) == {f"{f.name}.svg" for f in plot_bench.FIGURES} | {"bench-dbt.svg"}
    for svg in svgs.values():
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    uniform = results["upsert"]["uniform"]
    drawn = svgs["bench-upserts.svg"]
    for seconds in uniform["seconds"].values():
        assert f"{seconds:.2f} s" in drawn
    page = plot_bench.figures_md(results)
    assert page.count("![") == len(svgs)
    assert f"measured {uniform['date']}" in page


def test_a_bench_run_refreshes_its_shape_and_keeps_the_others(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    shutil.copy(plot_bench.RESULTS, results)
    before = json.loads(results.read_text())
    figures = {"rows": 200_000, "batch": 2_000, "reps": 2, "load": 0.7}
    seconds = {"cow": 0.123, "mor": 0.456, "spark-io": 0.789, "delta-merge": 0.321}
    bench_results.record("upsert", "small", {**figures, "seconds": seconds}, results)
    after = plot_bench.load(results)
    assert after["upsert"]["uniform"] == before["upsert"]["uniform"]
    small = after["upsert"]["small"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", small["date"]) and "cores" in small["machine"]
    drawn = plot_bench.svgs(after)["bench-upserts.svg"]
    assert "0.12 s" in drawn and "0.46 s" in drawn
    assert "0.30 s" not in drawn.split("small:")[1].split("large:")[0]  # the old small figure
    assert "200,000 rows, 2,000-row batch" in drawn
    caption = plot_bench.figures_md(after).split("\n\n")[1]
    assert small["date"] in caption and small["machine"] in caption
