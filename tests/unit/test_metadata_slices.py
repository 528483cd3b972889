"""The metadata table's latest file slices come from the data table's file system view, on
Hudi's rules for its metadata reader (``getLatestMergedFileSlicesBeforeOrOn`` over the metadata
timeline, as of its latest completed or pending-compaction instant).

One partition, three file groups, on both timeline layouts:

* ``A``: initialization HFile base, logs, then a completed compaction's base and a later log:
  the compacted slice is the latest.
* ``B``: an HFile base written by a delta commit that never completed (with a log of it): that
  base and log are invisible, the initialization slice stays the latest.
* ``C``: a pending compaction with a partly written base: its base is ignored and the logs
  written against it are read after the previous slice's (layout 1: logs named by the
  compaction instant; layout 2: a delta commit that started before the compaction was scheduled
  and completed after it, and the metadata table is read as of the compaction instant).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import HudiError
from engine.fs.properties import write_properties
from engine.fs.storage import Storage
from engine.metadata.slices import latest_slices
from engine.metadata.writer import metadata_properties
from engine.timeline.timeline import Timeline
from engine.view.fs_view import FileSystemView

pytestmark = pytest.mark.unit

INIT = "00000000000000010"  # the initialization deltacommit of the first partition
T1, T2, T3, T4, T45, T5, T6 = (
    "20240101000001000",
    "20240101000002000",
    "20240101000003000",
    "20240101000004000",
    "20240101000004500",
    "20240101000005000",
    "20240101000006000",
)
A, B, C = ("files-0000-0", "files-0001-0", "files-0002-0")
PARTITION = "files"


def base(file_id: str, instant: str) -> str:
    return f"{file_id}_0-0-0_{instant}.hfile"


def log(file_id: str, instant: str, version: int = 1) -> str:
    return f".{file_id}_{instant}.log.{version}_0-0-0"


def _table(root: Path, version: str, files: list[str], timeline: list[str]) -> Storage:
    mdt = Storage(str(root))
    props = metadata_properties({"hoodie.table.name": "t", "hoodie.table.version": version})
    if version == "6":
        props["hoodie.timeline.layout.version"] = "1"
        del props["hoodie.timeline.path"]
    write_properties(mdt, props)
    folder = root / PARTITION
    folder.mkdir()
    (folder / ".hoodie_partition_metadata").write_text("commitTime=0\npartitionDepth=1\n")
    for name in files:
        (folder / name).write_bytes(b"")
    directory = root / Timeline.load(mdt).layout.directory
    directory.mkdir(parents=True, exist_ok=True)
    for name in timeline:
        (directory / name).write_bytes(b"")
    return mdt


def _slices(mdt: Storage) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
    return [
        (s.file_id, s.base_instant_time, s.base_file, s.log_files)
        for s in latest_slices(mdt, Timeline.load(mdt), PARTITION)
    ]


def test_layout_1_latest_slices_follow_hudi_rules(tmp_path: Path) -> None:
    # layout 1: a log is named by the base instant of its slice; version = append order
    files = [
        base(A, INIT), log(A, INIT), log(A, INIT, 2), base(A, T2), log(A, T2),
        base(B, INIT), log(B, INIT), log(B, INIT, 2), base(B, T4), log(B, T4),
        base(C, INIT), log(C, INIT), log(C, INIT, 2), base(C, T5), log(C, T5),
    ]  # fmt: skip
    timeline = [
        f"{INIT}.deltacommit.requested", f"{INIT}.deltacommit.inflight", f"{INIT}.deltacommit",
        f"{T1}.deltacommit.requested", f"{T1}.deltacommit.inflight", f"{T1}.deltacommit",
        f"{T2}.compaction.requested", f"{T2}.compaction.inflight", f"{T2}.commit",
        f"{T3}.deltacommit.requested", f"{T3}.deltacommit.inflight", f"{T3}.deltacommit",
        f"{T4}.deltacommit.requested", f"{T4}.deltacommit.inflight",
        f"{T5}.compaction.requested", f"{T5}.compaction.inflight",
        f"{T6}.deltacommit.requested", f"{T6}.deltacommit.inflight", f"{T6}.deltacommit",
    ]  # fmt: skip
    mdt = _table(tmp_path, "6", files, timeline)
    assert _slices(mdt) == [
        (A, T2, base(A, T2), (log(A, T2),)),
        (B, INIT, base(B, INIT), (log(B, INIT), log(B, INIT, 2))),
        (C, INIT, base(C, INIT), (log(C, INIT), log(C, INIT, 2), log(C, T5))),
    ]


def test_layout_2_latest_slices_follow_hudi_rules(tmp_path: Path) -> None:
    # layout 2: a log is named by the delta commit that wrote it and sliced by its completion
    files = [
        base(A, INIT), log(A, INIT), log(A, T1), base(A, T2), log(A, T3),
        base(B, INIT), log(B, INIT), log(B, T1), base(B, T4), log(B, T4),
        base(C, INIT), log(C, INIT), log(C, T1), base(C, T5), log(C, T45), log(C, T6),
    ]  # fmt: skip
    timeline = [
        f"{INIT}.deltacommit.requested", f"{INIT}.deltacommit.inflight",
        f"{INIT}_{INIT}.deltacommit",
        f"{T1}.deltacommit.requested", f"{T1}.deltacommit.inflight",
        f"{T1}_20240101000001500.deltacommit",
        f"{T2}.compaction.requested", f"{T2}.compaction.inflight",
        f"{T2}_20240101000002500.commit",
        f"{T3}.deltacommit.requested", f"{T3}.deltacommit.inflight",
        f"{T3}_20240101000003500.deltacommit",
        # never completes: its base file and log file stay invisible
        f"{T4}.deltacommit.requested", f"{T4}.deltacommit.inflight",
        # starts before the compaction T5 is scheduled and completes after it: its log is in
        # the compaction's slice, and is the latest completed instant
        f"{T45}.deltacommit.requested", f"{T45}.deltacommit.inflight",
        f"{T45}_20240101000005500.deltacommit",
        f"{T5}.compaction.requested", f"{T5}.compaction.inflight",
        # pending: its log is left out of the slice (filterUncommittedLogs)
        f"{T6}.deltacommit.requested", f"{T6}.deltacommit.inflight",
    ]  # fmt: skip
    mdt = _table(tmp_path, "9", files, timeline)
    assert _slices(mdt) == [
        (A, T2, base(A, T2), (log(A, T3),)),
        (B, INIT, base(B, INIT), (log(B, INIT), log(B, T1))),
        (C, INIT, base(C, INIT), (log(C, INIT), log(C, T1), log(C, T45))),
    ]
    # the same view read as of the latest completed instant (T45) alone misses the delta commit
    # the pending compaction's slice holds: why the metadata table reads as of the compaction
    view = FileSystemView(mdt, Timeline.load(mdt), partition_paths=[PARTITION])
    as_of_last = {s.file_id: s.log_files for s in view.latest_file_slices(T45)}
    assert log(C, T45) not in as_of_last[C]


def test_partition_without_committed_slice_is_refused_naming_it(tmp_path: Path) -> None:
    files = [base(A, T4), log(A, T4)]
    timeline = [
        f"{INIT}.deltacommit.requested", f"{INIT}.deltacommit.inflight", f"{INIT}.deltacommit",
        f"{T4}.deltacommit.requested", f"{T4}.deltacommit.inflight",
    ]  # fmt: skip
    mdt = _table(tmp_path, "6", files, timeline)
    with pytest.raises(HudiError, match="has no committed files partition"):
        _slices(mdt)


# ---- property: the view against Hudi's file group rules restated plainly ------------------------

_EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["delta", "delta", "inflight_delta", "compaction", "uncommitted_base"]),
        st.sets(st.sampled_from([A, B]), min_size=1),
        st.booleans(),  # completes late (layout 2: after the next instant is requested)
    ),
    max_size=8,
)


@dataclass
class _History:
    """What a metadata writer left: files per group, instants with their state."""

    layout: int
    files: dict[str, list[str]] = field(default_factory=dict)
    completed: dict[str, str] = field(default_factory=dict)  # requested -> completion time
    inflight: dict[str, str] = field(default_factory=dict)  # requested -> action
    compactions: set[str] = field(default_factory=set)  # completed ones (action commit)
    pending_compaction: str | None = None

    def log_key(self, group: str, instant: str) -> str:
        if self.layout == 2:
            return instant
        # layout 1: the writer appends to its group's latest slice (a pending compaction's too)
        keys = [INIT, *[t for t in self.compactions if t in self.completed]]
        if self.pending_compaction is not None:
            keys.append(self.pending_compaction)
        return max(keys)

    def add_log(self, group: str, instant: str) -> None:
        key = self.log_key(group, instant)
        prefix = f".{group}_{key}.log."
        version = 1 + sum(1 for n in self.files[group] if n.startswith(prefix))
        self.files[group].append(log(group, key, version))


def _history(layout: int, events: list[tuple[str, set[str], bool]]) -> _History:
    h = _History(layout, {A: [base(A, INIT), log(A, INIT)], B: [base(B, INIT), log(B, INIT)]})
    h.completed[INIT] = INIT
    for step, (kind, groups, late) in enumerate(events, start=1):
        t = f"20240101{step:03d}000000"
        done = f"20240101{step + (1 if late else 0):03d}{500 if late else 100:03d}000"
        if kind == "compaction" and h.pending_compaction is None:
            for g in (A, B):
                h.files[g].append(base(g, t))
            if late:  # never completes: a pending compaction, its base files partly written
                h.pending_compaction, h.inflight[t] = t, "compaction"
                h.files[B].remove(base(B, t))
            else:
                h.completed[t] = done
                h.compactions.add(t)
        elif kind == "uncommitted_base":
            h.inflight[t] = "deltacommit"
            h.files[min(groups)].append(base(min(groups), t))
        elif kind in ("delta", "inflight_delta"):
            for g in sorted(groups):
                h.add_log(g, t)
            if kind == "delta":
                h.completed[t] = done
            else:
                h.inflight[t] = "deltacommit"
    return h


def _timeline_files(h: _History) -> list[str]:
    names = []
    for t, action in h.inflight.items():
        names += [f"{t}.{action}.requested", f"{t}.{action}.inflight"]
    for t, done in h.completed.items():
        action = "commit" if t in h.compactions else "deltacommit"
        started = "compaction" if t in h.compactions else "deltacommit"
        names += [f"{t}.{started}.requested", f"{t}.{started}.inflight"]
        names.append(f"{t}_{done}.{action}" if h.layout == 2 else f"{t}.{action}")
    return names


def _oracle(h: _History) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
    """Hudi's rules written out: a file group's slices keyed by base instant (a pending
    compaction opens one); layout 2 puts a log in the slice of the greatest base instant <= its
    completion time (a pending log in the latest); a slice counts once its base instant
    completed or is the pending compaction, up to the query instant (the latest completed or
    pending-compaction instant); a pending compaction's slice is merged onto the previous one;
    layout 2 drops logs of delta commits not completed."""
    query = max([max(h.completed), *([h.pending_compaction] if h.pending_compaction else [])])
    out = []
    for g in (A, B):
        bases = {n.rsplit("_", 1)[1].removesuffix(".hfile"): n for n in h.files[g] if n[0] != "."}
        keys = set(bases) | ({h.pending_compaction} if h.pending_compaction else set())
        logs: dict[str, list[str]] = {}
        ordered = sorted(
            (n for n in h.files[g] if n[0] == "."),
            key=lambda n: (
                h.completed.get(_instant(n), "9" * 17) if h.layout == 2 else "",
                _instant(n),
                n,
            ),
        )
        for n in ordered:
            t = _instant(n)
            if h.layout == 1:
                key = t
            elif t in h.completed:
                key = max(k for k in keys if k <= h.completed[t])
            else:
                key = max(keys)
            logs.setdefault(key, []).append(n)
        visible = sorted(
            k for k in keys | set(logs)
            if (k in h.completed or k == h.pending_compaction) and k <= query
        )  # fmt: skip
        latest = visible[-1]
        if latest == h.pending_compaction:
            prev = visible[-2]
            kept = (prev, bases.get(prev), logs.get(prev, []) + logs.get(latest, []))
        else:
            kept = (latest, bases.get(latest), logs.get(latest, []))
        names = [n for n in kept[2] if h.layout == 1 or _instant(n) in h.completed]
        out.append((g, kept[0], kept[1], tuple(names)))
    return out


def _instant(log_name: str) -> str:
    return log_name.split(".log.")[0].rsplit("_", 1)[1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=st.sampled_from([1, 2]), events=_EVENTS)
def test_latest_slices_match_hudi_rules_on_any_history(
    layout: int, events: list[tuple[str, set[str], bool]]
) -> None:
    h = _history(layout, events)
    with tempfile.TemporaryDirectory() as root:
        files = [n for g in (A, B) for n in h.files[g]]
        mdt = _table(Path(root), "6" if layout == 1 else "9", files, _timeline_files(h))
        assert _slices(mdt) == _oracle(h)
