"""File system view: the file groups and file slices of a table, as of an instant (pure).

One view serves the data table and the metadata table (``.hoodie/metadata``, whose partitions
hold HFile base files), as Hudi builds a ``HoodieTableFileSystemView`` over either table's meta
client::

    <partition_path>/{file_id}_{write_token}_{instant_time}.{parquet|hfile|orc}  base file
    <partition_path>/.{file_id}_{base_instant_time}.log.{version}_{write_token}  log file
    file group = (partition_path, file_id)
    file slice = one base file (optional) + the log files sharing its base instant time

Visibility follows Java's ``HoodieTableFileSystemView`` for table version 6:

* A partition is a directory holding a ``.hoodie_partition_metadata*`` file; listing does not
  descend below a partition (the base path itself is the partition ``""`` of non-partitioned
  tables).
* A slice is visible as of instant ``T`` when its base instant is ``<= T`` and is a completed
  commit/deltacommit/replacecommit, a pending compaction, or older than the active timeline
  (archived, hence committed). Files of inflight or rolled-back instants are thereby invisible.
* File groups named by a completed replacecommit ``<= T`` are dropped whole.
* A pending compaction opens a new slice before its base file exists: that slice's (partial)
  base file is ignored and its log files are merged onto the previous slice
  (``getLatestMergedFileSlicesBeforeOrOn``). hudi-rs 0.5.0 ignores such logs instead.
* Timeline layout 2 (table versions 8 and 9): log files go to slices by their delta commit's
  completion time (:mod:`engine.view.completion_slicing`), and a log file whose delta commit has
  not completed is left out of the latest slices (Hudi 1.x ``filterUncommittedLogs``); the
  file group still holds it, so cleaning and rollback see every file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.errors import FileNameError
from engine.fs.filenames import (
    BASE_FILE_EXTENSIONS,
    PARTITION_METAFILE_PREFIX,
    LogFileName,
    parse_base_file_name,
    parse_log_file_name,
    partition_file_path,
)
from engine.fs.properties import METAFOLDER
from engine.fs.storage import FileEntry, Storage
from engine.timeline.instant import Action
from engine.timeline.timeline import Timeline
from engine.view.completion_slicing import slice_logs_by_completion

__all__ = [
    "FileGroup",
    "FileSlice",
    "FileSystemView",
    "Visibility",
    "list_partition_paths",
    "plan_slice_files",
]

PartitionFilter = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class FileSlice:
    """A base file (optional) plus log files of one file group, keyed by a base instant time.

    Names only (no directory), so a slice is small, picklable and JSON-friendly for Spark tasks.
    """

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file: str | None = None
    log_files: tuple[str, ...] = ()

    @property
    def base_file_path(self) -> str | None:
        """Path of the base file relative to the table's base path."""
        return partition_file_path(self.partition_path, self.base_file) if self.base_file else None

    @property
    def log_file_paths(self) -> list[str]:
        """Paths of the log files relative to the base path, in Hudi's log file order."""
        return [partition_file_path(self.partition_path, name) for name in self.log_files]

    @property
    def has_logs(self) -> bool:
        return bool(self.log_files)


@dataclass
class FileGroup:
    """All files of one file group found on storage, by base instant time."""

    partition_path: str
    file_id: str
    base_files: dict[str, str] = field(default_factory=dict)
    log_files: dict[str, list[LogFileName]] = field(default_factory=dict)
    # layout 2: log lists are already in completion order (engine.view.completion_slicing)
    logs_in_completion_order: bool = False
    # CDC tables: .cdc log file names by the base instant of the slice they belong to; never
    # part of a slice's data, cleaned with it
    cdc_files: dict[str, list[str]] = field(default_factory=dict)

    def base_instants(self) -> list[str]:
        """Every slice key (base file instants and log files' base instants), oldest first."""
        return sorted(set(self.base_files) | set(self.log_files))

    def slice_at(self, base_instant_time: str, *, with_base_file: bool = True) -> FileSlice:
        logs = self.log_files.get(base_instant_time, [])
        if not self.logs_in_completion_order:
            logs = sorted(logs, key=LogFileName.sort_key)
        return FileSlice(
            self.partition_path,
            self.file_id,
            base_instant_time,
            self.base_files.get(base_instant_time) if with_base_file else None,
            tuple(log.name for log in logs),
        )


