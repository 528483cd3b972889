"""Compaction without Spark: trigger strategies, the Avro plan, execution, retry and rollback.

The merge-on-read table is built with the task-side handles directly (create handle, then
append handle), so every step is plain files; execution runs the operations in process.
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from engine import config
from engine.config import parse_options
from engine.errors import TimelineError
from engine.fs.filenames import TaskInfo
from engine.fs.properties import write_partition_metadata, write_properties
from engine.fs.storage import Storage
from engine.io.bloom_filter import BloomFilterSpec
from engine.io.parquet import avro_schema_with_meta, commit_schema_of, table_arrow_schema
from engine.model.merge import MergeSpec
from engine.read.arrow import read_table
from engine.services.compaction import (
    HoodieCompactionPlan,
    execute_compaction,
    is_compaction_due,
    pending_compactions,
    plan_compaction,
    run_operations_locally,
    run_pending_compactions,
    schedule_compaction,
)
from engine.timeline.instant import Action, format_instant_time, new_instant_time
from engine.timeline.timeline import Timeline, create_requested, transition_to_inflight
from engine.write.append import AppendSlice, LogWriteConfig, append_to_file_slice
from engine.write.bucketing import Bucket
from engine.write.commit import commit_write
from engine.write.handles import CreateHandle, WriteContext

pytestmark = pytest.mark.unit

FILE_ID = "0a6f4f3e-1111-4c4c-9d9d-000000000000-0"
PARTITION = "p=1"


def _t(seconds: int) -> str:
    return format_instant_time(
        dt.datetime(2025, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    )


def _rows(ids: list[int], name: str, ts: int, deleted: list[bool] | None = None) -> pa.Table:
    keys = [str(i) for i in ids]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"{name}{i}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "_hoodie_is_deleted": deleted or [False] * len(ids),
            "_hoodie_record_key": keys,
            "_hoodie_partition_path": [PARTITION] * len(ids),
        }
    )


SCHEMA = commit_schema_of(
    _rows([1], "a", 1).select(["id", "name", "ts", "_hoodie_is_deleted"]).schema, "t"
)


def _ctx(base: Path, instant: str) -> WriteContext:
    return WriteContext(
        base_path=str(base),
        instant_time=instant,
        operation="upsert",
        arrow_schema=table_arrow_schema(SCHEMA),
        avro_schema_with_meta=avro_schema_with_meta(SCHEMA),
        merge_spec=MergeSpec(config.OVERWRITE_WITH_LATEST_PAYLOAD, "ts"),
        combine=True,
        bloom=BloomFilterSpec(),
    )


def _new_table(base: Path) -> Storage:
    storage = Storage(str(base))
    write_properties(
        storage,
        {
            config.TABLE_NAME.key: "t",
            config.TABLE_TYPE.key: "MERGE_ON_READ",
            config.TABLE_VERSION.key: "6",
            config.TIMELINE_LAYOUT_VERSION.key: "1",
            config.RECORDKEY_FIELDS.key: "id",
            config.PARTITION_FIELDS.key: "p",
            config.PRECOMBINE_FIELD.key: "ts",
            config.PAYLOAD_CLASS.key: config.OVERWRITE_WITH_LATEST_PAYLOAD,
            config.HIVE_STYLE_PARTITIONING.key: "true",
        },
    )
    return storage


def _deltacommit(storage: Storage, instant: str, write: object) -> None:
    create_requested(storage, instant, Action.DELTA_COMMIT)
    transition_to_inflight(storage, instant, Action.DELTA_COMMIT)
    write_partition_metadata(storage, PARTITION, instant)
    stats = write(instant)  # type: ignore[operator]
    commit_write(storage, instant, Action.DELTA_COMMIT, stats, schema=SCHEMA, operation="upsert")


def _build(base: Path) -> tuple[Storage, list[str]]:
    """Base file with ids 0..9, then two appends: updates of 0..3, deletes of 4 and 5."""
    storage = _new_table(base)
    t1, t2, t3 = _t(0), _t(10), _t(20)
    _deltacommit(
        storage,
        t1,
        lambda t: CreateHandle(Bucket(0, FILE_ID, PARTITION)).write(
            _rows(list(range(10)), "a", 1), _ctx(base, t), TaskInfo()
        ),
    )
    base_file = next(p.name for p in (base / PARTITION).glob("*.parquet"))

    def append(t: str, rows: pa.Table, version: int, logs: tuple[str, ...]) -> list:
        target = AppendSlice(PARTITION, FILE_ID, t1, base_file, logs, version)
        return append_to_file_slice(
            rows, target, _ctx(base, t), TaskInfo(), bucket_number=0, log_config=LogWriteConfig()
        )

    _deltacommit(storage, t2, lambda t: append(t, _rows([0, 1, 2, 3], "b", 2), 1, ()))
    logs = tuple(p.name for p in (base / PARTITION).glob(".*.log.*"))
    _deltacommit(
        storage, t3, lambda t: append(t, _rows([4, 5, 1], "c", 3, [True, True, False]), 2, logs)
    )
    return storage, [t1, t2, t3]


def _snapshot(base: Path, **options: str) -> list[tuple[int, str, str]]:
    rows = read_table(str(base), options or None).to_pylist()
    return sorted((r["id"], r["name"], r["_hoodie_commit_time"]) for r in rows)


# ---- trigger strategies ----


@pytest.mark.parametrize(
    ("strategy", "commits", "seconds", "due"),
    [
        ("NUM_COMMITS", 3, 10_000, True),
        ("NUM_COMMITS", 4, 0, False),
        ("TIME_ELAPSED", 99, 30, True),
        ("TIME_ELAPSED", 1, 31, False),
        ("NUM_AND_TIME", 3, 30, True),
        ("NUM_AND_TIME", 3, 31, False),
        ("NUM_OR_TIME", 9, 30, True),
        ("NUM_OR_TIME", 9, 31, False),
    ],
)
def test_is_compaction_due_trigger_strategies_follow_counts_and_seconds(
    tmp_path: Path, strategy: str, commits: int, seconds: int, due: bool
) -> None:
    storage, _ = _build(tmp_path)
    cfg = parse_options(
        {
            config.INLINE_COMPACT_TRIGGER_STRATEGY.key: strategy,
            config.INLINE_COMPACT_NUM_DELTA_COMMITS.key: commits,
            config.INLINE_COMPACT_TIME_DELTA_SECONDS.key: seconds,
        }
    )
    # three deltacommits, the first at 0 s; the compaction would be scheduled at 30 s
    assert is_compaction_due(Timeline.load(storage), cfg, _t(30)) is due


def test_is_compaction_due_counts_since_last_compaction(tmp_path: Path) -> None:
    storage, _ = _build(tmp_path)
    compaction = schedule_compaction(storage, parse_options({}), force=True)
    assert compaction is not None
    execute_compaction(storage, compaction, runner=run_operations_locally)
    cfg = parse_options({config.INLINE_COMPACT_NUM_DELTA_COMMITS.key: 1})
    assert not is_compaction_due(Timeline.load(storage), cfg, _t(10_000))


# ---- plan ----


def test_plan_compaction_one_operation_per_slice_with_logs(tmp_path: Path) -> None:
    storage, (t1, _, _) = _build(tmp_path)
    plan = plan_compaction(storage, Timeline.load(storage))
    assert len(plan.operations) == 1
    op = plan.operations[0]
    assert (op.partition_path, op.file_id, op.base_instant_time) == (PARTITION, FILE_ID, t1)
    assert op.base_file is not None and "/" not in op.base_file
    assert len(op.log_files) == 2 and all("/" not in name for name in op.log_files)
    assert op.metrics["TOTAL_LOG_FILES"] == 2.0 and op.metrics["TOTAL_LOG_FILES_SIZE"] > 0


def test_schedule_compaction_writes_avro_plan_version_2(tmp_path: Path) -> None:
    storage, _ = _build(tmp_path)
    compaction = schedule_compaction(storage, parse_options({}), force=True)
    assert compaction is not None
    raw = (tmp_path / ".hoodie" / f"{compaction}.compaction.requested").read_bytes()
    assert raw.startswith(b"Obj\x01")
    (record,) = list(fastavro.reader(io.BytesIO(raw)))
    assert record["version"] == 2
    (op,) = record["operations"]
    assert op["fileId"] == FILE_ID and op["partitionPath"] == PARTITION
    assert op["dataFilePath"].endswith(".parquet") and len(op["deltaFilePaths"]) == 2
    assert HoodieCompactionPlan.from_bytes(raw).operations[0].file_id == FILE_ID
    # pending compactions keep their file groups out of a second plan
    assert plan_compaction(storage, Timeline.load(storage)).operations == ()


def test_schedule_compaction_not_due_or_no_logs_schedules_nothing(tmp_path: Path) -> None:
    storage, _ = _build(tmp_path)
    assert schedule_compaction(storage, parse_options({})) is None  # 3 < 5 delta commits
    compaction = schedule_compaction(storage, parse_options({}), force=True)
    assert compaction is not None
    execute_compaction(storage, compaction, runner=run_operations_locally)
    assert schedule_compaction(storage, parse_options({}), force=True) is None


def test_schedule_compaction_pending_write_raises(tmp_path: Path) -> None:
    storage, _ = _build(tmp_path)
    create_requested(storage, _t(50), Action.DELTA_COMMIT)
    with pytest.raises(TimelineError, match="still pending"):
        schedule_compaction(storage, parse_options({}), force=True)


# ---- execution ----


def test_execute_compaction_read_optimized_equals_snapshot_meta_preserved(tmp_path: Path) -> None:
    storage, (t1, t2, t3) = _build(tmp_path)
    before = _snapshot(tmp_path)
    assert [r for r in before if r[0] in (0, 1, 6)] == [(0, "b0", t2), (1, "c1", t3), (6, "a6", t1)]
    compaction = schedule_compaction(storage, parse_options({}), force=True)
    assert compaction is not None
    metadata = execute_compaction(storage, compaction, runner=run_operations_locally)
    assert metadata.compacted is True and metadata.operation_type == "COMPACT"
    (stat,) = metadata.write_stats()
    assert stat.prev_commit == t1 and stat.path.endswith(f"_{compaction}.parquet")
    assert (stat.num_writes, stat.num_deletes, stat.total_log_files_compacted) == (8, 2, 2)
    assert stat.total_log_blocks == 3 and stat.num_update_writes == 4
    completed = tmp_path / ".hoodie" / f"{compaction}.commit"
    assert completed.exists() and not (tmp_path / ".hoodie" / ".temp" / compaction).exists()
    ro = _snapshot(tmp_path, **{config.QUERY_TYPE.key: "read_optimized"})
    assert ro == before == _snapshot(tmp_path)
    # time travel before the compaction still reads the old slice
    assert _snapshot(tmp_path, **{config.AS_OF_INSTANT: t2}) == sorted(
        [(i, f"a{i}", t1) for i in range(4, 10)] + [(i, f"b{i}", t2) for i in range(4)]
    )


def test_execute_compaction_inflight_retry_removes_partial_output(tmp_path: Path) -> None:
    storage, _ = _build(tmp_path)
    before = _snapshot(tmp_path)
    compaction = schedule_compaction(storage, parse_options({}), force=True)
    assert compaction is not None
    transition_to_inflight(storage, compaction, Action.COMPACTION)
    torn = tmp_path / PARTITION / f"{FILE_ID}_9-9-9_{compaction}.parquet"
    torn.write_bytes(b"PAR1 torn")
    # the failed attempt is invisible to readers meanwhile
    assert _snapshot(tmp_path) == before
    assert run_pending_compactions(storage, runner=run_operations_locally) == [compaction]
    assert not torn.exists()
    assert _snapshot(tmp_path, **{config.QUERY_TYPE.key: "read_optimized"}) == before
    assert pending_compactions(Timeline.load(storage)) == []


def test_execute_compaction_plan_with_missing_files_is_rolled_back(tmp_path: Path) -> None:
    storage, _ = _build(tmp_path)
    compaction = schedule_compaction(storage, parse_options({}), force=True)
    assert compaction is not None
    for log in (tmp_path / PARTITION).glob(".*.log.*"):
        log.unlink()
    with pytest.raises(TimelineError, match="rolled back"):
        execute_compaction(storage, compaction, runner=run_operations_locally)
    assert not list((tmp_path / ".hoodie").glob(f"{compaction}.*"))


def test_run_pending_compactions_lifo_runs_newest_first(tmp_path: Path) -> None:
    storage, _ = _build(tmp_path)
    first = schedule_compaction(storage, parse_options({}), force=True)
    assert first is not None
    # a second plan over no slices is never written, so fake a second pending one by hand
    second = new_instant_time(first)
    create_requested(storage, second, Action.COMPACTION, HoodieCompactionPlan(()).to_bytes())
    order = run_pending_compactions(storage, order="LIFO", runner=run_operations_locally)
    assert order == [second, first]
