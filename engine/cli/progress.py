"""Progress bars for long work (compaction, clean, rollback), on a terminal only.

Bars go to stderr, so stdout keeps only the result; in a pipe, a file or CI nothing is drawn.
Spark's own console progress bar is switched off for the command's session (see
:func:`quiet_spark`), so the only bar a person sees is this one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

__all__ = ["Advance", "progress", "quiet_spark"]

Advance = Callable[[int], None]


@contextmanager
def progress(description: str, total: int | None = None) -> Iterator[Advance]:
    """A bar of ``total`` steps (a spinner when unknown); yields ``advance(steps)``."""
    if not sys.stderr.isatty():
        yield lambda steps: None
        return
    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda steps: bar.advance(task, steps)


def quiet_spark() -> None:
    """Start the process's SparkSession with its console progress bar and INFO logs off.

    An embedded session only: a Spark Connect server (``SPARK_REMOTE``) keeps its own settings.
    """
    import os

    from engine import QUIET_LOG4J, get_spark

    if os.environ.get("SPARK_REMOTE"):
        get_spark()
        return
    get_spark(
        {
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile={QUIET_LOG4J}",
        }
    )
