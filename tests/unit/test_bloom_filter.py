"""Hudi's bloom filters (engine/io/bloom_filter.py): byte equality with the footers Apache Hudi
wrote in the corpus, the vectorised hashing and dynamic rows against a literal scalar port of
Hudi's Java code, the false positive rate, and clear errors."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import BloomFilterType, parse_options
from engine.errors import ConfigError, HudiError, RecordKeyError
from engine.io.bloom_filter import (
    BLOOM_FILTER_KEY,
    BLOOM_FILTER_TYPE_CODE_KEY,
    BloomFilterSpec,
    decode_footer_filter,
    key_positions,
)
from engine.model.schema import RECORD_KEY_COLUMN

CORPUS_TABLES = [
    "cow__v6_complexkeygen_hivestyle",
    "cow__v6_nonpartitioned",
    "cow__v6_simplekeygen_nonhivestyle_overwritetable",
    "cow__v6_timebasedkeygen_nonhivestyle",
    "cow__v8_complexkeygen_hivestyle",
    "cow__v9_txns_simple_meta",
    "mor_parquet__v6_complexkeygen_hivestyle",
    "trips_mor_avro__v6_trips_8i3d",
    "trips_mor_avro__v8_trips_8i3u1d",
]


def _base_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.parquet") if ".hoodie" not in p.parts)


# ---- a literal port of Hudi's Java (HashFunction, MurmurHash, InternalDynamicBloomFilter) ----


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _murmur(data: bytes, seed: int) -> int:
    """``MurmurHash.hash(data, 0, len, seed)`` with Java's signed bytes and int overflow."""
    m, length = 0x5BD1E995, len(data)
    signed = [b - 256 if b > 127 else b for b in data]
    h = _i32(seed ^ length)
    for i in range(length >> 2):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = _i32(k * m)
        k ^= (k & 0xFFFFFFFF) >> 24
        k = _i32(k * m)
        h = _i32(_i32(h * m) ^ k)
    left = length & 3
    if left:
        if left >= 3:
            h ^= _i32(signed[length - 3] << 16)
        if left >= 2:
            h ^= _i32(signed[length - 2] << 8)
        h ^= signed[length - 1]
        h = _i32(h * m)
    h ^= (h & 0xFFFFFFFF) >> 13
    h = _i32(h * m)
    h ^= (h & 0xFFFFFFFF) >> 15
    return _i32(h)


def _java_positions(key: str, hashes: int, size: int) -> list[int]:
    """``HashFunction.hash``: chained seeds, ``Math.abs(h % size)`` with Java's remainder."""
    out, seed = [], 0
    for _ in range(hashes):
        seed = _murmur(key.encode(), seed)
        rem = abs(seed) % size
        out.append(rem)
    return out


def _java_dynamic_rows(n: int, threshold: int, max_entries: int) -> tuple[list[int], int, int]:
    """Row of each key, final row count and ``currentNbRecord``: ``InternalDynamicBloomFilter``."""
    rows, current, reached, cursor, out = 1, 0, False, 0, []
    for _ in range(n):
        if reached:
            row = cursor % rows
            cursor += 1
        elif current >= threshold and rows * threshold < max_entries:
            rows += 1
            current, row = 0, rows - 1
        elif current >= threshold:
            reached, row = True, 0
        else:
            row = rows - 1
        out.append(row)
        current += 1
    return out, rows, current


# ---- tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CORPUS_TABLES)
def test_filters_built_from_a_corpus_files_keys_are_hudis_footer_bytes(
    corpus_table: Callable[[str], Path], name: str
) -> None:
    files = _base_files(corpus_table(name))
    assert files
    for path in files:
        footer = pq.read_metadata(path).metadata
        keys = pq.read_table(path, columns=[RECORD_KEY_COLUMN]).column(0)
        ours = BloomFilterSpec().new_filter()
        ours.add(keys)
        entries = ours.footer_entries()
        assert entries[BLOOM_FILTER_KEY.decode()].encode() == footer[BLOOM_FILTER_KEY], path
        assert (
            entries[BLOOM_FILTER_TYPE_CODE_KEY.decode()].encode()
            == footer[BLOOM_FILTER_TYPE_CODE_KEY]
        )
        decoded = decode_footer_filter(footer, str(path))
        assert decoded is not None and decoded.might_contain(keys).all()
        assert decoded.serialize() == base64.b64decode(footer[BLOOM_FILTER_KEY])


