"""The user guide's generated parts, drawn from the code so the site cannot drift from it.

* the model config reference: ``MODEL_CONFIGS`` in ``dbt/adapters/hudi/options.py``;
* the ``hoodie.*`` keys: every option ``engine/config.py`` registers (type, default, allowed
  values, aliases, description);
* the performance plots: ``bench/results.json``, which ``make bench`` and ``make bench-dbt``
  update (``scripts/plot_bench.py``).

``mkdocs build`` runs these through ``scripts/mkdocs_hooks.py``: a page holding the marker
``<!-- generated: NAME -->`` gets ``NAME``'s text in its place. ``tests/docs/`` checks that every
accepted config has a description here and every error class a troubleshooting entry.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator
from enum import Enum
from itertools import groupby
from pathlib import Path
from typing import Any

from dbt.adapters.hudi.options import MODEL_CONFIGS, ModelConfigDoc
from engine import config as hc

REPO = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")

# what each of engine.config's parsers accepts, as the reference names it
PARSER_TYPES: dict[Callable[[str], Any], str] = {
    hc.parse_str: "string",
    hc.parse_int: "integer",
    hc.parse_positive_int: "positive integer",
    hc.parse_non_negative_int: "integer ≥ 0",
    hc.parse_positive_float: "positive number",
    hc.parse_probability: "number in (0, 1)",
    hc.parse_bool: "boolean",
    hc.parse_list: "comma-separated list",
    hc.parse_log_block_format: "one of",
}
# the values of parsers that are not a Choice
PARSER_ALLOWED: dict[Callable[[str], Any], tuple[str, ...]] = {
    hc.parse_log_block_format: hc.LOG_BLOCK_FORMATS,
}


def option_type(option: hc.ConfigOption[Any]) -> str:
    """The type the reference shows; a parser it cannot name is an error (a test calls this)."""
    if isinstance(option.parser, hc.Choice):
        return "one of"
    try:
        return PARSER_TYPES[option.parser]
    except KeyError:
        raise LookupError(
            f"{option.key}: its parser {option.parser!r} has no type in PARSER_TYPES"
        ) from None


def option_allowed(option: hc.ConfigOption[Any]) -> tuple[str, ...]:
    if isinstance(option.parser, hc.Choice):
        return tuple(option.parser.allowed)
    return PARSER_ALLOWED.get(option.parser, ())


def option_default(option: hc.ConfigOption[Any]) -> str:
    value = option.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Enum):
        return f"`{value.value}`"
    if isinstance(value, tuple):
        return f"`{','.join(value)}`" if value else "empty"
    if value == "":
        return "empty"
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def hoodie_keys_md() -> str:
    """Every ``hoodie.*`` key the engine understands, grouped by its second segment."""
    options = sorted(hc.known_options(), key=lambda o: o.key)
    out = [
        f"The engine understands {len(options)} `hoodie.*` keys. Any other `hoodie.*` key is "
        "refused with an error naming it (in `hudi_options`, in `write_hudi` options and in "
        "`dbt-hudi --option`); keys Hudi spells two ways are listed under the canonical one "
        "with its alias.",
        "",
    ]
    for group, members in groupby(options, key=_group):
        out += [f"### `{group}`", "", "| key | type | default | description |", "|---|---|---|---|"]
        for option in members:
            kind = option_type(option)
            allowed = option_allowed(option)
            if allowed:
                kind = f"{kind} {', '.join(f'`{a}`' for a in allowed)}"
            key = f"`{option.key}`"
            if option.aliases:
                key += "<br>alias " + ", ".join(f"`{a}`" for a in option.aliases)
            out.append(
                f"| {key} | {_cell(kind)} | {_cell(option_default(option))} | {_cell(option.doc)} |"
            )
        out.append("")
    return "\n".join(out)


def _group(option: hc.ConfigOption[Any]) -> str:
    parts = option.key.split(".")
    return ".".join(parts[:2]) + ".*" if len(parts) > 2 else option.key


def _model_config_md(doc: ModelConfigDoc) -> list[str]:
    lines = [f"### `{doc.name}`", "", doc.description, ""]
    lines.append(f"- **Applies to:** {doc.applies_to}")
    lines.append(f"- **Values:** {doc.values}")
    if doc.allowed:
        lines.append(f"- **Allowed:** {', '.join(f'`{a}`' for a in doc.allowed)}")
    lines.append(f"- **Default:** {doc.default}")
    lines.append(f"- **Hudi key:** {doc.hudi_keys}")
    return [*lines, ""]


def model_configs_md() -> str:
    out = ["| config | applies to |", "|---|---|"]
    out += [f"| [`{d.name}`](#{d.name}) | {_cell(d.applies_to)} |" for d in MODEL_CONFIGS]
    out.append("")
    for doc in MODEL_CONFIGS:
        out += _model_config_md(doc)
    return "\n".join(out)


def generated(name: str) -> str:
    """The text of the marker ``<!-- generated: NAME -->``."""
    from scripts import plot_bench

    makers: dict[str, Callable[[], str]] = {
        "model-configs": model_configs_md,
        "hoodie-keys": hoodie_keys_md,
        "performance-figures": plot_bench.figures_md,
    }
    try:
        return makers[name]()
    except KeyError:
        raise LookupError(f"no generated part named {name!r}") from None


def fill(markdown: str) -> str:
    """``markdown`` with every marker replaced by its generated text."""
    return MARKER.sub(lambda m: generated(m.group(1)), markdown)


# ---- what the tests hold the pages to ------------------------------------------------------


def _modules(package: str) -> Iterator[str]:
    root = importlib.import_module(package)
    yield package
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if not info.name.endswith("__main__"):
            yield info.name


def error_classes() -> list[type[Exception]]:
    """Every exception class the engine and the adapter define, each module imported."""
    found: dict[str, type[Exception]] = {}
    for package in ("engine", "dbt.adapters.hudi"):
        for name in _modules(package):
            module = importlib.import_module(name)
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and issubclass(value, Exception)
                    and value.__module__.startswith(("engine", "dbt.adapters.hudi"))
                ):
                    found[value.__qualname__] = value
    return sorted(found.values(), key=lambda c: c.__qualname__)
