"""Property: the record index cells, written as Hudi lays them out, locate every key as a dict
oracle of the table's keys does.

A random table (keys with non-ASCII and astral characters, so hashing is Java's UTF-16 hash and
HFile rows sort by UTF-8 bytes) initializes a ``record_index`` partition of 1-4 file groups: base
HFiles of :func:`initialization_cells` at the initialization instant. Then random commits insert,
update in place, move (another partition and file group) and delete keys; each writes the
:func:`commit_cells` as log files of an HFILE_DATA_BLOCK and a DELETE_BLOCK (our HFile and log
block writers), and some never complete on the data timeline (their blocks must not count).
After the last commit :func:`locate` over every key ever seen (and one never seen) equals the
oracle, and so does the whole index read.
"""

from __future__ import annotations

import os
import struct
import tempfile
from collections.abc import Mapping
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fs.storage import Storage
from engine.io.delete_block import encode_delete_record_list
from engine.io.hfile_writer import write_hfile
from engine.io.logfile import HeaderMetadataType, HoodieLogBlockType, encode_block
from engine.metadata.record_index import (
    RecordLocation,
    instant_time_millis,
    locate,
    read_record_index,
)
from engine.metadata.record_index_writer import (
    FileGroupCells,
    KeyLocation,
    commit_cells,
    initialization_cells,
)
from engine.timeline.timeline import Timeline
from tests.unit.test_record_index import SCHEMA

EXAMPLES = 300 if os.environ.get("HUDI_TEST_LONG") else 40
INIT = "00000000000000002"
FILE_IDS = (
    "5c3e0c0b-8f1a-4a6e-9d2b-0f6c2b1e7a10-0",
    "0a1b2c3d-0000-4000-8000-ffffffffffff-3",
    "ffffffff-ffff-4fff-bfff-000000000001-0",
)
PARTITIONS = ("", "dt=2024-01-01", "region=eu")

key = st.text(alphabet="abcé☃\U0001d11e", min_size=1, max_size=3)
place = st.tuples(st.sampled_from(PARTITIONS), st.sampled_from(FILE_IDS))
commit = st.tuples(
    st.dictionaries(key, st.one_of(st.none(), place), max_size=6),  # None deletes the key
    st.booleans(),  # completed on the data timeline
)


def _instant(i: int) -> str:
    return f"2025010112{i:02d}00{i:03d}"


def _log_file(cells: FileGroupCells, instant: str) -> bytes:
    """One commit's log file of a file group: the data block, then the delete block."""
    header = {HeaderMetadataType.INSTANT_TIME: instant, HeaderMetadataType.SCHEMA: SCHEMA}
    out = b""
    if cells.upserts:
        hfile = write_hfile(cells.upserts, create_time_ms=0, file_info={"schema": SCHEMA.encode()})
        out += encode_block(HoodieLogBlockType.HFILE_DATA_BLOCK, header, hfile)
    if cells.deletes:
        payload = encode_delete_record_list(cells.delete_records())
        content = struct.pack(">ii", 3, len(payload)) + payload
        out += encode_block(HoodieLogBlockType.DELETE_BLOCK, header, content)
    return out


def _table(root: Path) -> Path:
    for folder in (root / ".hoodie", root / ".hoodie/metadata/.hoodie"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "hoodie.properties").write_text(
            "hoodie.table.version=6\nhoodie.timeline.layout.version=1\n"
        )
    (root / ".hoodie/metadata/.hoodie" / f"{INIT}.deltacommit").write_bytes(b"")
    (root / ".hoodie/metadata/record_index").mkdir()
    return root / ".hoodie/metadata/record_index"


def _initialize(folder: Path, table: Mapping[str, tuple[str, str, str]], groups: int) -> None:
    rows = [KeyLocation(k, p, f, t) for k, (p, f, t) in table.items()]
    for cells in initialization_cells(rows, groups, SCHEMA):
        hfile = write_hfile(cells.upserts, create_time_ms=0, file_info={"schema": SCHEMA.encode()})
        (folder / f"{cells.file_id}_0-0-0_{INIT}.hfile").write_bytes(hfile)


def _commit(
    root: Path, number: int, changes: Mapping[str, tuple[str, str] | None],
    table: dict[str, tuple[str, str, str]], groups: int, completed: bool,
) -> None:  # fmt: skip
    """Apply ``changes`` to the table (the oracle, when the data commit completes) and write
    their cells: a key the table lacks is inserted, one it holds moves or is updated in place."""
    instant = _instant(number)
    inserted, moved, deleted = {}, {}, []
    for k, new in changes.items():
        if new is None:
            deleted += [k] if k in table else []
        elif k not in table:
            inserted[k] = new
        elif table[k][:2] != new:
            moved[k] = new
    cells = commit_cells(instant, groups, SCHEMA, inserted=inserted, moved=moved, deleted=deleted)
    for cell in cells:
        name = f".{cell.file_id}_{INIT}.log.{number + 1}_0-0-0"
        (root / ".hoodie/metadata/record_index" / name).write_bytes(_log_file(cell, instant))
    (root / ".hoodie/metadata/.hoodie" / f"{instant}.deltacommit").write_bytes(b"")
    (root / ".hoodie" / f"{instant}.commit.requested").write_bytes(b"")
    if not completed:
        return
    (root / ".hoodie" / f"{instant}.commit").write_bytes(b"")
    for k, new in changes.items():
        if new is None:
            table.pop(k, None)
        elif k not in table or table[k][:2] != new:
            table[k] = (*new, instant)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    initial=st.dictionaries(key, place, max_size=8),
    groups=st.integers(1, 4),
    commits=st.lists(commit, max_size=4),
)
def test_locate_equals_the_oracle(
    initial: dict[str, tuple[str, str]], groups: int, commits: list[tuple[dict[str, object], bool]]
) -> None:
    table = {k: (p, f, _instant(0)) for k, (p, f) in initial.items()}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".hoodie").mkdir()
        (root / ".hoodie" / f"{_instant(0)}.commit").write_bytes(b"")
        folder = _table(root)
        _initialize(folder, table, groups)
        for number, (changes, completed) in enumerate(commits, start=1):
            _commit(root, number, changes, table, groups, completed)  # type: ignore[arg-type]
        storage = Storage(tmp)
        timeline = Timeline.load(storage)
        want = {k: RecordLocation(p, f, instant_time_millis(t)) for k, (p, f, t) in table.items()}
        seen = {*initial, *(k for changes, _ in commits for k in changes), "never-written"}
        assert locate(storage, timeline, seen) == dict(sorted(want.items()))
        assert read_record_index(storage, timeline) == dict(sorted(want.items()))
