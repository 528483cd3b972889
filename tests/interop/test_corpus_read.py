"""Our readers on the tables Apache Hudi wrote (shared/corpus).

* ``check_corpus.py`` judges the CLI (``python -m engine.cli read``) against every documented
  expectation of the corpus.
* Every hudi-rs golden (``golden/<table>/<query>.jsonl``: snapshot, read_optimized, as_of_<t>,
  incr_<start>_<end>) must equal our Arrow reader's output byte for byte after canonicalization,
  and the CLI must print exactly that text.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import config
from engine.cli import canonical_json_lines
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


def test_check_corpus_with_engine_cli_all_expectations_pass(
    shared_dir: Path, tmp_path: Path
) -> None:
    reader = f"{sys.executable} -m engine.cli read"
    done = subprocess.run(
        [sys.executable, str(shared_dir / "tools" / "check_corpus.py"), "--reader-cmd", reader,
         "--work-dir", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    passed, total = summary.split()[0].split("/")
    assert passed == total and int(total) >= 36, summary


def test_cli_read_missing_table_exits_2_naming_path(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "read", str(tmp_path / "nope")],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "nope" in done.stderr and done.stdout == ""
