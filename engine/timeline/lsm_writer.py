"""Writing the archived timeline of layout 2: Hudi 1.x's LSM tree of parquet files.

Each archival adds one level-0 file ``<min>_<max>_0.parquet`` of ``HoodieLSMTimelineInstant``
rows (the archived instants, oldest first) and publishes it in a new snapshot: the manifest
``manifest_<N+1>`` (JSON, every valid data file with its length) is created, then ``_version_``
is rewritten to ``N+1``. A reader follows ``_version_`` (or, when it is missing, the greatest
manifest), so a file is never read before its manifest names it, and a writer stopped between
the steps leaves the previous snapshot intact.

After every archival the tree is compacted as Hudi's ``LSMTimelineWriter.compactAndClean`` does:
once a level holds ``hoodie.timeline.compaction.batch.size`` files, the oldest batch (by name,
at most ~1 GB) is merged into one file of the next level, level after level. Then only the three
newest snapshots (plus one per compaction just made) are kept: older manifests go first, then
the data files none of the kept manifests names, so a reader holding a recent snapshot never
loses a file.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import TimelineError
from engine.fs.storage import Storage
from engine.timeline.avro_metadata import LSM_TIMELINE_INSTANT_SCHEMA
from engine.timeline.lsm_history import (
    DATA_FILE_RE,
    MANIFEST_PREFIX,
    VERSION_FILE,
    ManifestFile,
    latest_version,
    manifest_files,
    snapshot_versions,
)

__all__ = ["LSMInstant", "append_history", "compact_and_clean"]

LSM_INSTANT_VERSION = 1
_SNAPSHOTS_KEPT = 3
_MAX_COMPACTION_INPUT_BYTES = 1000 * 1024 * 1024
# HoodieLSMTimelineInstant.avsc: parquet-avro readers (Hudi's) project it from the footer
ARROW_SCHEMA = pa.schema(
    [
        pa.field("instantTime", pa.string()),
        pa.field("completionTime", pa.string()),
        pa.field("action", pa.string()),
        pa.field("metadata", pa.binary()),
        pa.field("plan", pa.binary()),
        pa.field("version", pa.int32(), nullable=False),
    ],
    metadata={
        "parquet.avro.schema": LSM_TIMELINE_INSTANT_SCHEMA.json,
        "writer.model.name": "avro",
    },
)


@dataclass(frozen=True, slots=True)
class LSMInstant:
    """One archived instant: its times, completed action, completed file's bytes and plan."""

    instant_time: str
    completion_time: str
    action: str
    metadata: bytes | None
    plan: bytes | None

    def row(self) -> dict[str, object]:
        return {
            "instantTime": self.instant_time,
            "completionTime": self.completion_time,
            "action": self.action,
            "metadata": self.metadata,
            "plan": self.plan,
            "version": LSM_INSTANT_VERSION,
        }


def file_name(min_instant: str, max_instant: str, level: int) -> str:
    return f"{min_instant}_{max_instant}_{level}.parquet"


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    # gzip: Hudi's default parquet codec; the footer carries the Avro schema parquet-avro reads
    pq.write_table(table, sink, compression="gzip")
    return sink.getvalue()


def _write_data_file(storage: Storage, rel: str, table: pa.Table) -> None:
    storage.write_atomic(rel, _parquet_bytes(table))


def _publish(storage: Storage, history_dir: str, remove: Sequence[str], add: str) -> int:
    """A new snapshot: the latest manifest minus ``remove`` plus ``add``; returns its version."""
    version = latest_version(storage, history_dir)
    files = [f for f in manifest_files(storage, history_dir, version) if f.file_name not in remove]
    files.append(ManifestFile(add, storage.size(f"{history_dir}/{add}")))
    new_version = 1 if version is None else version + 1
    manifest = {"files": [{"fileName": f.file_name, "fileLen": f.file_len} for f in files]}
    # Jackson's pretty printer, as Hudi writes it; the content is what matters to readers
    text = json.dumps(manifest, indent=2, separators=(",", " : "))
    storage.write_bytes(f"{history_dir}/{MANIFEST_PREFIX}{new_version}", text.encode("utf-8"))
    version_file = f"{history_dir}/{VERSION_FILE}"
    storage.delete(version_file)
    storage.write_bytes(version_file, str(new_version).encode("utf-8"))
    return new_version


