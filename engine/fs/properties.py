"""``.hoodie/hoodie.properties`` and ``.hoodie_partition_metadata``: java.util.Properties text.

Reading follows Java's ``Properties.load`` (``javaproperties``): tables written by Hudi escape
``:`` and ``=`` inside values. Writing keeps values plain: hudi-rs does not unescape, and Java's
loader accepts unescaped ``:``/``=`` after the separator. The checksum (CRC32 of
``"<database>.<table>"``) is always the last line, as Java writes it.
"""

from __future__ import annotations

import datetime as dt
import zlib
from collections.abc import Mapping

import javaproperties

from engine import config
from engine.errors import ConfigError, TableNotFoundError
from engine.fs.filenames import PARTITION_METAFILE_PREFIX, partition_file_path
from engine.fs.storage import Storage

METAFOLDER = ".hoodie"
PROPERTIES_FILE = f"{METAFOLDER}/hoodie.properties"
PARTITION_METAFILE = PARTITION_METAFILE_PREFIX


def parse_properties_text(text: str) -> dict[str, str]:
    """Parse java.util.Properties text by Java's rules (comments, escapes, continuation lines,
    and a key ended by ``=``, ``:`` or white space)."""
    return dict(javaproperties.loads(text))


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
