"""``bench/results.json``: the latest figures of ``make bench`` and ``make bench-dbt``, which the
user guide's performance page plots (``scripts/plot_bench.py``).

Each section holds one entry per shape (``make bench``) or one for the dbt project (``make
bench-dbt``), with the date, the machine and the load average it was measured at: a run
replaces the entries it measured and keeps the others, so a partial run (``BENCH_SHAPES=small``)
refreshes only its own.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results.json"


def machine() -> str:
    """The cores, memory and CPU a figure was measured on."""
    memory = ""
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f", {pages / 2**30:.0f} GB"
    except (ValueError, OSError):
        pass
    cpu = platform.processor() or platform.machine()
    return f"{os.cpu_count()} cores{memory}, {cpu}, {platform.system()}"


def record(section: str, entry: str, figures: dict[str, Any]) -> None:
    """Replace ``section.entry`` of the results file with ``figures``, dated, machine named."""
    data: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data.setdefault(section, {})[entry] = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        **figures,
    }
    RESULTS.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
