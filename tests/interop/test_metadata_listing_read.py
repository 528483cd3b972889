"""Reads list through the metadata table's ``files`` partition when the table says it is ready,
as Hudi's readers do: the same rows as a storage listing and as hudi-rs, fewer directory
listings, and log blocks of data instants that did not complete are ignored."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine import HudiTable
from engine.cli import canonical_json_lines
from engine.errors import HudiError
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from tests.hudi_rs import hudi_rs_rows
from tests.interop.index_partitions import column_stats_match_files, record_index_matches_rows
from tests.interop.test_metadata_files_corpus import FILES_TABLES, files_listing
from tests.interop.test_metadata_write import listing_matches_storage

pytestmark = pytest.mark.interop


@pytest.fixture
def list_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every directory Storage lists, as a full path (the reader's LIST requests)."""
    calls: list[str] = []
    original = Storage.list_dir

    def counting(self: Storage, rel: str = "") -> list:  # type: ignore[type-arg]
        calls.append(self.full_path(rel))
        return original(self, rel)

    monkeypatch.setattr(Storage, "list_dir", counting)
    yield calls


def _without_files_index(base: Path, dest: Path) -> Path:
    """A copy of the table whose properties no longer announce the files partition."""
    shutil.copytree(base, dest)
    props = dest / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    line = re.search(r"^hoodie\.table\.metadata\.partitions=(.*)$", text, re.M)
    assert line is not None and "files" in line.group(1).split(",")
    kept = ",".join(p for p in line.group(1).split(",") if p != "files")
    props.write_text(text.replace(line.group(0), f"hoodie.table.metadata.partitions={kept}"))
    return dest


def _canonical(rows: list[dict]) -> list[str]:  # type: ignore[type-arg]
    return sorted(canonical_json_lines(rows))


@pytest.mark.parametrize("table", FILES_TABLES)
def test_rows_equal_the_listing_path_and_hudi_rs_with_fewer_listings(
    table: str, corpus_table: Callable[[str], Path], tmp_path: Path, list_calls: list[str]
) -> None:
    base = corpus_table(table)
    through_metadata = _canonical(read_table(str(base)).to_pylist())
    metadata_calls = list(list_calls)
    listed_copy = _without_files_index(base, tmp_path / table)
    list_calls.clear()
    through_listing = _canonical(read_table(str(listed_copy)).to_pylist())
    storage_calls = list(list_calls)

    assert through_metadata == through_listing
    assert through_metadata == _canonical(hudi_rs_rows(base))
    assert len(through_metadata) >= 3
    # the data timeline, the metadata timeline, the files partition: whatever the partitions
    assert [c.removeprefix(str(base)) for c in metadata_calls] == [
        "/.hoodie/timeline",
        "/.hoodie/metadata/.hoodie/timeline",
        "/.hoodie/metadata/files",
    ]
    partitions = len(files_listing(base))
    # the data timeline, the base path, then every partition directory
    assert len(storage_calls) == 2 + (partitions if partitions > 1 else 0)


