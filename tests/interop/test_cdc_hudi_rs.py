"""What hudi-rs 0.5 makes of ``.cdc`` log files in merge-on-read file slices.

hudi-rs lists ``.cdc`` files among a slice's log files. This measures whether that changes what it
reads: ``.cdc`` files as this engine encodes them (one CDC_DATA_BLOCK per logging mode, the
update's after image differing from the stored row) are added to the slices of a merge-on-read
table Apache Hudi wrote, one slice with a log file and one without; hudi-rs must read exactly
the rows it read before. (The merge-on-read CDC tables this engine writes are measured the same
way in ``tests/integration/test_cdc_mor.py`` and ``tests/property/test_cdc_property.py``.)
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.fs.storage import Storage
from engine.io.logfile import HoodieLogBlockType, encode_avro_data_block
from engine.model.cdc_schema import SupplementalLoggingMode, cdc_avro_schema
from engine.model.schema import META_COLUMNS, RECORD_KEY_COLUMN
from engine.timeline.timeline import Timeline
from engine.write.cdc import CdcChanges, cdc_file_name, cdc_records
from tests.hudi_rs import hudi_rs_rows, hudi_rs_table

pytestmark = pytest.mark.interop

TABLE = "trips_mor_avro__v6_trips_8i1u"


def _add_cdc_file(base: Path, partition: str, mode: SupplementalLoggingMode, schema: str) -> str:
    base_file = sorted((base / partition).glob("*.parquet"))[0]
    file_id, _, instant = base_file.stem.split("_")
    stored = pq.read_table(base_file)
    data = stored.drop_columns([c for c in META_COLUMNS if c in stored.column_names]).slice(0, 1)
    changed = data.set_column(
        data.schema.get_field_index("fare"), "fare", pa.array([12345.0], pa.float64())
    )

    def image(t: pa.Table) -> pa.StructArray:
        arrays = [c.combine_chunks() for c in t.columns]
        return pa.StructArray.from_arrays(arrays, fields=list(t.schema))

    key = stored.column(RECORD_KEY_COLUMN)[0].as_py()
    changes = CdcChanges(
        pa.table({"op": ["u"], "record_key": [key], "before": image(data), "after": image(changed)})
    )
    block = encode_avro_data_block(
        cdc_records(changes, mode, instant),
        cdc_avro_schema(mode, schema),
        instant,
        block_type=HoodieLogBlockType.CDC_DATA_BLOCK,
    )
    name = cdc_file_name(file_id, instant, "0-99-99")
    (base / partition / name).write_bytes(block)
    return f"{partition}/{name}"


@pytest.mark.parametrize("mode", list(SupplementalLoggingMode))
def test_hudi_rs_lists_cdc_files_in_mor_slices_and_reads_the_same_rows(corpus_copy, mode) -> None:  # type: ignore[no-untyped-def]
    base = corpus_copy(TABLE)
    before = sorted((r["_hoodie_record_key"], r["fare"]) for r in hudi_rs_rows(base))
    schema = Timeline.load(Storage(str(base))).latest_schema()
    assert schema is not None
    added = {
        _add_cdc_file(base, partition, mode, schema)
        for partition in ("city=san_francisco", "city=chennai")
    }
    listed = {
        log
        for file_slice in hudi_rs_table(base).get_file_slices()
        for log in file_slice.log_files_relative_paths()
    }
    assert added <= listed  # hudi-rs takes them for log files of the slice
    after = sorted((r["_hoodie_record_key"], r["fare"]) for r in hudi_rs_rows(base))
    assert after == before
