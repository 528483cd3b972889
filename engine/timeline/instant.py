"""Instants: an action at an instant time in a state, and their file names (layout version 1).

::

    {instant_time}.{action}.requested    {instant_time}.{action}.inflight    {instant_time}.{action}
    {instant_time}.inflight              (the inflight state of a `commit`)
    {instant_time}.compaction.*          (completes as {instant_time}.commit)

Instant times are ``yyyyMMddHHmmssSSS`` (UTC here) and compare as strings, so they must keep all
17 digits and grow strictly on a table.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from enum import StrEnum

from engine.errors import TimelineError

INSTANT_FORMAT = "%Y%m%d%H%M%S%f"  # %f gives micros; the last 3 digits are cut
_NAME_RE = re.compile(r"^(\d+)(\.\w+)(\.\D+)?$")


class Action(StrEnum):
    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    REPLACE_COMMIT = "replacecommit"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RESTORE = "restore"
    INDEXING = "indexing"


class State(StrEnum):
    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"


_STATE_ORDER = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}
# Write actions whose completed instants make data visible to readers.
COMMIT_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT})
# Pending table services that complete as another action.
_COMPLETES_AS = {Action.COMPACTION: Action.COMMIT, Action.LOG_COMPACTION: Action.DELTA_COMMIT}


@dataclass(frozen=True, slots=True)
class Instant:
    """One timeline entry."""

    instant_time: str
    action: Action
    state: State

    def sort_key(self) -> tuple[str, int]:
        return (self.instant_time, _STATE_ORDER[self.state])

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def file_name(self) -> str:
        return instant_file_name(self.instant_time, self.action, self.state)

    def __str__(self) -> str:
        return f"[{self.instant_time}__{self.action.value}__{self.state.name}]"


def completed_action(action: Action) -> Action:
    """The action an instant of ``action`` has once completed (compaction → commit)."""
    return _COMPLETES_AS.get(action, action)


def instant_file_name(instant_time: str, action: Action, state: State) -> str:
    if state is State.COMPLETED:
        return f"{instant_time}.{completed_action(action).value}"
    if state is State.INFLIGHT and action is Action.COMMIT:
        return f"{instant_time}.inflight"
    return f"{instant_time}.{action.value}.{state.value}"


def parse_instant_file_name(name: str) -> Instant | None:
    """Parse a timeline file name; ``None`` for other files (ignored, as Hudi does)."""
    m = _NAME_RE.match(name)
    if m is None:
        return None
    instant_time, action_part, state_part = m.group(1), m.group(2)[1:], m.group(3)
    if action_part == "inflight" and state_part is None:
        return Instant(instant_time, Action.COMMIT, State.INFLIGHT)
    try:
        action = Action(action_part)
    except ValueError:
        return None
    if state_part is None:
        if action in _COMPLETES_AS:
            return None
        return Instant(instant_time, action, State.COMPLETED)
    try:
        state = State(state_part[1:])
    except ValueError:
        return None
    if state is State.COMPLETED:
        return None
    return Instant(instant_time, action, state)


def format_instant_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime(INSTANT_FORMAT)[:17]


def parse_instant_time(instant_time: str) -> dt.datetime:
    """The UTC moment of a 17-digit (or legacy 14-digit) instant time."""
    try:
        if len(instant_time) == 14:
            return dt.datetime.strptime(instant_time, "%Y%m%d%H%M%S").replace(tzinfo=dt.UTC)
        if len(instant_time) == 17:
            return dt.datetime.strptime(instant_time + "000", INSTANT_FORMAT).replace(tzinfo=dt.UTC)
    except ValueError:
        pass
    raise TimelineError(f"Not an instant time: {instant_time!r}")


def new_instant_time(after: str | None = None) -> str:
    """Now (UTC, millisecond precision), made strictly greater than ``after``."""
    candidate = format_instant_time(dt.datetime.now(dt.UTC))
    if after is None or candidate > after:
        return candidate
    if len(after) != 17 or not after.isdigit():
        raise TimelineError(f"Cannot order a new instant after {after!r}")
    return format_instant_time(parse_instant_time(after) + dt.timedelta(milliseconds=1))
