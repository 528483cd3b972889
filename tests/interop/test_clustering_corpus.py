"""Our clustering on the tables Apache Hudi 1.1 wrote and clustered (the corpus's version 9
tables: metadata table with files, column stats and record index): the rows stay the same for
our reader and hudi-rs, the metadata table lists the new files, their column stats replace the
old files' and every key's record index entry points at its new file group; an upsert through
the record index afterwards updates the clustered key in place."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import read_hudi, spark_table, write_hudi
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_rows
from tests.interop.index_partitions import column_stats_match_files, record_index_matches_rows
from tests.interop.test_metadata_write import listing_matches_storage

pytestmark = [pytest.mark.interop, pytest.mark.spark]

TABLES = ("cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta")
META = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key")


def _rows(rows: list[dict[str, Any]]) -> dict[str, str]:
    """txn_id -> the row (data and the kept meta fields) as canonical text."""
    return {
        r["txn_id"]: json.dumps(
            {k: v for k, v in r.items() if not k.startswith("_") or k in META},
            sort_keys=True,
            default=str,
        )
        for r in rows
    }


@pytest.mark.parametrize("name", TABLES)
def test_we_cluster_a_table_hudi_clustered(
    spark: Any, corpus_copy: Callable[[str], Path], name: str
) -> None:
    base = corpus_copy(name)
    before = _rows(read_table(str(base)).to_pylist())
    assert _rows(hudi_rs_rows(base)) == before
    table = spark_table(str(base))
    (t,) = table.cluster(sort_columns=["account_id", "txn_ts"], strategy="hilbert")
    assert _rows(read_table(str(base)).to_pylist()) == before
    assert _rows(hudi_rs_rows(base)) == before
    listing_matches_storage(str(base))
    record_index_matches_rows(str(base))
    column_stats_match_files(str(base))

    key = sorted(before)[0]
    row = read_hudi(spark, str(base)).where(f"txn_id = '{key}'")
    data = row.drop(*[c for c in row.columns if c.startswith("_hoodie")])
    changed = data.withColumn("merchant_name", data["merchant_name"].substr(0, 0))
    options = {
        "hoodie.datasource.write.recordkey.field": "txn_id",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.precombine.field": "txn_ts",
        "hoodie.index.type": "RECORD_INDEX",
    }
    write_hudi(changed, str(base), options)
    after = {r["txn_id"]: r for r in hudi_rs_rows(base)}
    assert set(after) == set(before)
    assert after[key]["merchant_name"] == ""
    # the update found the key in the file group the clustering wrote (through the record index)
    timeline = Timeline.load(Storage(str(base)))
    done = timeline.get(t)
    assert done is not None
    clustered = {s.file_id for s in timeline.read_commit_metadata(done).write_stats()}
    assert after[key]["_hoodie_file_name"].split("_")[0] in clustered
    record_index_matches_rows(str(base))
