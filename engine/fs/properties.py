"""``.hoodie/hoodie.properties`` and ``.hoodie_partition_metadata``: java.util.Properties text.

Reading unescapes the way Java's ``Properties.load`` does (tables written by Hudi escape ``:`` and
``=`` inside values). Writing keeps values plain: hudi-rs does not unescape, and Java's loader
accepts unescaped ``:``/``=`` after the separator. The checksum (CRC32 of
``"<database>.<table>"``) is always the last line, as Java writes it.
"""

from __future__ import annotations

import datetime as dt
import zlib
from collections.abc import Mapping

from engine import config
from engine.errors import ConfigError, TableNotFoundError
from engine.fs.filenames import PARTITION_METAFILE_PREFIX, partition_file_path
from engine.fs.storage import Storage

METAFOLDER = ".hoodie"
PROPERTIES_FILE = f"{METAFOLDER}/hoodie.properties"
PARTITION_METAFILE = PARTITION_METAFILE_PREFIX


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 5 < len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties_text(text: str) -> dict[str, str]:
    """Parse java.util.Properties text (comments, escapes, ``=``/``:`` separators)."""
    props: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        # an odd number of trailing backslashes continues the line
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry, logical = "".join(logical), []
        i = 0
        while i < len(entry):
            if entry[i] == "\\":
                i += 2
                continue
            if entry[i] in "=:":
                break
            i += 1
        key, value = entry[:i].strip(), entry[i + 1 :].lstrip() if i < len(entry) else ""
        props[_unescape(key)] = _unescape(value)
    return props


def table_checksum(database: str | None, table: str) -> int:
    """CRC32 of ``"<database>.<table>"`` (database defaults to the empty string)."""
    return zlib.crc32(f"{database or ''}.{table}".encode()) & 0xFFFFFFFF


def format_properties(props: Mapping[str, str], *, comment: str) -> bytes:
    """Properties text with ``hoodie.table.checksum`` recomputed and written last."""
    table = props.get(config.TABLE_NAME.key)
    if not table:
        raise ConfigError(f"Missing required config {config.TABLE_NAME.key!r}")
    now = dt.datetime.now(dt.UTC)
    lines = [f"#{comment}", f"#{now.strftime('%a %b %d %H:%M:%S UTC %Y')}"]
    for key, value in props.items():
        if key == config.TABLE_CHECKSUM.key:
            continue
        if "\n" in value or "\\" in value or not value.isascii():
            raise ConfigError(f"Cannot persist config {key!r}: value {value!r} is not plain ASCII")
        lines.append(f"{key}={value}")
    checksum = table_checksum(props.get(config.DATABASE_NAME.key), table)
    lines.append(f"{config.TABLE_CHECKSUM.key}={checksum}")
    return ("\n".join(lines) + "\n").encode("ascii")


def read_properties(storage: Storage) -> dict[str, str]:
    """The table's properties.

    Raises:
        TableNotFoundError: ``.hoodie/hoodie.properties`` is missing.
    """
    if not storage.exists(PROPERTIES_FILE):
        raise TableNotFoundError(f"No Hudi table at {storage.base_path}: {PROPERTIES_FILE} missing")
    return parse_properties_text(storage.read_bytes(PROPERTIES_FILE).decode("latin-1"))


def write_properties(storage: Storage, props: Mapping[str, str]) -> None:
    """Write (or replace) the table's properties atomically."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    storage.write_atomic(PROPERTIES_FILE, format_properties(props, comment=f"Updated at {now}Z"))


def write_partition_metadata(storage: Storage, partition_path: str, instant_time: str) -> bool:
    """Mark ``partition_path`` as a partition (once; Java's ``trySave``). True if written now."""
    rel = partition_file_path(partition_path, PARTITION_METAFILE)
    if storage.exists(rel):
        return False
    depth = len(partition_path.split("/")) if partition_path else 0
    now = dt.datetime.now(dt.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    text = f"#partition metadata\n#{now}\ncommitTime={instant_time}\npartitionDepth={depth}\n"
    storage.write_atomic(rel, text.encode("ascii"))
    return True
