"""The active timeline (``.hoodie/<instant files>``, layout version 1) and its transitions.

A :class:`Timeline` is an immutable snapshot: each instant time appears once, at the furthest state
its files show. Only the driver changes the timeline, always in the order requested → inflight →
completed, and the completed file is the last file a commit writes: its appearance is the commit
point readers obey.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.errors import TimelineError
from engine.fs.properties import METAFOLDER
from engine.fs.storage import Storage
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import (
    COMMIT_ACTIONS,
    Action,
    Instant,
    State,
    completed_action,
    instant_file_name,
    parse_instant_file_name,
)


@dataclass(frozen=True)
class Timeline:
    """The instants of a table's active timeline, oldest first."""

    storage: Storage
    instants: tuple[Instant, ...]

    @classmethod
    def load(cls, storage: Storage) -> Timeline:
        latest: dict[tuple[str, Action], Instant] = {}
        for entry in storage.list_dir(METAFOLDER):
            if entry.is_dir:
                continue
            instant = parse_instant_file_name(entry.name)
            if instant is None:
                continue
            # a completed compaction is a `commit` file; fold it onto the compaction's time
            key = (instant.instant_time, _family(instant.action))
            seen = latest.get(key)
            if seen is None or instant.sort_key() > seen.sort_key():
                latest[key] = instant
        return cls(storage, tuple(sorted(latest.values(), key=Instant.sort_key)))

    def reload(self) -> Timeline:
        return Timeline.load(self.storage)

    # ---- views ------------------------------------------------------------------------------

    def completed(self, actions: Iterable[Action] | None = None) -> list[Instant]:
        wanted = set(actions) if actions is not None else None
        return [
            i for i in self.instants if i.is_completed and (wanted is None or i.action in wanted)
        ]

    def commits_timeline(self) -> list[Instant]:
        """Completed commit, deltacommit and replacecommit instants: what readers see."""
        return self.completed(COMMIT_ACTIONS)

    def pending(self, actions: Iterable[Action] | None = None) -> list[Instant]:
        wanted = set(actions) if actions is not None else None
        return [
            i
            for i in self.instants
            if not i.is_completed and (wanted is None or i.action in wanted)
        ]

    def last_completed(self, actions: Iterable[Action] = COMMIT_ACTIONS) -> Instant | None:
        done = self.completed(actions)
        return done[-1] if done else None

    def max_instant_time(self) -> str | None:
        """Greatest instant time in any state: a new instant must be greater."""
        return max((i.instant_time for i in self.instants), default=None)

    def first_commit_time(self) -> str | None:
        """Start of the active commits timeline; anything older was archived, hence committed."""
        done = self.commits_timeline()
        return done[0].instant_time if done else None

    def get(self, instant_time: str) -> Instant | None:
        for instant in self.instants:
            if instant.instant_time == instant_time:
                return instant
        return None

    def is_completed(self, instant_time: str) -> bool:
        return any(i.instant_time == instant_time for i in self.commits_timeline())

    def is_committed(self, instant_time: str) -> bool:
        """True for data written by a completed commit or older than the active timeline."""
        if self.is_completed(instant_time):
            return True
        first = self.first_commit_time()
        return first is not None and instant_time < first and self.get(instant_time) is None

    def until(self, instant_time: str) -> Timeline:
        """The timeline as it looked to a reader at ``instant_time`` (inclusive)."""
        return Timeline(
            self.storage, tuple(i for i in self.instants if i.instant_time <= instant_time)
        )

    # ---- content ----------------------------------------------------------------------------

    def read_content(self, instant: Instant) -> bytes:
        return self.storage.read_bytes(f"{METAFOLDER}/{instant.file_name}")

    def read_commit_metadata(self, instant: Instant) -> HoodieCommitMetadata:
        return HoodieCommitMetadata.from_json(self.read_content(instant), source=str(instant))

    def latest_schema(self) -> str | None:
        """Avro schema (no meta fields) of the latest completed commit that recorded one."""
        for instant in reversed(self.commits_timeline()):
            schema = self.read_commit_metadata(instant).schema
            if schema:
                return schema
        return None


def _family(action: Action) -> Action:
    # compaction (pending) and its completed commit share an instant time
    return completed_action(action)


# ---- transitions (driver only) ------------------------------------------------------------------


def _rel(instant_time: str, action: Action, state: State) -> str:
    return f"{METAFOLDER}/{instant_file_name(instant_time, action, state)}"


def create_requested(
    storage: Storage, instant_time: str, action: Action, content: bytes = b""
) -> Instant:
    """Start an instant. Instant files are never overwritten: reusing a time is an error."""
    rel = _rel(instant_time, action, State.REQUESTED)
    if storage.exists(rel):
        raise TimelineError(f"Instant {instant_time} ({action.value}) already exists")
    storage.write_bytes(rel, content)
    return Instant(instant_time, action, State.REQUESTED)


def transition_to_inflight(
    storage: Storage, instant_time: str, action: Action, content: bytes = b""
) -> Instant:
    if not storage.exists(_rel(instant_time, action, State.REQUESTED)):
        raise TimelineError(f"Instant {instant_time} ({action.value}) was never requested")
    storage.write_bytes(_rel(instant_time, action, State.INFLIGHT), content, overwrite=True)
    return Instant(instant_time, action, State.INFLIGHT)


def complete(storage: Storage, instant_time: str, action: Action, content: bytes) -> Instant:
    """Write the completed instant file atomically: the commit point."""
    if not storage.exists(_rel(instant_time, action, State.INFLIGHT)):
        raise TimelineError(f"Instant {instant_time} ({action.value}) is not inflight")
    rel = _rel(instant_time, action, State.COMPLETED)
    if storage.exists(rel):
        raise TimelineError(f"Instant {instant_time} ({action.value}) is already completed")
    storage.write_atomic(rel, content)
    return Instant(instant_time, completed_action(action), State.COMPLETED)


def delete_instant_files(storage: Storage, instant_time: str, action: Action) -> None:
    """Remove an instant from the active timeline (completed file first, so it never looks
    pending-without-completion to a concurrent reader longer than needed)."""
    for state in (State.COMPLETED, State.INFLIGHT, State.REQUESTED):
        storage.delete(_rel(instant_time, action, state))
