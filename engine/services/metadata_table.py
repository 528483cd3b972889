"""The metadata table's own compaction and cleaning, on Hudi's triggers.

Run right after a data instant completes, under the table lock:

- **Compaction** once ``hoodie.metadata.compact.max.delta.commits`` deltacommits completed since
  the last one, and only when no data instant older than the latest deltacommit is pending
  (Hudi's rule: a pending write's files would otherwise be merged into a base file before it
  commits). Each maintained partition's file slice is merged as readers merge it (log blocks
  valid on the data timeline only) into an HFile base file at a new instant ``<c>``::

      <c>.compaction.requested (HoodieCompactionPlan) ──► .inflight ──► <fg>_0-0-0_<c>.hfile
      ──► <c>.commit

  A compaction killed before its commit is rolled back by the next writer
  (:func:`engine.metadata.sync.prepare_metadata_table`); readers never use its base file.
- **Cleaning**, KEEP_LATEST_COMMITS as Hudi configures its metadata table: the last
  ``hoodie.metadata.cleaner.commits.retained`` commits (at least 20, at least 1.2x the data
  table's ``hoodie.cleaner.commits.retained``) stay readable; the file slices before the one in
  effect at the earliest of them are deleted, through a clean instant of the metadata timeline.
"""

from __future__ import annotations

import math

from engine import config
from engine.config import HoodieConfig
from engine.faults import checkpoint
from engine.fs.filenames import format_base_file_name
from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from engine.metadata.maintained import listed_partitions
from engine.metadata.partitions import MetadataPartition
from engine.metadata.slices import ValidInstants, latest_slices, slice_content
from engine.metadata.sync import maintained_metadata_table
from engine.metadata.writer import (
    WRITE_TOKEN,
    commit_metadata,
    new_metadata_instant_time,
    table_metadata_schema,
    write_base_file,
    write_stat,
)
from engine.services.clean import CleanPlan, execute_clean, finish_pending_cleans
from engine.services.compaction import CompactionOperation, HoodieCompactionPlan
from engine.services.rollback import roll_back_metadata_instant, rollback_failed_writes
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import COMMIT_ACTIONS, Action
from engine.timeline.timeline import Timeline, complete, create_requested, transition_to_inflight
from engine.view.fs_view import FileSlice, FileSystemView, Visibility

__all__ = ["clean_metadata_table", "compact_metadata_table", "run_metadata_services"]

_INIT_PREFIX = "00000000000000"


def _deltacommits_since_compaction(timeline: Timeline) -> list[str]:
    compactions = [i.instant_time for i in timeline.completed([Action.COMMIT])]
    last = max(compactions, default="")
    return [
        i.instant_time
        for i in timeline.completed([Action.DELTA_COMMIT])
        if i.instant_time > last and not i.instant_time.startswith(_INIT_PREFIX)
    ]


def _compaction_due(timeline: Timeline, data: Timeline, cfg: HoodieConfig) -> bool:
    deltas = _deltacommits_since_compaction(timeline)
    if len(deltas) < cfg.get(config.METADATA_COMPACT_MAX_DELTA_COMMITS):
        return False
    if timeline.pending():
        return False
    latest = max(deltas)
    return not any(i.instant_time < latest for i in data.pending(COMMIT_ACTIONS))


def _operation(chosen: FileSlice) -> CompactionOperation:
    return CompactionOperation(
        chosen.partition_path,
        chosen.file_id,
        _base_instant(chosen),
        chosen.base_file,
        chosen.log_files,
    )


def _compact_slice(
    mdt: Storage, partition: MetadataPartition, chosen: FileSlice, valid: ValidInstants,
    instant_time: str, schema: str,
) -> HoodieWriteStat:  # fmt: skip
    """One file group's slice merged into its new base file; the file's write stat."""
    base, logs = slice_content(mdt, chosen, valid)
    name = format_base_file_name(chosen.file_id, WRITE_TOKEN, instant_time, ".hfile")
    cells = partition.compacted_cells(base, logs, schema, name)
    group = (partition.name, chosen.file_id)
    rel, size = write_base_file(mdt, group, instant_time, cells, schema)
    return write_stat(group, rel, size,
                      prev_commit=_base_instant(chosen), created=True,
                      num_writes=len(cells),
                      total_log_files_compacted=len(chosen.log_files))  # fmt: skip


