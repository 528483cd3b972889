"""``dbt-hudi cluster``: the plan shown (``--dry-run`` writes nothing), then run; the rows are
the same, read by hudi-rs, and the timeline shows the clustering as a replacecommit."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.cli.conftest import cli_json, run_cli
from tests.hudi_rs import hudi_rs_rows


def _rows(path: Path) -> dict[str, tuple[str, str, str]]:
    return {r["id"]: (r["dt"], r["v"], r["_hoodie_commit_time"]) for r in hudi_rs_rows(str(path))}


def test_cluster_dry_run_then_run(cow_table: Path, tmp_path: Path) -> None:
    path = tmp_path / "cow"
    shutil.copytree(cow_table, path)
    before = _rows(path)
    timeline = cli_json("timeline", str(path))

    status, out, _ = run_cli("cluster", str(path), "--sort-columns", "v,ts", "--dry-run")
    assert status == 0 and "clustering plan (dry run)" in out and "output file groups" in out
    assert cli_json("timeline", str(path)) == timeline  # nothing written
    planned = cli_json("cluster", str(path), "--dry-run", "--partitions", "2024-01-02")
    assert [g["partition"] for g in planned["plan"]] == ["2024-01-02"]
    assert planned["clustered"] == []

    status, out, err = run_cli(
        "cluster", str(path), "--sort-columns", "v,ts", "--strategy", "z-order"
    )
    assert status == 0, err
    (instant,) = out.split()[-1:]
    assert "hoodie.layout.optimize.strategy=z-order" in out
    rows = cli_json("timeline", str(path))
    (row,) = [r for r in rows if r["instant_time"] == instant]
    assert (row["action"], row["state"], row["operation"]) == (
        "replacecommit",
        "completed",
        "CLUSTER",
    )
    assert _rows(path) == before
    status, out, err = run_cli("cluster", str(path), "--strategy", "spiral")
    assert status != 0 and "spiral" in err
