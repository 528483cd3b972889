"""On the local S3 server: a table written with the metadata table on reads back the same rows
through hudi-rs and our reader, and its snapshot read sends fewer LIST requests than the same
table written without it (the server's own request log is counted)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import write_hudi
from engine.cli import canonical_json_lines
from engine.read.arrow import read_table
from tests.hudi_rs import hudi_rs_rows
from tests.interop.test_metadata_write import SCHEMA, listing_matches_storage, options
from tests.s3.server import S3Server
from tests.s3.test_s3_metadata_listing import _list_requests

pytestmark = [pytest.mark.interop, pytest.mark.spark]


def test_written_metadata_table_on_s3_lists_with_fewer_requests(
    spark: Any, s3: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> None:
    log = max(
        tmp_path_factory.getbasetemp().glob("moto[0-9]*/server.log"),
        key=lambda p: p.stat().st_mtime,
    )
    counts: dict[bool, int] = {}
    rows: dict[bool, list[str]] = {}
    for enabled in (True, False):
        uri = s3.table_uri("mdt-write")
        opts = {**options("MERGE_ON_READ", 9), "hoodie.metadata.enable": str(enabled).lower()}
        for n in range(3):
            batch = [(i, f"r{i % 4}", n, f"v{n}") for i in range(n, n + 6)]
            write_hudi(spark.createDataFrame(batch, SCHEMA), uri, opts)
        if enabled:
            listing_matches_storage(uri)
        start = Path(log).stat().st_size
        rows[enabled] = sorted(canonical_json_lines(read_table(uri).to_pylist()))
        counts[enabled] = len(_list_requests(log, start))
        assert sorted(canonical_json_lines(hudi_rs_rows(uri))) == rows[enabled]
    assert len(rows[True]) == len(rows[False]) == 8
    # the data timeline, the metadata timeline and the files partition, against the data
    # timeline, the base path and each of the four partitions
    assert counts[True] < counts[False], counts
    print(
        f"LIST requests of a snapshot read: {counts[True]} through files, {counts[False]} listing"
    )