def test_complex_keys_whose_tail_is_no_palindrome_hash_as_hadoop_orders_the_tail(
    corpus_table: Callable[[str], Path],
) -> None:
    """The v6 complexkeygen files holding id:1,name:Alice and id:3,name:Carol (15 bytes: three
    tail bytes) hold exactly those keys; Hadoop's Murmur xors the tail bytes in the reverse
    order of the reference MurmurHash2, which only a non-palindromic tail tells apart."""
    root = corpus_table("cow__v6_complexkeygen_hivestyle")
    two_keys = [p for p in _base_files(root) if pq.read_metadata(p).num_rows == 2]
    assert two_keys
    for path in two_keys:
        footer = pq.read_metadata(path).metadata
        decoded = decode_footer_filter(footer, str(path))
        assert decoded is not None
        keys = pq.read_table(path, columns=[RECORD_KEY_COLUMN]).column(0).to_pylist()
        assert keys == ["id:1,name:Alice", "id:3,name:Carol"]
        for key in keys:
            hadoop = _java_positions(key, decoded.num_hashes, decoded.vector_size)
            assert decoded.rows[0][hadoop].all()


def test_files_without_meta_fields_carry_no_filter_nor_key_range(
    corpus_table: Callable[[str], Path],
) -> None:
    """What Hudi does for tables with hoodie.populate.meta.fields=false (no filter at all)."""
    for path in _base_files(corpus_table("cow__v6_simplekeygen_hivestyle_no_metafields")):
        footer = pq.read_metadata(path).metadata
        assert BLOOM_FILTER_KEY not in footer and b"hoodie_min_record_key" not in footer
        assert decode_footer_filter(footer, str(path)) is None


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(st.text(min_size=1, max_size=23), min_size=1, max_size=30),
    hashes=st.integers(1, 8),
    size=st.integers(1, 5000),
)
def test_vectorised_positions_equal_the_java_port(keys: list[str], hashes: int, size: int) -> None:
    got = key_positions(pa.array(keys), hashes, size)
    assert got.tolist() == [_java_positions(k, hashes, size) for k in keys]


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(st.integers(0, 9), min_size=1, max_size=6),
    threshold=st.integers(1, 4),
    max_entries=st.integers(1, 14),
)
def test_dynamic_rows_follow_hudis_state_machine_batch_after_batch(
    batches: list[int], threshold: int, max_entries: int
) -> None:
    spec = BloomFilterSpec(num_entries=threshold, fpp=0.1, max_entries=max_entries)
    bf = spec.new_filter()
    oracle = spec.new_filter()
    keys = [f"key-{i}" for i in range(sum(batches))]
    rows, count, current = _java_dynamic_rows(len(keys), threshold, max_entries)
    start = 0
    for size in batches:
        bf.add(pa.array(keys[start : start + size], pa.string()))
        start += size
    oracle.rows = [np.zeros(oracle.vector_size, np.bool_) for _ in range(count)]
    for key, row in zip(keys, rows, strict=True):
        oracle.rows[row][_java_positions(key, spec.num_hashes, spec.vector_size)] = True
    oracle.current_entries = current
    assert bf.serialize() == oracle.serialize()
    if keys:
        assert bf.might_contain(pa.array(keys)).all()


@settings(max_examples=150, deadline=None)
@given(
    stored=st.integers(0, 30),
    appended=st.lists(st.integers(0, 9), max_size=4),
    filter_type=st.sampled_from(list(BloomFilterType)),
    written_with=st.tuples(st.integers(1, 4), st.integers(1, 14)),
    continued_with=st.tuples(st.integers(1, 4), st.integers(1, 14)),
)
def test_a_stored_files_filter_continued_is_the_filter_built_over_all_its_keys(
    stored: int,
    appended: list[int],
    filter_type: BloomFilterType,
    written_with: tuple[int, int],
    continued_with: tuple[int, int],
) -> None:
    """A rewrite keeping a file's rows in place and appending others either goes on filling
    the file's footer filter, ending with the bytes of the filter built over every key in
    order, or refuses (other settings than the write's): never another filter."""
    keys = [f"key-{i}" for i in range(stored + sum(appended))]

    def spec(threshold_max: tuple[int, int]) -> BloomFilterSpec:
        return BloomFilterSpec(filter_type, threshold_max[0], 0.1, threshold_max[1])

    old = spec(written_with).new_filter()
    if stored:
        old.add(pa.array(keys[:stored]))
    footer = {k.encode(): v.encode() for k, v in old.footer_entries().items()}
    decoded = decode_footer_filter(footer, "f.parquet")
    assert decoded is not None
    new_spec = spec(continued_with)
    continued = new_spec.continued(decoded, stored)
    if written_with == continued_with:
        assert continued is not None
    if continued is None:
        return
    start = stored
    for size in appended:
        continued.add(pa.array(keys[start : start + size], pa.string()))
        start += size
    rebuilt = new_spec.new_filter()
    if keys:
        rebuilt.add(pa.array(keys))
    assert continued.serialize() == rebuilt.serialize()
    assert continued.num_keys == len(keys)


