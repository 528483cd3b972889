"""on_schema_change planning on Arrow schemas (no Spark): each mode against Hudi's rules, and a
property test of every mode against a simple oracle of what dbt's mode allows."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.hudi.options import parse_model_config
from dbt.adapters.hudi.schema_change import (
    OnSchemaChangeError,
    mode_options,
    option_conflicts,
    plan_write,
)
from engine import config as hc
from engine.errors import ConfigError
from engine.model.schema_evolution import compare_schemas

pytestmark = pytest.mark.unit

MODES = ("ignore", "fail", "append_new_columns", "sync_all_columns")
TABLE = pa.schema(
    [("id", pa.int32()), ("qty", pa.int32()), ("big", pa.int64()), ("legacy", pa.string())]
)
# the reported case: qty now bigint (5000000000 does not fit an int); plus a narrowed, a removed
# and an added column
INCOMING = pa.schema(
    [("id", pa.int32()), ("qty", pa.int64()), ("big", pa.int32()), ("tier", pa.string())]
)


def _plan(mode: str, incoming: pa.Schema, table: pa.Schema = TABLE, **extra: str):  # type: ignore[no-untyped-def]
    return plan_write("m", mode, table, incoming, hc.parse_options({**mode_options(mode), **extra}))


def _refusal(mode: str, incoming: pa.Schema, **extra: str) -> str:
    with pytest.raises(OnSchemaChangeError) as e:
        _plan(mode, incoming, **extra)
    return str(e.value)


def _types(schema: pa.Schema) -> dict[str, pa.DataType]:
    return {f.name: f.type for f in schema}


def test_fail_lists_every_difference_with_both_types() -> None:
    message = _refusal("fail", INCOMING)
    for needle in (
        "Model 'm'",
        "added: tier",
        "removed: legacy",
        "qty (int -> bigint)",
        "big (bigint -> int)",
        "--full-refresh",
    ):
        assert needle in message, needle
    assert _plan("fail", TABLE).changes == ()


def test_append_new_columns_widens_adds_and_keeps_narrowed_and_removed() -> None:
    plan = _plan("append_new_columns", INCOMING)
    assert _types(plan.writer_schema) == {
        "id": pa.int32(),
        "qty": pa.int64(),
        "big": pa.int64(),
        "legacy": pa.string(),
        "tier": pa.string(),
    }
    assert {(c.column, c.kind) for c in plan.changes} == {("qty", "widened"), ("tier", "added")}
    assert [dst for _, dst in plan.columns] == ["id", "qty", "big", "tier"]
    assert plan.log_lines() == [
        "widened qty (int -> bigint)",
        "added tier (string)",
        "big (int) promoted to the table's bigint",
        "legacy (string) not in the model: null in the rows written",
    ]


def test_ignore_refuses_widening_and_missing_columns_naming_both_types() -> None:
    message = _refusal("ignore", INCOMING)
    assert "'qty' is int in the table and bigint in the model" in message
    assert "'legacy' (string) is in the table but not in the model" in message
    assert "'big'" not in message and "tier" not in message


def test_ignore_leaves_out_new_columns_and_keeps_the_table_shape() -> None:
    incoming = INCOMING.set(1, pa.field("qty", pa.int32()))
    plan = _plan("ignore", incoming, **{hc.SET_NULL_FOR_MISSING_COLUMNS.key: "true"})
    assert [dst for _, dst in plan.columns] == ["id", "qty", "big"]
    assert plan.changes == ()
    assert compare_schemas(TABLE, plan.writer_schema) == []
    assert "tier (string) not in the table: not written (on_schema_change='ignore')" in (
        plan.log_lines()
    )


def test_ignore_refuses_a_new_delete_marker_and_a_new_struct_field() -> None:
    table = pa.schema([("id", pa.int32()), ("s", pa.struct([("a", pa.int32())]))])
    incoming = pa.schema(
        [
            ("id", pa.int32()),
            ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
            ("_hoodie_is_deleted", pa.bool_()),
        ]
    )
    with pytest.raises(OnSchemaChangeError) as e:
        _plan("ignore", incoming, table)
    assert "'s.b' (string) is new inside a struct" in str(e.value)
    assert "'_hoodie_is_deleted' marks deletes" in str(e.value)
    plan = _plan("append_new_columns", incoming, table)
    assert {(c.column, c.kind) for c in plan.changes} == {
        ("s.b", "added"),
        ("_hoodie_is_deleted", "added"),
    }


def test_sync_all_columns_refuses_narrowing_and_says_what_to_do() -> None:
    message = _refusal("sync_all_columns", INCOMING)
    assert "'big' is bigint in the table and int in the model" in message
    assert "cannot narrow" in message and "cast(big as bigint)" in message
    assert "append_new_columns" in message


def test_sync_all_columns_adds_widens_and_drops() -> None:
    plan = _plan("sync_all_columns", INCOMING.set(2, pa.field("big", pa.int64())))
    assert _types(plan.writer_schema) == {
        "id": pa.int32(),
        "qty": pa.int64(),
        "big": pa.int64(),
        "tier": pa.string(),
    }
    assert {(c.column, c.kind) for c in plan.changes} == {
        ("qty", "widened"),
        ("tier", "added"),
        ("legacy", "removed"),
    }


def test_writer_schema_checked_against_the_mode() -> None:
    """Options that make Hudi keep a column sync_all_columns removes (or change a table ignore
    keeps) are refused, never obeyed silently."""
    synced = INCOMING.set(2, pa.field("big", pa.int64()))
    keep = {hc.SET_NULL_FOR_MISSING_COLUMNS.key: "true"}
    with pytest.raises(OnSchemaChangeError) as e:
        plan_write("m", "sync_all_columns", TABLE, synced, hc.parse_options(keep))
    assert "'legacy' is not in the model, but Hudi's writer schema keeps it" in str(e.value)
    reconcile = {hc.RECONCILE_SCHEMA.key: "true", **keep}
    assert _plan("ignore", TABLE.remove(3), **reconcile).changes == ()


@pytest.mark.parametrize("mode", MODES)
def test_incompatible_type_refused_in_every_mode(mode: str) -> None:
    incoming = TABLE.set(3, pa.field("legacy", pa.bool_()))
    message = _refusal(mode, incoming)
    assert "legacy" in message and "string" in message and "boolean" in message


def test_columns_match_case_insensitively_and_take_the_table_spelling() -> None:
    incoming = pa.schema([("ID", pa.int32()), ("Qty", pa.int32()), ("big", pa.int64())])
    plan = _plan("append_new_columns", incoming)
    assert plan.columns == (("ID", "id"), ("Qty", "qty"), ("big", "big"))
    assert plan.changes == ()


def test_no_table_yet_writes_the_model_as_it_is() -> None:
    plan = plan_write("m", "fail", None, INCOMING, hc.parse_options({}))
    assert plan.writer_schema == INCOMING and plan.changes == ()


def test_options_contradicting_the_mode_are_config_problems() -> None:
    drop = hc.SCHEMA_ALLOW_AUTO_EVOLUTION_COLUMN_DROP.key
    assert option_conflicts("append_new_columns", {drop: "true"})
    assert option_conflicts("sync_all_columns", {drop: "true"}) == []
    with pytest.raises(ConfigError) as e:
        parse_model_config(
            "m",
            "hudi_upsert",
            {
                "unique_key": "id",
                "on_schema_change": "sync_all_columns",
                "hudi_options": {drop: False, hc.RECONCILE_SCHEMA.key: True},
            },
        )
    assert drop in str(e.value) and hc.RECONCILE_SCHEMA.key in str(e.value)
    cfg = parse_model_config(
        "m", "hudi_upsert", {"unique_key": "id", "on_schema_change": "sync_all_columns"}
    )
    opts = cfg.write_options(table_name="m", database=None, operation="upsert")
    assert opts[drop] == "true"


# ---- property: every mode against an oracle of dbt's meaning ----------------------------------

# (table type, incoming type): Hudi promotes the first to the second
PROMOTIONS = [
    (pa.int32(), pa.int64()),
    (pa.int32(), pa.float64()),
    (pa.int64(), pa.float64()),
    (pa.float32(), pa.float64()),
]
INCOMPATIBLE = [(pa.bool_(), pa.int32()), (pa.int32(), pa.bool_())]
OPS = ("keep", "widen", "narrow", "incompatible", "drop")


@st.composite
def _evolution(draw: st.DrawFn) -> tuple[pa.Schema, pa.Schema, set[str]]:
    """A table schema, an incoming schema made from it by random per-column ops, and the ops."""
    n = draw(st.integers(1, 5))
    table_fields, incoming_fields, ops = (
        [pa.field("id", pa.int64())],
        [pa.field("id", pa.int64())],
        set(),
    )
    for i in range(n):
        op = draw(st.sampled_from(OPS))
        name = f"c{i}"
        if op == "keep":
            dtype = draw(st.sampled_from([pa.string(), pa.int32(), pa.float64()]))
            table_fields.append(pa.field(name, dtype))
            incoming_fields.append(pa.field(name, dtype))
            continue
        pair = draw(st.sampled_from(INCOMPATIBLE if op == "incompatible" else PROMOTIONS))
        old, new = (pair[1], pair[0]) if op == "narrow" else pair
        table_fields.append(pa.field(name, old))
        if op != "drop":
            incoming_fields.append(pa.field(name, new))
        ops.add(op)
    if draw(st.booleans()):
        incoming_fields.append(pa.field("added", pa.string()))
        ops.add("add")
    order = draw(st.permutations(range(len(incoming_fields))))
    incoming = pa.schema([incoming_fields[i] for i in order])
    return pa.schema(table_fields), incoming, ops


REFUSED = {
    "fail": {"widen", "narrow", "incompatible", "drop", "add"},
    "ignore": {"widen", "incompatible", "drop"},
    "append_new_columns": {"incompatible"},
    "sync_all_columns": {"narrow", "incompatible"},
}


@settings(max_examples=150, deadline=None)
@given(_evolution(), st.sampled_from(MODES))
def test_every_mode_matches_dbt_meaning(
    case: tuple[pa.Schema, pa.Schema, set[str]], mode: str
) -> None:
    table, incoming, ops = case
    if ops & REFUSED[mode]:
        with pytest.raises(OnSchemaChangeError):
            _plan(mode, incoming, table)
        return
    plan = _plan(mode, incoming, table)
    writer = _types(plan.writer_schema)
    written = {dst for _, dst in plan.columns}
    if mode in ("fail", "ignore"):
        assert writer == _types(table)  # the table keeps its shape
        assert written <= set(table.names)
    if mode == "append_new_columns":
        assert set(table.names) | set(incoming.names) == set(writer)
    if mode == "sync_all_columns":
        assert set(incoming.names) == set(writer)
    for f in table:  # no column narrows; a promotion widens to the model's type
        if f.name in writer:
            incoming_type = incoming.field(f.name).type if f.name in incoming.names else f.type
            wider = (
                "widen" in ops and incoming_type != f.type and (f.type, incoming_type) in PROMOTIONS
            )
            assert writer[f.name] == (incoming_type if wider else f.type)
