"""Small-file handling: many small upserts must not leave many small base files."""

from __future__ import annotations

import math

import pytest

from engine import write_hudi
from tests.hudi_rs import hudi_rs_rows, hudi_rs_table
from tests.keyed_table import write_options

pytestmark = pytest.mark.spark

MAX_FILE_SIZE = 120 * 1024
# a bloom filter sized for Hudi's default 60,000 keys is 430 KB of footer in every base file (as
# in Hudi's): at 120 KB files it would dwarf the data and the record size estimate built from
# it; sized for a file's 1,000 keys it is 3 KB
BLOOM_ENTRIES = 1000


def test_upserts_of_new_rows_pack_into_few_files(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    options = write_options(
        "events",
        {
            "hoodie.parquet.max.file.size": str(MAX_FILE_SIZE),
            "hoodie.parquet.small.file.limit": str(MAX_FILE_SIZE),
            "hoodie.index.bloom.num_entries": str(BLOOM_ENTRIES),
        },
    )
    batches, per_batch = 30, 1000
    for b in range(batches):
        df = spark.range(b * per_batch, (b + 1) * per_batch).selectExpr(
            "format_string('key-%08d', id) as id",
            "'2024-01-01' as dt",
            "id as ts",
            "sha2(cast(id as string), 256) as payload",
        )
        write_hudi(df, path, options)
    slices = hudi_rs_table(path).get_file_slices()
    total = sum(s.base_file_size for s in slices)
    assert len(slices) <= math.ceil(total / MAX_FILE_SIZE) + 1, [s.base_file_size for s in slices]
    assert len(hudi_rs_rows(path)) == batches * per_batch
