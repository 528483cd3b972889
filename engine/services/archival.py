"""Archival: moves old completed instants from the active timeline into the archived timeline.

Once more than ``hoodie.keep.max.commits`` completed commits are active, the oldest are archived
until ``hoodie.keep.min.commits`` remain. In layout 1 (table version 6) the archive is a log file
``.hoodie/archived/.commits_.archive.{n}_1-0-1`` of AVRO_DATA_BLOCKs whose records are
``HoodieArchivedMetaEntry`` (commit time, action, state and the action's metadata); in layout 2
(versions 8 and 9) it is the LSM history (``engine.services.history_archival``).

Readers count anything older than the active timeline as committed, so only instants that can
no longer be misread are archived: nothing at or after the oldest pending instant (an inflight
write, a pending compaction or clean), nothing the last clean still retains, and no replacecommit
whose replaced files are still on storage. Nothing at or after the oldest savepoint is archived
either (Hudi by default does not archive beyond a savepoint), so savepoints and the commits
they pin stay on the active timeline. Instant files are removed pending states first and the
completed file last, so an interrupted archival never makes a committed instant look pending.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from typing import Any

import fastavro

from engine import config
from engine.config import HoodieConfig
from engine.faults import checkpoint
from engine.fs.filenames import UNKNOWN_WRITE_TOKEN
from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage
from engine.io.logfile import HeaderMetadataType, HoodieLogBlockType, encode_block
from engine.services.history_archival import archive_to_history
from engine.timeline.avro_metadata import (
    CLEAN_METADATA_SCHEMA,
    NAMESPACE,
    ROLLBACK_METADATA_SCHEMA,
    deserialize,
)
from engine.timeline.commit_metadata import HoodieCommitMetadata, HoodieWriteStat
from engine.timeline.instant import Action, Instant, State, instant_file_name
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSystemView

ARCHIVE_FILE_PREFIX = ".commits_.archive"
_BLOCK_CONTENT_VERSION = 3

_LONG_STAT_FIELDS = (
    ("numWrites", "num_writes"),
    ("numDeletes", "num_deletes"),
    ("numUpdateWrites", "num_update_writes"),
    ("numInserts", "num_inserts"),
    ("totalWriteBytes", "total_write_bytes"),
    ("totalWriteErrors", "total_write_errors"),
    ("fileSizeInBytes", "file_size_in_bytes"),
    ("totalLogRecords", "total_log_records"),
    ("totalLogFilesCompacted", "total_log_files_compacted"),
    ("totalLogSizeCompacted", "total_log_size_compacted"),
    ("totalUpdatedRecordsCompacted", "total_updated_records_compacted"),
    ("totalLogBlocks", "total_log_blocks"),
    ("totalCorruptLogBlock", "total_corrupt_log_block"),
    ("totalRollbackBlocks", "total_rollback_blocks"),
)


def _nullable(name: str, type_: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", type_], "default": None}


_WRITE_STAT = {
    "type": "record",
    "name": "HoodieWriteStat",
    "namespace": NAMESPACE,
    "fields": [
        _nullable("fileId", "string"),
        _nullable("path", "string"),
        _nullable("prevCommit", "string"),
        _nullable("partitionPath", "string"),
        *(_nullable(avro_name, "long") for avro_name, _ in _LONG_STAT_FIELDS),
    ],
}


def _commit_metadata_schema(name: str, write_stat: Any, *, replace: bool) -> dict[str, Any]:
    fields = [
        _nullable(
            "partitionToWriteStats",
            {"type": "map", "values": {"type": "array", "items": write_stat}},
        ),
        _nullable("compacted", "boolean"),
        _nullable("extraMetadata", {"type": "map", "values": "string"}),
        {"name": "version", "type": ["int", "null"], "default": 1},
        _nullable("operationType", "string"),
    ]
    if replace:
        fields.append(
            _nullable(
                "partitionToReplaceFileIds",
                {"type": "map", "values": {"type": "array", "items": "string"}},
            )
        )
    return {"type": "record", "name": name, "namespace": NAMESPACE, "fields": fields}


ARCHIVED_META_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieArchivedMetaEntry",
    "namespace": NAMESPACE,
    "fields": [
        _nullable(
            "hoodieCommitMetadata",
            _commit_metadata_schema("HoodieCommitMetadata", _WRITE_STAT, replace=False),
        ),
        _nullable("hoodieCleanMetadata", CLEAN_METADATA_SCHEMA),
        _nullable("hoodieRollbackMetadata", ROLLBACK_METADATA_SCHEMA),
        _nullable("commitTime", "string"),
        _nullable("actionType", "string"),
        {"name": "version", "type": ["int", "null"], "default": 1},
        _nullable("actionState", "string"),
        _nullable(
            "hoodieReplaceCommitMetadata",
            _commit_metadata_schema(
                "HoodieReplaceCommitMetadata", f"{NAMESPACE}.HoodieWriteStat", replace=True
            ),
        ),
    ],
}
_PARSED_ENTRY = fastavro.parse_schema(ARCHIVED_META_ENTRY_SCHEMA)


def _stat_record(stat: HoodieWriteStat) -> dict[str, Any]:
    record: dict[str, Any] = {
        "fileId": stat.file_id,
        "path": stat.path,
        "prevCommit": stat.prev_commit,
        "partitionPath": stat.partition_path,
    }
    for avro_name, attr in _LONG_STAT_FIELDS:
        record[avro_name] = getattr(stat, attr)
    return record


def _commit_record(meta: HoodieCommitMetadata, *, replace: bool) -> dict[str, Any]:
    record: dict[str, Any] = {
        "partitionToWriteStats": {
            p: [_stat_record(s) for s in stats]
            for p, stats in meta.partition_to_write_stats.items()
        },
        "compacted": meta.compacted,
        "extraMetadata": dict(meta.extra_metadata),
        "version": 1,
        "operationType": meta.operation_type,
    }
    if replace:
        record["partitionToReplaceFileIds"] = dict(meta.partition_to_replace_file_ids or {})
    return record


def archived_entry(timeline: Timeline, instant: Instant) -> dict[str, Any]:
    """The HoodieArchivedMetaEntry of a completed instant."""
    entry: dict[str, Any] = {
        "commitTime": instant.instant_time,
        "actionType": instant.action.value,
        "actionState": "COMPLETED",
        "version": 1,
    }
    content = timeline.read_content(instant)
    if instant.action in (Action.COMMIT, Action.DELTA_COMMIT):
        entry["hoodieCommitMetadata"] = _commit_record(
            HoodieCommitMetadata.from_json(content, source=str(instant)), replace=False
        )
    elif instant.action is Action.REPLACE_COMMIT:
        entry["hoodieReplaceCommitMetadata"] = _commit_record(
            HoodieCommitMetadata.from_json(content, source=str(instant)), replace=True
        )
    elif instant.action is Action.CLEAN:
        entry["hoodieCleanMetadata"] = deserialize(content, source=str(instant))
    elif instant.action is Action.ROLLBACK:
        entry["hoodieRollbackMetadata"] = deserialize(content, source=str(instant))
    return entry


def _encode_entries(entries: Iterable[dict[str, Any]], instant_time: str) -> bytes:
    records = list(entries)
    body = io.BytesIO()
    for record in records:
        datum = io.BytesIO()
        fastavro.schemaless_writer(datum, _PARSED_ENTRY, record)
        body.write(len(datum.getvalue()).to_bytes(4, "big"))
        body.write(datum.getvalue())
    content = (
        _BLOCK_CONTENT_VERSION.to_bytes(4, "big")
        + len(records).to_bytes(4, "big")
        + body.getvalue()
    )
    header = {
        HeaderMetadataType.INSTANT_TIME: instant_time,
        HeaderMetadataType.SCHEMA: json.dumps(ARCHIVED_META_ENTRY_SCHEMA),
    }
    return encode_block(HoodieLogBlockType.AVRO_DATA_BLOCK, header, content)


def _archive_folder(cfg: HoodieConfig) -> str:
    folder = cfg.get(config.ARCHIVELOG_FOLDER)
    return f"{METAFOLDER}/{folder}"


def _next_archive_file(storage: Storage, folder: str) -> str:
    versions = [
        int(e.name.split(".archive.", 1)[1].split("_", 1)[0])
        for e in storage.list_dir(folder)
        if e.name.startswith(ARCHIVE_FILE_PREFIX + ".")
    ]
    return f"{folder}/{ARCHIVE_FILE_PREFIX}.{max(versions, default=0) + 1}_{UNKNOWN_WRITE_TOKEN}"


def _replace_still_on_storage(storage: Storage, timeline: Timeline, instant: Instant) -> bool:
    replaced = timeline.read_commit_metadata(instant).replaced_file_ids()
    if not replaced:
        return False
    view = FileSystemView(storage, timeline, partition_paths={p for p, _ in replaced})
    return any((g.partition_path, g.file_id) in replaced for g in view.file_groups())


def instants_to_archive(storage: Storage, timeline: Timeline, cfg: HoodieConfig) -> list[Instant]:
    """The completed instants archival may remove now, oldest first."""
    max_commits = cfg.get(config.KEEP_MAX_COMMITS)
    min_commits = cfg.get(config.KEEP_MIN_COMMITS)
    commits = timeline.commits_timeline()
    if len(commits) <= max_commits:
        return []
    bound = commits[len(commits) - min_commits].instant_time if min_commits else None
    pending = timeline.pending()
    if pending:
        bound = min(filter(None, (bound, pending[0].instant_time)))
    savepoints = timeline.savepoint_times()
    if savepoints:  # as Hudi by default (hoodie.archive.beyond.savepoint=false)
        bound = min(filter(None, (bound, savepoints[0])))
    cleans = timeline.completed([Action.CLEAN])
    if cleans:
        earliest = deserialize(timeline.read_content(cleans[-1])).get("earliestCommitToRetain")
        if earliest:
            bound = min(filter(None, (bound, earliest)))
    chosen: list[Instant] = []
    for instant in timeline.completed():
        if bound is not None and instant.instant_time >= bound:
            break
        if instant.action is Action.REPLACE_COMMIT and _replace_still_on_storage(
            storage, timeline, instant
        ):
            break
        chosen.append(instant)
    return chosen


def archive(storage: Storage, cfg: HoodieConfig) -> list[Instant]:
    """Archive what is due; returns the archived instants. The caller holds the table lock.

    Raises:
        ConfigError: a timeline compaction batch size below 2 (layout 2), before any change.
    """
    timeline = Timeline.load(storage)
    chosen = instants_to_archive(storage, timeline, cfg)
    if not chosen:
        return []
    if timeline.layout.version >= 2:
        return archive_to_history(storage, timeline, chosen, cfg)
    folder = _archive_folder(cfg)
    storage.makedirs(folder)
    storage.write_bytes(
        _next_archive_file(storage, folder),
        _encode_entries((archived_entry(timeline, i) for i in chosen), chosen[-1].instant_time),
    )
    checkpoint("archive.after_write")
    for instant in chosen:
        base_action = Action.COMPACTION if _was_compaction(storage, instant) else instant.action
        for state in (State.REQUESTED, State.INFLIGHT, State.COMPLETED):
            storage.delete(
                f"{METAFOLDER}/{instant_file_name(instant.instant_time, base_action, state)}"
            )
    return chosen


def _was_compaction(storage: Storage, instant: Instant) -> bool:
    """A completed compaction is a `commit` whose pending files say `compaction`."""
    if instant.action is not Action.COMMIT:
        return False
    name = instant_file_name(instant.instant_time, Action.COMPACTION, State.REQUESTED)
    return storage.exists(f"{METAFOLDER}/{name}")
