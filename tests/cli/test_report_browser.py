"""``dbt-hudi report``: the page renders in a real headless Chromium with no console errors and
no network request, and its charts hold one point per commit, base file and file group.

Chromium comes from the OS packages (``make browser`` installs it where apt-get can); without it
these tests skip, saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli import oracle
from tests.cli.browser import Browser, headless
from tests.cli.conftest import cli_json, run_cli

COUNT_POINTS = """(() => {
  const count = (id, layer, point) => {
    const el = document.getElementById(id);
    return el ? el.querySelectorAll(`.${layer} .trace .point${point}`).length : null;
  };
  const traces = id => (document.getElementById(id)?.data || []).map(t => [t.type, t.y.length]);
  return {
    commit_bars: count('chart-commits', 'barlayer', ''),
    commit_markers: count('chart-commits', 'scatterlayer', ''),
    commit_traces: traces('chart-commits'),
    size_points: count('chart-file-sizes', 'boxlayer', ''),
    size_traces: traces('chart-file-sizes'),
    size_lines: document.querySelectorAll('#chart-file-sizes .shapelayer path').length,
    log_bars: count('chart-log-files', 'barlayer', ''),
    log_note: document.getElementById('chart-log-files')?.textContent || '',
    findings: document.body.innerText.includes('healthy: nothing to act on'),
  };
})()"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from headless("the report")


def _render(browser: Browser, table: Path, tmp_path: Path) -> dict[str, Any]:
    page = tmp_path / "report.html"
    status, out, err = run_cli("report", str(table), "-o", str(page))
    assert (status, err) == (0, "") and out.strip() == str(page.resolve())
    browser.open(page.as_uri())
    counts: dict[str, Any] = browser.evaluate(COUNT_POINTS)
    shot = tmp_path / "report.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert browser.console_errors() == []
    assert browser.requested_urls() == [page.as_uri()]  # nothing fetched but the page itself
    return counts


def _expected(table: Path) -> tuple[int, int, int]:
    """(completed writes, latest base files, live file groups) from the files."""
    writes = [
        i
        for i in oracle.instants(table)
        if i.state == "completed" and i.action in oracle.WRITE_ACTIONS
    ]
    slices = oracle.latest_slices(table)
    return len(writes), sum(1 for _, base, _ in slices.values() if base), len(slices)


@pytest.mark.spark
def test_report_of_merge_on_read_table_renders_every_point(
    browser: Browser, mor_table: Path, tmp_path: Path
) -> None:
    counts = _render(browser, mor_table, tmp_path)
    commits, base_files, groups = _expected(mor_table)
    assert commits == 3
    # three stacked bar traces (inserted, updated, deleted) and the bytes line, one point each
    assert counts["commit_traces"] == [["bar", commits]] * 3 + [["scatter", commits]]
    assert counts["commit_bars"] == 3 * commits and counts["commit_markers"] == commits
    assert counts["size_points"] == base_files
    assert sum(n for _, n in counts["size_traces"]) == base_files
    assert counts["size_lines"] == 2  # small-file limit and max file size
    assert counts["log_bars"] == groups
    assert counts["findings"] is True


@pytest.mark.spark
def test_report_of_copy_on_write_table_has_no_log_chart(
    browser: Browser, cow_table: Path, tmp_path: Path
) -> None:
    counts = _render(browser, cow_table, tmp_path)
    commits, base_files, _ = _expected(cow_table)
    assert counts["commit_bars"] == 3 * commits and counts["commit_markers"] == commits
    assert counts["size_points"] == base_files == len(cli_json("file-groups", str(cow_table)))
    assert counts["log_bars"] == 0 and "copy-on-write table: no log files" in counts["log_note"]


@pytest.mark.interop
def test_report_of_corpus_table_renders_every_point(
    browser: Browser, corpus_table: Callable[[str], Path], tmp_path: Path
) -> None:
    table = corpus_table("mor_parquet__v6_nonpartitioned_rollback")
    counts = _render(browser, table, tmp_path)
    commits, base_files, groups = _expected(table)
    assert (commits, base_files, groups) == (2, 1, 1)
    assert counts["commit_bars"] == 3 * commits and counts["commit_markers"] == commits
    assert counts["size_points"] == base_files and counts["log_bars"] == groups
