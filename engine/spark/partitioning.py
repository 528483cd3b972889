"""Which Spark partition a row lands in: values that hash-partition onto chosen partitions.

``DataFrame.repartition(n, col)`` places a row in partition ``pmod(murmur3(col, seed=42), n)``
(Spark's ``HashPartitioning``). A write wants one file group per task; choosing, for every
bucket, an integer whose hash lands on its own partition makes the shuffle place bucket ``j`` in
partition ``j mod n`` without a sort or a group-by on the executors.
"""

from __future__ import annotations

__all__ = ["murmur3_hash_int", "partition_of", "slot_values"]

_SEED = 42  # Spark's Murmur3Hash default seed
_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def murmur3_hash_int(value: int, seed: int = _SEED) -> int:
    """Spark's ``Murmur3_x86_32.hashInt`` (``hash(int_column)`` in SQL), as a signed int."""
    k1 = (value & _MASK) * 0xCC9E2D51 & _MASK
    k1 = _rotl(k1, 15) * 0x1B873593 & _MASK
    h1 = (seed & _MASK) ^ k1
    h1 = (_rotl(h1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4  # length in bytes
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_of(value: int, partitions: int) -> int:
    """The partition ``repartition(partitions, <int column>)`` sends ``value`` to."""
    return murmur3_hash_int(value) % partitions  # Python's % is Spark's pmod for n > 0


def slot_values(count: int, partitions: int) -> list[int]:
    """Distinct non-negative ints, the ``j``-th hashing to partition ``j mod partitions``."""
    wanted: dict[int, list[int]] = {}
    for j in range(count):
        wanted.setdefault(j % partitions, []).append(j)
    slots = [0] * count
    remaining = count
    value = 0
    while remaining:
        waiting = wanted.get(partition_of(value, partitions))
        if waiting:
            slots[waiting.pop()] = value
            remaining -= 1
        value += 1
    return slots
