"""The installed ``dbt-hudi`` script in a shell pipe whose reader stops early: no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

SCRIPT = Path(sys.executable).parent / "dbt-hudi"


@pytest.mark.parametrize("verb", ["read", "timeline"])
def test_reader_closing_the_pipe_ends_the_command_quietly(verb: str, cow_table: Path) -> None:
    assert SCRIPT.exists(), "make install puts the dbt-hudi console script next to python"
    shell = f'set -o pipefail; "{SCRIPT}" {verb} "{cow_table}" | head -1; echo "status=$?" >&2'
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=300)
    assert done.stdout.count("\n") == 1
    if verb == "read":
        # ~3,000 rows: far more than a pipe buffer holds, so the write after `head` left fails
        assert done.stderr == "status=141\n"
        assert json.loads(done.stdout)["id"] == "k00000"
    else:
        assert "Traceback" not in done.stderr and "Error" not in done.stderr
