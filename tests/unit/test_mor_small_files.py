"""Which file slices of a merge-on-read table take inserts, by index (Hudi's
``SparkUpsertDeltaCommitPartitioner.getSmallFiles``): an index that finds keys in log files
sizes every latest slice as base file + log bytes x ``hoodie.logfile.to.parquet.compression.ratio``
and appends inserts to those below the max file size; any other index rewrites the smallest
log-free base files below the small file limit."""

from __future__ import annotations

import pytest

from engine.config import parse_options
from engine.errors import ConfigError
from engine.write.append import AppendSlice
from engine.write.bucketing import BucketPlan, SizedBaseFile
from engine.write.listing import TableSlices
from engine.write.merge_on_read import SmallFileRule, plan_merge_on_read_buckets

P = "p"
MAX = 1000
RECORD = 100


def _slices(*groups: tuple[str, int | None, int]) -> TableSlices:
    """(file id, base file size or None for a log-only slice, log bytes) per file group."""
    base_files, slices = {}, {}
    for file_id, base_size, log_bytes in groups:
        key = (P, file_id)
        base_name = None if base_size is None else f"{file_id}_0-0-0_001.parquet"
        logs = (f".{file_id}_001.log.1_0-0-0",) if log_bytes else ()
        slices[key] = AppendSlice(P, file_id, "001", base_name, logs, 2, log_bytes)
        if base_size is not None and base_name is not None:
            base_files[key] = SizedBaseFile(file_id, base_name, "001", base_size)
    return TableSlices(base_files, slices)


def _plan(
    table: TableSlices, rule: SmallFileRule, inserts: int, updates: dict[str, int] | None = None
) -> tuple[BucketPlan, frozenset[str]]:
    return plan_merge_on_read_buckets(
        update_counts={(P, f): n for f, n in (updates or {}).items()},
        insert_counts={P: inserts},
        table_slices=table,
        avg_record_size=RECORD,
        max_file_size=MAX,
        rule=rule,
        pack_small_files=True,
    )


def _insert_groups(plan: BucketPlan) -> list[str]:
    return list(plan.insert_ranges[P][1])


LOGS = SmallFileRule(small_file_limit=500, candidates_limit=1, inserts_to_logs=True)
BASE = SmallFileRule(small_file_limit=500, candidates_limit=1)


def test_log_indexing_rule_appends_inserts_to_slices_with_logs_smallest_first() -> None:
    # sizes: a 100, b 100 + 1000 x 0.35 = 450, c 900, d 100 + 2600 x 0.35 = 1010 (too big)
    table = _slices(("a", 100, 0), ("b", 100, 1000), ("c", 900, 0), ("d", 100, 2600))
    plan, rewritten = _plan(table, LOGS, inserts=15)
    # a takes (1000 - 100) / 100 = 9, b (1000 - 450) / 100 = 5, c the last one
    assert _insert_groups(plan) == ["a", "b", "c"]
    assert plan.insert_ranges[P][0] == pytest.approx((9 / 15, 14 / 15, 1.0))
    assert rewritten == frozenset()  # every existing group is appended to
    assert {b.file_id for b in plan.buckets.values()} == {"a", "b", "c"}


def test_log_indexing_rule_excludes_compacting_and_log_only_slices() -> None:
    table = _slices(("a", 100, 0), ("b", 200, 100), ("l", None, 100))
    rule = SmallFileRule(500, 1, inserts_to_logs=True, compacting=frozenset({(P, "a")}))
    plan, rewritten = _plan(table, rule, inserts=3)
    assert _insert_groups(plan) == ["b"] and rewritten == frozenset()


def test_log_indexing_rule_without_small_file_limit_opens_new_groups() -> None:
    table = _slices(("a", 100, 0), ("b", 100, 500))
    rule = SmallFileRule(0, 1, inserts_to_logs=True)
    plan, rewritten = _plan(table, rule, inserts=3, updates={"b": 1})
    (new,) = _insert_groups(plan)
    assert new not in {"a", "b"} and rewritten == frozenset()


def test_base_file_rule_rewrites_the_smallest_log_free_file_only() -> None:
    table = _slices(("a", 300, 0), ("b", 100, 1000), ("c", 200, 0))
    plan, rewritten = _plan(table, BASE, inserts=15, updates={"b": 1})
    # c (200, no logs) is the one candidate: 8 inserts, then a new group for the other 7
    groups = _insert_groups(plan)
    assert groups[0] == "c" and groups[1] not in {"a", "b", "c"} and len(groups) == 2
    assert rewritten == frozenset({"c"})


def test_rule_follows_the_index_and_the_ratio_option() -> None:
    record = SmallFileRule.of(
        parse_options(
            {
                "hoodie.index.type": "RECORD_INDEX",
                "hoodie.logfile.to.parquet.compression.ratio": "0.5",
            }
        )
    )
    assert record.inserts_to_logs and record.log_to_base_ratio == 0.5
    for index in ("SIMPLE", "BLOOM", "GLOBAL_SIMPLE", "GLOBAL_BLOOM"):
        assert not SmallFileRule.of(parse_options({"hoodie.index.type": index})).inserts_to_logs
    with pytest.raises(ConfigError, match=r"hoodie\.logfile\.to\.parquet\.compression\.ratio"):
        parse_options({"hoodie.logfile.to.parquet.compression.ratio": "0"})
