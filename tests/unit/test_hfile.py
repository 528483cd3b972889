"""HFile writing and reading: a round trip on random sorted keys (hypothesis), Hudi's block
split rule, Java's HashMap order, and the errors bad input raises."""

from __future__ import annotations

import os
import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import HFileFormatError
from engine.io import hfile
from engine.io.hfile import (
    DATA_MAGIC,
    CompressionCodec,
    _data_index,
    _hudi_cell_starts,
    _matched_rows,
    _pair_starts,
    _root_index,
    _searched_row,
    _walked_pair_starts,
    lookup_hfile,
    read_hfile,
)
from engine.io.hfile_writer import write_hfile
from engine.io.java_hashmap import java_hashmap_order, java_string_hash

pytestmark = pytest.mark.unit

EXAMPLES = 400 if os.environ.get("HUDI_TEST_LONG") else 60

pairs_strategy = st.lists(
    st.tuples(st.binary(min_size=1, max_size=40), st.binary(max_size=300)), max_size=60
).map(lambda pairs: sorted(pairs, key=lambda p: p[0]))


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    pairs=pairs_strategy,
    block_size=st.sampled_from([64, 512, 1024 * 1024]),
    codec=st.sampled_from([CompressionCodec.GZ, CompressionCodec.NONE]),
    info=st.dictionaries(st.text(min_size=1, max_size=12), st.binary(max_size=20), max_size=5),
    bloom=st.binary(max_size=500),
)
def test_round_trip(
    pairs: list[tuple[bytes, bytes]],
    block_size: int,
    codec: CompressionCodec,
    info: dict[str, bytes],
    bloom: bytes,
) -> None:
    data = write_hfile(
        pairs,
        create_time_ms=1_700_000_000_000,
        file_info=info,
        meta={"bloomFilter": bloom},
        codec=codec,
        block_size=block_size,
    )
    hfile = read_hfile(data)
    assert list(hfile.entries) == pairs
    assert hfile.meta == {"bloomFilter": bloom}
    for name, value in info.items():
        assert hfile.file_info[name] == value
    assert hfile.create_time_ms == 1_700_000_000_000
    assert hfile.trailer.compression_codec is codec
    data_blocks = [b for b in hfile.blocks if b.magic == DATA_MAGIC]
    assert hfile.trailer.data_index_count == len(data_blocks)
    assert data_blocks[0].previous_offset == -1 if data_blocks else not pairs


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    pairs=pairs_strategy,
    block_size=st.sampled_from([64, 512, 1024 * 1024]),
    codec=st.sampled_from([CompressionCodec.GZ, CompressionCodec.NONE]),
    others=st.lists(st.binary(max_size=41), max_size=20),
    data=st.data(),
)
def test_lookup_answers_as_a_whole_read(
    pairs: list[tuple[bytes, bytes]],
    block_size: int,
    codec: CompressionCodec,
    others: list[bytes],
    data: st.DataObject,
) -> None:
    """Looking rows up through the block index finds exactly what a whole read holds (of equal
    rows the last), for stored rows, rows between and around them, and the empty row."""
    hfile_bytes = write_hfile(pairs, create_time_ms=0, codec=codec, block_size=block_size)
    whole = dict(read_hfile(hfile_bytes).entries)
    stored = data.draw(st.lists(st.sampled_from(sorted(whole)), max_size=10)) if whole else []
    wanted = [*stored, *others, b""]
    found, info = lookup_hfile(hfile_bytes, wanted)
    assert found == {row: whole[row] for row in wanted if row in whole}
    assert info == read_hfile(hfile_bytes).file_info
    # the same through a file read by ranges, its blocks read in runs of any span
    run_bytes = data.draw(st.sampled_from([1, 300, hfile._RUN_BYTES]))
    original, hfile._RUN_BYTES = hfile._RUN_BYTES, run_bytes
    try:
        assert lookup_hfile(pa.BufferReader(hfile_bytes), wanted) == (found, info)
    finally:
        hfile._RUN_BYTES = original


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    rows=st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=200, unique=True),
    one_length=st.booleans(),
    block_size=st.sampled_from([40, 200, 4096]),
)
def test_data_index_cut_at_once_equals_the_entry_walk(
    rows: list[bytes], one_length: bool, block_size: int
) -> None:
    """The root data index cut out at once (keys of one length) holds the offsets, sizes and
    first rows the entry-by-entry read finds; keys of several lengths are read entry by entry."""
    if one_length:
        rows = sorted({row.ljust(12, b"k") for row in rows})
    data = write_hfile(
        [(row, b"v") for row in sorted(rows)], create_time_ms=0, block_size=block_size
    )
    trailer = hfile._trailer(data)
    _, payload = hfile._block(data, trailer.load_on_open_data_offset, trailer.compression_codec)
    walked = _root_index(payload, trailer.data_index_count, False)
    index = _data_index(payload, trailer.data_index_count)
    assert list(zip(index.offsets, index.sizes, index.firsts, strict=True)) == [
        (offset, size, key[2:]) for offset, size, key in walked
    ]
    if one_length:
        assert hfile._fixed_stride_index(payload, trailer.data_index_count) is not None


