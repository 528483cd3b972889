"""The iteration order of ``java.util.HashMap<String, V>``, which Hudi's byte layouts inherit.

Hudi stores several maps in whatever order a Java HashMap iterates them: the HFile file info
and meta blocks, and the ``filesystemMetadata`` map of metadata records. That order is not
insertion order: it is bucket by bucket, a key's bucket being ``(h ^ h >>> 16) & (capacity - 1)``
(``h`` its ``String.hashCode``), and within a bucket the order keys entered it (replacing a value
keeps the key's place; a resize splits buckets keeping that order). The capacity depends on how
the map was built and grown, so :class:`JavaHashMap` follows Java's sizing rules:

- ``new HashMap<>()``: 16 buckets at the first put; ``new HashMap<>(n)``: the power of two >= n;
- ``putAll`` into an empty map sizes it for ``s / 0.75 + 1`` entries first;
- the capacity doubles once the map holds more than 3/4 of it, and never shrinks.

Buckets become trees past 8 colliding keys in tables of 64 buckets or more; the small maps Hudi
stores never get there (not emulated).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

__all__ = ["JavaHashMap", "java_hashmap_order", "java_string_hash", "table_size_for"]

V = TypeVar("V")
_LOAD_FACTOR = 0.75
_DEFAULT_CAPACITY = 16


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: the 31-polynomial over UTF-16 code units, as an unsigned int32."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= ``capacity`` (at least 1)."""
    size = 1
    while size < capacity:
        size *= 2
    return size


class JavaHashMap(Generic[V]):
    """A string-keyed map that iterates in ``java.util.HashMap``'s order."""

    def __init__(self, initial_capacity: int | None = None) -> None:
        """``new HashMap<>()`` (``None``) or ``new HashMap<>(initial_capacity)``."""
        self._capacity = 0
        self._threshold = 0 if initial_capacity is None else table_size_for(initial_capacity)
        self._entries: dict[str, tuple[int, V]] = {}
        self._sequence = 0

    def _allocate(self) -> None:
        if self._capacity == 0:
            self._capacity = self._threshold or _DEFAULT_CAPACITY
            self._threshold = int(self._capacity * _LOAD_FACTOR)

    def _grow(self) -> None:
        self._capacity *= 2
        self._threshold = int(self._capacity * _LOAD_FACTOR)

    def put(self, key: str, value: V) -> None:
        """``put``: a new key enters its bucket last; an existing key keeps its place."""
        self._allocate()
        if key in self._entries:
            self._entries[key] = (self._entries[key][0], value)
            return
        self._sequence += 1
        self._entries[key] = (self._sequence, value)
        if len(self._entries) > self._threshold:
            self._grow()

    def put_all(self, items: Iterable[tuple[str, V]]) -> None:
        """``putAll`` of a map with these entries, in its iteration order."""
        pairs = list(items)
        if not pairs:
            return
        if self._capacity == 0:
            wanted = int(len(pairs) / _LOAD_FACTOR + 1.0)
            if wanted > self._threshold:
                self._threshold = table_size_for(wanted)
        else:
            while len(pairs) > self._threshold:
                self._grow()
        for key, value in pairs:
            self.put(key, value)

    def remove(self, key: str) -> None:
        self._entries.pop(key, None)

    def get(self, key: str) -> V | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[1]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[str]:
        """The keys in iteration order."""
        mask = max(self._capacity, 1) - 1

        def bucket(key: str) -> int:
            h = java_string_hash(key)
            return (h ^ (h >> 16)) & mask

        return sorted(self._entries, key=lambda k: (bucket(k), self._entries[k][0]))

    def items(self) -> list[tuple[str, V]]:
        return [(k, self._entries[k][1]) for k in self.keys()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a ``new HashMap<>()`` that ``put`` these keys in this order."""
    target: JavaHashMap[None] = JavaHashMap()
    for key in keys:
        target.put(key, None)
    return target.keys()
