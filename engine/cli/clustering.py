"""``dbt-hudi cluster PATH``: plan a clustering, show the plan, run it (or only show it).

The plan is Hudi's size-based one (``hoodie.clustering.plan.strategy.*`` from ``--option``);
``--sort-columns``, ``--strategy`` and ``--partitions`` are shorthands for
``hoodie.clustering.plan.strategy.sort.columns``, ``hoodie.layout.optimize.strategy`` and
``hoodie.clustering.plan.strategy.partition.selected``. A pending plan (scheduled by a writer
with ``hoodie.clustering.schedule.inline``) runs first; ``--dry-run`` plans and shows, writes
nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli import render
from engine.cli.progress import progress, quiet_spark
from engine.cli.services import emit_result, open_for_service
from engine.cli.tables import add_table_argument

__all__ = ["add_clustering_parser"]

_PLAN_COLUMNS = (
    render.Column("group", "group", justify="right"),
    render.Column("partition", "partition"),
    render.Column("file slices", "slices", justify="right"),
    render.Column("log files", "log_files", justify="right"),
    render.Column("read MB", "read_mb", justify="right"),
    render.Column("output file groups", "outputs", justify="right"),
)


def plan_rows(plan: Any) -> list[dict[str, Any]]:
    """One row per input group of a clustering plan."""
    return [
        {
            "group": k,
            "partition": g.partition_path or ".",
            "slices": len(g.slices),
            "log_files": int(g.metrics.get("TOTAL_LOG_FILES", 0)),
            "read_mb": int(g.metrics.get("TOTAL_IO_READ_MB", 0)),
            "outputs": g.num_output_file_groups,
            "file_ids": [s.file_id for s in g.slices],
        }
        for k, g in enumerate(plan.groups)
    ]


def _layout(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "sort_columns": args.sort_columns,
        "strategy": args.strategy,
        "partitions": args.partitions,
    }


def _show(args: argparse.Namespace, instant: str | None, plan: Any) -> None:
    if args.json:
        return
    params = ", ".join(f"{k}={v}" for k, v in sorted(plan.strategy_params.items()))
    title = f"clustering plan {instant or '(dry run)'}" + (f" ({params})" if params else "")
    render.print_rows(title, _PLAN_COLUMNS, plan_rows(plan))


def _cmd_cluster(args: argparse.Namespace) -> int:
    table, options = open_for_service(args)
    if args.dry_run:
        plan = table.plan_clustering(options, **_layout(args))
        _show(args, None, plan)
        emit_result(
            args,
            {"plan": plan_rows(plan), "clustered": []},
            [] if plan.groups else ["nothing to cluster"],
        )
        return 0
    quiet_spark()
    shown: list[dict[str, Any]] = []

    def planned(instant: str, plan: Any) -> None:
        shown.extend(plan_rows(plan))
        _show(args, instant, plan)

    with progress("clustering") as advance:
        done = table.cluster(
            options, on_planned=planned, on_clustered=lambda _: advance(1), **_layout(args)
        )
    emit_result(args, {"plan": shown, "clustered": done}, done or ["nothing to cluster"])
    return 0


def add_clustering_parser(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cluster",
        parents=parents,
        help="rewrite small file groups into sorted files of the target size (a replacecommit)",
    )
    add_table_argument(p, options=True)
    p.add_argument("--sort-columns", help="columns to order rows by (comma-separated)")
    p.add_argument(
        "--strategy", choices=("linear", "z-order", "hilbert"), help="how rows are ordered"
    )
    p.add_argument("--partitions", help="only these partition paths (comma-separated)")
    p.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    p.set_defaults(handler=_cmd_cluster)