def compact_metadata_table(storage: Storage, mdt: Storage, schema: str) -> str:
    """Compact every file group of each maintained partition the table lists at a new
    instant; returns it."""
    timeline = Timeline.load(mdt)
    data = Timeline.load(storage)
    valid = ValidInstants.of(timeline, data)
    listed = listed_partitions(read_properties(storage))
    slices = [(p, s) for p in listed for s in latest_slices(mdt, timeline, p.name)]
    plan = HoodieCompactionPlan(tuple(_operation(s) for _, s in slices))
    after = max(timeline.max_instant_time() or "", data.max_instant_time() or "")
    instant_time = new_metadata_instant_time(after)
    create_requested(mdt, instant_time, Action.COMPACTION, plan.to_bytes())
    transition_to_inflight(mdt, instant_time, Action.COMPACTION)
    stats = [_compact_slice(mdt, p, s, valid, instant_time, schema) for p, s in slices]
    checkpoint("metadata.compaction_before_complete")
    content = commit_metadata(stats, schema, "COMPACT", compacted=True)
    complete(mdt, instant_time, Action.COMPACTION, content)
    return instant_time


def _base_instant(chosen: FileSlice) -> str:
    """The instant of the slice's base file; "" for a slice of log files only."""
    return chosen.base_instant_time if chosen.base_file else ""


def _expired_files(mdt: Storage, timeline: Timeline, partition: str, earliest: str) -> list[str]:
    """Files of the committed slices older than the one in effect at ``earliest``, in each file
    group of ``partition`` (slices as every reader sees them: the file system view's)."""
    visibility = Visibility.of(timeline)
    view = FileSystemView(mdt, timeline, partition_paths=[partition])
    out: list[str] = []
    for group in view.file_groups():
        committed = [t for t in group.base_instants() if visibility.is_committed(t)]
        in_effect = max((t for t in committed if t <= earliest), default=None)
        for t in committed:
            if in_effect is not None and t < in_effect:
                expired = group.slice_at(t)
                base = [expired.base_file_path] if expired.base_file_path else []
                out.extend(sorted(base + expired.log_file_paths))
    return out


def clean_metadata_table(storage: Storage, mdt: Storage, retained: int) -> str | None:
    """Delete the file slices no query of the last ``retained`` commits needs; returns the
    clean instant, None when nothing is due."""
    timeline = finish_pending_cleans(mdt, Timeline.load(mdt))
    commits = sorted(
        i.instant_time for i in timeline.completed([Action.DELTA_COMMIT, Action.COMMIT])
    )
    if len(commits) <= retained:
        return None
    earliest = commits[-retained]
    files: dict[str, list[str]] = {}
    for partition in listed_partitions(read_properties(storage)):
        expired = _expired_files(mdt, timeline, partition.name, earliest)
        if expired:
            files[partition.name] = expired
    if not files:
        return None
    plan = CleanPlan("KEEP_LATEST_COMMITS", earliest, files)
    instant_time = new_metadata_instant_time(timeline.max_instant_time())
    create_requested(mdt, instant_time, Action.CLEAN, plan.to_avro(mdt))
    transition_to_inflight(mdt, instant_time, Action.CLEAN)
    execute_clean(mdt, plan, instant_time)
    return instant_time


def _retained(cfg: HoodieConfig) -> int:
    data_retained = math.ceil(cfg.get(config.CLEANER_COMMITS_RETAINED) * 1.2)
    return max(cfg.get(config.METADATA_CLEANER_COMMITS_RETAINED), data_retained)


def _roll_back_pending(storage: Storage, mdt: Storage) -> None:
    """Roll back metadata instants no live writer owns: a compaction a killed writer left,
    and deltacommits of data instants that are no longer pending."""
    rollback_failed_writes(mdt, Timeline.load(mdt), actions=())  # finish killed rollbacks
    timeline = Timeline.load(mdt)
    data = Timeline.load(storage)
    data_pending = {i.instant_time for i in data.pending(COMMIT_ACTIONS)}
    for instant in timeline.pending([Action.COMPACTION, Action.DELTA_COMMIT]):
        if instant.action is Action.DELTA_COMMIT and instant.instant_time in data_pending:
            continue
        after = max(timeline.max_instant_time() or "", data.max_instant_time() or "")
        roll_back_metadata_instant(mdt, instant, new_metadata_instant_time(after))
        timeline = timeline.reload()


def run_metadata_services(storage: Storage, cfg: HoodieConfig) -> None:
    """Roll back what a killed writer left in the metadata table, then compact and clean it
    when due (the caller holds the table lock)."""
    mdt = maintained_metadata_table(storage)
    if mdt is None:
        return
    _roll_back_pending(storage, mdt)
    timeline = Timeline.load(mdt)
    schema = table_metadata_schema(mdt)
    if _compaction_due(timeline, Timeline.load(storage), cfg):
        compact_metadata_table(storage, mdt, schema)
    clean_metadata_table(storage, mdt, _retained(cfg))
