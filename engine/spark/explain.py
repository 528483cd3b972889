"""A plan's text as ``DataFrame.explain`` prints it, captured without taking other threads'
output.

pyspark's public API prints a plan and returns nothing (``DataFrame.explain``, the same on a
classic session and over Spark Connect). ``contextlib.redirect_stdout`` swaps the process's
``sys.stdout`` for everyone: while the adapter's warm-up thread captured a plan, dbt's main
thread capturing its own restored the other's buffer as ``sys.stdout``, its plan was printed
on the terminal and the run failed as it ended. Here one dispatcher stands in for
``sys.stdout`` while any thread captures: each capturing thread's writes go to its own buffer,
every other thread's to the stream that was there before.
"""

from __future__ import annotations

import io
import sys
import threading
from typing import Any, TextIO

from pyspark.sql import DataFrame

__all__ = ["explain_text"]

_LOCK = threading.Lock()
_CAPTURING = threading.local()
_active = 0
_saved: TextIO | None = None


class _Dispatcher:
    """``sys.stdout`` while some thread captures: writes go to that thread's buffer when it
    is capturing, else to the stream it stands in for."""

    def __init__(self, target: TextIO) -> None:
        self.target = target

    def _stream(self) -> TextIO:
        buffer: io.StringIO | None = getattr(_CAPTURING, "buffer", None)
        return buffer if buffer is not None else self.target

    def write(self, text: str) -> int:
        return self._stream().write(text)

    def flush(self) -> None:
        self._stream().flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno...: the real stream's
        return getattr(self.target, name)


def explain_text(df: DataFrame, mode: str) -> str:
    """What ``df.explain(mode=mode)`` prints, and nothing printed."""
    global _active, _saved
    buffer = io.StringIO()
    with _LOCK:
        if _active == 0:
            _saved = sys.stdout
            sys.stdout = _Dispatcher(sys.stdout)
        _active += 1
    _CAPTURING.buffer = buffer
    try:
        df.explain(mode=mode)
    finally:
        _CAPTURING.buffer = None
        with _LOCK:
            _active -= 1
            if _active == 0 and isinstance(sys.stdout, _Dispatcher):
                sys.stdout = _saved
    return buffer.getvalue()
