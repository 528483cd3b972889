"""Health: everything about a table someone should act on, each finding with what to run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from engine import config
from engine.errors import TimelineError
from engine.fs.properties import METAFOLDER
from engine.inspect.layout import FileGroupRow, base_file_sizes, file_groups
from engine.inspect.table import (
    InspectedTable,
    human_bytes,
    instant_epoch,
    int_setting,
    requested_file_mtime,
    setting,
    small_file_limit,
)
from engine.services.archival import instants_to_archive
from engine.services.clean import plan_clean
from engine.services.clustering_plan import (
    CLUSTER_OPERATION,
    ClusteringPlan,
    is_scheduled_clustering,
    read_clustering_plan,
)
from engine.services.heartbeat import is_write_alive
from engine.timeline.instant import COMMIT_ACTIONS, Action, Instant
from engine.timeline.timeline import Timeline

METADATA_TABLE_FOLDER = f"{METAFOLDER}/metadata"
# the share of a clustered layout's bytes written since its clustering past which its sort order
# no longer holds: a filter on the sort columns then opens that share of files whatever it selects
SORT_ORDER_DRIFT = 0.10


@dataclass(frozen=True)
class Finding:
    """One thing to act on: what is wrong, where, and what to run to fix it."""

    check: str
    severity: str  # "error": data at risk or invisible; "warning": cost or lag; "info"
    subject: str
    message: str
    fix: str


@dataclass(frozen=True)
class HealthReport:
    base_path: str
    table_name: str
    table_type: str
    table_version: int
    facts: dict[str, Any]
    findings: list[Finding]

    @property
    def healthy(self) -> bool:
        return not any(f.severity in ("error", "warning") for f in self.findings)


def health_text(report: HealthReport) -> str:
    """The health view as plain text, for logs (dbt's ``hudi_health``): the table and its
    facts, then every finding with the command that fixes it. ``dbt-hudi health`` shows the
    same on a terminal, styled."""
    lines = [
        f"{report.table_name} ({report.table_type}, table version {report.table_version}) "
        f"at {report.base_path}"
    ]
    width = max((len(key) for key in report.facts), default=0)
    lines += [f"  {key.ljust(width)}  {value}" for key, value in report.facts.items()]
    if not report.findings:
        return "\n".join([*lines, "healthy: nothing to act on"]) + "\n"
    lines.append(f"{len(report.findings)} finding(s)")
    for f in report.findings:
        lines += [f"  [{f.severity}] {f.check} ({f.subject}): {f.message}", f"      fix: {f.fix}"]
    return "\n".join(lines) + "\n"


def _age(now: float, epoch: float) -> str:
    seconds = max(0, int(now - epoch))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds}s"


def _cmd(table: InspectedTable, verb: str, *args: str) -> str:
    return " ".join(["dbt-hudi", verb, table.base_path, *args])


def _small_files(table: InspectedTable) -> list[Finding]:
    limit = small_file_limit(table)
    if limit <= 0:
        return []
    out = []
    for partition, sizes in base_file_sizes(table).items():
        small = sorted(size for size in sizes if size < limit)
        if len(small) < 2:
            continue  # one small file per partition is where the next inserts go
        out.append(
            Finding(
                "small_files",
                "warning",
                partition or "(non-partitioned)",
                f"{len(small)} base files under {config.PARQUET_SMALL_FILE_LIMIT.key}="
                f"{limit} ({human_bytes(limit)}): {human_bytes(sum(small))} in all, "
                f"smallest {human_bytes(small[0])}",
                _cmd(table, "cluster", "--partitions", partition)
                if partition
                else _cmd(table, "cluster"),
            )
        )
    return out


def _last_clustering(table: InspectedTable) -> tuple[str, ClusteringPlan] | None:
    """The newest completed clustering that sorted its rows, with its plan."""
    for instant in reversed(table.timeline.completed([Action.REPLACE_COMMIT])):
        if table.commit_metadata(instant).operation_type != CLUSTER_OPERATION:
            continue
        try:
            plan = read_clustering_plan(table.storage, instant)
        except TimelineError:
            return None  # its plan archived: nothing to judge the layout by
        return (instant.instant_time, plan) if plan.sort_columns else None
    return None


def _sort_order(table: InspectedTable) -> list[Finding]:
    """A clustering's sort order that no longer holds: in the partitions it clustered, the
    file groups written since (new groups, rewritten or logged ones) hold at least
    SORT_ORDER_DRIFT of the bytes; their rows span the sort columns' whole ranges, so
    data skipping by column stats opens them for any filter."""
    last = _last_clustering(table)
    if last is None:
        return []
    instant_time, plan = last
    partitions = {g.partition_path for g in plan.groups}
    total = since = 0
    for s in table.latest_slices:
        if s.partition_path not in partitions:
            continue
        size = table.view.file_size(s.base_file_path) if s.base_file_path else 0
        size += sum(table.view.file_size(p) for p in s.log_file_paths)
        total += size
        if s.base_instant_time > instant_time or s.log_files:
            since += size
    if total == 0 or since / total < SORT_ORDER_DRIFT:
        return []
    columns = ",".join(plan.sort_columns)
    return [
        Finding(
            "sort_order",
            "warning",
            ",".join(sorted(partitions)) or "(non-partitioned)",
            f"{human_bytes(since)} of {human_bytes(total)} written since clustering "
            f"{instant_time} ordered the rows by {columns} ({plan.layout_strategy}): those "
            "files are outside that order, so filters on those columns read them all",
            _cmd(table, "cluster", "--sort-columns", columns, "--strategy", plan.layout_strategy),
        )
    ]


def _compaction_trigger(table: InspectedTable) -> list[Finding]:
    if not table.info.is_mor:
        return []
    trigger = int_setting(table, config.INLINE_COMPACT_NUM_DELTA_COMMITS)
    rows = [
        r
        for r in file_groups(table)
        if r.pending_compaction is None and r.log_files and r.delta_commits >= trigger
    ]
    if not rows:
        return []
    rows.sort(key=lambda r: -r.delta_commits)
    sample = ", ".join(f"{_group_name(r)} ({r.delta_commits})" for r in rows[:3])
    return [
        Finding(
            "compaction_due",
            "warning",
            f"{len(rows)} file group(s)",
            f"{len(rows)} file slice(s) have at least {config.INLINE_COMPACT_NUM_DELTA_COMMITS.key}"
            f"={trigger} delta commits since their base file: {sample}",
            _cmd(table, "compact"),
        )
    ]


def _group_name(row: FileGroupRow) -> str:
    return f"{row.partition_path}/{row.file_id}" if row.partition_path else row.file_id


def _pending_instants(table: InspectedTable, now: float) -> list[Finding]:
    out = []
    for instant in table.timeline.pending():
        since = requested_file_mtime(table, instant) or instant_epoch(table, instant.instant_time)
        age = _age(now, since)
        what = f"{instant.action.value} {instant.instant_time} {instant.state.value} for {age}"
        if instant.action is Action.COMPACTION:
            out.append(
                Finding(
                    "pending_compaction",
                    "warning",
                    instant.instant_time,
                    what,
                    _cmd(table, "compact"),
                )
            )
        elif is_scheduled_clustering(table.storage, instant):
            out.append(
                Finding(
                    "pending_clustering",
                    "warning",
                    instant.instant_time,
                    what + ": updates into its file groups are rejected until it runs",
                    _cmd(table, "cluster"),
                )
            )
        elif instant.action in COMMIT_ACTIONS or instant.action is Action.CLUSTERING:
            out.append(_pending_write(table, instant, what))
        elif instant.action is Action.CLEAN:
            out.append(
                Finding(
                    "pending_clean", "warning", instant.instant_time, what, _cmd(table, "clean")
                )
            )
        elif instant.action is Action.ROLLBACK:
            out.append(
                Finding(
                    "pending_rollback",
                    "error",
                    instant.instant_time,
                    what + ": files of the write it undoes may still be on storage",
                    _cmd(table, "rollback", "--failed"),
                )
            )
        else:
            out.append(
                Finding(
                    f"pending_{instant.action.value}",
                    "warning",
                    instant.instant_time,
                    what,
                    "finish it with the tool that started it (Apache Hudi)",
                )
            )
    return out


def _pending_write(table: InspectedTable, instant: Instant, what: str) -> Finding:
    if is_write_alive(table.storage, instant, table.cfg):
        return Finding(
            "inflight_write",
            "info",
            instant.instant_time,
            what + ": its writer is alive (heartbeat)",
            "none while it runs; if it hangs, stop the writer, then "
            + _cmd(table, "rollback", instant.instant_time),
        )
    return Finding(
        "failed_write",
        "error",
        instant.instant_time,
        what + ": its writer is gone; its files are invisible and block compaction and archival",
        _cmd(table, "rollback", instant.instant_time),
    )


def _clean_due(table: InspectedTable, now: float, facts: dict[str, Any]) -> list[Finding]:
    plan = plan_clean(table.storage, table.timeline, table.cfg)
    files = [f for rels in plan.files_per_partition.values() for f in rels]
    facts["clean_would_delete_files"] = len(files)
    facts["clean_would_delete_bytes"] = sum(table.view.file_size(f) for f in files)
    if plan.is_empty:
        return []
    last = facts.get("last_clean")
    when = (
        f"last clean {last} ({_age(now, instant_epoch(table, last))} ago)"
        if last
        else "never cleaned"
    )
    retained = setting(
        table,
        config.CLEANER_COMMITS_RETAINED
        if plan.policy == "KEEP_LATEST_COMMITS"
        else config.CLEANER_FILEVERSIONS_RETAINED,
    )
    return [
        Finding(
            "clean_due",
            "warning",
            "cleaner",
            f"a clean would delete {len(files)} file(s), "
            f"{human_bytes(facts['clean_would_delete_bytes'])}, that no retained query needs "
            f"({plan.policy}, {retained}); {when}",
            _cmd(table, "clean", *_option_args(table, plan.policy)),
        )
    ]


def _option_args(table: InspectedTable, policy: str) -> list[str]:
    """``--option`` arguments repeating the cleaner settings the inspection was given."""
    retained = (
        config.CLEANER_COMMITS_RETAINED
        if policy == "KEEP_LATEST_COMMITS"
        else config.CLEANER_FILEVERSIONS_RETAINED
    )
    args = []
    for option in (config.CLEANER_POLICY, retained):
        if table.cfg.is_set(option):
            args += ["--option", setting(table, option)]
    return args


def _archival_lag(table: InspectedTable) -> list[Finding]:
    due = instants_to_archive(table.storage, table.timeline, table.cfg)
    if not due:
        return []
    commits = len(table.timeline.commits_timeline())
    return [
        Finding(
            "archival_due",
            "warning",
            f"{len(due)} instant(s)",
            f"{commits} completed commits are active, over "
            f"{setting(table, config.KEEP_MAX_COMMITS)}: {len(due)} instant(s) up to "
            f"{due[-1].instant_time} are due for archival",
            _cmd(table, "archive"),
        )
    ]


def metadata_table_state(table: InspectedTable) -> tuple[str, Finding | None]:
    """'absent', 'in sync' or 'stale' (it lacks a commit of the data table) and a finding."""
    partitions_prop = table.info.properties.get(config.METADATA_PARTITIONS.key, "")
    if not table.storage.exists(METADATA_TABLE_FOLDER):
        return "absent", None
    mdt = Timeline.load(table.storage.child(METADATA_TABLE_FOLDER))
    synced = {i.instant_time for i in mdt.completed()}
    last = table.timeline.last_completed()
    if not partitions_prop:
        state = "disabled"
        return state, Finding(
            "metadata_table",
            "warning",
            METADATA_TABLE_FOLDER,
            f"{METADATA_TABLE_FOLDER} is left on storage while {config.METADATA_PARTITIONS.key} "
            "is empty: a reader with the metadata table on may list stale files",
            "the next dbt-hudi write removes it",
        )
    if last is None or last.instant_time in synced:
        return "in sync", None
    return "stale", Finding(
        "metadata_table",
        "error",
        METADATA_TABLE_FOLDER,
        f"the metadata table lacks commit {last.instant_time}: readers that list files "
        "through it (Hudi's, with the metadata table on) miss the newest files",
        "the next dbt-hudi write builds it again from the storage listing (or removes it, with "
        f"{config.METADATA_ENABLE.key}=false); until then read with the metadata table off",
    )


def _table_version(table: InspectedTable) -> list[Finding]:
    if table.table_version == 6:
        return []
    return [
        Finding(
            "table_version",
            "info",
            f"version {table.table_version}",
            f"{config.TABLE_VERSION.key}={table.table_version}: read as is; dbt-hudi writes "
            "table version 6",
            "rewrite the table with a table-version-6 writer to upgrade it",
        )
    ]


def _facts(table: InspectedTable, now: float) -> dict[str, Any]:
    tl = table.timeline
    last_commit = tl.last_completed()
    cleans = tl.completed([Action.CLEAN])
    compactions = [i for i in tl.completed([Action.COMMIT]) if table.commit_metadata(i).compacted]
    slices = table.latest_slices
    facts: dict[str, Any] = {
        "active_instants": len(tl.instants),
        "completed_commits": len(tl.commits_timeline()),
        "pending_instants": len(tl.pending()),
        "last_commit": last_commit.instant_time if last_commit else None,
        "last_commit_age_seconds": (
            round(now - instant_epoch(table, last_commit.instant_time), 1) if last_commit else None
        ),
        "last_clean": cleans[-1].instant_time if cleans else None,
        "last_compaction": compactions[-1].instant_time if compactions else None,
        "partitions": len(table.view.partition_paths),
        "file_groups": len(slices),
        "base_bytes": sum(
            table.view.file_size(s.base_file_path) for s in slices if s.base_file_path
        ),
        "log_bytes": sum(table.view.file_size(p) for s in slices for p in s.log_file_paths),
        "small_file_limit": small_file_limit(table),
        "max_file_size": table.cfg.get(config.PARQUET_MAX_FILE_SIZE),
        "cleaner_policy": table.cfg.get(config.CLEANER_POLICY),
        "cleaner_commits_retained": table.cfg.get(config.CLEANER_COMMITS_RETAINED),
        "keep_min_commits": table.cfg.get(config.KEEP_MIN_COMMITS),
        "keep_max_commits": table.cfg.get(config.KEEP_MAX_COMMITS),
    }
    if table.info.is_mor:
        facts["compaction_trigger_delta_commits"] = table.cfg.get(
            config.INLINE_COMPACT_NUM_DELTA_COMMITS
        )
    return facts


def health(table: InspectedTable, *, now: float | None = None) -> HealthReport:
    """Everything about the table someone should act on, each with what to run."""
    now = time.time() if now is None else now
    facts = _facts(table, now)
    state, mdt_finding = metadata_table_state(table)
    facts["metadata_table"] = state
    findings = [
        *_pending_instants(table, now),
        *_small_files(table),
        *_sort_order(table),
        *_compaction_trigger(table),
        *_clean_due(table, now, facts),
        *_archival_lag(table),
        *([mdt_finding] if mdt_finding else []),
        *_table_version(table),
    ]
    return HealthReport(
        base_path=table.base_path,
        table_name=table.info.table_name,
        table_type=table.info.table_type,
        table_version=table.table_version,
        facts=facts,
        findings=findings,
    )