def append_history(storage: Storage, history_dir: str, instants: Sequence[LSMInstant]) -> str:
    """Archive ``instants`` (oldest first) into a new level-0 file; returns its name.

    A file of the same name already in the latest snapshot means an earlier archival of these
    instants stopped before removing them from the active timeline: it is kept as it is. One the
    snapshot does not name is a leftover of a stopped write and is written again.
    """
    if not instants:
        raise TimelineError("Nothing to archive into the timeline history")
    ordered = sorted(instants, key=lambda i: i.instant_time)
    name = file_name(ordered[0].instant_time, ordered[-1].instant_time, 0)
    rel = f"{history_dir}/{name}"
    published = manifest_files(storage, history_dir, latest_version(storage, history_dir))
    if storage.exists(rel):
        if any(f.file_name == name for f in published):
            return name
        storage.delete(rel)
    storage.makedirs(history_dir)
    rows = [i.row() for i in ordered]
    _write_data_file(storage, rel, pa.Table.from_pylist(rows, schema=ARROW_SCHEMA))
    _publish(storage, history_dir, (), name)
    return name


def _level(name: str) -> int:
    m = DATA_FILE_RE.match(name)
    return int(m.group(3)) if m is not None else 0


def _candidates(files: list[ManifestFile], batch: int) -> list[str]:
    """The oldest ``batch`` files, stopping once their bytes pass ~1 GB (Hudi's bound)."""
    chosen: list[str] = []
    total = 0
    for f in sorted(files, key=lambda f: f.file_name)[:batch]:
        if total > _MAX_COMPACTION_INPUT_BYTES:
            break
        total += f.file_len
        chosen.append(f.file_name)
    return chosen


def _compact_level(storage: Storage, history_dir: str, level: int, batch: int) -> str | None:
    files = manifest_files(storage, history_dir, latest_version(storage, history_dir))
    in_level = [f for f in files if _level(f.file_name) == level]
    if len(in_level) < batch:
        return None
    sources = _candidates(in_level, batch)
    if len(sources) < 2:
        return None
    bounds = [DATA_FILE_RE.match(s) for s in sources]
    low = min(m.group(1) for m in bounds if m is not None)
    high = max(m.group(2) for m in bounds if m is not None)
    target = file_name(low, high, level + 1)
    tables = []
    for source in sources:
        with storage.open_input(f"{history_dir}/{source}") as f:
            tables.append(pq.read_table(f).select(ARROW_SCHEMA.names).cast(ARROW_SCHEMA))
    _write_data_file(storage, f"{history_dir}/{target}", pa.concat_tables(tables))
    _publish(storage, history_dir, sources, target)
    return target


def _clean(storage: Storage, history_dir: str, compactions: int) -> None:
    versions = snapshot_versions(storage, history_dir)
    keep_count = _SNAPSHOTS_KEPT + compactions
    if len(versions) <= keep_count:
        return
    kept = versions[-keep_count:]
    referenced = {f.file_name for v in kept for f in manifest_files(storage, history_dir, v)}
    for version in versions[:-keep_count]:
        storage.delete(f"{history_dir}/{MANIFEST_PREFIX}{version}")
    for entry in storage.list_dir(history_dir):
        if entry.name.endswith(".parquet") and entry.name not in referenced:
            storage.delete(f"{history_dir}/{entry.name}")


def compact_and_clean(storage: Storage, history_dir: str, batch_size: int) -> list[str]:
    """Merge full levels into the next one, then drop snapshots no reader needs; returns the
    files the compactions wrote."""
    if batch_size < 2:
        raise TimelineError(
            f"The timeline compaction batch size must be at least 2, got {batch_size}"
        )
    written: list[str] = []
    level = 0
    while (target := _compact_level(storage, history_dir, level, batch_size)) is not None:
        written.append(target)
        level += 1
    _clean(storage, history_dir, level)
    return written