def test_a_filter_of_other_sizes_or_type_is_not_continued() -> None:
    spec = BloomFilterSpec(BloomFilterType.DYNAMIC_V0, 3, 0.1, 7)
    keys = pa.array(["a", "b", "c", "d"])
    for other in (
        BloomFilterSpec(BloomFilterType.SIMPLE, 3, 0.1, 7),
        BloomFilterSpec(BloomFilterType.DYNAMIC_V0, 4, 0.1, 7),
        BloomFilterSpec(BloomFilterType.DYNAMIC_V0, 3, 0.01, 7),
    ):
        built = other.new_filter()
        built.add(keys)
        assert spec.continued(built, 4) is None
    built = spec.new_filter()
    built.add(keys)
    assert spec.continued(built, 5) is None  # a count that is not the file's rows


@pytest.mark.parametrize("filter_type", list(BloomFilterType))
def test_false_positive_rate_on_absent_keys_is_within_the_configured_fpp(
    filter_type: BloomFilterType,
) -> None:
    spec = BloomFilterSpec(filter_type, num_entries=2_000, fpp=0.01, max_entries=2_000)
    bf = spec.new_filter()
    present = pa.array([f"order-{i:06d}" for i in range(2_000)])
    bf.add(present)
    absent = pa.array([f"order-{i:06d}" for i in range(2_000, 42_000)])
    assert bf.might_contain(present).all()
    rate = float(bf.might_contain(absent).mean())
    assert rate <= 0.01 * 1.3, rate  # 40k trials: the rate's standard deviation is 0.0005


def test_default_spec_is_hudis_thirty_hashes_over_2587966_bits() -> None:
    spec = BloomFilterSpec.of(parse_options({}))
    assert (spec.filter_type, spec.num_hashes, spec.vector_size) == (
        BloomFilterType.DYNAMIC_V0,
        30,
        2_587_966,
    )
    simple = BloomFilterSpec.of(
        parse_options(
            {"hoodie.bloom.index.filter.type": "simple", "hoodie.index.bloom.fpp": "0.001"}
        )
    )
    bf = simple.new_filter()
    bf.add(pa.array(["a"]))
    assert BLOOM_FILTER_TYPE_CODE_KEY.decode() not in bf.footer_entries()  # SIMPLE: no code


def test_bad_options_and_keys_and_footers_are_refused_by_name() -> None:
    with pytest.raises(ConfigError, match=r"hoodie\.index\.bloom\.fpp"):
        parse_options({"hoodie.index.bloom.fpp": "1.5"})
    with pytest.raises(ConfigError, match=r"hoodie\.index\.bloom\.num_entries"):
        parse_options({"hoodie.index.bloom.num_entries": "0"})
    with pytest.raises(ConfigError, match=r"hoodie\.bloom\.index\.filter\.type"):
        parse_options({"hoodie.bloom.index.filter.type": "DYNAMIC_V1"})
    bf = BloomFilterSpec().new_filter()
    with pytest.raises(RecordKeyError, match="empty"):
        bf.add(pa.array(["a", ""]))
    with pytest.raises(RecordKeyError, match="null"):
        bf.add(pa.array(["a", None]))
    torn = {BLOOM_FILTER_KEY: base64.b64encode(bf.serialize()[:-3])}
    with pytest.raises(HudiError, match=r"p/f\.parquet"):
        decode_footer_filter({**torn, BLOOM_FILTER_TYPE_CODE_KEY: b"DYNAMIC_V0"}, "p/f.parquet")
