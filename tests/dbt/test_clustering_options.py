"""Model configs that make a dbt model cluster itself: ``cluster_every``, ``cluster_by``,
``cluster_layout`` → Hudi's inline clustering keys (pure, no JVM)."""

from __future__ import annotations

import pytest

from dbt.adapters.hudi.options import ModelConfigError, parse_model_config
from engine import config as hc

pytestmark = pytest.mark.unit


def _options(config: dict[str, object]) -> dict[str, str]:
    cfg = parse_model_config("orders", "hudi_upsert", {"unique_key": "id", **config})
    return cfg.write_options(table_name="orders", database=None, operation="upsert")


def test_cluster_configs_map_to_inline_clustering() -> None:
    opts = _options(
        {"cluster_every": 3, "cluster_by": ["day", "customer"], "cluster_layout": "Z-ORDER"}
    )
    assert opts[hc.INLINE_CLUSTERING.key] == "true"
    assert opts[hc.INLINE_CLUSTERING_MAX_COMMITS.key] == "3"
    assert opts[hc.CLUSTERING_SORT_COLUMNS.key] == "day,customer"
    assert opts[hc.LAYOUT_OPTIMIZE_STRATEGY.key] == "z-order"
    # every mapped value parses as the engine reads it
    parsed = hc.parse_options(opts)
    assert parsed.get(hc.CLUSTERING_SORT_COLUMNS) == ("day", "customer")
    assert parsed.get(hc.INLINE_CLUSTERING_MAX_COMMITS) == 3


def test_no_cluster_config_no_clustering_key() -> None:
    opts = _options({})
    assert not [k for k in opts if k.startswith(("hoodie.clustering.", "hoodie.layout."))]


def test_bad_cluster_configs_are_all_reported() -> None:
    with pytest.raises(ModelConfigError) as e:
        _options({"cluster_every": 0, "cluster_layout": "spiral"})
    text = str(e.value)
    assert "cluster_every" in text and "cluster_layout: 'spiral'" in text
    # without cluster_every the columns still order what a run schedules
    scheduled = _options(
        {"cluster_by": "day", "hudi_options": {"hoodie.clustering.schedule.inline": "true"}}
    )
    assert scheduled[hc.CLUSTERING_SORT_COLUMNS.key] == "day"
    assert hc.INLINE_CLUSTERING.key not in scheduled
