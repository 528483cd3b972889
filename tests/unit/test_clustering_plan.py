"""Clustering plans against the plans Apache Hudi wrote (the corpus), planning by Hudi's keys,
and the row orders (linear, z-order, Hilbert). No Spark."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import parse_options
from engine.errors import ConfigError
from engine.fs.storage import Storage
from engine.services.clustering_plan import (
    ClusteringPlan,
    clustering_file_groups,
    filter_partitions,
    is_scheduled_clustering,
    pending_clustering,
    plan_clustering,
    read_clustering_plan,
)
from engine.services.compaction import compacting_file_groups, schedule_compaction
from engine.services.layout_curves import hilbert_index, order_rows, z_order_index
from engine.timeline.instant import Action, Instant, State
from engine.timeline.timeline import Timeline, create_requested

CLUSTERED = ("cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta")


def _strip(schema: Any) -> Any:
    """A writer schema without Java's string annotations and namespaces (names compared
    unqualified)."""
    if isinstance(schema, dict):
        out = {k: _strip(v) for k, v in schema.items() if k not in ("avro.java.string",)}
        if "name" in out and isinstance(out["name"], str):
            out["name"] = out["name"].rsplit(".", 1)[-1]
        out.pop("namespace", None)
        if out.get("type") == "string" and set(out) == {"type"}:
            return "string"
        return out
    if isinstance(schema, list):
        return [_strip(s) for s in schema]
    return schema


def _requested(base: Path) -> tuple[Any, dict[str, Any], str]:
    [path] = sorted((base / ".hoodie" / "timeline").glob("*.clustering.requested"))
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        record = next(iter(reader))
        return reader.writer_schema, record, path.name.split(".")[0]  # type: ignore[return-value]


@pytest.mark.parametrize("name", CLUSTERED)
def test_plan_round_trips_hudis_plan_field_by_field(
    corpus_table: Callable[[str], Path], name: str
) -> None:
    base = corpus_table(name)
    hudi_schema, hudi_record, t = _requested(base)
    storage = Storage(str(base))
    plan = read_clustering_plan(storage, Instant(t, Action.CLUSTERING, State.REQUESTED))
    assert len(plan.groups) == len(hudi_record["clusteringPlan"]["inputGroups"])
    assert plan.preserve_hoodie_metadata is True

    ours = plan.to_bytes(storage, table_version=9)
    reader = fastavro.reader(io.BytesIO(ours))
    record = next(iter(reader))
    assert _strip(reader.writer_schema) == _strip(hudi_schema)

    def by_name(r: dict[str, Any]) -> dict[str, Any]:
        for g in r["clusteringPlan"]["inputGroups"]:
            for s in g["slices"]:
                s["dataFilePath"] = s["dataFilePath"].rsplit("/", 1)[-1]
        return r

    assert by_name(record) == by_name(hudi_record)


@pytest.mark.parametrize("name", CLUSTERED)
def test_planning_a_clustered_corpus_table(corpus_copy: Callable[[str], Path], name: str) -> None:
    """Hudi's defaults on the table Hudi clustered: every small latest slice, grouped by
    partition, one output file group each (all far below 1 GB); groups of a pending plan are
    left out of the next."""
    storage = Storage(str(corpus_copy(name)))
    timeline = Timeline.load(storage)
    plan = plan_clustering(storage, timeline, parse_options({}))
    partitions = [g.partition_path for g in plan.groups]
    assert partitions == sorted(set(partitions)) and len(partitions) == 3
    assert all(g.num_output_file_groups == 1 for g in plan.groups)
    sizes = [
        [storage.size(f"{s.partition_path}/{s.base_file}") for s in g.slices] for g in plan.groups
    ]
    assert all(group == sorted(group, reverse=True) for group in sizes)  # largest first

    create_requested(
        storage, "99990101000000000", Action.CLUSTERING, plan.to_bytes(storage, table_version=9)
    )
    timeline = timeline.reload()
    [pending] = pending_clustering(storage, timeline)
    assert is_scheduled_clustering(storage, pending)
    assert clustering_file_groups(storage, timeline) == plan.file_groups
    assert plan_clustering(storage, timeline, parse_options({})).groups == ()


def test_size_keys_split_groups_and_outputs(corpus_copy: Callable[[str], Path]) -> None:
    storage = Storage(str(corpus_copy(CLUSTERED[0])))
    timeline = Timeline.load(storage)
    whole = plan_clustering(storage, timeline, parse_options({}))
    smallest = min(
        storage.size(f"{s.partition_path}/{s.base_file}") for g in whole.groups for s in g.slices
    )
    one_each = plan_clustering(
        storage,
        timeline,
        parse_options(
            {
                "hoodie.clustering.plan.strategy.max.bytes.per.group": str(smallest),
                "hoodie.clustering.plan.strategy.target.file.max.bytes": str(smallest // 2),
            }
        ),
    )
    assert all(len(g.slices) == 1 for g in one_each.groups)
    assert len(one_each.groups) == sum(len(g.slices) for g in whole.groups)
    assert all(g.num_output_file_groups >= 2 for g in one_each.groups)
    capped = plan_clustering(
        storage,
        timeline,
        parse_options(
            {
                "hoodie.clustering.plan.strategy.max.bytes.per.group": str(smallest),
                "hoodie.clustering.plan.strategy.max.num.groups": "2",
            }
        ),
    )
    assert len(capped.groups) == 2
    none_small = plan_clustering(
        storage, timeline, parse_options({"hoodie.clustering.plan.strategy.small.file.limit": "1"})
    )
    assert none_small.groups == ()


def test_pending_compaction_slices_are_excluded(corpus_copy: Callable[[str], Path]) -> None:
    storage = Storage(str(corpus_copy("mor_parquet__v6_simplekeygen_nonhivestyle")))
    compaction = schedule_compaction(storage, parse_options({}), force=True)
    assert compaction is not None
    timeline = Timeline.load(storage)
    busy = compacting_file_groups(storage, timeline)
    assert busy
    plan = plan_clustering(storage, timeline, parse_options({}), busy=busy)
    assert plan.file_groups.isdisjoint(busy)


def test_partition_filter_modes() -> None:
    parts = ["2024/01/01", "2024/01/02", "2024/01/03", "2024/01/04"]
    assert filter_partitions(parts, parse_options({})) == parts
    recent = {
        "hoodie.clustering.plan.partition.filter.mode": "RECENT_DAYS",
        "hoodie.clustering.plan.strategy.daybased.lookback.partitions": "2",
        "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions": "1",
    }
    assert filter_partitions(parts, parse_options(recent)) == ["2024/01/02", "2024/01/03"]
    selected = {
        "hoodie.clustering.plan.partition.filter.mode": "SELECTED_PARTITIONS",
        "hoodie.clustering.plan.strategy.cluster.begin.partition": "2024/01/02",
        "hoodie.clustering.plan.strategy.cluster.end.partition": "2024/01/03",
    }
    assert filter_partitions(parts, parse_options(selected)) == ["2024/01/02", "2024/01/03"]
    with pytest.raises(ConfigError, match=r"cluster\.begin\.partition"):
        filter_partitions(
            parts,
            parse_options({"hoodie.clustering.plan.partition.filter.mode": "SELECTED_PARTITIONS"}),
        )
    named = {"hoodie.clustering.plan.strategy.partition.selected": "2024/01/04,2024/01/01"}
    assert filter_partitions(parts, parse_options(named)) == ["2024/01/01", "2024/01/04"]
    with pytest.raises(ConfigError, match=r"filter\.mode"):
        parse_options({"hoodie.clustering.plan.partition.filter.mode": "SOME"})


def test_plan_keeps_sort_columns_and_curve_in_strategy_params() -> None:
    storage = Storage("/tmp/unused")
    plan = ClusteringPlan(
        groups=(),
        strategy_params={
            "hoodie.clustering.plan.strategy.sort.columns": "a, b",
            "hoodie.layout.optimize.strategy": "Z-ORDER",
        },
    )
    assert plan.sort_columns == ("a", "b")
    assert plan.layout_strategy == "z-order"
    back = ClusteringPlan.from_record(
        next(iter(fastavro.reader(io.BytesIO(plan.to_bytes(storage, table_version=6)))))
    )
    assert back == plan


# ---- curves ---------------------------------------------------------------------------------


def _grid(dims: int, bits: int) -> list[np.ndarray]:
    side = 1 << bits
    mesh = np.meshgrid(*[np.arange(side, dtype=np.uint64)] * dims, indexing="ij")
    return [m.ravel() for m in mesh]


@settings(max_examples=12, deadline=None)
@given(dims=st.integers(1, 3), bits=st.integers(1, 4))
def test_hilbert_curve_visits_every_cell_once_by_unit_steps(dims: int, bits: int) -> None:
    coords = _grid(dims, bits)
    index = hilbert_index(coords, bits)
    assert sorted(index.tolist()) == list(range(1 << (dims * bits)))  # a bijection
    order = np.argsort(index)
    path = np.stack([c[order].astype(np.int64) for c in coords], axis=1)
    steps = np.abs(np.diff(path, axis=0)).sum(axis=1)
    assert (steps == 1).all()  # each next cell is a neighbour


@settings(max_examples=12, deadline=None)
@given(dims=st.integers(1, 3), bits=st.integers(1, 4))
def test_z_order_interleaves_bits(dims: int, bits: int) -> None:
    coords = _grid(dims, bits)
    index = z_order_index(coords, bits)
    assert sorted(index.tolist()) == list(range(1 << (dims * bits)))
    for k in range(0, len(index), max(1, len(index) // 7)):
        expected = 0
        for bit in range(bits - 1, -1, -1):
            for c in coords:
                expected = (expected << 1) | ((int(c[k]) >> bit) & 1)
        assert int(index[k]) == expected


@settings(max_examples=20, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.one_of(st.none(), st.integers(-50, 50)), st.text("abc", max_size=3)),
        max_size=30,
    ),
    strategy=st.sampled_from(["linear", "z-order", "hilbert"]),
    method=st.sampled_from(["direct", "sample"]),
)
def test_orders_keep_every_row(
    rows: list[tuple[int | None, str]], strategy: str, method: str
) -> None:
    table = pa.table(
        {
            "a": pa.array([r[0] for r in rows], pa.int64()),
            "b": [r[1] for r in rows],
            "n": list(range(len(rows))),
        }
    )
    ordered = order_rows(table, ["a", "b"], strategy, method)
    assert sorted(ordered.to_pylist(), key=lambda r: r["n"]) == table.to_pylist()
    if strategy == "linear":
        keys = [(r["a"] is not None, r["a"] or 0, r["b"]) for r in ordered.to_pylist()]
        assert keys == sorted(keys)


def test_curve_groups_rows_close_in_both_columns() -> None:
    """On a 16x16 grid, z-order and Hilbert keep each quarter of the rows inside a narrow box
    on both columns (what data skipping needs); linear order keeps one column only."""
    a, b = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    table = pa.table({"a": a.ravel(), "b": b.ravel()})
    for strategy in ("z-order", "hilbert"):
        for method in ("direct", "sample"):
            ordered = order_rows(table, ["a", "b"], strategy, method)
            for q in range(4):
                part = ordered.slice(q * 64, 64)
                spans = [max(part[c].to_pylist()) - min(part[c].to_pylist()) for c in ("a", "b")]
                assert spans == [7, 7], (strategy, method, q, spans)
    linear = order_rows(table, ["a", "b"], "linear", "direct").slice(0, 64)
    assert max(linear["b"].to_pylist()) - min(linear["b"].to_pylist()) == 15


def test_unknown_sort_column_names_the_columns() -> None:
    with pytest.raises(ConfigError, match=r"\['zz'\]"):
        order_rows(pa.table({"a": [1]}), ["zz"], "linear", "direct")


def test_bucket_index_tables_are_not_clustered(tmp_path: Path) -> None:
    from engine.services.clustering import schedule_clustering
    from engine.services.inline import validate_service_options

    bucket = {"hoodie.index.type": "BUCKET"}
    validate_service_options(parse_options(bucket))  # no clustering asked: fine
    with pytest.raises(ConfigError, match="bucket-index table is not clustered"):
        validate_service_options(parse_options({**bucket, "hoodie.clustering.inline": "true"}))
    with pytest.raises(ConfigError, match="is BUCKET"):
        schedule_clustering(Storage(str(tmp_path)), parse_options(bucket), force=True)