@pytest.mark.parametrize(
    ("table", "instant"),
    [
        ("cow__v9_txns_simple_meta", "20260307162456179"),
        ("mor_avro__v9_txns_simple_meta", "20260307162620509"),
    ],
)
def test_a_metadata_deltacommit_of_an_unfinished_data_write_is_ignored(
    table: str, instant: str, corpus_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """The data commit at ``instant`` is made inflight again (its completed file removed): its
    metadata deltacommit is still complete, but its files must no longer be listed, and the
    rows are those of the listing path, which resolves the same visibility."""
    base = corpus_copy(table)
    before = files_listing(base)
    written = {n for files in before.values() for n in files if instant in n}
    assert written  # the commit wrote files the metadata table lists
    (completed,) = (base / ".hoodie" / "timeline").glob(f"{instant}_*")
    completed.unlink()
    after = files_listing(base)
    assert {n for files in after.values() for n in files} == {
        n for files in before.values() for n in files
    } - written
    rows = _canonical(read_table(str(base)).to_pylist())
    listed_copy = _without_files_index(base, tmp_path / "listed")
    assert rows == _canonical(read_table(str(listed_copy)).to_pylist())
    assert instant not in "".join(rows)


def test_a_version_6_table_keeps_the_storage_listing(
    corpus_copy: Callable[[str], Path], list_calls: list[str]
) -> None:
    """Table version 6 is listed from storage even when its properties name ``files`` (as
    hudi-rs does): no metadata table is read, here there is none to read."""
    base = corpus_copy("cow__v6_simplekeygen_nonhivestyle")
    expected = _canonical(read_table(str(base)).to_pylist())
    props = base / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    assert "hoodie.table.metadata.partitions=" not in text
    props.write_text(text + "hoodie.table.metadata.partitions=files\n")
    list_calls.clear()
    assert _canonical(read_table(str(base)).to_pylist()) == expected
    assert not [c for c in list_calls if "/.hoodie/metadata" in c]


def test_a_table_naming_files_without_a_metadata_table_is_listed_from_storage(
    corpus_copy: Callable[[str], Path], list_calls: list[str]
) -> None:
    """Hudi's reader finds the metadata table uninitialized and lists storage; so do we."""
    base = corpus_copy("trips_mor_avro__v8_trips_8i3u1d")
    expected = _canonical(read_table(str(base)).to_pylist())
    shutil.rmtree(base / ".hoodie" / "metadata")
    list_calls.clear()
    assert _canonical(read_table(str(base)).to_pylist()) == expected
    assert any(c.endswith("city=chennai") for c in list_calls)


def test_a_second_file_group_in_the_files_partition_is_refused(
    corpus_copy: Callable[[str], Path],
) -> None:
    base = corpus_copy("trips_mor_avro__v8_trips_8i3u1d")
    files = base / ".hoodie" / "metadata" / "files"
    (hfile,) = sorted(files.glob("*.hfile"))[-1:]
    shutil.copy(hfile, files / hfile.name.replace("files-0000-0", "files-0001-0"))
    with pytest.raises(HudiError, match="2 file groups"):
        read_table(str(base))


def test_services_keep_the_metadata_table_current(
    corpus_copy: Callable[[str], Path],
) -> None:
    """Cleaning records the files it deletes in the metadata table Hudi kept (and tombstones
    their column stats), and archival
    leaves its log blocks valid (older than the active timeline): no reader lists a cleaned
    file afterwards (with the metadata table left stale, both readers failed on one)."""
    base = corpus_copy("cow__v9_txns_simple_meta")
    expected = _canonical(read_table(str(base)).to_pylist())
    table = HudiTable(str(base))
    assert table.clean({"hoodie.cleaner.commits.retained": "1"}) is not None
    table.archive({"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"})
    assert (
        "hoodie.table.metadata.partitions=column_stats,files,record_index\n"
        in (base / ".hoodie/hoodie.properties").read_text()
    )
    listing_matches_storage(str(base))
    record_index_matches_rows(str(base))  # a clean moves no key
    column_stats_match_files(str(base))  # the cleaned files' stats are tombstoned
    assert _canonical(read_table(str(base)).to_pylist()) == expected
    assert _canonical(hudi_rs_rows(base)) == expected


def test_services_remove_the_metadata_table_when_disabled(
    corpus_copy: Callable[[str], Path],
) -> None:
    """With ``hoodie.metadata.enable=false`` a service removes it first, as Hudi does."""
    base = corpus_copy("cow__v9_txns_simple_meta")
    expected = _canonical(read_table(str(base)).to_pylist())
    table = HudiTable(str(base))
    options = {"hoodie.cleaner.commits.retained": "1", "hoodie.metadata.enable": "false"}
    assert table.clean(options) is not None
    assert not (base / ".hoodie" / "metadata").exists()
    assert "hoodie.table.metadata.partitions=\n" in (base / ".hoodie/hoodie.properties").read_text()
    assert _canonical(read_table(str(base)).to_pylist()) == expected
    assert _canonical(hudi_rs_rows(base)) == expected
