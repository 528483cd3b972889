"""The table most Spark tests write: record key ``id``, partition path ``dt``, precombine field
``ts`` and one value column ``v``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SCHEMA = "id string, dt string, ts long, v string"


def write_options(table_name: str, *extra: Mapping[str, Any]) -> dict[str, Any]:
    """Options that write the table as ``table_name``; each of ``extra`` adds or overrides."""
    options: dict[str, Any] = {
        "hoodie.table.name": table_name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
    }
    for more in extra:
        options.update(more)
    return options
