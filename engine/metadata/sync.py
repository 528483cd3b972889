"""Keeping the metadata table in step with the data timeline, instant by instant.

Every data instant that completes records what it changed first (Hudi's
``HoodieTableMetadataWriter.update`` for commit, clean, rollback and restore metadata)::

    commit / deltacommit / replacecommit / compaction <t>   deltacommit <t>: files added
    clean <t>                                               deltacommit <t>: files deleted
    rollback <r> of <t>   the metadata deltacommit <t> is rolled back at <r> (Hudi 1.x); once
                          a metadata compaction merged it, deltacommit <r> deletes <t>'s files
    restore <s>           each rolled-back instant as a rollback; files of compacted ones are
                          deleted by deltacommit <s>

The functions here run right before the data instant's completed file is written, under the
table lock; they do nothing for a table without a metadata table.

At the start of a write or a table service (:func:`prepare_metadata_table`): with
``hoodie.metadata.enable`` off, a metadata table is removed as Hudi removes a disabled one; on,
it is initialized when the table has none (and no other write is in flight, as Hudi requires)
or when it lacks a data instant completed since its initialization (a writer that did not keep
it wrote one: it is built again from the storage listing), or taken over: partitions this engine
does not maintain are dropped from
``hoodie.table.metadata.partitions`` with their folders and index definitions, with one warning.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from engine import config
from engine.config import HoodieConfig
from engine.errors import ConfigError
from engine.faults import checkpoint
from engine.fs.filenames import (
    PARTITION_METAFILE_PREFIX,
    is_base_file,
    is_log_file,
    parse_base_file_name,
    parse_log_file_name,
)
from engine.fs.properties import METAFOLDER, read_properties, write_properties
from engine.fs.storage import Storage
from engine.metadata.changes import FilesChange, of_clean, of_commit, of_rollbacks
from engine.metadata.column_stats import COLUMN_STATS_PARTITION
from engine.metadata.column_stats_partition import column_stats_definition, init_columns
from engine.metadata.files_index import FILES_PARTITION, has_files_index
from engine.metadata.index_defs import read_index_defs, write_index_defs
from engine.metadata.maintained import enabled_partitions, listed_partitions
from engine.metadata.partitions import MetadataInit, MetadataPartition, MetadataUpdate
from engine.metadata.record_index import RECORD_INDEX_PARTITION
from engine.metadata.record_index_partition import record_index_wanted
from engine.metadata.slices import METADATA_TABLE_PATH
from engine.metadata.writer import (
    metadata_properties,
    metadata_schema,
    new_metadata_schema,
    table_metadata_schema,
    write_deltacommit,
    write_initial_file_groups,
)
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import COMMIT_ACTIONS, Action, Instant
from engine.timeline.timeline import Timeline
from engine.view.fs_view import list_partition_paths

__all__ = [
    "check_metadata_options",
    "committed_listing",
    "maintained_metadata_table",
    "metadata_enabled",
    "prepare_metadata_table",
    "record_clean",
    "record_commit",
    "record_restore",
    "record_rollback",
    "take_over_metadata_table",
]

_log = logging.getLogger(__name__)
_INIT_PREFIX = "00000000000000"
_CDC_SUFFIX = ".cdc"
RECORD_INDEX_TYPE = "RECORD_INDEX"
_RECORD_INDEX_DEFINITION = {
    "indexName": RECORD_INDEX_PARTITION,
    "indexType": RECORD_INDEX_PARTITION,
    "indexFunction": "",
    "sourceFields": [],
    "indexOptions": {"isPartitioned": "false"},
    "version": "V1",
}


def _version(cfg: HoodieConfig, props: Mapping[str, str] | None) -> int:
    if props is None:
        return int(cfg.get(config.WRITE_TABLE_VERSION))
    return int(props.get(config.TABLE_VERSION.key) or config.TABLE_VERSION.default)


def metadata_enabled(cfg: HoodieConfig, props: Mapping[str, str] | None) -> bool:
    """Whether this write keeps a metadata table: ``hoodie.metadata.enable`` when it is set;
    unset, a table of version 8 or 9 keeps the one it has (its ``files`` partition listed),
    and a new table gets none."""
    enabled = cfg.get(config.METADATA_ENABLE)
    if enabled is not None:
        return enabled
    if cfg.get(config.INDEX_TYPE) == RECORD_INDEX_TYPE:
        return True  # the index lives in the metadata table
    return props is not None and _version(cfg, props) >= 8 and has_files_index(props)


def _check_record_index_options(cfg: HoodieConfig, props: Mapping[str, str] | None) -> None:
    """``hoodie.index.type=RECORD_INDEX`` needs a metadata table with its record index."""
    version = _version(cfg, props)
    index = f"{config.INDEX_TYPE.key}={RECORD_INDEX_TYPE}"
    if version < 8:
        raise ConfigError(
            f"{index} needs table version 8 or 9 (this table is version {version}): the record "
            "index lives in the metadata table, which this engine writes for versions 8 and 9 "
            f"only (set {config.WRITE_TABLE_VERSION.key} for a new table)"
        )
    for option in (config.METADATA_ENABLE, config.RECORD_INDEX_ENABLE):
        if cfg.get(option) is False:
            raise ConfigError(f"{index} needs {option.key}, which this write sets to false")


def check_metadata_options(cfg: HoodieConfig, props: Mapping[str, str] | None) -> None:
    """Refuse ``hoodie.metadata.enable=true`` on a table version it cannot be written in, and
    ``hoodie.index.type=RECORD_INDEX`` without its metadata table, before anything is
    written."""
    if cfg.get(config.INDEX_TYPE) == RECORD_INDEX_TYPE:
        _check_record_index_options(cfg, props)
    if not metadata_enabled(cfg, props):
        return
    metadata_schema(_version(cfg, props))
    listed = config.METADATA_PARTITIONS.parse((props or {}).get(config.METADATA_PARTITIONS.key, ""))
    if record_index_wanted(cfg, listed) and not cfg.get(config.POPULATE_META_FIELDS):
        raise ConfigError(
            "the record index reads the _hoodie_record_key column of the files a write adds; "
            f"a table written with {config.POPULATE_META_FIELDS.key}=false has none"
        )


def maintained_metadata_table(storage: Storage) -> Storage | None:
    """The metadata table a data instant must update: present and announced ready."""
    if storage.base_path.rstrip("/").endswith(METADATA_TABLE_PATH):
        return None  # a metadata table has none of its own
    mdt = storage.child(METADATA_TABLE_PATH)
    if not mdt.exists(f"{METAFOLDER}/hoodie.properties"):
        return None
    return mdt if has_files_index(read_properties(storage)) else None


def _record(storage: Storage, instant_time: str, change: FilesChange,
            commit: HoodieCommitMetadata | None = None) -> None:  # fmt: skip
    mdt = maintained_metadata_table(storage)
    if mdt is None:
        return
    schema = table_metadata_schema(mdt)
    update = MetadataUpdate(storage, instant_time, change, commit)
    props = read_properties(storage)
    cells = {p.name: p.update_groups(update, schema) for p in listed_partitions(props)}
    write_deltacommit(mdt, instant_time, cells, schema)
    checkpoint("metadata.after_deltacommit")


def record_commit(storage: Storage, instant_time: str, metadata: HoodieCommitMetadata) -> None:
    """A write, compaction or replacecommit about to complete: the files it added."""
    _record(storage, instant_time, of_commit(metadata), metadata)


def record_clean(storage: Storage, instant_time: str, metadata: Mapping[str, Any]) -> None:
    """A clean about to complete: the files it deleted."""
    _record(storage, instant_time, of_clean(metadata))


def _deltacommit(timeline: Timeline, instant_time: str) -> Instant | None:
    found = [
        i
        for i in timeline.instants
        if i.instant_time == instant_time and i.action is Action.DELTA_COMMIT
    ]
    return found[0] if found else None


def _compacted(timeline: Timeline, instant_time: str) -> bool:
    """A completed metadata compaction merged deltacommit ``instant_time`` into a base file."""
    return any(i.instant_time > instant_time for i in timeline.completed([Action.COMMIT]))


RollBack = Callable[[Storage, Instant, str], None]


def _roll_back_or_delete(
    mdt: Storage, timeline: Timeline, target: str, rollback_time: str, roll_back: RollBack
) -> bool:
    """Roll back the metadata deltacommit of data instant ``target``; False when a compaction
    merged it already (its files must then be deleted by a new deltacommit)."""
    instant = _deltacommit(timeline, target)
    if instant is None:
        return True
    if instant.is_completed and _compacted(timeline, target):
        return False
    roll_back(mdt, instant, rollback_time)
    return True


def record_rollback(
    storage: Storage, rollback_time: str, metadata: Mapping[str, Any], roll_back: RollBack
) -> None:
    """A rollback about to complete: the metadata deltacommit of the instant it rolls back is
    rolled back too (Hudi 1.x) by ``roll_back`` (metadata table, instant, rollback time), or
    its files are deleted once compacted."""
    mdt = maintained_metadata_table(storage)
    if mdt is None:
        return
    target = (metadata.get("commitsRollback") or [""])[0]
    if not _roll_back_or_delete(mdt, Timeline.load(mdt), target, rollback_time, roll_back):
        _drop_record_index(storage, [target])
        _record(storage, rollback_time, of_rollbacks([metadata]))


def _drop_record_index(storage: Storage, rolled_back: list[str]) -> None:
    """A rolled-back instant a metadata compaction merged already: its record index mappings
    cannot be undone from the deleted files, so the partition is dropped (never left stale),
    with a warning; a write that enables it initializes it again."""
    props = read_properties(storage)
    listed = config.METADATA_PARTITIONS.parse(props.get(config.METADATA_PARTITIONS.key, ""))
    if RECORD_INDEX_PARTITION not in listed:
        return
    updated = {k: v for k, v in props.items() if k != config.INDEX_DEFS_PATH.key}
    updated[config.METADATA_PARTITIONS.key] = ",".join(
        p for p in listed if p != RECORD_INDEX_PARTITION
    )
    defs = read_index_defs(storage, props)
    defs.pop(RECORD_INDEX_PARTITION, None)
    path = write_index_defs(storage, defs)
    if path:
        updated[config.INDEX_DEFS_PATH.key] = path
    write_properties(storage, updated)
    storage.delete_dir(f"{METADATA_TABLE_PATH}/{RECORD_INDEX_PARTITION}")
    _log.warning(
        "Table at %s: rolling back %s, which the metadata table compacted already, drops its "
        "record_index partition (the next write that enables it rebuilds it)",
        storage.base_path,
        ", ".join(rolled_back),
    )


def record_restore(
    storage: Storage, restore_time: str, metadata: Mapping[str, Any], roll_back: RollBack
) -> None:
    """A restore about to complete: every instant it rolled back, newest first, as
    :func:`record_rollback` does; the files of compacted ones go in deltacommit
    ``restore_time``."""
    mdt = maintained_metadata_table(storage)
    if mdt is None:
        return
    rollbacks: dict[str, list[Mapping[str, Any]]] = metadata.get("hoodieRestoreMetadata") or {}
    compacted: list[Mapping[str, Any]] = []
    for target in sorted(metadata.get("instantsToRollback") or [], reverse=True):
        done = rollbacks.get(target) or []
        rollback_time = str(done[0]["startRollbackTime"]) if done else restore_time
        if not _roll_back_or_delete(mdt, Timeline.load(mdt), target, rollback_time, roll_back):
            compacted += done
    if compacted:
        _drop_record_index(storage, [str(m.get("commitsRollback")) for m in compacted])
        _record(storage, restore_time, of_rollbacks(compacted))


def committed_listing(storage: Storage, timeline: Timeline) -> FilesChange:
    """The data files of committed instants, with their sizes (what initialization lists, as
    Hudi lists base, log and ``.cdc`` files): files of instants pending or never completed are
    left out."""
    completed = {i.instant_time for i in timeline.instants if i.is_completed}
    start = min((i.instant_time for i in timeline.instants), default="")
    listing = FilesChange()
    for partition, entries in list_partition_paths(storage).items():
        listing.added[partition] = {}
        for entry in entries:
            if entry.is_dir or entry.name.startswith(PARTITION_METAFILE_PREFIX):
                continue
            log_name = entry.name.removesuffix(_CDC_SUFFIX)  # a .cdc log file is listed too
            if is_base_file(entry.name):
                instant_time = parse_base_file_name(entry.name).instant_time
            elif is_log_file(log_name):
                instant_time = parse_log_file_name(log_name).base_instant_time
            else:
                continue
            if instant_time in completed or instant_time < start:
                listing.add(partition, entry.name, entry.size)
    return listing


def _init_instant(mdt: Storage) -> str:
    """A partition's initialization deltacommit: Hudi 1.x's ``00000000000000000`` plus an
    offset, the first one the metadata timeline does not hold yet."""
    used = {i.instant_time for i in Timeline.load(mdt).instants} if mdt.exists(
        f"{METAFOLDER}/hoodie.properties") else set()  # fmt: skip
    return next(t for n in range(1000) if (t := f"{_INIT_PREFIX}{n:03d}") not in used)


def _create(storage: Storage, props: dict[str, str]) -> None:
    """A new, empty metadata table (any leftover of an earlier one removed)."""
    storage.delete_dir(METADATA_TABLE_PATH)
    mdt = storage.child(METADATA_TABLE_PATH)
    for folder in (".temp", ".aux"):
        mdt.makedirs(f"{METAFOLDER}/{folder}")
    write_properties(mdt, metadata_properties(props))


def _definitions(
    storage: Storage, props: dict[str, str], init: MetadataInit, names: list[str]
) -> dict[str, str]:
    """The index definitions of the partitions initialized (Hudi 1.x records column_stats'
    columns and the record index there); the properties naming the file."""
    defs = read_index_defs(storage, props)
    if COLUMN_STATS_PARTITION in names:
        defs[COLUMN_STATS_PARTITION] = column_stats_definition(init_columns(init))
    if RECORD_INDEX_PARTITION in names:
        defs[RECORD_INDEX_PARTITION] = dict(_RECORD_INDEX_DEFINITION)
    if not ({COLUMN_STATS_PARTITION, RECORD_INDEX_PARTITION} & set(names)):
        return props
    path = write_index_defs(storage, defs)
    return {**props, config.INDEX_DEFS_PATH.key: path} if path else props


def _initialize(
    storage: Storage, props: dict[str, str], init: MetadataInit,
    partitions: tuple[MetadataPartition, ...],
) -> None:  # fmt: skip
    """Bootstrap ``partitions`` from the committed table (``hoodie.table.metadata
    .partitions.inflight`` names them while they are written), then list them as ready."""
    mdt = storage.child(METADATA_TABLE_PATH)
    if mdt.exists(f"{METAFOLDER}/hoodie.properties"):  # a partition added to it
        schema = table_metadata_schema(mdt)
    else:
        schema = new_metadata_schema(int(props[config.TABLE_VERSION.key]))
    names = [p.name for p in partitions]
    write_properties(storage, {**props, config.METADATA_PARTITIONS_INFLIGHT.key: ",".join(names)})
    for partition in partitions:
        groups = partition.initial_groups(init, schema)
        write_initial_file_groups(mdt, partition.name, _init_instant(mdt), groups, schema)
    props = _definitions(storage, props, init, names)
    listed = config.METADATA_PARTITIONS.parse(props.get(config.METADATA_PARTITIONS.key, ""))
    ready = [p for p in (*listed, *names) if p]
    write_properties(
        storage,
        {
            **props,
            config.METADATA_PARTITIONS.key: ",".join(sorted(set(ready))),
            config.METADATA_PARTITIONS_INFLIGHT.key: "",
        },
    )


def _drop_unmaintained(
    storage: Storage, props: dict[str, str], cfg: HoodieConfig
) -> dict[str, str]:
    """Drop the partitions this write does not keep, as Hudi drops a disabled partition: off
    the partitions list first, then their folders and index definitions; the new properties."""
    listed = [*config.METADATA_PARTITIONS.parse(props.get(config.METADATA_PARTITIONS.key, ""))]
    pending = config.METADATA_PARTITIONS_INFLIGHT.parse(
        props.get(config.METADATA_PARTITIONS_INFLIGHT.key, "")
    )
    kept = {p.name for p in enabled_partitions(cfg, props)}
    dropped = sorted({p for p in (*listed, *pending) if p not in kept})
    defs = read_index_defs(storage, props)
    if not dropped and set(defs) <= kept:
        return props
    updated = {k: v for k, v in props.items() if k != config.INDEX_DEFS_PATH.key}
    updated[config.METADATA_PARTITIONS.key] = ",".join(p for p in listed if p not in dropped)
    updated[config.METADATA_PARTITIONS_INFLIGHT.key] = ""
    path = write_index_defs(storage, {k: v for k, v in defs.items() if k in kept})
    if path:
        updated[config.INDEX_DEFS_PATH.key] = path
    write_properties(storage, updated)
    for name in dropped:
        storage.delete_dir(f"{METADATA_TABLE_PATH}/{name}")
    _log.warning(
        "Table at %s: metadata table partitions %s are not kept by this write; they are "
        "dropped from %s (with their index definitions), as Hudi drops a disabled partition",
        storage.base_path,
        ", ".join(dropped) or "(none)",
        config.METADATA_PARTITIONS.key,
    )
    return updated


_RECORDED = (*COMMIT_ACTIONS, Action.CLEAN)  # data instants that write a metadata deltacommit


def _is_stale(storage: Storage, mdt: Storage) -> str | None:
    """A data instant that completed after the metadata table was initialized and has no
    metadata deltacommit (a writer that did not keep it wrote it); None when in step."""
    metadata = Timeline.load(mdt)
    synced = {i.instant_time for i in metadata.completed()}
    init = [
        i.completion_time or ""
        for i in metadata.completed()
        if i.instant_time.startswith(_INIT_PREFIX)
    ]
    if not init:
        return "(no initialization)"
    for instant in Timeline.load(storage).completed(_RECORDED):
        if instant.instant_time not in synced and (instant.completion_time or "") > min(init):
            return instant.instant_time
    return None


def take_over_metadata_table(storage: Storage, props: dict[str, str]) -> None:
    """Remove the table's metadata table the way Hudi does with it switched off (empty
    partitions property, then remove ``.hoodie/metadata``) so no reader trusts a file listing
    the write will not keep current."""
    keys = (config.METADATA_PARTITIONS.key, config.METADATA_PARTITIONS_INFLIGHT.key)
    if any(props.get(k) for k in keys) or props.get(config.INDEX_DEFS_PATH.key):
        updated = {k: v for k, v in props.items() if k != config.INDEX_DEFS_PATH.key}
        for k in keys:
            if k in updated:
                updated[k] = ""
        write_properties(storage, updated)
        _log.warning(
            "Table at %s has a metadata table (%s); it is removed with its index "
            "definitions, as Hudi does when a writer disables the metadata table",
            storage.base_path,
            props.get(config.METADATA_PARTITIONS.key) or "pending partitions",
        )
    storage.delete_dir(f"{METAFOLDER}/metadata")
    storage.delete_dir(f"{METAFOLDER}/.index_defs")


def prepare_metadata_table(storage: Storage, cfg: HoodieConfig) -> None:
    """Remove, initialize or take over the metadata table (see the module notes); the caller
    holds the table lock and has rolled back failed writes."""
    props = read_properties(storage)
    if not metadata_enabled(cfg, props):
        take_over_metadata_table(storage, props)
        return
    mdt = storage.child(METADATA_TABLE_PATH)
    ready = FILES_PARTITION in config.METADATA_PARTITIONS.parse(
        props.get(config.METADATA_PARTITIONS.key, "")
    ) and mdt.exists(f"{METAFOLDER}/hoodie.properties")
    stale = _is_stale(storage, mdt) if ready else None
    if stale is not None:
        _log.warning(
            "Table at %s: its metadata table lacks instant %s; it is built again from the "
            "storage listing",
            storage.base_path,
            stale,
        )
        ready = False
    if ready:
        props = _drop_unmaintained(storage, props, cfg)
    listed = set(config.METADATA_PARTITIONS.parse(props.get(config.METADATA_PARTITIONS.key, "")))
    missing = tuple(p for p in enabled_partitions(cfg, props) if not ready or p.name not in listed)
    if ready and not missing:
        return
    timeline = Timeline.load(storage)
    if timeline.pending(COMMIT_ACTIONS):
        if stale is not None:  # not rebuilt now: no reader may list through it meanwhile
            take_over_metadata_table(storage, props)
        _log.info(
            "Table at %s: metadata table partitions %s not initialized while writes are in "
            "flight (%s)",
            storage.base_path,
            ", ".join(p.name for p in missing),
            ", ".join(i.instant_time for i in timeline.pending(COMMIT_ACTIONS)),
        )
        return
    if not ready:
        _create(storage, props)
        props = {**props, config.METADATA_PARTITIONS.key: ""}
    init = MetadataInit(storage, timeline, committed_listing(storage, timeline), cfg, props)
    _initialize(storage, props, init, missing)