@dataclass(frozen=True)
class Visibility:
    """Which instants a reader at ``max_instant`` sees (also shipped to log scanners).

    Attributes:
        max_instant: the query instant (the as-of instant, else the snapshot's: see
            :meth:`of`); ``None`` when the table has no completed commit: nothing is visible.
        completed: completed commit/deltacommit/replacecommit instant times ``<= max_instant``.
        pending_compactions: requested/inflight compaction instant times ``<= max_instant``.
        timeline_start: first instant time of the active timeline; older data was archived.
        on_timeline: every instant time on the active timeline, in any state.
    """

    max_instant: str | None
    completed: frozenset[str]
    pending_compactions: frozenset[str]
    timeline_start: str | None
    on_timeline: frozenset[str]

    @classmethod
    def of(cls, timeline: Timeline, as_of: str | None = None) -> Visibility:
        """What a reader at ``as_of`` sees; without one, Hudi's snapshot query instant: the last
        instant of the completed and pending-compaction timeline (``BaseHoodieTableFileIndex``,
        ``filterCompletedAndCompactionInstants``). On layout 2 a delta commit that completed
        after a later compaction was scheduled belongs to that compaction's slice, which the
        last completed instant alone would leave out, and with it the commit's rows."""
        done = {i.instant_time for i in timeline.completed()}
        compactions = [
            i.instant_time
            for i in timeline.pending([Action.COMPACTION])
            if i.instant_time not in done
        ]
        last = timeline.last_completed()
        max_instant = as_of
        if as_of is None and last is not None:
            max_instant = max([last.instant_time, *compactions])
        if max_instant is None:
            return cls(None, frozenset(), frozenset(), None, frozenset())
        completed = frozenset(
            i.instant_time for i in timeline.commits_timeline() if i.instant_time <= max_instant
        )
        pending = frozenset(t for t in compactions if t <= max_instant)
        on_timeline = frozenset(i.instant_time for i in timeline.instants)
        start = timeline.first_commit_time()
        return cls(max_instant, completed, pending, start, on_timeline)

    def is_committed(self, instant_time: str) -> bool:
        """Data of ``instant_time`` is committed and not newer than the query instant."""
        if self.max_instant is None or instant_time > self.max_instant:
            return False
        if instant_time in self.completed:
            return True
        # archived instants are committed (Java's containsOrBeforeTimelineStarts)
        return (
            self.timeline_start is not None
            and instant_time < self.timeline_start
            and instant_time not in self.on_timeline
        )

    def is_slice_visible(self, base_instant_time: str) -> bool:
        return self.is_committed(base_instant_time) or (
            base_instant_time in self.pending_compactions
        )


def _is_partition(entries: Iterable[FileEntry]) -> bool:
    return any(not e.is_dir and e.name.startswith(PARTITION_METAFILE_PREFIX) for e in entries)


def list_partition_paths(
    storage: Storage, partition_filter: PartitionFilter | None = None
) -> dict[str, list[FileEntry]]:
    """Every partition of the table with its directory entries.

    A directory is a partition when it holds a partition metafile (Java's storage-backed
    listing); listing stops there. Hidden directories (``.hoodie`` and others) are skipped.

    Args:
        storage: the table's storage.
        partition_filter: called with each partition path; ``False`` drops the partition.
    """
    found: dict[str, list[FileEntry]] = {}
    pending = [""]
    while pending:
        rel = pending.pop()
        entries = storage.list_dir(rel)
        if _is_partition(entries):
            if partition_filter is None or partition_filter(rel):
                found[rel] = entries
            continue
        for entry in entries:
            if entry.is_dir and not entry.name.startswith(".") and entry.name != METAFOLDER:
                pending.append(partition_file_path(rel, entry.name))
    return dict(sorted(found.items()))


