"""The active timeline (``.hoodie/<instant files>``, or ``.hoodie/timeline/`` in layout 2) and its
transitions.

A :class:`Timeline` is an immutable snapshot: each instant time appears once, at the furthest state
its files show. Only the driver changes the timeline, always in the order requested → inflight →
completed, and the completed file is the last file a commit writes: its appearance is the commit
point readers obey.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from engine.errors import TimelineError
from engine.fs.storage import Storage
from engine.timeline.commit_metadata import HoodieCommitMetadata
from engine.timeline.instant import (
    COMMIT_ACTIONS,
    Action,
    Instant,
    State,
    completed_action,
    instant_file_name,
    new_instant_time,
)
from engine.timeline.layout import TimelineLayout
from engine.timeline.lsm_history import read_history

#: what an instant file is written from: commit metadata (coded as the layout says) or bytes
InstantContent = bytes | HoodieCommitMetadata


@dataclass(frozen=True)
class Timeline:
    """The instants of a table's active timeline, oldest first."""

    storage: Storage
    instants: tuple[Instant, ...]
    layout: TimelineLayout = field(default_factory=TimelineLayout)
    # layout 2 with the LSM history loaded: completed file content of archived instants
    archived: Mapping[str, bytes | None] = field(default_factory=dict)

    @classmethod
    def load(cls, storage: Storage) -> Timeline:
        layout = TimelineLayout.of(storage)
        latest: dict[tuple[str, Action], Instant] = {}
        for entry in storage.list_dir(layout.directory):
            if entry.is_dir:
                continue
            instant = layout.parse(entry.name)
            if instant is None:
                continue
            # a completed compaction is a `commit` file; fold it onto the compaction's time
            key = (instant.instant_time, _family(instant.action))
            seen = latest.get(key)
            if seen is None or instant.sort_key() > seen.sort_key():
                latest[key] = instant
        return cls(storage, tuple(sorted(latest.values(), key=Instant.sort_key)), layout)

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
        """The instant at ``instant_time``; a savepoint shares its commit's time, and the
        commit is what callers mean, so the savepoint comes back only when alone."""
        found = [i for i in self.instants if i.instant_time == instant_time]
        found.sort(key=lambda i: i.action is Action.SAVEPOINT)
        return found[0] if found else None

    def savepoint_times(self) -> list[str]:
        """Instant times of the completed savepoints, oldest first."""
        return [i.instant_time for i in self.completed([Action.SAVEPOINT])]

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
            self.storage,
            tuple(i for i in self.instants if i.instant_time <= instant_time),
            self.layout,
            self.archived,
        )

    def with_history(self) -> Timeline:
        """This timeline preceded by the archived instants of the LSM history (layout 2), so
        time travel and incremental queries reach before the active timeline."""
        history = read_history(self.storage, self.layout.table_format.history_dir)
        active = {(i.instant_time, i.action) for i in self.instants}
        older = [a for a in history if (a.instant.instant_time, a.instant.action) not in active]
        if not older:
            return self
        instants = sorted([*(a.instant for a in older), *self.instants], key=Instant.sort_key)
        archived = {a.instant.instant_time: a.metadata for a in older}
        return Timeline(self.storage, tuple(instants), self.layout, archived)

    def completion_times(self) -> dict[str, str]:
        """Completion time of every completed instant (layout 2; a legacy-named completed
        instant, and every layout-1 instant, counts as completing at its requested time). A
        savepoint shares its commit's time and completes later: the commit's time is kept."""
        return {
            i.instant_time: i.completion_time or i.instant_time
            for i in self.instants
            if i.is_completed and i.action is not Action.SAVEPOINT
        }

    def completed_in(self, begin: str, end: str | None) -> list[Instant]:
        """Completed commits whose completion time lies in ``(begin, end]`` (Hudi 1.x
        incremental queries range on completion time), in completion order."""
        done = [
            i
            for i in self.commits_timeline()
            if begin < (i.completion_time or i.instant_time)
            and (end is None or (i.completion_time or i.instant_time) <= end)
        ]
        return sorted(done, key=lambda i: (i.completion_time or i.instant_time, i.instant_time))

    # ---- content ----------------------------------------------------------------------------

    def read_content(self, instant: Instant) -> bytes:
        if instant.instant_time in self.archived:
            content = self.archived[instant.instant_time]
            if content is None:
                raise TimelineError(f"Archived instant {instant} kept no metadata in the history")
            return content
        return self.storage.read_bytes(f"{self.layout.directory}/{self.layout.file_name(instant)}")

    def read_commit_metadata(self, instant: Instant) -> HoodieCommitMetadata:
        content = self.read_content(instant)
        return self.layout.decode_commit_metadata(content, instant, source=str(instant))

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


