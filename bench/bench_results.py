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
    return f"{os.cpu_count()} cores{memory}, {_cpu()}, {platform.system()}"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def record(section: str, entry: str, figures: dict[str, Any], path: Path = RESULTS) -> None:
    """Replace ``section.entry`` of the results file with ``figures``, dated, machine named."""
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault(section, {})[entry] = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        **figures,
    }
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
