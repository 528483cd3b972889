"""Every HFile of the corpus's metadata tables, as Apache Hudi 1.1 wrote it: decoded, and written
again byte for byte.

The v9 ``*_meta`` tables hold HFile base files in every metadata partition (``files``,
``column_stats``, ``partition_stats``, ``record_index``, two secondary indexes) and
HFILE_DATA_BLOCKs in their log files. Each is decoded (keys sorted, as many as the trailer
counts, the schema in the file info), then re-encoded from what was decoded, with the file's own
creation time (the one value a writer's clock sets), and compared with Hudi's bytes: every block,
the index, the file info, the trailer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.io.hfile import CompressionCodec, read_hfile
from engine.io.hfile_writer import COMPARATOR_CLASS_NAME, callers_file_info, write_hfile
from engine.io.logfile import HoodieLogBlockType, read_log_blocks

pytestmark = pytest.mark.interop

META_TABLES = ("cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta")


def _hfiles(base: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of every base file and every HFILE_DATA_BLOCK of the metadata table."""
    metadata = base / ".hoodie" / "metadata"
    for path in sorted(metadata.glob("*/*.hfile")):
        yield path.name, path.read_bytes()
    for path in sorted(metadata.glob("*/.*.log.*")):
        for i, block in enumerate(read_log_blocks(path.read_bytes())):
            if block.block_type is HoodieLogBlockType.HFILE_DATA_BLOCK:
                yield f"{path.name}#{i}", block.content


@pytest.fixture(scope="module", params=META_TABLES)
def meta_hfiles(request: pytest.FixtureRequest, corpus_table: Callable[[str], Path]) -> list:
    return list(_hfiles(corpus_table(request.param)))


def test_every_hfile_decodes(meta_hfiles: list[tuple[str, bytes]]) -> None:
    assert len(meta_hfiles) > 100  # 29 base files and the HFile blocks of ~76 log files
    empty = 0
    for name, data in meta_hfiles:
        hfile = read_hfile(data)
        keys = [k for k, _ in hfile.entries]
        assert keys == sorted(keys), name
        assert len(keys) == hfile.trailer.entry_count, name
        empty += not keys
        assert hfile.trailer.compression_codec is CompressionCodec.GZ, name
        assert hfile.trailer.comparator_class_name == COMPARATOR_CLASS_NAME, name
        schema = hfile.file_info["schema"]
        assert schema.startswith(b'{"type":"record","name":"HoodieMetadataRecord"'), name
        last = hfile.file_info["hfile.LASTKEY"]
        assert last == (len(keys[-1]).to_bytes(2, "big") + keys[-1] if keys else b""), name
        if name.endswith(".hfile"):  # base files carry the bloom filter of their keys
            assert hfile.meta.keys() == {"bloomFilter"}, name
            assert hfile.file_info["minRecordKey"] == (keys[0] if keys else b""), name
            assert hfile.file_info["maxRecordKey"] == (keys[-1] if keys else b""), name
    assert empty  # record index file groups no key hashes to: an HFile without data blocks


def test_every_hfile_is_written_again_byte_for_byte(meta_hfiles: list[tuple[str, bytes]]) -> None:
    for name, data in meta_hfiles:
        hfile = read_hfile(data)
        written = write_hfile(
            hfile.entries,
            create_time_ms=hfile.create_time_ms,
            file_info=callers_file_info(hfile),
            meta=hfile.meta,
            codec=hfile.trailer.compression_codec,
        )
        assert written == data, name


def test_the_files_partition_keys(corpus_table: Callable[[str], Path]) -> None:
    """The files partition is keyed by partition path, plus the all-partitions record."""
    base = corpus_table("cow__v9_txns_simple_meta") / ".hoodie" / "metadata" / "files"
    compacted = read_hfile(next(base.glob("files-0000-0_13-*.hfile")).read_bytes())
    assert [k for k, _ in compacted.entries] == [
        b"__all_partitions__",
        b"region=apac",
        b"region=eu",
        b"region=us",
    ]
