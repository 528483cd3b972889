"""The installed ``dbt-hudi`` script in a pipe whose reader stops early (no traceback) and on a
terminal (progress bars and colours there only)."""

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


def _run_with_terminal(argv: list[str], *, stdout_tty: bool) -> tuple[int, str, str]:
    """Run with stderr (and stdout when asked) on a pseudo-terminal: (status, stdout, terminal)."""
    import os
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv,
        stdout=follower if stdout_tty else subprocess.PIPE,
        stderr=follower,
        text=True,
        env={**os.environ, "COLUMNS": "200", "TERM": "xterm-256color"},
    )
    os.close(follower)
    screen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: every process holding it has exited
            break
        if not chunk:
            break
        screen += chunk
    out = proc.stdout.read() if proc.stdout else ""
    os.close(leader)
    return proc.wait(timeout=120), out, screen.decode(errors="replace")


def test_progress_bar_on_a_terminal_only(cow_table: Path, tmp_path: Path) -> None:
    import shutil

    table = tmp_path / "cow"
    shutil.copytree(cow_table, table)
    status, out, terminal = _run_with_terminal([str(SCRIPT), "clean", str(table)], stdout_tty=False)
    assert (status, out) == (0, "nothing to clean\n")
    assert "cleaning" in terminal and "\x1b[" in terminal  # drawn, then erased (transient)
    status, out, terminal = _run_with_terminal(
        [str(SCRIPT), "timeline", str(table)], stdout_tty=True
    )
    assert status == 0 and "\x1b[" in terminal and "completed" in terminal
    done = subprocess.run([str(SCRIPT), "clean", str(table)], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "nothing to clean\n", "")
