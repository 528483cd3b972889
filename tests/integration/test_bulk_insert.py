"""bulk_insert without a shuffle: each Spark task writes the records it reads into new file
groups, named, stamped and footed as Hudi's bulk insert writes them, and hudi-rs reads back
exactly the rows given."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import write_hudi
from engine.config import WriteOperation
from engine.errors import ConfigError, RecordKeyError
from engine.fs.filenames import TaskInfo
from engine.fs.storage import Storage
from engine.io.bloom_filter import BloomFilterSpec
from engine.io.parquet import avro_schema_with_meta, table_arrow_schema
from engine.model.merge import MergeSpec
from engine.write import bulk_insert
from engine.write.handles import WriteContext
from tests.hudi_rs import hudi_rs_rows
from tests.integration.metafolder import timeline_files
from tests.keyed_table import SCHEMA, write_options

pytestmark = pytest.mark.spark

# <uuid>-<n>_<task partition>-<stage>-<attempt>_<instant>.parquet
BULK_FILE = re.compile(
    r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(\d+)_(\d+)-\d+-\d+_(\d{17})"
    r"\.parquet$"
)


def _options(table_type: str = "COPY_ON_WRITE", **extra: Any) -> dict[str, Any]:
    return write_options(
        "bulk",
        {
            "hoodie.datasource.write.operation": "bulk_insert",
            "hoodie.datasource.write.table.type": table_type,
        },
        extra,
    )


def _rows(n: int) -> list[tuple[Any, ...]]:
    return [(f"k{i:04d}", f"p{i % 3}", i, f"v{i}") for i in range(n)]


def _data_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_bulk_insert_writes_a_file_group_per_task_and_partition(
    spark: Any, tmp_path: Path, table_type: str
) -> None:
    path = tmp_path / "t"
    rows = _rows(60)
    df = spark.createDataFrame(rows, SCHEMA).repartition(2)
    # Spark's tasks (a batch the driver writes is one writer: tests/integration/test_local_write)
    in_tasks = {"hoodie.write.local.enabled": "false"}
    result = write_hudi(df, str(path), _options(table_type, **in_tasks))
    files = _data_files(path)
    # no shuffle: each of the 2 tasks writes one file per partition path it reads
    assert len(files) == len(result.write_stats) == 6
    assert sorted(s.num_inserts for s in result.write_stats) == sorted(
        pq.read_metadata(f).num_rows for f in files
    )
    prefixes: dict[str, set[str]] = {}
    for f in files:
        match = BULK_FILE.match(f.name)
        assert match, f.name
        prefix, _, task_partition, instant = match.groups()
        assert instant == result.instant_time
        prefixes.setdefault(task_partition, set()).add(prefix)
        table = pq.read_table(f)
        keys = table.column("_hoodie_record_key").to_pylist()
        footer = pq.read_metadata(f).metadata
        assert footer[b"hoodie_min_record_key"].decode() == min(keys)
        assert footer[b"hoodie_max_record_key"].decode() == max(keys)
        assert b"parquet.avro.schema" in footer and b"ARROW:schema" not in footer
        expected_seqnos = [f"{instant}_{task_partition}_{i}" for i in range(table.num_rows)]
        assert table.column("_hoodie_commit_seqno").to_pylist() == expected_seqnos
        assert set(table.column("_hoodie_file_name").to_pylist()) == {f.name}
        assert set(table.column("_hoodie_partition_path").to_pylist()) == {f.parent.name}
    # one file id prefix per task
    assert all(len(p) == 1 for p in prefixes.values()) and len(prefixes) == 2
    read = hudi_rs_rows(path)
    assert sorted((r["id"], r["dt"], r["ts"], r["v"]) for r in read) == sorted(rows)
    assert {r["_hoodie_commit_time"] for r in read} == {result.instant_time}


def test_bulk_insert_rolls_over_to_new_file_groups_at_max_file_size(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    rows = [(f"k{i:04d}", "p0", i, f"v{i}") for i in range(25)]
    options = _options(
        **{
            "hoodie.parquet.max.file.size": "10240",
            "hoodie.copyonwrite.record.size.estimate": "1024",
        }
    )  # 10 records a file
    result = write_hudi(spark.createDataFrame(rows, SCHEMA).coalesce(1), str(path), options)
    assert sorted(s.num_writes for s in result.write_stats) == [5, 10, 10]
    assert len({s.file_id for s in result.write_stats}) == 3
    assert sorted((r["id"], r["ts"]) for r in hudi_rs_rows(path)) == [(r[0], r[2]) for r in rows]


def test_bulk_insert_null_key_fails_before_a_file_is_written(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_hudi(spark.createDataFrame(_rows(3), SCHEMA), str(path), _options())
    before = timeline_files(path), _data_files(path)
    bad = spark.createDataFrame([("k9", "p0", 9, "a"), (None, "p1", 10, "b")], SCHEMA)
    with pytest.raises(RecordKeyError, match="'id'"):
        write_hudi(bad, str(path), _options())
    assert (timeline_files(path), _data_files(path)) == before


def test_task_writer_streams_row_groups_within_its_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task holds at most about ``_BUFFER_BYTES`` of rows: past it, the biggest file group's
    rows are written out as a row group; the files hold every row in arrival order."""
    monkeypatch.setattr(bulk_insert, "_BUFFER_BYTES", 2_000)
    monkeypatch.setattr(bulk_insert, "_CHUNK_ROWS", 50)
    commit_schema = (
        '{"type":"record","name":"bulk_record","fields":['
        '{"name":"id","type":["null","string"],"default":null},'
        '{"name":"dt","type":["null","string"],"default":null}]}'
    )
    ctx = WriteContext(
        base_path=str(tmp_path),
        instant_time="20240101000000000",
        operation=WriteOperation.BULK_INSERT,
        arrow_schema=table_arrow_schema(commit_schema),
        avro_schema_with_meta=avro_schema_with_meta(commit_schema),
        merge_spec=MergeSpec(),
        combine=False,
        bloom=BloomFilterSpec(),
    )
    ids = [f"k{i:03d}" for i in range(300)]
    paths = [f"p{i % 2}" for i in range(300)]
    batches = [
        pa.RecordBatch.from_pydict(
            {
                "id": ids[i : i + 30],
                "dt": paths[i : i + 30],
                "_hoodie_record_key": ids[i : i + 30],
                "_hoodie_partition_path": paths[i : i + 30],
            }
        )
        for i in range(0, 300, 30)
    ]
    stats = bulk_insert.write_task_records(
        batches, ctx, TaskInfo(1, 7), partition_id=3, rows_per_file=1_000
    )
    assert sorted(s.partition_path for s in stats) == ["p0", "p1"]
    storage = Storage(str(tmp_path))
    for stat in stats:
        meta = pq.read_metadata(storage.full_path(stat.path or ""))
        assert meta.num_row_groups > 1  # streamed, not held until the end
        table = pq.read_table(storage.full_path(stat.path or ""))
        expected = [k for k, p in zip(ids, paths, strict=True) if p == stat.partition_path]
        assert table.column("id").to_pylist() == expected
        assert table.column("_hoodie_commit_seqno").to_pylist() == [
            f"20240101000000000_3_{i}" for i in range(len(expected))
        ]


def test_bulk_insert_sort_modes(spark: Any, tmp_path: Path) -> None:
    """The PARTITION_* modes route records to one file group per partition path, keys sorted;
    GLOBAL_SORT is refused before anything is written."""
    rows = _rows(30)
    df = spark.createDataFrame(rows, SCHEMA).repartition(2)
    path = tmp_path / "t"
    write_hudi(df, str(path), _options(**{"hoodie.bulkinsert.sort.mode": "PARTITION_SORT"}))
    files = _data_files(path)
    assert sorted(f.parent.name for f in files) == ["p0", "p1", "p2"]
    for f in files:
        keys = pq.read_table(f).column("_hoodie_record_key").to_pylist()
        assert keys == sorted(keys)
    assert sorted(r["id"] for r in hudi_rs_rows(path)) == [r[0] for r in rows]
    refused = tmp_path / "g"
    with pytest.raises(ConfigError, match=r"hoodie\.bulkinsert\.sort\.mode"):
        write_hudi(df, str(refused), _options(**{"hoodie.bulkinsert.sort.mode": "GLOBAL_SORT"}))
    assert not refused.exists()
