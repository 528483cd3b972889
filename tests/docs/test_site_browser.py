"""The user guide, built as ``make docs`` builds it (``mkdocs build --strict``), served over a
loopback HTTP server and opened in a real headless Chromium: every page renders with no console
error and no request outside the site, every internal link and anchor resolves, the plots load,
and the site's search (mkdocs-material's web worker over ``search/search_index.json``) finds
config names.

Chromium comes from the OS packages (``make browser`` installs it where apt-get can); without it
the browser tests skip, saying so. The build and link checks run either way.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from tests.cli.browser import Browser, headless

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
NAV_PAGES = 19  # mkdocs.yml's nav; a page left out of it fails the build's omitted_files check


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert built.returncode == 0, built.stderr
    return out


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from headless("the user guide")


def pages(site: Path) -> list[str]:
    """Every page of the site, as its path under the root (``""`` for the home page)."""
    found = []
    for index in sorted(site.rglob("index.html")):
        rel = index.parent.relative_to(site).as_posix()
        if not rel.startswith(("assets", "search")):
            found.append("" if rel == "." else f"{rel}/")
    return found


class _Targets(HTMLParser):
    """The ids of a page and the hrefs and image sources it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("href"):
            self.links.append(str(values["href"]))
        if tag in ("img", "script") and values.get("src"):
            self.links.append(str(values["src"]))
        if tag == "link" and values.get("href"):
            self.links.append(str(values["href"]))


def _parse(path: Path) -> _Targets:
    parser = _Targets()
    parser.feed(path.read_text())
    return parser


def _file_of(site: Path, path: str) -> Path | None:
    target = site / unquote(path).lstrip("/")
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


def broken_links(site: Path) -> list[str]:
    """Internal links (and anchors) of every page that lead nowhere."""
    broken = []
    paths = {page: site / page / "index.html" for page in pages(site)}
    parsed = {path: _parse(path) for path in paths.values()}
    for page, path in paths.items():
        for href in parsed[path].links:
            url = urlsplit(urljoin(f"http://site/{page}", href))
            if url.netloc != "site":
                continue
            target = _file_of(site, url.path)
            if target is None:
                broken.append(f"{page or '/'}: {href}")
                continue
            if url.fragment and target.name == "index.html":
                if target not in parsed:
                    parsed[target] = _parse(target)
                if unquote(url.fragment) not in parsed[target].ids:
                    broken.append(f"{page or '/'}: {href} (no such anchor)")
    return broken


def test_the_site_has_every_page_and_no_broken_link(site: Path) -> None:
    found = pages(site)
    assert len(found) == NAV_PAGES, found
    for page in (
        "config-reference/",
        "troubleshooting/",
        "performance/",
        "architecture/",
        "audit/",
    ):
        assert page in found
    assert broken_links(site) == []
    index = (site / "search" / "search_index.json").read_text()
    assert "MERGE_ON_READ" in index and "index_type" in index


def test_a_broken_link_is_found(site: Path, tmp_path: Path) -> None:
    copy = tmp_path / "site"
    subprocess.run(["cp", "-r", str(site), str(copy)], check=True)
    page = copy / "undo" / "index.html"
    page.write_text(
        page.read_text().replace(
            "</article>",
            '<a href="../nowhere/">x</a><a href="../cli/#no-such-anchor">y</a></article>',
            1,
        )
    )
    assert broken_links(copy) == [
        "undo/: ../nowhere/",
        "undo/: ../cli/#no-such-anchor (no such anchor)",
    ]


PAGE_FACTS = """(() => {
  const article = document.querySelector('article.md-content__inner');
  const images = [...document.querySelectorAll('article img')];
  return {
    title: document.title,
    h1: article ? (article.querySelector('h1')?.textContent || '') : '',
    text: article ? article.innerText.length : 0,
    images: images.length,
    broken_images: images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src),
    nav_links: document.querySelectorAll('nav.md-nav--primary a.md-nav__link[href]').length,
  };
})()"""


def test_every_page_renders(browser: Browser, server: str, site: Path) -> None:
    seen = []
    for page in pages(site):
        browser.open(server + page)
        facts = browser.evaluate(PAGE_FACTS)
        assert facts["h1"].strip(), f"{page}: no title heading"
        assert facts["text"] > 400, f"{page}: {facts['text']} characters"
        assert facts["broken_images"] == [], page
        assert facts["nav_links"] >= NAV_PAGES, page
        assert browser.console_errors() == [], page
        outside = [u for u in browser.requested_urls() if not u.startswith((server, "data:"))]
        assert outside == [], f"{page}: requests outside the site"
        seen.append((page, facts))
    plots = dict(seen)["performance/"]["images"]
    assert plots == 4  # upserts, indexes, record index, dbt runs


# the results, once the worker answered: "No matching documents" can show for a moment while the
# worker still indexes, so only one that stays for 2 s counts; the worker builds its index first,
# which on a loaded machine took over 15 s, so the wait is up to 60 s
SEARCH = """(async () => {
  const wait = ms => new Promise(r => setTimeout(r, ms));
  const meta = () => document.querySelector('.md-search-result__meta')?.textContent || '';
  const input = document.querySelector('.md-search__input');
  let nothing = 0;
  for (let i = 0; i < 600 && nothing < 20; i++) {
    const links = [...document.querySelectorAll('.md-search-result__link')]
      .map(a => a.getAttribute('href'));
    if (links.length) return {meta: meta(), links};
    nothing = /no matching/i.test(meta()) ? nothing + 1 : 0;
    // typed before the search index had loaded (a busy machine): the page still asks for
    // input, so the text is announced again until the search answers
    if (i % 10 === 9 && /type to start/i.test(meta())) {
      input.dispatchEvent(new Event('input', {bubbles: true}));
      input.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true}));
    }
    await wait(100);
  }
  return {meta: meta(), links: []};
})()"""


def search(browser: Browser, server: str, term: str) -> dict[str, Any]:
    browser.open(server)
    browser.evaluate("document.querySelector('.md-search__input').focus()")
    time.sleep(0.2)
    browser.insert_text(term)
    found: dict[str, Any] = browser.evaluate(SEARCH)
    assert browser.evaluate("document.querySelector('.md-search__input').value") == term
    return found


@pytest.mark.parametrize(
    ("term", "page"),
    [("MERGE_ON_READ", "config-reference/"), ("index_type", "config-reference/")],
)
def test_search_finds_config_names(browser: Browser, server: str, term: str, page: str) -> None:
    found = search(browser, server, term)
    assert found["links"], f"search for {term!r} found nothing: {found['meta']!r}"
    assert any(page in link for link in found["links"]), found["links"]
    assert re.search(r"\d+ matching document", found["meta"]), found["meta"]


def test_search_of_a_word_the_site_lacks_finds_nothing(browser: Browser, server: str) -> None:
    found = search(browser, server, "zzqxjv")
    assert found["links"] == [] and "No matching" in found["meta"]
