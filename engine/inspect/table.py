"""The table as inspection reads it: properties, active timeline, service options, times.

Times: table version 6 keeps no completion time, so (as Hudi's own ``stateTransitionTime``) the
completion time of an instant is the modification time of its completed file, and its duration
is that minus the modification time of its requested file (one clock: the storage's).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow.fs as pafs

from engine import config
from engine.config import HoodieConfig
from engine.fs.s3 import is_s3_uri, resolve_s3_settings
from engine.fs.storage import Storage
from engine.read.plan import TableInfo, load_table_info
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import Action, Instant, State, instant_file_name
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSlice, FileSystemView

# table properties that also steer the table services health evaluates
_PERSISTED_SERVICE_OPTIONS = (config.ARCHIVELOG_FOLDER,)


@dataclass
class InspectedTable:
    """One table as read for inspection: properties, active timeline, service options."""

    storage: Storage
    info: TableInfo
    timeline: Timeline
    cfg: HoodieConfig
    _metadata: dict[str, HoodieCommitMetadata] = field(default_factory=dict, repr=False)

    @property
    def base_path(self) -> str:
        return self.storage.base_path

    @property
    def table_version(self) -> int:
        # Hudi reads a missing hoodie.table.version as version 0 (HoodieTableVersion.ZERO)
        return int(self.info.properties.get(config.TABLE_VERSION.key) or 0)

    def commit_metadata(self, instant: Instant) -> HoodieCommitMetadata:
        """Commit metadata of a completed write instant, read once."""
        if instant.instant_time not in self._metadata:
            self._metadata[instant.instant_time] = self.timeline.read_commit_metadata(instant)
        return self._metadata[instant.instant_time]

    @cached_property
    def view(self) -> FileSystemView:
        return FileSystemView(self.storage, self.timeline)

    @cached_property
    def latest_slices(self) -> list[FileSlice]:
        return self.view.latest_file_slices()

    @cached_property
    def instant_file_mtimes(self) -> dict[str, float]:
        """Modification time (epoch seconds, to the millisecond like instant times) of every
        file in the active timeline's folder (``.hoodie``, or ``.hoodie/timeline`` in layout 2)."""
        folder = self.timeline.layout.directory
        selector = pafs.FileSelector(self.storage.full_path(folder), allow_not_found=True)
        return {
            info.base_name: info.mtime_ns // 1_000_000 / 1000
            for info in self.storage.fs.get_file_info(selector)
            if info.type == pafs.FileType.File and info.mtime_ns is not None
        }


def open_table(
    base_path: str,
    options: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> InspectedTable:
    """Open a table for inspection.

    ``options`` are the ``hoodie.*`` write and service options the table's writers use
    (small-file limit, cleaner retention, compaction trigger, ...): they are not persisted in
    ``hoodie.properties``, so health is judged against these and the defaults.

    Raises:
        TableNotFoundError: no table at ``base_path``.
        QueryError: a table version other than 5/6 (timeline layout 1).
        ConfigError: an unknown ``hoodie.*`` key or a malformed value in ``options``.

    ``storage_options`` carry an S3 table's endpoint and credentials (``fs.s3a.*``, as
    :class:`engine.HudiTable` takes them).
    """
    s3 = resolve_s3_settings(storage_options) if is_s3_uri(base_path) else None
    storage = Storage(base_path, s3)
    info = load_table_info(storage)
    persisted = {
        opt.key: info.properties[opt.key]
        for opt in _PERSISTED_SERVICE_OPTIONS
        if info.properties.get(opt.key)
    }
    cfg = config.parse_options(persisted).merged(config.parse_options(options))
    return InspectedTable(storage, info, Timeline.load(storage), cfg)


# ---- time ---------------------------------------------------------------------------------------


def iso_time(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def instant_epoch(table: InspectedTable, instant_time: str) -> float:
    """The moment an instant time names, in the table's timeline time zone."""
    digits = instant_time.ljust(17, "0")[:17]
    naive = dt.datetime.strptime(digits + "000", "%Y%m%d%H%M%S%f")
    zone = table.info.properties.get(config.TIMELINE_TIMEZONE.key, "UTC")
    if str(zone).upper() == "LOCAL":
        return naive.astimezone().timestamp()
    return naive.replace(tzinfo=dt.UTC).timestamp()


def requested_file_mtime(table: InspectedTable, instant: Instant) -> float | None:
    times = table.instant_file_mtimes
    for action in _pending_actions(instant.action):
        for state in (State.REQUESTED, State.INFLIGHT):
            name = instant_file_name(instant.instant_time, action, state)
            if name in times:
                return times[name]
    return None


def _pending_actions(action: Action) -> tuple[Action, ...]:
    # a completed compaction is a `commit` whose pending files say `compaction`
    return (Action.COMMIT, Action.COMPACTION) if action is Action.COMMIT else (action,)


def completed_file_mtime(table: InspectedTable, instant: Instant) -> float | None:
    """When the instant completed: its completion time where the timeline keeps one (layout 2),
    else its completed file's modification time."""
    if not instant.is_completed:
        return None
    if instant.completion_time is not None:
        return instant_epoch(table, instant.completion_time)
    return table.instant_file_mtimes.get(table.timeline.layout.file_name(instant))


# ---- settings and sizes -------------------------------------------------------------------------


def int_setting(table: InspectedTable, option: config.ConfigOption[int]) -> int:
    value: int = table.cfg.get(option)
    return value


def setting(table: InspectedTable, option: config.ConfigOption[Any]) -> str:
    """``key=value`` of an option as the inspection applies it."""
    return f"{option.key}={config.format_value(table.cfg.get(option))}"


def small_file_limit(table: InspectedTable) -> int:
    return int_setting(table, config.PARQUET_SMALL_FILE_LIMIT)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
