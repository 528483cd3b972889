"""The merge semantics a version-9 table's merge mode and partial update mode spell."""

from __future__ import annotations

import pytest

from engine import config
from engine.errors import QueryError
from engine.fs.table_version import effective_payload_class, versioned_properties

pytestmark = pytest.mark.unit

V9 = {"hoodie.table.version": "9", "hoodie.timeline.layout.version": "2"}


@pytest.mark.parametrize(
    ("mode", "partial", "payload"),
    [
        ("EVENT_TIME_ORDERING", "IGNORE_DEFAULTS", config.PARTIAL_UPDATE_PAYLOAD),
        ("COMMIT_TIME_ORDERING", "IGNORE_DEFAULTS", config.OVERWRITE_NON_DEFAULTS_PAYLOAD),
        ("EVENT_TIME_ORDERING", "NONE", config.DEFAULT_PAYLOAD),
        ("COMMIT_TIME_ORDERING", None, config.OVERWRITE_WITH_LATEST_PAYLOAD),
    ],
)
def test_merge_mode_and_partial_update_mode_name_the_payload(
    mode: str, partial: str | None, payload: str
) -> None:
    props = {**V9, "hoodie.record.merge.mode": mode}
    if partial is not None:
        props["hoodie.table.partial.update.mode"] = partial
    assert effective_payload_class(props) == payload


def test_an_unsupported_partial_update_mode_is_named() -> None:
    props = {
        **V9,
        "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
        "hoodie.table.partial.update.mode": "IGNORE_MARKERS",
    }
    with pytest.raises(QueryError, match=r"hoodie\.table\.partial\.update\.mode=IGNORE_MARKERS"):
        effective_payload_class(props)


@pytest.mark.parametrize(
    "payload", [config.PARTIAL_UPDATE_PAYLOAD, config.OVERWRITE_NON_DEFAULTS_PAYLOAD]
)
def test_version_9_properties_round_trip_to_the_payload(payload: str) -> None:
    base = {"hoodie.table.name": "t", "hoodie.table.precombine.field": "ts"}
    props = versioned_properties({**base, config.PAYLOAD_CLASS.key: payload}, 9)
    assert config.PAYLOAD_CLASS.key not in props
    assert props["hoodie.table.legacy.payload.class"] == payload
    assert props["hoodie.record.merge.strategy.id"]
    assert effective_payload_class(props) == payload
