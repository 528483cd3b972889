"""Storage access for one table, through ``pyarrow.fs``.

Every path the engine handles is relative to the table's base path, with ``/`` separators, so the
same code serves local disks and object stores. A :class:`Storage` is picklable: Spark tasks get one
and reach the same files as the driver (a cluster needs a base path every node can see).

A table on S3 (``s3://`` or ``s3a://``, the same table either way) carries its
:class:`~engine.fs.s3.S3Settings`, resolved once on the driver; a task rebuilds its own pyarrow
``S3FileSystem`` from them (a filesystem object is never shipped). Other URIs go to
``pyarrow.fs.FileSystem.from_uri``.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from engine.errors import HudiError
from engine.fs.s3 import S3Settings, canonical_uri, is_s3_uri, resolve_s3_settings, split_s3_uri


class StorageError(HudiError):
    """A file operation failed or would overwrite a file that must stay immutable."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A directory entry: its name (not path), size in bytes and whether it is a directory."""

    name: str
    size: int
    is_dir: bool


def _resolve(base_path: str, s3: S3Settings | None) -> tuple[pafs.FileSystem, str]:
    if s3 is not None:
        bucket, key = split_s3_uri(base_path)
        return s3.filesystem(), f"{bucket}/{key}".rstrip("/")
    if "://" in base_path and not base_path.startswith("file://"):
        fs, root = pafs.FileSystem.from_uri(base_path)
        return fs, root.rstrip("/")
    local = base_path[len("file://") :] if base_path.startswith("file://") else base_path
    return pafs.LocalFileSystem(), os.path.abspath(local).rstrip("/") or "/"


