"""The Spark boundary: the only engine package that imports pyspark."""

from __future__ import annotations

from typing import Any

__all__ = ["register", "register_data_source"]


def register(spark: Any) -> None:
    """Register the ``hudi`` Python data source on ``spark`` (``spark.read.format("hudi")``)."""
    from engine.spark.datasource import HudiDataSource

    spark.dataSource.register(HudiDataSource)


register_data_source = register  # the public name (``engine.register_data_source``)
