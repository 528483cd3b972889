"""``dbt-hudi savepoint | savepoints | savepoint-delete | restore | restore-run`` on a table the
engine writes, its commits tagged as dbt runs tag theirs; every restore judged by hudi-rs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import RUN_ID_KEY, RUN_NODE_KEY, write_hudi
from tests.cli.conftest import cli_json, run_cli
from tests.interop.services import rows_by_id
from tests.keyed_table import SCHEMA, write_options

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def _write(spark: Any, path: Path, tag: str, run: str | None, ids: range) -> str:
    extra = {RUN_ID_KEY: run, RUN_NODE_KEY: "model.shop.orders"} if run else {}
    options = write_options("cli_restore", {"hoodie.write.table.version": "9"}, extra)
    rows = [(f"k{i}", f"2024-01-0{i % 2 + 1}", 1, f"{tag}{i}") for i in ids]
    return write_hudi(spark.createDataFrame(rows, SCHEMA), str(path), options).instant_time


def _listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def test_savepoint_and_restore_run_verbs(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "orders"
    good = _write(spark, path, "a", "inv-good", range(4))
    expected = rows_by_id(path)

    saved = cli_json("savepoint", str(path), "--comment", "release 1")
    assert (saved["instant_time"], saved["comments"]) == (good, "release 1")
    assert [s["instant_time"] for s in cli_json("savepoints", str(path))] == [good]
    status, out, _ = run_cli("savepoints", str(path))
    assert status == 0 and good in out and "release 1" in out

    bad = [
        _write(spark, path, "b", "inv-bad", range(2, 6)),
        _write(spark, path, "c", "inv-bad", range(1)),
    ]
    plan = cli_json("restore-run", "--invocation", "inv-bad", str(path), "--dry-run")
    assert plan["restored"] == [] and plan["dry_run"] is True
    (row,) = plan["plan"]
    assert (row["status"], row["target"], row["rolled_back"]) == ("to restore", good, bad[::-1])
    assert row["models"] == ["model.shop.orders"]

    other = _write(spark, path, "o", "inv-other", range(8, 9))
    outside = _write(spark, path, "x", None, range(9, 10))
    listing = _listing(path)
    status, out, err = run_cli("restore-run", "--invocation", "inv-bad", str(path))
    assert status == 2 and len(err.strip().splitlines()) == 1
    writer = "model.shop.orders in dbt invocation inv-other"
    assert f"instant {other} was written after the run by {writer}" in err
    assert "refused" in out and _listing(path) == listing
    (row,) = cli_json("restore-run", "--invocation", "inv-bad", str(path), "--dry-run", "--force")[
        "plan"
    ]
    assert row["later_writers"] == [[other, writer], [outside, "a writer outside dbt (upsert)"]]

    status, out, err = run_cli("restore-run", "--invocation", "inv-bad", str(path), "--force")
    assert status == 0, err
    assert rows_by_id(path) == expected

    status, _, err = run_cli("restore", str(path), "--to", "20200101000000000")
    assert status == 2 and "not a completed write" in err and len(err.strip().splitlines()) == 1
    status, _, err = run_cli("restore-run", "--invocation", "nobody", str(path))
    assert status == 2 and "wrote none of these tables" in err

    again = _write(spark, path, "d", "inv-next", range(3))
    listing = sorted(p for p in path.rglob("*") if p.is_file())
    plan = cli_json("restore", str(path), "--to", good, "--dry-run")
    assert plan == {"restore_to": good, "would_roll_back": [again]}
    assert sorted(p for p in path.rglob("*") if p.is_file()) == listing
    result = cli_json("restore", str(path), "--to", good)
    assert (result["restored_to"], result["rolled_back"]) == (good, [again])
    assert rows_by_id(path) == expected

    actions = {(r["action"], r["state"]) for r in cli_json("timeline", str(path))}
    assert {("savepoint", "completed"), ("restore", "completed")} <= actions
    status, _, err = run_cli("health", str(path))
    assert status in (0, 1), err

    assert cli_json("savepoint-delete", str(path), "--instant", good) == {"deleted": good}
    assert cli_json("savepoints", str(path)) == []
    status, _, err = run_cli("savepoint-delete", str(path), "--instant", good)
    assert status == 2 and f"No savepoint at {good}" in err
