"""mkdocs hooks (mkdocs.yml ``hooks:``): the generated parts of the user guide.

Pages holding ``<!-- generated: NAME -->`` get the text ``scripts/docs_reference.py`` makes
from the code (the config reference) and from ``bench/results.json`` (the performance
figures); the plots are added to the site as SVG files under ``img/``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mkdocs.structure.files import File, Files  # noqa: E402

from scripts import docs_reference, plot_bench  # noqa: E402


def on_files(files: Files, config: Any) -> Files:
    for name, svg in plot_bench.svgs().items():
        files.append(File.generated(config, f"{plot_bench.IMAGE_DIR}/{name}", content=svg))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return docs_reference.fill(markdown)
