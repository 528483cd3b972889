"""`make bench`: filled by the benchmark of the write and read paths."""

from __future__ import annotations

print("benchmark: not yet implemented")
