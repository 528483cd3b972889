"""``poll``: the one loop that waits, on tenacity."""

from __future__ import annotations

import time

import pytest

from engine.polling import poll


def test_poll_returns_the_first_true_answer() -> None:
    answers = iter([0, None, False, 7, 8])
    assert poll(lambda: next(answers), seconds=5, every=0.001) == 7


def test_poll_gives_up_with_the_last_answer_when_the_time_is_up() -> None:
    calls: list[float] = []

    def never() -> bool:
        calls.append(time.monotonic())
        return False

    started = time.monotonic()
    assert poll(never, seconds=0.2, every=0.02) is False
    assert 0.2 <= time.monotonic() - started < 2.0
    assert len(calls) >= 3


def test_poll_checks_once_when_no_time_is_left() -> None:
    calls: list[int] = []
    assert poll(lambda: calls.append(1), seconds=-1.0, every=1.0) is None
    assert calls == [1]


def test_an_exception_ends_the_polling() -> None:
    calls: list[int] = []

    def fails() -> bool:
        calls.append(1)
        raise OSError("gone")

    with pytest.raises(OSError, match="gone"):
        poll(fails, seconds=5, every=0.001)
    assert calls == [1]
