"""The data table's index definitions (``.hoodie/.index_defs/index.json``, Hudi 1.x).

Hudi records each metadata index it builds there (``HoodieIndexDefinition``): its name, type,
source fields and options, and names the file in ``hoodie.table.index.defs.path``. The columns
``column_stats`` indexes are its ``sourceFields``, so every writer after the first indexes the
same columns whatever its own options say. Dropping a partition drops its definition.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine import config
from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage

__all__ = ["INDEX_DEFS_FILE", "read_index_defs", "write_index_defs"]

INDEX_DEFS_FILE = f"{METAFOLDER}/.index_defs/index.json"


def read_index_defs(storage: Storage, props: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Index name -> definition; empty when the table names no definitions file."""
    path = props.get(config.INDEX_DEFS_PATH.key)
    if not path or not storage.exists(path):
        return {}
    defs: dict[str, dict[str, Any]] = json.loads(storage.read_bytes(path))["indexDefinitions"]
    return defs


def write_index_defs(storage: Storage, defs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Write the definitions (removing the file when there are none); returns the path to name
    in ``hoodie.table.index.defs.path``, None when there is none."""
    if not defs:
        storage.delete_dir(f"{METAFOLDER}/.index_defs")
        return None
    storage.makedirs(f"{METAFOLDER}/.index_defs")
    data = json.dumps({"indexDefinitions": defs}, indent=2).encode()
    storage.write_bytes(INDEX_DEFS_FILE, data, overwrite=True)
    return INDEX_DEFS_FILE
