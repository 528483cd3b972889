"""Polling: call a check until it holds or the time is up, for every loop that waits.

Waiting for a lock, for a JVM to exit, for another process to finish writing a file or for the
clock to pass an instant are all the same loop; :func:`poll` is that loop once, on tenacity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import tenacity

__all__ = ["poll"]

T = TypeVar("T")


def poll(check: Callable[[], T], *, seconds: float, every: float) -> T:
    """Call ``check`` every ``every`` seconds until it returns a true value or ``seconds`` have
    passed since the first call; return its last answer (``check`` runs at least once). An
    exception ``check`` raises ends the polling and propagates."""
    retrying: tenacity.Retrying = tenacity.Retrying(
        stop=tenacity.stop_after_delay(max(0.0, seconds)),
        wait=tenacity.wait_fixed(every),
        retry=tenacity.retry_if_result(lambda answer: not answer),
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
    )
    return retrying(check)
