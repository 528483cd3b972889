"""Tables on S3 (the local server): every operation and table service, read back by the engine's
readers and by hudi-rs through its own S3 support."""

from __future__ import annotations

import pytest

from engine import HudiTable, read_hudi, write_hudi
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options
from tests.s3.server import S3Server

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def _data(rows: list[tuple[str, str, int, str]]) -> dict[str, tuple[int, str]]:
    return {r[0]: (r[2], r[3]) for r in rows}


def _engine_rows(spark, path: str) -> dict[str, tuple[int, str]]:  # type: ignore[no-untyped-def]
    return {r["id"]: (r["ts"], r["v"]) for r in read_hudi(spark, path).collect()}


def test_cow_write_read_on_s3(spark, s3: S3Server) -> None:  # type: ignore[no-untyped-def]
    path = s3.table_uri("cow")
    rows = [(f"k{i}", f"2024-01-0{i % 2 + 1}", i, f"v{i}") for i in range(6)]
    opts = write_options("orders", {"hoodie.datasource.write.table.type": "COPY_ON_WRITE"})
    write_hudi(spark.createDataFrame(rows, SCHEMA), path, opts)
    assert _engine_rows(spark, path) == _data(rows)
    got = {r["id"]: (r["ts"], r["v"]) for r in hudi_rs_rows(path)}
    assert got == _data(rows)
    assert HudiTable(path).exists
