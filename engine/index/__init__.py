"""The index concept: the kinds of ``hoodie.index.type`` and what each one means for a write.

Every other module asks an :class:`IndexType` what it needs to know (is the index global, does
the write job place records itself, does it find keys in log files, does it live in the
metadata table) instead of comparing its name: a new index is one member here and one
:class:`engine.write.index.KeyIndex` class. The package sits below :mod:`engine.config`, which
parses ``hoodie.index.type`` into an :class:`IndexType` (``cfg.get(config.INDEX_TYPE)`` is the
one constructor from a write's options); the lookups themselves, which read files, are
:mod:`engine.write.index`.
"""

from __future__ import annotations

from engine.index.types import IndexType

__all__ = ["IndexType"]