def test_lookup_decompresses_only_the_blocks_that_may_hold_the_rows() -> None:
    pairs = [(b"k%03d" % i, b"v" * 50) for i in range(100)]
    data = bytearray(write_hfile(pairs, create_time_ms=0, block_size=600))
    hfile = read_hfile(bytes(data))
    last = [b for b in hfile.blocks if b.magic == DATA_MAGIC][-1]
    data[last.offset + 40 : last.offset + 60] = b"\xff" * 20  # its gzip stream, damaged
    found, _ = lookup_hfile(bytes(data), [b"k000", b"k010", b"j", b"k0105"])
    assert found == {b"k000": b"v" * 50, b"k010": b"v" * 50}
    with pytest.raises(HFileFormatError):
        lookup_hfile(bytes(data), [b"k099"])
    with pytest.raises(HFileFormatError):
        read_hfile(bytes(data))


def test_blocks_split_at_the_block_size_but_never_between_equal_keys() -> None:
    pairs = [(b"a", b"x" * 40), (b"b", b"x" * 40), (b"b", b"y" * 40), (b"c", b"x" * 40)]
    hfile = read_hfile(write_hfile(pairs, create_time_ms=0, block_size=60))
    blocks = [b for b in hfile.blocks if b.magic == DATA_MAGIC]
    # a, then both b's (equal keys stay together although past 60 bytes), then c
    assert len(blocks) == 3
    assert [b.previous_offset for b in blocks] == [-1, blocks[1].offset, blocks[2].offset]
    assert list(hfile.entries) == pairs


def test_java_hashes_and_hashmap_order() -> None:
    assert java_string_hash("schema") == 0xC9E135A1  # "schema".hashCode() as unsigned
    assert java_string_hash("") == 0
    # the order of the file info of a corpus base file (Hudi 1.1.1)
    inserted = [
        "MAX_MEMSTORE_TS_KEY", "schema", "minRecordKey", "maxRecordKey", "bloomFilterTypeCode",
        "hfile.LASTKEY", "hfile.CREATE_TIME_TS", "hfile.AVG_KEY_LEN", "hfile.AVG_VALUE_LEN",
        "KEY_VALUE_VERSION",
    ]  # fmt: skip
    assert java_hashmap_order(inserted) == [
        "schema", "bloomFilterTypeCode", "hfile.LASTKEY", "hfile.AVG_VALUE_LEN", "minRecordKey",
        "hfile.AVG_KEY_LEN", "maxRecordKey", "KEY_VALUE_VERSION", "MAX_MEMSTORE_TS_KEY",
        "hfile.CREATE_TIME_TS",
    ]  # fmt: skip


def test_unsorted_keys_are_refused() -> None:
    with pytest.raises(HFileFormatError, match="sorted"):
        write_hfile([(b"b", b""), (b"a", b"")], create_time_ms=0)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[:100], "too few"),
        (lambda d: d[:-4096] + b"XXXXXXXX" + d[-4088:], "trailer"),
        (lambda d: b"\0" * 40 + d[40:], "compress|bad size|GZ"),
    ],
)
def test_damaged_files_are_refused(damage, message: str) -> None:  # type: ignore[no-untyped-def]
    data = write_hfile([(b"k", b"v" * 100)], create_time_ms=0)
    with pytest.raises(HFileFormatError, match=message):
        read_hfile(damage(data))


def test_unsupported_codec_is_named() -> None:
    with pytest.raises(HFileFormatError, match="SNAPPY"):
        write_hfile([(b"k", b"v")], create_time_ms=0, codec=CompressionCodec.SNAPPY)


