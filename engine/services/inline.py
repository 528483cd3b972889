"""Table services that run after a commit, under the table lock, in Hudi's order.

::

    commit ──► inline compaction (merge-on-read, hoodie.compact.inline, when due)
           ──► inline clustering (hoodie.clustering.inline: schedule and run when due;
               hoodie.clustering.schedule.inline: schedule only)
           ──► clean   (hoodie.clean.automatic: finish a pending clean, then plan + execute)
           ──► archive (hoodie.archive.automatic: keep.min/keep.max commits active)

Each service is idempotent and resumable: a service killed midway leaves a pending instant (a
clean) or nothing visible (an archive written but instants not yet removed: the next archival
appends them again, which readers of the archive tolerate), and the next commit finishes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine import config
from engine.config import HoodieConfig
from engine.errors import ConfigError
from engine.fs.storage import Storage
from engine.services.archival import archive
from engine.services.clean import CleanResult, clean
from engine.services.clustering import (
    GroupRunner,
    cluster_inline_if_due,
    clustering_option_problems,
)
from engine.services.compaction import OperationRunner, compact_inline_if_due
from engine.services.lock import TableLock
from engine.timeline.instant import Instant

__all__ = ["ServicesResult", "run_table_services", "validate_service_options"]


@dataclass(frozen=True)
class ServicesResult:
    """What the services did after one commit."""

    compaction: str | None = None
    clustering: str | None = None
    clean: CleanResult | None = None
    archived: list[Instant] = field(default_factory=list)


def validate_service_options(cfg: HoodieConfig) -> None:
    """Reject retention settings that would archive instants the cleaner still retains.

    Raises:
        ConfigError: naming both keys and values (before anything is written).
    """
    min_commits = cfg.get(config.KEEP_MIN_COMMITS)
    max_commits = cfg.get(config.KEEP_MAX_COMMITS)
    retained = cfg.get(config.CLEANER_COMMITS_RETAINED)
    problems = list(clustering_option_problems(cfg))
    if min_commits < 1:
        problems.append(f"{config.KEEP_MIN_COMMITS.key}={min_commits} must be at least 1")
    if max_commits <= min_commits:
        problems.append(
            f"{config.KEEP_MAX_COMMITS.key}={max_commits} must be greater than "
            f"{config.KEEP_MIN_COMMITS.key}={min_commits}"
        )
    if cfg.get(config.CLEAN_AUTOMATIC) and min_commits <= retained:
        problems.append(
            f"{config.KEEP_MIN_COMMITS.key}={min_commits} must be greater than "
            f"{config.CLEANER_COMMITS_RETAINED.key}={retained}"
        )
    # a heartbeat interval of 0 would make every other writer's instant look dead at once
    positive = (
        config.CLEANER_COMMITS_RETAINED,
        config.CLEANER_FILEVERSIONS_RETAINED,
        config.HEARTBEAT_INTERVAL_MS,
    )
    for option in positive:
        value = cfg.get(option)
        if value < 1:
            problems.append(f"{option.key}={value} must be at least 1")
    if problems:
        raise ConfigError("Invalid table service options: " + "; ".join(problems))


def run_table_services(
    storage: Storage,
    cfg: HoodieConfig,
    lock: TableLock,
    *,
    merge_on_read: bool = False,
    compact: OperationRunner | None = None,
    cluster: GroupRunner | None = None,
) -> ServicesResult:
    """Run the services due after a commit, holding ``lock``.

    Args:
        storage: The table's storage.
        cfg: Table properties merged with the write options.
        lock: The writer's table lock (re-entrant).
        merge_on_read: The table is merge-on-read (inline compaction applies).
        compact: Runs a compaction's operations (inline compaction).
        cluster: Runs a clustering's groups (inline clustering).
    """
    with lock.hold():
        compaction = compact_inline_if_due(storage, cfg, runner=compact) if merge_on_read else None
        clustering = cluster_inline_if_due(storage, cfg, runner=cluster)
        cleaned = clean(storage, cfg) if cfg.get(config.CLEAN_AUTOMATIC) else None
        archived = archive(storage, cfg) if cfg.get(config.ARCHIVE_AUTOMATIC) else []
    return ServicesResult(compaction, clustering, cleaned, archived)
