"""The config reference and the troubleshooting page cannot drift from the code.

* Every ``hoodie.*`` key the engine registers (``engine/config.py``) is on the reference page
  with a description, a type the page can name and, for a choice, its allowed values.
* Every model config the adapter reads (``config.get('...')`` in ``dbt/adapters/hudi`` and in
  its macros, and every dbt-spark config ``guards.SPARK_CONFIGS`` rules on) has an entry in
  ``MODEL_CONFIGS`` with a description, and no entry names a config nothing reads.
* Every error class of the engine and the adapter has a troubleshooting section with an example
  message, what it means and what to do, and every message the adapter raises itself is quoted.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from dbt.adapters.hudi.guards import SPARK_CONFIGS, GuardError, location_problem
from dbt.adapters.hudi.options import MODEL_CONFIGS, ModelConfigError, parse_model_config
from engine import config as hc
from engine.fs.filenames import parse_base_file_name
from engine.fs.properties import read_properties
from engine.fs.storage import Storage
from scripts import docs_reference as ref

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
ADAPTER = REPO / "dbt" / "adapters" / "hudi"
MACROS = REPO / "dbt" / "include" / "hudi" / "macros"
TROUBLESHOOTING = REPO / "docs" / "troubleshooting.md"

_CONFIG_READ = re.compile(r"\bconfig\.(?:get|require)\(\s*['\"](\w+)['\"]")
_CONFIG_ATTRIBUTE = re.compile(r"\bconfig\.(\w+)\b(?!\s*\()")
# dbt's config methods that read a model config under another name
_CONFIG_METHODS = {"persist_relation_docs": "persist_docs", "persist_column_docs": "persist_docs"}
_CONFIG_METHOD = re.compile(r"\bconfig\.(" + "|".join(_CONFIG_METHODS) + r")\(")
_NOT_CONFIGS = {"get", "require", "credentials", "enforced"}


def configs_read(sources: dict[str, str]) -> dict[str, str]:
    """Model config name -> the first source file reading it (``config.get('x')``,
    ``config.require('x')``, ``node.config.x``, dbt's ``config.persist_*_docs()``)."""
    found: dict[str, str] = {}
    for name, text in sources.items():
        keys = [*_CONFIG_READ.findall(text), *_CONFIG_ATTRIBUTE.findall(text)]
        keys += [_CONFIG_METHODS[m] for m in _CONFIG_METHOD.findall(text)]
        for key in keys:
            if key not in _NOT_CONFIGS:
                found.setdefault(key, name)
    return found


def adapter_sources() -> dict[str, str]:
    files = [*sorted(ADAPTER.glob("*.py")), *sorted(MACROS.rglob("*.sql"))]
    return {str(p.relative_to(REPO)): p.read_text() for p in files}


def accepted_configs() -> dict[str, str]:
    read = configs_read(adapter_sources())
    for key in SPARK_CONFIGS:
        read.setdefault(key, "dbt/adapters/hudi/guards.py (SPARK_CONFIGS)")
    return read


# ---- hoodie.* keys ---------------------------------------------------------------------------


def test_every_engine_key_is_on_the_reference_page_with_a_description() -> None:
    page = ref.hoodie_keys_md()
    options = hc.known_options()
    assert len(options) > 100
    undocumented = [o.key for o in options if len(o.doc.strip()) < 10]
    assert undocumented == [], "hoodie.* keys without a description in engine/config.py"
    for option in options:
        row = next((line for line in page.splitlines() if line.startswith(f"| `{option.key}`")), "")
        assert row, f"{option.key} is not on the reference page"
        assert ref.option_type(option) in row
        for alias in option.aliases:
            assert f"`{alias}`" in row
        for value in ref.option_allowed(option):
            assert f"`{value}`" in row, f"{option.key}: allowed value {value} not listed"


def test_a_choice_lists_the_values_its_parser_accepts() -> None:
    table_type = hc.lookup("hoodie.table.type")
    assert table_type is not None
    assert ref.option_allowed(table_type) == ("COPY_ON_WRITE", "MERGE_ON_READ")
    for value in ref.option_allowed(table_type):
        assert hc.parse_options({"hoodie.table.type": value}).get(table_type) == value
    block_format = hc.lookup("hoodie.logfile.data.block.format")
    assert block_format is not None
    for value in ref.option_allowed(block_format):
        hc.parse_options({block_format.key: value})


def test_a_parser_the_page_cannot_name_fails_the_reference() -> None:
    option = hc.ConfigOption("hoodie.test.unnamed", lambda v: v, "", "A key for this test.")
    with pytest.raises(LookupError, match=r"hoodie\.test\.unnamed"):
        ref.option_type(option)


def test_defaults_are_shown_as_the_engine_holds_them() -> None:
    page = ref.hoodie_keys_md()
    codec = hc.lookup("hoodie.parquet.compression.codec")
    assert codec is not None
    assert f"| `{codec.key}` | one of" in page
    assert f"| `{codec.default}` |" in page.split(f"`{codec.key}`", 1)[1].splitlines()[0]


# ---- model configs ---------------------------------------------------------------------------


def test_every_model_config_the_adapter_reads_is_documented() -> None:
    documented = {d.name: d for d in MODEL_CONFIGS}
    missing = {k: where for k, where in accepted_configs().items() if k not in documented}
    assert missing == {}, "model configs read by the adapter without a MODEL_CONFIGS entry"
    for doc in MODEL_CONFIGS:
        for field in ("applies_to", "values", "default", "hudi_keys", "description"):
            assert getattr(doc, field).strip(), f"{doc.name}: empty {field}"


def test_no_entry_documents_a_config_nothing_reads() -> None:
    read = accepted_configs()
    stale = [d.name for d in MODEL_CONFIGS if d.name not in read and d.name != "materialized"]
    assert stale == []
    assert len({d.name for d in MODEL_CONFIGS}) == len(MODEL_CONFIGS)


def test_the_scan_finds_a_config_read_in_python_and_in_a_macro() -> None:
    found = configs_read(
        {
            "a.py": 'x = config.get("new_knob")\nmaterialized = node.config.materialized',
            "b.sql": "{% set v = config.require('other_knob') %}{{ config.persist_column_docs() }}",
        }
    )
    assert set(found) == {"new_knob", "materialized", "other_knob", "persist_docs"}
    assert "new_knob" not in {d.name for d in MODEL_CONFIGS}


def test_hudi_keys_named_by_model_configs_exist() -> None:
    for doc in MODEL_CONFIGS:
        text = (doc.hudi_keys + doc.description).replace("`hoodie.properties`", "")
        for key in re.findall(r"`(hoodie\.[a-z0-9_.]+)`", text):
            assert hc.lookup(key) is not None, f"{doc.name} names {key}, unknown to the engine"


def test_allowed_values_are_accepted_and_others_refused() -> None:
    checked = 0
    for doc in MODEL_CONFIGS:
        if not doc.allowed or doc.name in ("materialized", "savepoint", "file_format"):
            continue
        overwrite = doc.name == "overwrite_scope"
        materialization = "hudi_insert_overwrite" if overwrite else "hudi_upsert"
        base = {"unique_key": "id", "precombine_key": "ts"}
        for value in doc.allowed:
            parse_model_config("m", materialization, {**base, doc.name: value})
            checked += 1
        with pytest.raises(ModelConfigError, match=doc.name):
            parse_model_config("m", materialization, {**base, doc.name: "not-a-value"})
    assert checked >= 15


def test_the_page_holds_every_generated_part() -> None:
    text = (REPO / "docs" / "config-reference.md").read_text()
    filled = ref.fill(text)
    assert ref.MARKER.search(filled) is None
    for doc in MODEL_CONFIGS:
        assert f"### `{doc.name}`" in filled
    assert all(f"`{o.key}`" in filled for o in hc.known_options())


# ---- troubleshooting -------------------------------------------------------------------------


def sections(page: str) -> dict[str, str]:
    """``### `Name` `` section title -> its text."""
    parts = re.split(r"^### `(\w+)`\s*$", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def section_problems(name: str, text: str | None) -> list[str]:
    if text is None:
        return [f"{name}: no section"]
    problems = []
    if not re.search(r"```text\n.+?\n```", text, flags=re.S):
        problems.append(f"{name}: no example message")
    for part in ("**What it means.**", "**What to do.**"):
        if part not in text:
            problems.append(f"{name}: no {part}")
    return problems


def test_every_error_class_has_a_troubleshooting_section() -> None:
    classes = ref.error_classes()
    names = {c.__qualname__ for c in classes}
    assert {"HudiError", "ConfigError", "ModelConfigError", "OnSchemaChangeError"} <= names
    found = sections(TROUBLESHOOTING.read_text())
    problems = [p for n in sorted(names) for p in section_problems(n, found.get(n))]
    assert problems == []
    stale = sorted(n for n in found if n not in names)
    assert stale == [], "troubleshooting sections for classes that do not exist"


def test_a_section_without_its_parts_is_reported() -> None:
    assert section_problems("XError", None) == ["XError: no section"]
    assert section_problems("XError", "**What it means.** x") == [
        "XError: no example message",
        "XError: no **What to do.**",
    ]


def raised_fragments(source: str) -> list[str]:
    """The literal text of every message the adapter raises as a dbt error itself."""
    fragments = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
            continue
        func = node.exc.func
        if not (isinstance(func, ast.Name) and func.id in ("CompilationError", "DbtRuntimeError")):
            continue
        for arg in node.exc.args:
            for const in ast.walk(arg):
                if isinstance(const, ast.Constant) and isinstance(const.value, str):
                    fragments += [p.strip() for p in re.split(r"[{}]", const.value)]
    return [f for f in fragments if len(f) >= 8]


def test_every_message_the_adapter_raises_is_quoted() -> None:
    page = TROUBLESHOOTING.read_text()
    missing = {
        f"{path.name}: {fragment!r}"
        for path in sorted(ADAPTER.glob("*.py"))
        for fragment in raised_fragments(path.read_text())
        if fragment not in page
    }
    assert missing == set()


def test_the_fragments_of_a_raise_are_found() -> None:
    source = 'def f(x):\n    raise DbtRuntimeError(f"Something {x} went wrong here")\n'
    assert raised_fragments(source) == ["Something", "went wrong here"]


# ---- environment variables -------------------------------------------------------------------

_ENV_READ = re.compile(
    r"""(?:environ\.get\(|environ\[|getenv\()\s*['"]([A-Z][A-Z0-9_]+)['"]"""
    r"""|^\w*ENV\w* = ['"]([A-Z][A-Z0-9_]+)['"]""",
    flags=re.M,
)
# the fault-injection hooks of tests/faults: set by the tests, never by a user
_TEST_ONLY_ENV = {"HUDI_FAULT_POINT", "HUDI_FAULT_PID", "HUDI_FAULT_COUNTER"}


def env_read(sources: dict[str, str]) -> set[str]:
    return {a or b for text in sources.values() for a, b in _ENV_READ.findall(text)}


def test_every_environment_variable_read_is_documented() -> None:
    files = [*(REPO / "engine").rglob("*.py"), *ADAPTER.glob("*.py")]
    read = env_read({str(p): p.read_text() for p in files}) - _TEST_ONLY_ENV
    assert {"SPARK_REMOTE", "DBT_HUDI_CLASS_ARCHIVE", "DBT_HUDI_TIMING"} <= read
    page = (REPO / "docs" / "config-reference.md").read_text()
    table = page.split("## Environment variables", 1)[1]
    assert sorted(v for v in read if f"`{v}`" not in table) == []


def test_the_environment_scan_finds_reads_and_constants() -> None:
    source = 'x = os.environ.get("NEW_VAR")\nTIMING_ENV = "OTHER_VAR"\ny = os.getenv("THIRD")\n'
    assert env_read({"a.py": source}) == {"NEW_VAR", "OTHER_VAR", "THIRD"}


def _raised(make: Callable[[], object]) -> str:
    try:
        make()
    except Exception as e:
        return str(e)
    raise AssertionError("no error raised")


# the page's example for these classes is the very message the code raises for its values
EXAMPLES: dict[str, Callable[[], object]] = {
    "ConfigError": lambda: hc.parse_options({"hoodie.datasource.write.recordkey": "id"}),
    "ModelConfigError": lambda: parse_model_config("orders", "hudi_upsert", {"payload": "latest"}),
    "GuardError": lambda: _raise(
        GuardError(
            "orders",
            "hudi_upsert",
            [location_problem("/data/lake/analytics/orders", ["part-0000.parquet"])],
        )
    ),
    "FileNameError": lambda: parse_base_file_name("part-00000.parquet"),
    "TableNotFoundError": lambda: read_properties(Storage("/data/lake/analytics/orders")),
}


def _raise(error: Exception) -> None:
    raise error


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_example_is_the_message_the_code_raises(name: str) -> None:
    example = sections(TROUBLESHOOTING.read_text())[name].split("```text\n", 1)[1].split("\n```")[0]
    assert example == _raised(EXAMPLES[name])