def _cell(row: bytes, value: bytes, mvcc: bytes, family: bytes = b"") -> bytes:
    """One key/value pair of a data block: Hudi's cell (empty family) or, with ``family``,
    one of HBase's; ``mvcc`` is the Hadoop vlong after it (empty: a block without)."""
    key = struct.pack(">h", len(row)) + row + bytes([len(family)]) + family
    key += struct.pack(">qb", (1 << 63) - 1, 4)
    return struct.pack(">ii", len(key), len(value)) + key + value + mvcc


# the MVCC vlongs a block may hold: Hudi's 0, and longer Hadoop vlongs (0x88: 8 more bytes)
_MVCC = st.sampled_from([b"\0", b"\x05", b"\x8f\x01", b"\x88" + bytes(range(1, 9))])
# values that hold a whole cell of the block's shape, so candidate starts fall inside them
_TRICKY_VALUE = st.builds(
    lambda row, inner, tail: _cell(row, inner, b"\0") + tail,
    st.binary(min_size=3, max_size=3),
    st.binary(max_size=8),
    st.binary(max_size=4),
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    rows=st.lists(st.binary(min_size=3, max_size=3), min_size=1, max_size=40),
    other_row_lengths=st.booleans(),
    values=st.lists(st.one_of(st.binary(max_size=60), _TRICKY_VALUE), min_size=40, max_size=40),
    mvccs=st.lists(_MVCC, min_size=40, max_size=40),
    with_mvcc=st.booleans(),
    family=st.sampled_from([b"", b"", b"f"]),
)
def test_vectorised_pair_starts_equal_the_walk(
    rows: list[bytes],
    other_row_lengths: bool,
    values: list[bytes],
    mvccs: list[bytes],
    with_mvcc: bool,
    family: bytes,
) -> None:
    """A data block's pair starts found over its bytes at once are the ones a pair-by-pair
    walk finds, for Hudi's cells of one row length, rows of other lengths, HBase cells with a
    family, values that hold whole cells, and longer MVCC vlongs; a damaged block raises."""
    if other_row_lengths:
        rows = [row * (1 + i % 3) for i, row in enumerate(rows)]
    pairs = zip(sorted(rows), values, mvccs, strict=False)
    payload = b"".join(_cell(r, v, m if with_mvcc else b"", family) for r, v, m in pairs)
    assert _pair_starts(payload, with_mvcc) == _walked_pair_starts(payload, with_mvcc)
    if family == b"" and not other_row_lengths and not any(b"\x7f" in r for r in rows):
        assert _hudi_cell_starts(payload, with_mvcc) is not None  # the vectorised path ran
    for damaged in (payload[:-1], payload + b"\0"):
        with pytest.raises(HFileFormatError):
            _pair_starts(damaged, with_mvcc)


def test_vectorised_pair_starts_of_a_record_index_block() -> None:
    """The starts of a block of record index cells (record keys of one length, Avro values),
    found at once, are the walk's; the lookup through them finds every row."""
    pairs = [(b"k%09d" % i, b"\x02\x1adt=2024-01-0%d\x00\x7f" % (i % 9) * 2) for i in range(3000)]
    data = write_hfile(pairs, create_time_ms=0, block_size=64 * 1024)
    hfile = read_hfile(data)
    assert len([b for b in hfile.blocks if b.magic == DATA_MAGIC]) > 1
    found, _ = lookup_hfile(data, [row for row, _ in pairs[::7]])
    assert found == dict(pairs[::7])


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    rows=st.lists(st.binary(min_size=2, max_size=2), min_size=1, max_size=40),
    asked=st.lists(st.binary(min_size=1, max_size=3), max_size=20),
    data=st.data(),
)
def test_rows_matched_at_once_equal_the_binary_search(
    rows: list[bytes], asked: list[bytes], data: st.DataObject
) -> None:
    """A block's rows of one length matched by hash find, for each wanted row, the pair the
    binary search finds: of equal rows the last, none for an absent row or one of another
    length."""
    rows = sorted(rows)
    payload = b"".join(_cell(r, b"v%d" % i, b"\0") for i, r in enumerate(rows))
    starts = _walked_pair_starts(payload, True)
    wanted = [*data.draw(st.lists(st.sampled_from(rows), max_size=10)), *asked]
    assert _matched_rows(payload, starts, wanted) == [
        _searched_row(payload, starts, row) for row in wanted
    ]
