"""hudi-rs, the independent reader the suite judges by, reads the Apache Hudi corpus."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

pytestmark = pytest.mark.interop


def test_hudi_rs_reads_corpus_cow_table_expected_rows(corpus_table, shared_dir) -> None:  # type: ignore[no-untyped-def]
    from hudi import HudiTableBuilder

    name = "cow__v6_simplekeygen_nonhivestyle"
    table = HudiTableBuilder.from_base_uri(str(corpus_table(name))).build()
    batches = table.read()
    rows = pa.Table.from_batches(batches).to_pylist() if batches else []
    golden = (shared_dir / "corpus" / "golden" / name / "snapshot.jsonl").read_text().splitlines()
    assert len(rows) == len(golden) > 0
    assert sorted(r["id"] for r in rows) == sorted(json.loads(g)["id"] for g in golden)
