"""hudi-rs, the independent reader the suite judges by, reads the Apache Hudi corpus."""

from __future__ import annotations

import json

import pytest

from tests.hudi_rs import hudi_rs_rows

pytestmark = pytest.mark.interop


def test_hudi_rs_reads_corpus_cow_table_expected_rows(corpus_table, shared_dir) -> None:  # type: ignore[no-untyped-def]
    name = "cow__v6_simplekeygen_nonhivestyle"
    rows = hudi_rs_rows(corpus_table(name))
    golden = (shared_dir / "corpus" / "golden" / name / "snapshot.jsonl").read_text().splitlines()
    assert len(rows) == len(golden) > 0
    assert sorted(r["id"] for r in rows) == sorted(json.loads(g)["id"] for g in golden)