def _rel(storage: Storage, instant_time: str, action: Action, state: State) -> str:
    """Path of a requested/inflight instant file (the same name in both layouts), or of a
    layout-1 completed file."""
    layout = TimelineLayout.of(storage)
    return f"{layout.directory}/{instant_file_name(instant_time, action, state)}"


def _completed_rel(storage: Storage, instant_time: str, action: Action) -> str | None:
    """Path of the completed file of an instant, if there is one (layout 2 names carry the
    completion time, so the folder is listed)."""
    layout = TimelineLayout.of(storage)
    if layout.version < 2:
        rel = _rel(storage, instant_time, action, State.COMPLETED)
        return rel if storage.exists(rel) else None
    done = completed_action(action)
    for entry in storage.list_dir(layout.directory):
        instant = layout.parse(entry.name)
        if (
            instant is not None
            and instant.is_completed
            and instant.instant_time == instant_time
            and instant.action is done
        ):
            return f"{layout.directory}/{entry.name}"
    return None


def create_requested(
    storage: Storage, instant_time: str, action: Action, content: bytes = b""
) -> Instant:
    """Start an instant. Instant files are never overwritten: reusing a time is an error."""
    rel = _rel(storage, instant_time, action, State.REQUESTED)
    if storage.exists(rel):
        raise TimelineError(f"Instant {instant_time} ({action.value}) already exists")
    storage.write_bytes(rel, content)
    return Instant(instant_time, action, State.REQUESTED)


def create_inflight(storage: Storage, instant_time: str, action: Action) -> Instant:
    """Start an instant that has no requested state (a savepoint: ``<t>.savepoint.inflight``,
    at the time of the commit it pins)."""
    rel = _rel(storage, instant_time, action, State.INFLIGHT)
    if storage.exists(rel) or _completed_rel(storage, instant_time, action) is not None:
        raise TimelineError(f"Instant {instant_time} ({action.value}) already exists")
    storage.write_bytes(rel, b"")
    return Instant(instant_time, action, State.INFLIGHT)


def _coded(layout: TimelineLayout, content: InstantContent) -> bytes:
    """An instant file's bytes: commit metadata in the layout's coding; other content (Avro
    plans and metadata, the same in both layouts) as given."""
    if isinstance(content, HoodieCommitMetadata):
        return layout.encode_commit_metadata(content)
    return content


def transition_to_inflight(
    storage: Storage, instant_time: str, action: Action, content: InstantContent = b""
) -> Instant:
    if not storage.exists(_rel(storage, instant_time, action, State.REQUESTED)):
        raise TimelineError(f"Instant {instant_time} ({action.value}) was never requested")
    coded = _coded(TimelineLayout.of(storage), content)
    storage.write_bytes(_rel(storage, instant_time, action, State.INFLIGHT), coded, overwrite=True)
    return Instant(instant_time, action, State.INFLIGHT)


def complete(
    storage: Storage, instant_time: str, action: Action, content: InstantContent
) -> Instant:
    """Write the completed instant file atomically: the commit point.

    Layout 2 names the file ``<instant_time>_<completion_time>.<action>`` with a completion time
    greater than every instant and completion time on the timeline; commit metadata is coded as
    the layout says (:func:`_coded`).
    """
    if not storage.exists(_rel(storage, instant_time, action, State.INFLIGHT)):
        raise TimelineError(f"Instant {instant_time} ({action.value}) is not inflight")
    if _completed_rel(storage, instant_time, action) is not None:
        raise TimelineError(f"Instant {instant_time} ({action.value}) is already completed")
    layout = TimelineLayout.of(storage)
    if layout.version < 2:
        coded = _coded(layout, content)
        storage.write_atomic(_rel(storage, instant_time, action, State.COMPLETED), coded)
        return Instant(instant_time, completed_action(action), State.COMPLETED)
    timeline = Timeline.load(storage)
    latest = max(
        [instant_time, *(i.instant_time for i in timeline.instants)]
        + [i.completion_time for i in timeline.instants if i.completion_time]
    )
    completion_time = new_instant_time(latest)
    instant = Instant(instant_time, completed_action(action), State.COMPLETED, completion_time)
    storage.write_atomic(f"{layout.directory}/{layout.file_name(instant)}", _coded(layout, content))
    return instant


def delete_instant_files(storage: Storage, instant_time: str, action: Action) -> None:
    """Remove an instant from the active timeline (completed file first, so it never looks
    pending-without-completion to a concurrent reader longer than needed)."""
    completed = _completed_rel(storage, instant_time, action)
    if completed is not None:
        storage.delete(completed)
    for state in (State.INFLIGHT, State.REQUESTED):
        storage.delete(_rel(storage, instant_time, action, state))
