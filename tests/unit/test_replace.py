"""Replace writes without Spark: the requested metadata, the replaced file groups (checked
against a table Apache Hudi wrote with INSERT_OVERWRITE_TABLE), and delete_partition."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from engine.config import parse_options
from engine.errors import ConfigError
from engine.fs.storage import Storage
from engine.timeline.timeline import Timeline
from engine.write.replace import (
    delete_partitions,
    partitions_to_delete,
    plan_replaced_file_ids,
    requested_replace_metadata,
)
from tests.hudi_rs import hudi_rs_rows

pytestmark = pytest.mark.unit

OVERWRITE_TABLE = "cow__v6_simplekeygen_nonhivestyle_overwritetable"
REPLACE_INSTANT = "20240707001303088"


def test_requested_replace_metadata_all_null_like_spark(corpus_table: Any) -> None:
    ours = list(fastavro.reader(io.BytesIO(requested_replace_metadata())))
    hudi_file = (
        corpus_table(OVERWRITE_TABLE) / ".hoodie" / f"{REPLACE_INSTANT}.replacecommit.requested"
    )
    with open(hudi_file, "rb") as f:
        reader = fastavro.reader(f)
        theirs = list(reader)
        their_fields = [field["name"] for field in reader.writer_schema["fields"]]  # type: ignore[index]
    assert (
        ours
        == theirs
        == [{"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}]
    )
    assert [
        f["name"]
        for f in fastavro.reader(io.BytesIO(requested_replace_metadata())).writer_schema["fields"]
    ] == their_fields  # type: ignore[index]


def test_plan_replaced_file_ids_insert_overwrite_table_matches_apache_hudi(
    corpus_table: Any,
) -> None:
    path = corpus_table(OVERWRITE_TABLE)
    storage = Storage(str(path))
    timeline = Timeline.load(storage)
    expected = json.loads((path / ".hoodie" / f"{REPLACE_INSTANT}.replacecommit").read_text())
    before = timeline.until(str(int(REPLACE_INSTANT) - 1))  # the table the replace started on
    written = list(expected["partitionToWriteStats"])
    ours = plan_replaced_file_ids(storage, before, "insert_overwrite_table", written)
    assert ours == {p: sorted(ids) for p, ids in expected["partitionToReplaceFileIds"].items()}


def test_plan_replaced_file_ids_insert_overwrite_only_written_partitions(
    corpus_table: Any,
) -> None:
    path = corpus_table(OVERWRITE_TABLE)
    storage = Storage(str(path))
    before = Timeline.load(storage).until(str(int(REPLACE_INSTANT) - 1))
    ours = plan_replaced_file_ids(storage, before, "insert_overwrite", ["20", "40"])
    assert ours == {"20": ["88163884-fef0-4aab-865d-c72327a8a1d5-0"], "40": []}


def test_plan_replaced_file_ids_after_replacecommit_sees_only_new_groups(
    corpus_table: Any,
) -> None:
    path = corpus_table(OVERWRITE_TABLE)
    storage = Storage(str(path))
    ours = plan_replaced_file_ids(storage, Timeline.load(storage), "insert_overwrite_table", [])
    # partitions whose groups were all replaced are still partitions: listed with no ids
    assert ours == {"10": [], "20": [], "30": ["ebcb261d-62d3-4895-90ec-5b3c9622dff4-0"]}


def test_partitions_to_delete_missing_option_raises() -> None:
    with pytest.raises(ConfigError, match=r"hoodie\.datasource\.write\.partitions\.to\.delete"):
        partitions_to_delete(parse_options({}))
    cfg = parse_options({"hoodie.datasource.write.partitions.to.delete": "/a/b/, c"})
    assert partitions_to_delete(cfg) == ("a/b", "c")


@pytest.mark.interop
def test_delete_partitions_corpus_copy_hides_partition_for_hudi_rs(corpus_copy: Any) -> None:
    path: Path = corpus_copy("cow__v6_simplekeygen_nonhivestyle")
    before = hudi_rs_rows(str(path))
    partitions = {r["_hoodie_partition_path"] for r in before}
    victim = sorted(partitions)[0]
    storage = Storage(str(path))
    groups = {
        f.name.split("_")[0] for f in (path / victim).iterdir() if f.name.endswith(".parquet")
    }
    cfg = parse_options({"hoodie.datasource.write.partitions.to.delete": victim})
    instant_time, rolled_back = delete_partitions(storage, cfg)
    assert rolled_back == []
    meta = json.loads((path / ".hoodie" / f"{instant_time}.replacecommit").read_text())
    assert meta["operationType"] == "DELETE_PARTITION"
    assert meta["partitionToWriteStats"] == {}
    assert meta["partitionToReplaceFileIds"] == {victim: sorted(groups)}
    kept = [r for r in before if r["_hoodie_partition_path"] != victim]
    assert kept and len(kept) < len(before)
    assert sorted(hudi_rs_rows(str(path)), key=repr) == sorted(kept, key=repr)
    last = Timeline.load(storage).commits_timeline()[-2].instant_time
    assert sorted(hudi_rs_rows(str(path), last), key=repr) == sorted(before, key=repr)
