"""Our readers on the tables Apache Hudi wrote (shared/corpus).

* ``check_corpus.py`` judges the CLI's ``read`` (run in this process, each query's arguments as
  ``--reader-cmd`` would get them) against every documented expectation of the corpus.
* Every hudi-rs golden (``golden/<table>/<query>.jsonl``: snapshot, read_optimized, as_of_<t>,
  incr_<start>_<end>), of table versions 6, 8 and 9, must equal our Arrow reader's output byte
  for byte after canonicalization, and the CLI must print exactly that text.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from engine import config
from engine.cli import canonical_json_lines
from engine.cli.app import main as cli_main
from engine.read.arrow import read_table

pytestmark = pytest.mark.interop

REPO = Path(__file__).resolve().parents[2]


def _golden_cases(shared: Path | None) -> list[tuple[str, str]]:
    if shared is None:
        return []
    root = shared / "corpus" / "golden"
    return sorted((p.parent.name, p.stem) for p in root.glob("*/*.jsonl"))


def _shared() -> Path | None:
    from tests.conftest import SHARED

    return SHARED


def golden_options(query: str) -> dict[str, str]:
    """Read options of a golden file name (the hudi_rs_read.py arguments it was made with)."""
    if query == "snapshot":
        return {}
    if query == "read_optimized":
        return {config.QUERY_TYPE.key: "read_optimized"}
    if query.startswith("as_of_"):
        return {config.AS_OF_INSTANT: query.removeprefix("as_of_")}
    if query.startswith("incr_"):
        start, end = query.removeprefix("incr_").split("_")
        return {
            config.QUERY_TYPE.key: "incremental",
            config.READ_BEGIN_INSTANTTIME.key: start,
            config.READ_END_INSTANTTIME.key: end,
        }
    raise ValueError(query)


def golden_cli_args(query: str) -> list[str]:
    if query == "snapshot":
        return []
    if query == "read_optimized":
        return ["--read-optimized"]
    if query.startswith("as_of_"):
        return ["--as-of", query.removeprefix("as_of_")]
    start, end = query.removeprefix("incr_").split("_")
    return ["--incremental", start, end]


@pytest.mark.parametrize(("table", "query"), _golden_cases(_shared()))
def test_read_table_corpus_golden_equal_byte_for_byte(
    corpus_table: Callable[[str], Path], shared_dir: Path, table: str, query: str
) -> None:
    golden = (shared_dir / "corpus" / "golden" / table / f"{query}.jsonl").read_text()
    rows = read_table(str(corpus_table(table)), golden_options(query)).to_pylist()
    ours = "".join(line + "\n" for line in canonical_json_lines(rows))
    assert ours == golden


@pytest.mark.parametrize(
    ("table", "query"),
    [
        ("trips_mor_avro__v6_trips_8i3d", "snapshot"),
        ("mor_parquet__v6_nonpartitioned_rollback", "as_of_20250126040823628"),
        (
            "cow__v6_simplekeygen_nonhivestyle_overwritetable",
            "incr_20240707001302376_20240707001303088",
        ),
        ("mor_parquet__v6_complexkeygen_hivestyle", "read_optimized"),
        ("trips_mor_avro__v8_trips_8i3u1d", "as_of_20251220210127080"),
        ("mor_avro__v9_txns_simple_meta", "incr_20260307162612005_20260307162613746"),
        ("cow__v9_txns_simple_overwrite", "snapshot"),
        ("mor_avro__v9_nonpartitioned_rollback", "read_optimized"),
    ],
)
def test_cli_read_corpus_prints_golden_text(
    corpus_table: Callable[[str], Path], shared_dir: Path, table: str, query: str
) -> None:
    golden = (shared_dir / "corpus" / "golden" / table / f"{query}.jsonl").read_text()
    argv = [sys.executable, "-m", "engine.cli", "read", str(corpus_table(table)), "--meta"]
    done = subprocess.run(
        argv + golden_cli_args(query), capture_output=True, text=True, cwd=REPO, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == golden


def _cli_reader(table: str, query: dict[str, Any]) -> list[dict[str, Any]]:
    """``dbt-hudi read TABLE ... --meta`` run in this process: the arguments check_corpus.py
    gives its ``--reader-cmd``, the CLI's code from argument parsing to the printed JSON lines
    (process start and exit are the golden CLI tests' part)."""
    check_corpus = _check_corpus_module()
    out, err = io.StringIO(), io.StringIO()
    argv = ["read", table, *check_corpus.query_args(query), "--meta"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli_main(argv)
    if status != 0:
        raise RuntimeError(err.getvalue().strip()[-500:])
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


@functools.cache
def _check_corpus_module() -> ModuleType:
    shared = _shared()
    assert shared is not None
    tools = shared / "tools"
    sys.path.insert(0, str(tools))  # check_corpus.py imports hudi_rs_read beside it
    spec = importlib.util.spec_from_file_location("check_corpus", tools / "check_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_corpus_with_engine_cli_all_expectations_pass(
    shared_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """shared/tools/check_corpus.py, its ``--reader-cmd`` reader being the CLI's ``read``: every
    expectation of the corpus holds."""
    check_corpus = _check_corpus_module()
    monkeypatch.setattr(check_corpus, "read_cmd", lambda _cmd, table, q: _cli_reader(table, q))
    argv = ["check_corpus.py", "--reader-cmd", "dbt-hudi read", "--work-dir", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", argv)
    status = check_corpus.main()
    printed = capsys.readouterr().out.strip()
    summary = printed.splitlines()[-1]
    failed = [line for line in printed.splitlines() if line.startswith("FAIL")]
    assert not status and not failed, "\n".join(failed)[-3000:]
    passed, total = summary.split()[0].split("/")
    # 79: the v6 tables and the tables Hudi 1.0 (version 8) and 1.1 (version 9) wrote
    assert passed == total and int(total) >= 79, summary


def test_cli_read_missing_table_exits_2_naming_path(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "read", str(tmp_path / "nope")],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "nope" in done.stderr and done.stdout == ""
