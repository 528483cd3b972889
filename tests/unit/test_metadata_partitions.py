"""A metadata partition with several file groups plugs into the writer as a producer: its
producers name the file group of each batch of cells, every group gets its initialization base
file (an empty HFile when no key maps to it) and log file, and a deltacommit writes a log file
(an HFILE_DATA_BLOCK, then a DELETE_BLOCK of its deleted keys) only for the groups it names; the
slices reader then finds each record, and each delete, in its group."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.fs.properties import write_properties
from engine.fs.storage import Storage
from engine.io.hfile import HFile
from engine.metadata.changes import FilesChange
from engine.metadata.partitions import Cell, FilesPartition, GroupCells, MetadataUpdate
from engine.metadata.slices import ValidInstants, latest_slices, slice_content
from engine.metadata.writer import (
    metadata_properties,
    metadata_schema,
    write_deltacommit,
    write_initial_file_groups,
)
from engine.timeline.timeline import Timeline

GROUPS = ("two-0000-0", "two-0001-0")


def _split(cells: list[Cell]) -> dict[str, list[Cell]]:
    """The files partition's records spread over two file groups by the key's last byte."""
    groups: dict[str, list[Cell]] = {g: [] for g in GROUPS}
    for key, value in cells:
        groups[GROUPS[key[-1] % 2]].append((key, value))
    return groups


def _keys(hfile: HFile | None) -> list[bytes]:
    return [k for k, _ in hfile.entries] if hfile else []


def test_cells_split_by_file_group_through_init_and_deltacommit(tmp_path: Path) -> None:
    files = FilesPartition()
    schema = metadata_schema(9)
    mdt = Storage(str(tmp_path / "mdt"))
    write_properties(
        mdt, metadata_properties({"hoodie.table.name": "t", "hoodie.table.version": "9"})
    )
    listing = FilesChange({"a": {"f1.parquet": 10}})  # keys __all_partitions__ (odd), a (odd)
    initial = _split(files.initial_cells(listing, schema))
    assert initial["two-0000-0"] == []
    write_initial_file_groups(mdt, "two", "00000000000000009", initial, schema)

    update = MetadataUpdate(mdt, "20240101000000000", FilesChange({"b": {"f2.parquet": 20}}))
    split = _split(files.update_cells(update, schema))  # __all_partitions__ (odd), b (even)
    content = {
        "two-0000-0": GroupCells(split["two-0000-0"]),
        "two-0001-0": GroupCells(split["two-0001-0"], deletes=("a",)),
    }
    write_deltacommit(mdt, update.instant_time, {"two": content}, schema)

    timeline = Timeline.load(mdt)
    valid = ValidInstants.of(timeline, Timeline.load(mdt))
    slices = {s.file_id: s for s in latest_slices(mdt, timeline, "two")}
    assert set(slices) == set(GROUPS)
    even_base, even_logs = slice_content(mdt, slices["two-0000-0"], valid)
    odd_base, odd_logs = slice_content(mdt, slices["two-0001-0"], valid)
    assert _keys(even_base) == [] and _keys(odd_base) == [b"__all_partitions__", b"a"]
    assert [_keys(h) for h in even_logs if isinstance(h, HFile)] == [[b"b"]]
    assert [_keys(h) for h in odd_logs if isinstance(h, HFile)] == [[b"__all_partitions__"]]
    # the initialization's empty DELETE_BLOCK, then the deltacommit's delete of "a"
    assert [d for d in odd_logs if isinstance(d, list)] == [[], ["a"]]


def test_metadata_enable_on_table_version_6_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    from engine.config import parse_options
    from engine.errors import ConfigError
    from engine.write.transaction import WriteTransaction

    path = tmp_path / "t"
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.metadata.enable": "true",
    }
    write = WriteTransaction(Storage(str(path)), parse_options(options), None, None)
    with pytest.raises(ConfigError, match=r"hoodie\.metadata\.enable=true needs table version 8"):
        write.run(None)
    assert not path.exists()
