"""Which write handle a file group of a write gets.

Every write job routes each record to a file group (the driver's bucket plan, the bucket
index's hash, a one-job task's own plan); the group is then written by one handle of
:mod:`engine.write.handles`, chosen here and nowhere else::

    a slice that takes log blocks (merge-on-read)   AppendHandle
    an existing base file                           MergeHandle
    a new file group                                CreateHandle
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.write.append import AppendHandle, AppendSlice, LogWriteConfig
from engine.write.bucketing import Bucket
from engine.write.handles import WriteHandle, base_file_handle

__all__ = ["HandleChoice", "choose_handle"]


def choose_handle(
    bucket: Bucket,
    append_slice: AppendSlice | None = None,
    log_config: LogWriteConfig | None = None,
) -> WriteHandle:
    """The handle of ``bucket``: an append to ``append_slice`` when one is given (with its
    ``log_config``), else a merge into the bucket's base file, else a create."""
    if append_slice is not None:
        return AppendHandle(append_slice, bucket.number, log_config or LogWriteConfig())
    return base_file_handle(bucket)


@dataclass(frozen=True)
class HandleChoice:
    """The handles of a write's planned buckets (picklable; called inside tasks): buckets of
    ``append_slices`` (file id -> the slice, merge-on-read groups that are not small-file
    rewrites) append, every other one writes a base file."""

    append_slices: Mapping[str, AppendSlice] = field(default_factory=dict)
    log_config: LogWriteConfig = field(default_factory=LogWriteConfig)

    def __call__(self, bucket: Bucket) -> WriteHandle:
        return choose_handle(bucket, self.append_slices.get(bucket.file_id), self.log_config)
