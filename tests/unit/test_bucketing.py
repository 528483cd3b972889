"""Bucketing: updates keep their file group, inserts fill small files first, then new groups."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from engine.write.bucketing import BucketPlan, SizedBaseFile, plan_buckets

pytestmark = pytest.mark.unit


def new_ids():  # type: ignore[no-untyped-def]
    counter = itertools.count()
    return lambda: f"new-{next(counter)}-0"


def small(file_id: str, size: int) -> SizedBaseFile:
    return SizedBaseFile(file_id, f"{file_id}_0-0-0_001.parquet", "001", size)


def plan_for(**changes: Any) -> BucketPlan:
    """``plan_buckets`` for 100-byte records into 10 kB files, small files packed and none
    counted small, no records and no stored files; ``changes`` set the rest."""
    arguments: dict[str, Any] = {
        "update_counts": {},
        "insert_counts": {},
        "latest_base_files": {},
        "avg_record_size": 100,
        "max_file_size": 10_000,
        "small_file_limit": 0,
        "pack_small_files": True,
        "new_file_id": new_ids(),
    }
    return plan_buckets(**{**arguments, **changes})


def test_plan_buckets_updates_go_to_their_file_group() -> None:
    latest = {("p", "f1"): small("f1", 5000)}
    plan = plan_for(update_counts={("p", "f1"): 10}, latest_base_files=latest)
    bucket = plan.buckets["f1"]
    assert bucket.base_file == "f1_0-0-0_001.parquet" and bucket.prev_commit == "001"
    assert plan.insert_ranges == {}


def test_plan_buckets_inserts_fill_small_file_then_new_groups() -> None:
    latest = {("p", "f1"): small("f1", 8000), ("p", "big"): small("big", 20_000)}
    plan = plan_for(insert_counts={"p": 120}, latest_base_files=latest, small_file_limit=9_000)
    bounds, file_ids = plan.insert_ranges["p"]
    # f1 has room for (10000 - 8000) / 100 = 20 records; 100 more need one new group
    assert file_ids == ("f1", "new-0-0")
    assert bounds == pytest.approx((20 / 120, 1.0))
    assert plan.buckets["new-0-0"].base_file is None
    assert plan.insert_file_id("p", 0.0) == "f1" and plan.insert_file_id("p", 0.99) == "new-0-0"


def test_plan_buckets_new_groups_sized_by_average_record_size() -> None:
    plan = plan_for(insert_counts={"p": 250}, avg_record_size=100, max_file_size=10_000)
    _, file_ids = plan.insert_ranges["p"]
    assert len(file_ids) == 3  # 100 records per file


def test_plan_buckets_bulk_insert_skips_small_files() -> None:
    plan = plan_for(
        insert_counts={"p": 10},
        latest_base_files={("p", "f1"): small("f1", 10)},
        small_file_limit=9_000,
        pack_small_files=False,
    )
    assert "f1" not in plan.buckets and plan.insert_ranges["p"][1] == ("new-0-0",)


def test_plan_buckets_insert_rows_cover_unit_interval() -> None:
    plan = plan_for(insert_counts={"p": 300, "q": 50})
    rows = [r for r in plan.insert_rows() if r[0] == "p"]
    assert rows[0][1] == 0.0 and rows[-1][2] > 1.0
    assert all(a[2] == b[1] for a, b in itertools.pairwise(rows))
