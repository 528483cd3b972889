"""File slicing by completion time (timeline layout 2, table versions 8 and 9).

In layout 2 a log file is named after the delta commit that wrote it, not after the base file it
belongs to. Hudi 1.x (``HoodieFileGroup.getBaseInstantTime``) attaches each log file to the file
slice with the greatest base instant time ``<=`` the log's completion time; a log whose delta
commit has not completed goes to the latest slice (the view leaves it out of the slices it
returns until that delta commit completes), and a log older than every base file opens a slice
of its own, keyed by its delta commit time. So a delta commit that started before a compaction
was scheduled but completed after it belongs to the compaction's new slice.

A pending compaction opens a slice at its instant time before its base file exists, as in layout
1: :class:`engine.view.fs_view.FileSystemView` then merges that slice onto the previous one.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Mapping

from engine.fs.filenames import LogFileName

__all__ = ["slice_logs_by_completion"]


def slice_logs_by_completion(
    base_instants: Collection[str],
    logs: list[LogFileName],
    completion_times: Mapping[str, str],
    pending: Collection[str] = (),
    pending_compactions: Collection[str] = (),
) -> dict[str, list[LogFileName]]:
    """Log files of one file group keyed by the base instant of the slice each belongs to.

    Args:
        base_instants: instant times of the group's base files.
        logs: the group's log files (their ``base_instant_time`` is the delta commit time).
        completion_times: requested time -> completion time of completed instants.
        pending: instant times on the active timeline that have not completed. A log of an
            instant neither completed nor pending was archived: it completed before every
            active instant, and its requested time stands in for its completion time.
        pending_compactions: instant times of requested/inflight compactions (open slices).

    Returns:
        slice key -> log files in completion order (pending logs last, by delta commit time).
    """
    keys = sorted(set(base_instants) | set(pending_compactions))

    def completed_at(log: LogFileName) -> str | None:
        if log.base_instant_time in pending:
            return None
        return completion_times.get(log.base_instant_time, log.base_instant_time)

    def order(log: LogFileName) -> tuple[bool, str, str, int, str]:
        done = completed_at(log)
        return (done is None, done or "", log.base_instant_time, log.version, log.write_token)

    out: dict[str, list[LogFileName]] = {}
    for log in sorted(logs, key=order):
        done = completed_at(log)
        if done is None:
            key = keys[-1] if keys else log.base_instant_time
        else:
            at = bisect.bisect_right(keys, done)
            key = keys[at - 1] if at else log.base_instant_time
        if key not in keys:
            bisect.insort(keys, key)
        out.setdefault(key, []).append(log)
    return out
