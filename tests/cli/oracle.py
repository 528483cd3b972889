"""What a table's files say, read straight from the directory: the expected side of the CLI tests.

Independent of the engine's timeline and file-system view: file names are matched with regular
expressions, commit metadata is read as raw JSON, times come from ``os.stat``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INSTANT_RE = re.compile(r"^(\d{14,17})\.(\w+?)(?:\.(requested|inflight))?$")
BASE_RE = re.compile(r"^(?P<fid>[^_]+)_(?P<token>[^_]+)_(?P<instant>\d+)\.parquet$")
LOG_RE = re.compile(r"^\.(?P<fid>[^_]+)_(?P<instant>\d+)\.log\.(?P<version>\d+)_(?P<token>.+)$")
WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")
STATE_ORDER = {"requested": 0, "inflight": 1, "completed": 2}


def mtime_ms(path: Path) -> int:
    """Modification time in whole milliseconds (the precision of instant times)."""
    return path.stat().st_mtime_ns // 1_000_000


def iso_mtime(path: Path) -> str:
    seconds, ms = divmod(mtime_ms(path), 1000)
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms:03d}Z"


@dataclass(frozen=True)
class RawInstant:
    instant_time: str
    action: str  # the completed action (a compaction completes as commit)
    state: str
    files: tuple[str, ...]


def instants(path: Path) -> list[RawInstant]:
    """The active timeline from the names in ``.hoodie``: each instant at its furthest state."""
    found: dict[str, dict[str, Any]] = {}
    for name in os.listdir(path / ".hoodie"):
        if not (path / ".hoodie" / name).is_file():
            continue
        m = INSTANT_RE.match(name)
        if not m:
            continue
        t, action, state = m.group(1), m.group(2), m.group(3) or "completed"
        if action == "inflight" and m.group(3) is None:
            action, state = "commit", "inflight"
        if action == "compaction" and state == "completed":
            continue
        entry = found.setdefault(t, {"action": action, "state": state, "files": []})
        entry["files"].append(name)
        if STATE_ORDER[state] > STATE_ORDER[entry["state"]]:
            entry["state"] = state
            entry["action"] = action
        if action == "compaction" and entry["state"] != "completed":
            entry["action"] = "compaction"
    return [
        RawInstant(t, e["action"], e["state"], tuple(sorted(e["files"])))
        for t, e in sorted(found.items())
    ]


def commit_json(path: Path, instant_time: str, action: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / ".hoodie" / f"{instant_time}.{action}").read_text())
    return data


def stats_of(meta: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for stats in (meta.get("partitionToWriteStats") or {}).values() for s in stats]


def requested_file(path: Path, raw: RawInstant) -> Path | None:
    for name in raw.files:
        if name.endswith(".requested"):
            return path / ".hoodie" / name
    for name in raw.files:
        if name.endswith(".inflight"):
            return path / ".hoodie" / name
    return None


@dataclass
class Group:
    partition: str
    file_id: str
    base_files: dict[str, str] = field(default_factory=dict)
    log_files: dict[str, list[str]] = field(default_factory=dict)


def partition_dirs(path: Path) -> list[str]:
    """Partition paths: directories (or the base path) holding a partition metafile."""
    out = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if any(f.startswith(".hoodie_partition_metadata") for f in files):
            rel = os.path.relpath(root, path)
            out.append("" if rel == "." else rel)
            dirs[:] = []
    return sorted(out)


def groups(path: Path) -> dict[tuple[str, str], Group]:
    out: dict[tuple[str, str], Group] = {}
    for partition in partition_dirs(path):
        for name in os.listdir(path / partition):
            base, log = BASE_RE.match(name), LOG_RE.match(name)
            if base:
                g = out.setdefault((partition, base["fid"]), Group(partition, base["fid"]))
                g.base_files[base["instant"]] = name
            elif log:
                g = out.setdefault((partition, log["fid"]), Group(partition, log["fid"]))
                g.log_files.setdefault(log["instant"], []).append(name)
    return out


def replaced(path: Path) -> set[tuple[str, str]]:
    out = set()
    for raw in instants(path):
        if raw.action == "replacecommit" and raw.state == "completed":
            meta = commit_json(path, raw.instant_time, "replacecommit")
            for p, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
                out |= {(p, i) for i in ids}
    return out


def latest_slices(path: Path) -> dict[tuple[str, str], tuple[str, str | None, list[str]]]:
    """Live file group → (base instant, base file name, log file names) of its latest slice."""
    timeline = instants(path)
    completed = {
        r.instant_time for r in timeline if r.state == "completed" and r.action in WRITE_ACTIONS
    }
    first = min(completed, default=None)
    on_timeline = {r.instant_time for r in timeline}

    def committed(t: str) -> bool:
        return t in completed or (first is not None and t < first and t not in on_timeline)

    out = {}
    gone = replaced(path)
    for key, g in groups(path).items():
        if key in gone:
            continue
        visible = sorted(t for t in set(g.base_files) | set(g.log_files) if committed(t))
        if visible:
            t = visible[-1]
            out[key] = (t, g.base_files.get(t), sorted(g.log_files.get(t, [])))
    return out


def properties(path: Path) -> dict[str, str]:
    props = {}
    for line in (path / ".hoodie" / "hoodie.properties").read_text("latin-1").splitlines():
        if line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        props[key] = value.replace("\\:", ":").replace("\\=", "=")
    return props
