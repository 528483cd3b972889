"""The archived timeline of layout 2: an LSM tree of parquet files (Hudi 1.x ``LSMTimeline``).

::

    .hoodie/timeline/history/
        _version_                       latest snapshot version N (text)
        manifest_N                      {"files": [{"fileName": ..., "fileLen": ...}, ...]}
        <min>_<max>_<level>.parquet     HoodieLSMTimelineInstant rows:
                                        instantTime, completionTime, action,
                                        metadata (the completed file's bytes), plan, version

Only the files the latest manifest names are valid (older ones wait for the archiver's cleaning).
Archived instants are completed ones; reading them lets time travel and incremental queries reach
before the active timeline, with the same completion times and commit metadata Hudi archived.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pyarrow.parquet as pq

from engine.errors import TimelineError
from engine.fs.storage import Storage
from engine.timeline.instant import Action, Instant, State, completed_action

__all__ = [
    "ArchivedInstant",
    "ManifestFile",
    "latest_version",
    "manifest_files",
    "read_history",
    "snapshot_versions",
]

VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
_MANIFEST_RE = re.compile(r"^manifest_(\d+)$")
DATA_FILE_RE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet$")
_COLUMNS = ["instantTime", "completionTime", "action", "metadata"]


@dataclass(frozen=True, slots=True)
class ArchivedInstant:
    """A completed instant of the archived timeline and its completed file's content."""

    instant: Instant
    metadata: bytes | None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """A data file a manifest names (``HoodieLSMTimelineManifest.LSMFileEntry``)."""

    file_name: str
    file_len: int


def snapshot_versions(storage: Storage, history_dir: str) -> list[int]:
    """Versions of every manifest file present, ascending."""
    return sorted(
        int(m.group(1))
        for e in storage.list_dir(history_dir)
        if (m := _MANIFEST_RE.match(e.name)) is not None
    )


def latest_version(storage: Storage, history_dir: str) -> int | None:
    """The latest snapshot version: the ``_version_`` file, else the greatest manifest (a writer
    stopped between the two), else ``None`` (nothing archived)."""
    version_file = f"{history_dir}/{VERSION_FILE}"
    if storage.exists(version_file):
        text = storage.read_bytes(version_file).decode("utf-8").strip()
        if text.isdigit():
            return int(text)
    return max(snapshot_versions(storage, history_dir), default=None)


def manifest_files(storage: Storage, history_dir: str, version: int | None) -> list[ManifestFile]:
    """The data files of snapshot ``version`` (none for ``None``).

    Raises:
        TimelineError: an unreadable manifest, or one naming a file that is no history file.
    """
    if version is None:
        return []
    rel = f"{history_dir}/{MANIFEST_PREFIX}{version}"
    try:
        manifest = json.loads(storage.read_bytes(rel))
        files = [
            ManifestFile(str(f["fileName"]).rsplit("/", 1)[-1], int(f.get("fileLen") or 0))
            for f in manifest.get("files") or []
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise TimelineError(f"Unreadable archived timeline manifest {rel}: {e}") from e
    bad = [f.file_name for f in files if DATA_FILE_RE.match(f.file_name) is None]
    if bad:
        raise TimelineError(f"Unexpected archived timeline file(s) in {rel}: {bad}")
    return files


def _data_files(storage: Storage, history_dir: str) -> list[str]:
    version = latest_version(storage, history_dir)
    return [f"{history_dir}/{f.file_name}" for f in manifest_files(storage, history_dir, version)]


def _action(name: str | None, instant_time: str) -> Action | None:
    try:
        return completed_action(Action(name or ""))
    except ValueError:
        if name:
            return None  # actions this engine does not model (savepoint kinds etc.)
        raise TimelineError(f"Archived instant {instant_time} has no action") from None


def read_history(storage: Storage, history_dir: str | None) -> list[ArchivedInstant]:
    """Every archived instant of a layout-2 table, oldest first (empty when nothing archived).

    Raises:
        TimelineError: a manifest or data file that does not follow the format.
    """
    if history_dir is None or not storage.exists(history_dir):
        return []
    out: list[ArchivedInstant] = []
    for rel in _data_files(storage, history_dir):
        with storage.open_input(rel) as f:
            table = pq.read_table(f)
        missing = [c for c in _COLUMNS[:3] if c not in table.column_names]
        if missing:
            raise TimelineError(f"Archived timeline file {rel} lacks column(s) {missing}")
        columns = [c for c in _COLUMNS if c in table.column_names]
        for row in table.select(columns).to_pylist():
            instant_time = row["instantTime"]
            action = _action(row["action"], instant_time)
            if action is None or not instant_time:
                continue
            completion = row["completionTime"] or None
            instant = Instant(instant_time, action, State.COMPLETED, completion)
            out.append(ArchivedInstant(instant, row.get("metadata")))
    return sorted(out, key=lambda a: a.instant.sort_key())
