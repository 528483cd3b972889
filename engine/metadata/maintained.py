"""The metadata table partitions this engine writes (:data:`MAINTAINED`), in Hudi's order.

``files`` is the metadata table itself; ``column_stats`` and ``record_index`` are kept when
their keys enable them (``hoodie.metadata.index.column.stats.enable``,
``hoodie.metadata.record.index.enable`` or ``hoodie.index.type=RECORD_INDEX``), or, with the
key unset, when the table has them. Any other partition a table's metadata table holds
(partition stats, bloom filters, secondary and expression indexes) is dropped when a write takes
it over.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine import config
from engine.config import HoodieConfig
from engine.metadata.column_stats_partition import ColumnStatsPartition
from engine.metadata.partitions import FilesPartition, MetadataPartition
from engine.metadata.record_index_partition import RecordIndexPartition

__all__ = ["MAINTAINED", "enabled_partitions", "listed_partitions"]

MAINTAINED: tuple[MetadataPartition, ...] = (
    FilesPartition(),
    ColumnStatsPartition(),
    RecordIndexPartition(),
)


def _listed(props: Mapping[str, str]) -> tuple[str, ...]:
    return config.METADATA_PARTITIONS.parse(props.get(config.METADATA_PARTITIONS.key, ""))


def listed_partitions(props: Mapping[str, str]) -> tuple[MetadataPartition, ...]:
    """The maintained partitions ``hoodie.table.metadata.partitions`` lists (those written)."""
    listed = set(_listed(props))
    return tuple(p for p in MAINTAINED if p.name in listed)


def enabled_partitions(
    cfg: HoodieConfig, props: Mapping[str, str]
) -> tuple[MetadataPartition, ...]:
    """The maintained partitions a write with ``cfg`` keeps (:data:`MAINTAINED` order)."""
    listed = _listed(props)
    return tuple(p for p in MAINTAINED if p.enabled(cfg, listed))
