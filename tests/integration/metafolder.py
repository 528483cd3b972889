"""What the write tests inspect in a table's metafolder (``.hoodie``): the table properties, the
timeline files and the metadata of completed instants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.fs.properties import parse_properties_text


def table_properties(path: Path) -> dict[str, str]:
    return parse_properties_text((path / ".hoodie" / "hoodie.properties").read_text())


def timeline_files(path: Path) -> list[str]:
    """Names of the files directly in ``.hoodie``, sorted."""
    return sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file())


def instant_metadata(path: Path, instant: str, action: str) -> dict[str, Any]:
    """The JSON metadata of completed instant ``instant`` of ``action`` (commit, deltacommit,
    replacecommit)."""
    metadata: dict[str, Any] = json.loads((path / ".hoodie" / f"{instant}.{action}").read_text())
    return metadata


def write_stats(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """Every write stat of a commit's metadata, all partitions together."""
    return [s for stats in metadata["partitionToWriteStats"].values() for s in stats]
