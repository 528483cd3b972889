"""The record index Apache Hudi keeps (``record_index`` partition of the corpus's metadata
tables): every live key of the table, and only those, maps to the partition and file group our
reader finds it in, and sits in the file group Hudi's key hash picks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.fs.storage import Storage
from engine.io.hfile import read_hfile
from engine.io.logfile import HoodieLogBlockType, read_log_blocks
from engine.metadata.record_index import read_record_index, record_index_file_group
from engine.read.arrow import read_table
from engine.timeline.timeline import Timeline
from tests.interop.test_metadata_files_corpus import FILES_TABLES

pytestmark = pytest.mark.interop

HFILE_DATA_BLOCK = HoodieLogBlockType.HFILE_DATA_BLOCK


@pytest.mark.parametrize("table", FILES_TABLES)
def test_every_live_key_maps_to_its_file_group(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    base = corpus_table(table)
    storage = Storage(str(base))
    index = read_record_index(storage, Timeline.load(storage))
    assert index is not None
    rows = read_table(str(base)).to_pylist()
    live = {
        r["_hoodie_record_key"]: (r["_hoodie_partition_path"], r["_hoodie_file_name"].split("_")[0])
        for r in rows
    }
    assert {k: (v.partition_path, v.file_id) for k, v in index.items()} == live
    assert len(live) >= 3


@pytest.mark.parametrize("table", ("cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta"))
def test_keys_sit_in_the_file_group_their_hash_picks(
    table: str, corpus_table: Callable[[str], Path]
) -> None:
    folder = corpus_table(table) / ".hoodie" / "metadata" / "record_index"
    groups = sorted({p.name.split("_")[0].lstrip(".") for p in folder.iterdir() if "-0" in p.name})
    assert len(groups) == 10
    seen = 0
    for path in folder.iterdir():
        if path.name.endswith(".hfile"):
            contents = [path.read_bytes()]
        elif ".log." in path.name:
            blocks = read_log_blocks(path.read_bytes())
            contents = [b.content for b in blocks if b.block_type is HFILE_DATA_BLOCK]
        else:
            continue
        group = groups.index(path.name.split("_")[0].lstrip("."))
        for content in contents:
            for key, _ in read_hfile(content).entries:
                assert record_index_file_group(key.decode(), len(groups)) == group, key
                seen += 1
    assert seen >= 20
