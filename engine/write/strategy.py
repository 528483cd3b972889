"""How one kind of write fills its instant; :mod:`engine.write.transaction` does the rest.

A strategy names the instant's action and supplies three steps of the write sequence::

    before_request   under the start lock, after failed writes are rolled back (merge-on-read
                     finishes pending compactions first); returns the instants it completed
    execute          the data phase: <t>.<action>.inflight, then the files (on the runner)
    replaced         under the commit lock: the file groups a replacecommit replaces

Strategies: copy-on-write (:mod:`engine.write.copy_on_write`), merge-on-read
(:mod:`engine.write.merge_on_read`), insert overwrite and delete partition
(:mod:`engine.write.replace`).
"""

from __future__ import annotations

from typing import ClassVar

from engine import config
from engine.fs.storage import Storage
from engine.timeline.commit_metadata import HoodieWriteStat
from engine.timeline.instant import Action
from engine.write.plan import WriteJob, average_record_size
from engine.write.runner import Runner

__all__ = ["WriteStrategy"]


class WriteStrategy:
    """The steps that differ between kinds of writes (see the module notes)."""

    action: ClassVar[Action]
    #: whether the write takes records (keyed and profiled before the instant is requested)
    writes_records: ClassVar[bool] = True

    def before_request(self, storage: Storage, runner: Runner | None) -> list[str]:
        """Instants to complete before this write's instant is requested; none by default."""
        return []

    def execute(self, job: WriteJob) -> list[HoodieWriteStat]:
        """Write the data of the requested instant; the write stats to commit."""
        raise NotImplementedError

    def record_size(self, job: WriteJob) -> int:
        """Bytes per record new base files are sized with: the latest commit that wrote
        records, else ``hoodie.copyonwrite.record.size.estimate``."""
        estimate = job.cfg.get(config.COPY_ON_WRITE_RECORD_SIZE_ESTIMATE)
        return average_record_size(job.timeline, estimate)

    def replaced(
        self, storage: Storage, job: WriteJob, stats: list[HoodieWriteStat]
    ) -> dict[str, list[str]] | None:
        """``partitionToReplaceFileIds`` of a replacecommit (computed under the commit lock;
        ``stats`` are the files the write wrote)."""
        return None
