"""No ``hoodie.*`` key is accepted and then ignored: every option of the registry is read by the
engine or the adapter, or its unsupported values are refused, or it is a persisted property
whose value only describes the table (listed here with why)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine import config
from engine.write.transaction import UNSUPPORTED_VALUES

ROOT = Path(__file__).resolve().parents[2]

# persisted by Hudi's writers; the value describes the table and changes nothing a write does
DESCRIPTIVE = {
    config.BOOTSTRAP_INDEX_ENABLE.key: "where a bootstrap index is (taken-over tables keep it)",
}


def _option_names() -> dict[str, str]:
    """Registry key -> the name of its ConfigOption in engine.config."""
    names = {}
    for name, value in vars(config).items():
        if isinstance(value, config.ConfigOption):
            names[value.key] = name
    return names


def _sources() -> str:
    files = [
        p
        for p in [*ROOT.glob("engine/**/*.py"), *ROOT.glob("dbt/**/*.py")]
        if p != ROOT / "engine" / "config.py"
    ]
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def test_every_registered_key_is_consumed_refused_or_descriptive() -> None:
    names = _option_names()
    assert {o.key for o in config.known_options()} <= set(names)
    text = _sources()
    refused = {option.key for option, _, _ in UNSUPPORTED_VALUES}
    unaccounted = []
    for key, name in sorted(names.items()):
        used = re.search(rf"\.{name}\b", text) is not None
        if not used and key not in DESCRIPTIVE:
            unaccounted.append(key)
        if key in refused:
            assert used, f"{key} is refused but never read"
    assert unaccounted == [], f"keys accepted and then ignored: {unaccounted}"


@pytest.mark.parametrize(("option", "value", "why"), UNSUPPORTED_VALUES)
def test_unsupported_values_are_refused_before_anything_is_written(
    tmp_path: Path, option: config.ConfigOption[object], value: object, why: str
) -> None:
    from engine.errors import ConfigError
    from engine.table import HudiTable

    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        option.key: config.format_value(value),
    }
    with pytest.raises(ConfigError, match=re.escape(f"{option.key}=")):
        HudiTable(str(tmp_path / "t")).write(None, options)
    assert not (tmp_path / "t").exists()
