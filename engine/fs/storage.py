"""Storage access for one table, through ``pyarrow.fs``.

Every path the engine handles is relative to the table's base path, with ``/`` separators, so the
same code serves local disks and object stores. A :class:`Storage` is picklable: Spark tasks get one
and reach the same files as the driver (a cluster needs a base path every node can see).
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from engine.errors import HudiError


class StorageError(HudiError):
    """A file operation failed or would overwrite a file that must stay immutable."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A directory entry: its name (not path), size in bytes and whether it is a directory."""

    name: str
    size: int
    is_dir: bool


def _resolve(base_path: str) -> tuple[pafs.FileSystem, str]:
    if "://" in base_path and not base_path.startswith("file://"):
        fs, root = pafs.FileSystem.from_uri(base_path)
        return fs, root.rstrip("/")
    local = base_path[len("file://") :] if base_path.startswith("file://") else base_path
    return pafs.LocalFileSystem(), os.path.abspath(local).rstrip("/") or "/"


class Storage:
    """Files of one table, addressed relative to its base path."""

    def __init__(self, base_path: str) -> None:
        self.base_path = base_path.rstrip("/") if "://" in base_path else os.path.abspath(base_path)
        self.fs, self.root = _resolve(base_path)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Storage, (self.base_path,))

    def __repr__(self) -> str:
        return f"Storage({self.base_path!r})"

    # ---- paths -------------------------------------------------------------------------------

    def full_path(self, rel: str = "") -> str:
        """Filesystem path of ``rel`` (what pyarrow readers take)."""
        rel = rel.strip("/")
        return f"{self.root}/{rel}" if rel else self.root

    def uri(self, rel: str = "") -> str:
        """URI of ``rel`` for readers outside pyarrow (Spark): scheme kept, local paths absolute."""
        if "://" in self.base_path and not self.base_path.startswith("file://"):
            rel = rel.strip("/")
            return f"{self.base_path}/{rel}" if rel else self.base_path
        return "file://" + self.full_path(rel)

    # ---- queries -----------------------------------------------------------------------------

    def exists(self, rel: str) -> bool:
        return self.fs.get_file_info(self.full_path(rel)).type != pafs.FileType.NotFound

    def is_dir(self, rel: str) -> bool:
        return self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.Directory

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
        self.fs.create_dir(self.full_path(rel), recursive=True)

    def _ensure_parent(self, rel: str) -> None:
        parent = rel.strip("/").rpartition("/")[0]
        if parent:
            self.makedirs(parent)

    def open_output(self, rel: str, *, overwrite: bool = False) -> Any:
        """Writable stream for a new file; refuses to replace an existing one unless asked."""
        if not overwrite and self.exists(rel):
            raise StorageError(f"Refusing to overwrite existing file {self.full_path(rel)}")
        self._ensure_parent(rel)
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
            tmp = f"{head}/.{name}.{uuid.uuid4().hex}.tmp" if head else f".{name}.tmp"
            with self.fs.open_output_stream(self.full_path(tmp)) as f:
                f.write(data)
            self.fs.move(self.full_path(tmp), self.full_path(rel))
        else:
            with self.fs.open_output_stream(self.full_path(rel)) as f:
                f.write(data)

    def delete(self, rel: str, *, missing_ok: bool = True) -> None:
        try:
            self.fs.delete_file(self.full_path(rel))
        except FileNotFoundError:
            if not missing_ok:
                raise StorageError(f"No such file: {self.full_path(rel)}") from None

    def delete_dir(self, rel: str) -> None:
        if self.exists(rel):
            self.fs.delete_dir(self.full_path(rel))
