"""Table services behind ``dbt run-operation hudi_clean`` / ``hudi_compact`` / ``hudi_cluster``
/ ``hudi_health``.

Both go through :class:`engine.HudiTable` as the ``dbt-hudi`` command does: on the driver,
against a model's base path, under the table lock, with the table's persisted properties merged
with the operation's ``hoodie.*`` options. The adapter re-publishes the model afterwards, so
downstream SQL sees the new snapshot (a compaction changes which base files are latest).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from engine import spark_table


def run_clean(base_path: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run the cleaner once (``hoodie.cleaner.*`` options apply).

    Returns:
        ``instant_time`` (None when nothing was due), ``deleted`` file count, ``message``.
    """
    started = time.monotonic()
    result = spark_table(base_path).clean(options)
    seconds = time.monotonic() - started
    if result is None:
        return {"instant_time": None, "deleted": 0, "message": "nothing to clean"}
    failed = sum(len(v) for v in result.failed.values())
    return {
        "instant_time": result.instant_time,
        "deleted": result.total_deleted,
        "message": (
            f"clean committed {result.instant_time}: {result.total_deleted} file(s) deleted"
            + (f", {failed} failed" if failed else "")
            + f" in {seconds:.1f}s"
        ),
    }


def run_compact(base_path: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run pending compactions of a merge-on-read table, or schedule one and run it.

    Raises:
        ConfigError: the table is copy-on-write (hudi_mor models are compacted).
    """
    started = time.monotonic()
    done = spark_table(base_path).compact(options)
    seconds = time.monotonic() - started
    if not done:
        return {"instant_time": None, "message": "nothing to compact"}
    return {
        "instant_time": done[-1],
        "message": f"compaction committed {', '.join(done)} in {seconds:.1f}s",
    }


def run_cluster(
    base_path: str,
    sort_columns: Sequence[str] | str | None = None,
    strategy: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run pending clusterings, or plan one and run it (``sort_columns`` and ``strategy`` are
    ``hoodie.clustering.plan.strategy.sort.columns`` and ``hoodie.layout.optimize.strategy``).

    Returns:
        ``instant_time`` (None when there was nothing to cluster), ``groups`` planned,
        ``message``.
    """
    planned: list[int] = []
    started = time.monotonic()
    done = spark_table(base_path).cluster(
        options,
        on_planned=lambda _, plan: planned.append(len(plan.groups)),
        sort_columns=sort_columns,
        strategy=strategy,
    )
    seconds = time.monotonic() - started
    if not done:
        return {"instant_time": None, "groups": 0, "message": "nothing to cluster"}
    return {
        "instant_time": done[-1],
        "groups": sum(planned),
        "message": f"clustering committed {', '.join(done)} in {seconds:.1f}s",
    }


def table_health(base_path: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The health of a table (what ``dbt-hudi health`` shows), judged with ``options``.

    Returns:
        ``healthy``, ``findings`` (check, severity, subject, message, fix), ``facts`` and
        ``text``: the view as plain text for the log.
    """
    import dataclasses

    from engine.inspect import health, health_text, open_table

    storage_options = spark_table(base_path).storage_options
    report = health(open_table(base_path, options, storage_options))
    return {
        "healthy": report.healthy,
        "findings": [dataclasses.asdict(f) for f in report.findings],
        "facts": report.facts,
        "text": health_text(report),
    }
