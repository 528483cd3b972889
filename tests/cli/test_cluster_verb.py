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


def test_health_recommends_clustering_and_the_fix_clears_it(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from engine import spark_table, write_hudi
    from tests.cli.conftest import rows
    from tests.keyed_table import SCHEMA, write_options

    path = tmp_path / "cow"
    no_packing = write_options("cow", {"hoodie.parquet.small.file.limit": "0"})
    for start in (0, 20):  # two small file groups in partition "a"
        batch = spark.createDataFrame(rows(20, start=start, parts=("a",)), SCHEMA)
        write_hudi(batch, str(path), no_packing)
    before = _rows(path)
    report = cli_json("health", str(path))
    (small,) = [f for f in report["findings"] if f["check"] == "small_files"]
    assert small["fix"] == f"dbt-hudi cluster {path} --partitions a"

    (planned,) = spark_table(str(path)).cluster(schedule_only=True)
    findings = cli_json("health", str(path))["findings"]
    (pending,) = [f for f in findings if f["check"] == "pending_clustering"]
    assert pending["subject"] == planned and pending["fix"] == f"dbt-hudi cluster {path}"
    assert not [f for f in findings if f["check"] == "failed_write"]

    status, out, err = run_cli(*small["fix"].split()[1:])
    assert (status, err) == (0, "") and out.split()[-1] == planned  # the pending plan ran
    checks = {f["check"] for f in cli_json("health", str(path))["findings"]}
    assert not checks & {"small_files", "pending_clustering"}
    assert _rows(path) == before