class Storage:
    """Files of one table, addressed relative to its base path.

    Args:
        base_path: local path or URI of the table.
        s3: how to reach an ``s3://``/``s3a://`` base path; resolved from the environment and
            the AWS profile when not given (:func:`engine.fs.s3.resolve_s3_settings`).
    """

    def __init__(self, base_path: str, s3: S3Settings | None = None) -> None:
        self.base_path = base_path.rstrip("/") if "://" in base_path else os.path.abspath(base_path)
        if is_s3_uri(base_path) and s3 is None:
            s3 = resolve_s3_settings()
        self.s3: S3Settings | None = s3 if is_s3_uri(base_path) else None
        self.fs, self.root = _resolve(base_path, self.s3)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Storage, (self.base_path, self.s3))

    @property
    def is_object_store(self) -> bool:
        """Whether the table lives on an object store (no atomic rename, no exclusive create)."""
        return not isinstance(self.fs, pafs.LocalFileSystem)

    def child(self, rel: str) -> Storage:
        """The storage of a table nested under this one (the metadata table), same settings."""
        return Storage(self.uri(rel) if self.is_object_store else self.full_path(rel), self.s3)

    def __repr__(self) -> str:
        return f"Storage({self.base_path!r})"

    # ---- paths -------------------------------------------------------------------------------

    def full_path(self, rel: str = "") -> str:
        """Filesystem path of ``rel`` (what pyarrow readers take)."""
        rel = rel.strip("/")
        return f"{self.root}/{rel}" if rel else self.root

    def uri(self, rel: str = "") -> str:
        """URI of ``rel`` for readers outside pyarrow (Spark) and for the table's metadata:
        local paths absolute, S3 spelled ``s3a://`` whichever spelling the base path has."""
        if "://" in self.base_path and not self.base_path.startswith("file://"):
            rel = rel.strip("/")
            base = canonical_uri(self.base_path) if self.s3 is not None else self.base_path
            return f"{base}/{rel}" if rel else base
        return "file://" + self.full_path(rel)

    def qualified(self, rel: str = "") -> str:
        """The full path of ``rel`` as Hudi's plans and metadata name files: the absolute path
        on a local disk, the URI on an object store."""
        return self.uri(rel) if self.is_object_store else self.full_path(rel)

    def known_prefixes(self) -> tuple[str, ...]:
        """Every spelling of the base path a file in the table's metadata may start with
        (``s3://`` and ``s3a://`` alike), each ending in ``/``."""
        spellings = {self.uri(""), self.full_path(""), "file:" + self.root}
        if self.s3 is not None:
            rest = self.uri("").partition("://")[2]
            spellings.update(f"{scheme}://{rest}" for scheme in ("s3", "s3a"))
        return tuple(sorted(p + "/" for p in spellings))

    # ---- queries -----------------------------------------------------------------------------

    def exists(self, rel: str) -> bool:
        return bool(self.fs.get_file_info(self.full_path(rel)).type != pafs.FileType.NotFound)

    def is_dir(self, rel: str) -> bool:
        return bool(self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.Directory)

    def size(self, rel: str) -> int:
        info = self.fs.get_file_info(self.full_path(rel))
        if info.type != pafs.FileType.File:
            raise StorageError(f"No such file: {self.full_path(rel)}")
        return int(info.size or 0)

    def list_dir(self, rel: str = "") -> list[FileEntry]:
        """Entries directly under ``rel``; empty when ``rel`` does not exist."""
        selector = pafs.FileSelector(self.full_path(rel), allow_not_found=True, recursive=False)
        return [
            FileEntry(info.base_name, int(info.size or 0), info.type == pafs.FileType.Directory)
            for info in self.fs.get_file_info(selector)
        ]

    # ---- reads -------------------------------------------------------------------------------

    def read_bytes(self, rel: str) -> bytes:
        try:
            with self.fs.open_input_stream(self.full_path(rel)) as f:
                return bytes(f.read())
        except FileNotFoundError as e:
            raise StorageError(f"No such file: {self.full_path(rel)}") from e

    def open_input(self, rel: str) -> Any:
        """Random-access file (for Parquet footers and log block seeks)."""
        return self.fs.open_input_file(self.full_path(rel))

    # ---- writes ------------------------------------------------------------------------------

    def makedirs(self, rel: str) -> None:
        """Create the folder ``rel``; object stores have no folders (a key prefix exists once
        an object is under it), so there nothing is written."""
        if not self.is_object_store:
            self.fs.create_dir(self.full_path(rel), recursive=True)

    def _ensure_parent(self, rel: str) -> None:
        parent = rel.strip("/").rpartition("/")[0]
        if parent:
            self.makedirs(parent)

    def _drop_checksum(self, rel: str) -> None:
        """Remove the checksum file Hadoop's local file system keeps beside ``rel``
        (``.<name>.crc``, ``org.apache.hadoop.fs.ChecksumFileSystem``), before ``rel`` is
        replaced or deleted: Apache Hudi writing a local table leaves one beside each file it
        writes, and its next read of a file changed under a stale one fails (``Could not load
        Hoodie properties``). Hadoop's own overwrite and delete drop it the same way."""
        if not isinstance(self.fs, pafs.LocalFileSystem):
            return
        head, _, name = rel.strip("/").rpartition("/")
        checksum = f"{head}/.{name}.crc" if head else f".{name}.crc"
        try:
            self.fs.delete_file(self.full_path(checksum))
        except FileNotFoundError:
            pass

    def open_output(self, rel: str, *, overwrite: bool = False) -> Any:
        """Writable stream for a new file; refuses to replace an existing one unless asked."""
        if not overwrite and self.exists(rel):
            raise StorageError(f"Refusing to overwrite existing file {self.full_path(rel)}")
        self._ensure_parent(rel)
        if overwrite:
            self._drop_checksum(rel)
        return self.fs.open_output_stream(self.full_path(rel))

    def write_bytes(self, rel: str, data: bytes, *, overwrite: bool = False) -> None:
        """Create ``rel`` with ``data``; files are immutable unless ``overwrite`` is set."""
        with self.open_output(rel, overwrite=overwrite) as f:
            f.write(data)

    def write_atomic(self, rel: str, data: bytes) -> None:
        """Write via a temporary sibling and a rename, so readers see all of ``data`` or nothing.

        Object stores have no atomic rename; there the final object appears whole on close,
        which gives the same guarantee to readers.
        """
        self._ensure_parent(rel)
        if isinstance(self.fs, pafs.LocalFileSystem):
            head, _, name = rel.strip("/").rpartition("/")
            # a name of its own: writers racing to write the same file each rename a whole one
            unique = f".{name}.{uuid.uuid4().hex}.tmp"
            tmp = f"{head}/{unique}" if head else unique
            with self.fs.open_output_stream(self.full_path(tmp)) as f:
                f.write(data)
            self._drop_checksum(rel)
            self.fs.move(self.full_path(tmp), self.full_path(rel))
        else:
            with self.fs.open_output_stream(self.full_path(rel)) as f:
                f.write(data)

    def delete(self, rel: str, *, missing_ok: bool = True) -> None:
        self._drop_checksum(rel)
        try:
            self.fs.delete_file(self.full_path(rel))
        except FileNotFoundError:
            if not missing_ok:
                raise StorageError(f"No such file: {self.full_path(rel)}") from None

    def delete_dir(self, rel: str) -> None:
        if self.exists(rel):
            self.fs.delete_dir(self.full_path(rel))