def _group_files(partition_path: str, entries: Iterable[FileEntry]) -> dict[str, FileGroup]:
    groups: dict[str, FileGroup] = {}
    for entry in entries:
        if entry.is_dir:
            continue
        name = entry.name
        try:
            if name.startswith("."):
                if ".log." not in name or name.startswith(PARTITION_METAFILE_PREFIX):
                    continue
                log = parse_log_file_name(name)
                group = groups.setdefault(log.file_id, FileGroup(partition_path, log.file_id))
                if log.cdc:
                    group.cdc_files.setdefault(log.base_instant_time, []).append(name)
                    continue
                group.log_files.setdefault(log.base_instant_time, []).append(log)
            elif name.endswith(BASE_FILE_EXTENSIONS):
                base = parse_base_file_name(name)
                group = groups.setdefault(base.file_id, FileGroup(partition_path, base.file_id))
                group.base_files[base.instant_time] = name
        except FileNameError:
            # foreign files in a partition (e.g. Spark's _SUCCESS, crc files) are not Hudi files
            continue
    return groups


class FileSystemView:
    """File groups of (some) partitions of a table, resolved against its timeline."""

    def __init__(
        self,
        storage: Storage,
        timeline: Timeline,
        *,
        partition_paths: Iterable[str] | None = None,
        partition_filter: PartitionFilter | None = None,
        listing: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """List the table's partitions (or only ``partition_paths``) and group their files.

        Args:
            storage: the table's storage.
            timeline: the active timeline the view resolves visibility against.
            partition_paths: list only these partitions (incremental queries know them from the
                commit metadata); missing ones are skipped.
            partition_filter: partition pruning predicate on the partition path.
            listing: partition path -> file name -> size, already known (the metadata table's
                ``files`` partition): nothing is listed; visibility is resolved the same way.
        """
        self.storage = storage
        self.timeline = timeline
        if listing is not None:
            listed = {
                p: [FileEntry(name, size, False) for name, size in files.items()]
                for p, files in sorted(listing.items())
                if partition_filter is None or partition_filter(p)
            }
        elif partition_paths is not None:
            listed = {
                p: storage.list_dir(p)
                for p in sorted(set(partition_paths))
                if partition_filter is None or partition_filter(p)
            }
        else:
            listed = list_partition_paths(storage, partition_filter)
        self._groups: dict[tuple[str, str], FileGroup] = {}
        # layout 2: names of log files whose delta commit has not completed
        self._uncommitted_logs: frozenset[str] = frozenset()
        # sizes from the same listing: writers size small files without listing again
        self._sizes: dict[str, int] = {}
        for partition_path, entries in listed.items():
            for file_id, group in _group_files(partition_path, entries).items():
                self._groups[(partition_path, file_id)] = group
            for entry in entries:
                if not entry.is_dir:
                    self._sizes[partition_file_path(partition_path, entry.name)] = entry.size
        if timeline.layout.version >= 2:
            self._slice_by_completion_time()
        self._replaced_cache: dict[str | None, frozenset[tuple[str, str]]] = {}

    def _slice_by_completion_time(self) -> None:
        """Layout 2: attach log files to slices by their delta commit's completion time."""
        completion_times = self.timeline.completion_times()
        pending = {i.instant_time for i in self.timeline.instants if not i.is_completed}
        compactions = {i.instant_time for i in self.timeline.pending([Action.COMPACTION])}
        start = self.timeline.first_commit_time()
        on_timeline = {i.instant_time for i in self.timeline.instants}

        def committed(delta_commit: str) -> bool:
            # completed, or archived (older than the active timeline and not on it)
            if delta_commit in completion_times:
                return True
            return start is not None and delta_commit < start and delta_commit not in on_timeline

        uncommitted: set[str] = set()
        for group in self._groups.values():
            logs = [log for batch in group.log_files.values() for log in batch]
            uncommitted.update(log.name for log in logs if not committed(log.base_instant_time))
            group.log_files = slice_logs_by_completion(
                group.base_files, logs, completion_times, pending, compactions
            )
            group.logs_in_completion_order = True
        self._uncommitted_logs = frozenset(uncommitted)

    @property
    def partition_paths(self) -> list[str]:
        return sorted({p for p, _ in self._groups})

    def file_size(self, rel_path: str) -> int:
        """Size in bytes of a listed file (path relative to the base path), 0 if not listed."""
        return self._sizes.get(rel_path, 0)

    def file_groups(self) -> list[FileGroup]:
        return [self._groups[k] for k in sorted(self._groups)]

    def replaced_file_groups(self, visibility: Visibility) -> frozenset[tuple[str, str]]:
        """(partition_path, file_id) of groups replaced by completed replacecommits <= T."""
        key = visibility.max_instant
        if key not in self._replaced_cache:
            replaced: set[tuple[str, str]] = set()
            for instant in self.timeline.completed([Action.REPLACE_COMMIT]):
                if instant.instant_time in visibility.completed:
                    metadata = self.timeline.read_commit_metadata(instant)
                    replaced |= metadata.replaced_file_ids()
            self._replaced_cache[key] = frozenset(replaced)
        return self._replaced_cache[key]

    def _live_groups(
        self, visibility: Visibility, file_groups: set[tuple[str, str]] | None
    ) -> list[FileGroup]:
        replaced = self.replaced_file_groups(visibility)
        return [
            group
            for key, group in sorted(self._groups.items())
            if key not in replaced and (file_groups is None or key in file_groups)
        ]

    def latest_file_slices(
        self,
        as_of: str | None = None,
        *,
        file_groups: set[tuple[str, str]] | None = None,
        visibility: Visibility | None = None,
    ) -> list[FileSlice]:
        """The latest visible file slice of every live file group (snapshot reads).

        Args:
            as_of: query instant; default the snapshot's (:meth:`Visibility.of`).
            file_groups: restrict to these (partition_path, file_id) pairs.
            visibility: precomputed visibility (overrides ``as_of``).
        """
        vis = visibility or Visibility.of(self.timeline, as_of)
        out: list[FileSlice] = []
        for group in self._live_groups(vis, file_groups):
            visible = [t for t in group.base_instants() if vis.is_slice_visible(t)]
            if not visible:
                continue
            latest = self._committed_files(self._merged_slice(group, visible, vis))
            if latest.base_file is not None or latest.log_files:
                out.append(latest)
        return out

    @staticmethod
    def _merged_slice(group: FileGroup, visible: list[str], vis: Visibility) -> FileSlice:
        """The group's latest visible slice; one opened by a pending compaction has no
        committed base file yet, so it is read as the previous slice together with the logs
        already written against the compaction instant."""
        latest = visible[-1]
        if latest not in vis.pending_compactions:
            return group.slice_at(latest)
        head = group.slice_at(latest, with_base_file=False)
        if len(visible) == 1:
            return head
        prev = group.slice_at(visible[-2])
        return FileSlice(
            prev.partition_path,
            prev.file_id,
            prev.base_instant_time,
            prev.base_file,
            prev.log_files + head.log_files,
        )

    def _committed_files(self, file_slice: FileSlice) -> FileSlice:
        """``file_slice`` without log files of delta commits that have not completed (layout
        2: such a log sits in the latest slice until its delta commit completes)."""
        if not self._uncommitted_logs:
            return file_slice
        logs = tuple(n for n in file_slice.log_files if n not in self._uncommitted_logs)
        if len(logs) == len(file_slice.log_files):
            return file_slice
        return FileSlice(
            file_slice.partition_path,
            file_slice.file_id,
            file_slice.base_instant_time,
            file_slice.base_file,
            logs,
        )

    def latest_base_files(
        self,
        as_of: str | None = None,
        *,
        file_groups: set[tuple[str, str]] | None = None,
        visibility: Visibility | None = None,
    ) -> list[FileSlice]:
        """The latest committed base file of every live file group (read-optimized reads).

        Returned as slices without log files; groups with only log files are left out.
        """
        vis = visibility or Visibility.of(self.timeline, as_of)
        out: list[FileSlice] = []
        for group in self._live_groups(vis, file_groups):
            committed = [
                t
                for t in sorted(group.base_files)
                if vis.is_committed(t) and t not in vis.pending_compactions
            ]
            if committed:
                t = committed[-1]
                out.append(FileSlice(group.partition_path, group.file_id, t, group.base_files[t]))
        return out


def plan_slice_files(record: Mapping[str, Any]) -> tuple[str, str, str | None, tuple[str, ...]]:
    """(partition path, file id, base file, log files) of a file slice as Hudi's plans record it
    (a compaction plan's ``HoodieCompactionOperation``, a clustering plan's
    ``HoodieSliceInfo``); version 1 plans held full paths: only the names are kept."""

    def name(path: str) -> str:
        return path.rsplit("/", 1)[-1]

    data = record.get("dataFilePath")
    return (
        record.get("partitionPath") or "",
        record.get("fileId") or "",
        name(data) if data else None,
        tuple(name(p) for p in record.get("deltaFilePaths") or ()),
    )
