"""The ``record_index`` partition's layout: how many file groups Hudi creates and their ids.

The count is chosen once, when the partition is initialized, and never changes: every later
mapping of a key goes to the file group its hash picks among that many
(:func:`engine.metadata.record_index.record_index_file_group`). Hudi
(``HoodieTableMetadataUtil.estimateFileGroupCount``, the record index's initializer) takes:

- min == max: that count, whatever the table holds;
- otherwise ``expected = ceil(float32(records) * float32(growth))`` (Java float arithmetic),
  ``per_group = max_file_group_size // 48`` (48 bytes: Hudi's measured average size of a
  mapping), ``estimate = expected // per_group``, clamped to [min, max].

With the defaults (10, 10,000, 2.0, 1 GiB) a table gets 10 file groups up to 123,032,915 records
and one more per ~11.2 million after (``record-index-0000-0`` .. ``record-index-0009-0``). Every
table version names them ``record-index-<4-digit index>-0`` (``getFileIDForFileGroup``).
"""

from __future__ import annotations

import math
import struct

from engine import config
from engine.errors import ConfigError

__all__ = [
    "RECORD_INDEX_AVERAGE_RECORD_SIZE",
    "RECORD_INDEX_HFILE_BLOCK_SIZE",
    "estimate_file_group_count",
    "record_index_file_group_count",
    "record_index_file_id",
]

# HoodieTableMetadataUtil.RECORD_INDEX_AVERAGE_RECORD_SIZE: bytes of one mapping in an HFile
RECORD_INDEX_AVERAGE_RECORD_SIZE = 48
# The data block size of the record index's HFiles (base files and log blocks' HFiles). Hudi
# writes every metadata HFile in 1 MiB blocks (hoodie.hfile.block.size). A lookup decompresses
# each block one of its keys may sit in; a batch spread over the keys reaches nearly every block
# of a large table, so with 1 MiB blocks a lookup decompresses the whole index once the table
# holds more keys than ~10,000 per batch key (measured: 2,000 keys in a 2M-key file group cost
# 1.18 s with 1 MiB blocks, 0.07 s with 4 KiB). Small blocks make the bytes a lookup reads
# follow the batch, not the table; the price is a bigger index (57 MB against 26 MB for those
# 2M keys: gzip sees less at once) and a longer root index. Hudi's readers take any block size.
RECORD_INDEX_HFILE_BLOCK_SIZE = 4 * 1024
_FILE_ID_PREFIX = "record-index-"


def record_index_file_id(index: int) -> str:
    """The file id of file group ``index`` (``record-index-0003-0``)."""
    return f"{_FILE_ID_PREFIX}{index:04d}-0"


def _float32(value: float) -> float:
    """``value`` rounded to a Java ``float``."""
    rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    return rounded


def estimate_file_group_count(
    record_count: int,
    *,
    min_count: int,
    max_count: int,
    growth_factor: float,
    max_file_group_size: int,
    average_record_size: int = RECORD_INDEX_AVERAGE_RECORD_SIZE,
) -> int:
    """``estimateFileGroupCount``: the file groups a partition of ``record_count`` mappings
    starts with.

    Raises:
        ConfigError: A file group could hold no mapping, or the min count is above the max
            (Hudi would divide by zero, or take the min or the max by the estimate).
    """
    if min_count > max_count:
        raise ConfigError(
            f"{config.RECORD_INDEX_MIN_FILE_GROUP_COUNT.key}={min_count} is above "
            f"{config.RECORD_INDEX_MAX_FILE_GROUP_COUNT.key}={max_count}"
        )
    if min_count == max_count:
        return min_count
    per_group = max_file_group_size // max(average_record_size, 1)
    if per_group == 0:
        raise ConfigError(
            f"{config.RECORD_INDEX_MAX_FILE_GROUP_SIZE.key}={max_file_group_size} holds no "
            f"record index mapping ({average_record_size} bytes each)"
        )
    expected = math.ceil(_float32(_float32(record_count) * _float32(growth_factor)))
    estimate = expected // per_group
    if estimate >= max_count:
        return max_count
    return max(min_count, estimate)


def record_index_file_group_count(record_count: int, cfg: config.HoodieConfig) -> int:
    """The file groups a ``record_index`` partition initialized over ``record_count`` keys
    gets with the write's options (``hoodie.metadata.record.index.*``).

    Raises:
        ConfigError: The options describe no usable layout.
    """
    return estimate_file_group_count(
        record_count,
        min_count=cfg.get(config.RECORD_INDEX_MIN_FILE_GROUP_COUNT),
        max_count=cfg.get(config.RECORD_INDEX_MAX_FILE_GROUP_COUNT),
        growth_factor=cfg.get(config.RECORD_INDEX_GROWTH_FACTOR),
        max_file_group_size=cfg.get(config.RECORD_INDEX_MAX_FILE_GROUP_SIZE),
    )
