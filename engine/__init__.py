"""dbt-hudi's engine: writes and reads Apache Hudi tables (table version 6) on PySpark.

Public API::

    from engine import write_hudi, read_hudi
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "read_hudi", "write_hudi"]


def __getattr__(name: str) -> Any:
    # Lazy: importing `engine` must not import pyspark (executors and pure tools use parts of it).
    if name == "write_hudi":
        from engine.table import write_hudi

        return write_hudi
    if name == "read_hudi":
        from engine.read.plan import read_hudi

        return read_hudi
    raise AttributeError(name)
