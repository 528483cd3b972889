"""Table services behind ``dbt run-operation hudi_clean`` / ``hudi_compact`` / ``hudi_health``.

Both run on the driver against a model's base path, under the table lock, with the table's
persisted properties merged with the operation's ``hoodie.*`` options (validated by
``engine.config``). The adapter re-publishes the model afterwards, so downstream SQL sees the
new snapshot (a compaction changes which base files are latest).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine import config as hc
from engine.errors import ConfigError

if TYPE_CHECKING:
    from engine.config import HoodieConfig
    from engine.fs.storage import Storage


def table_config(storage: Storage, options: Mapping[str, Any] | None) -> HoodieConfig:
    """Persisted table properties the engine knows, overridden by ``options``."""
    from engine.fs.properties import read_properties

    props = read_properties(storage)
    known = {k: v for k, v in props.items() if hc.lookup(k) is not None}
    return hc.parse_options(known).merged(hc.parse_options(options))


def run_clean(base_path: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run the cleaner once (``hoodie.cleaner.*`` options apply).

    Returns:
        ``instant_time`` (None when nothing was due), ``deleted`` file count, ``message``.
    """
    from engine.fs.storage import Storage
    from engine.services.clean import clean
    from engine.services.lock import TableLock

    started = time.monotonic()
    storage = Storage(base_path)
    cfg = table_config(storage, options)
    with TableLock(storage, cfg).hold():
        result = clean(storage, cfg)
    seconds = time.monotonic() - started
    if result is None:
        return {"instant_time": None, "deleted": 0, "message": "nothing to clean"}
    failed = sum(len(v) for v in result.failed.values())
    return {
        "instant_time": result.instant_time,
        "deleted": result.total_deleted,
        "message": (
            f"clean committed {result.instant_time}: {result.total_deleted} file(s) deleted"
            + (f", {failed} failed" if failed else "")
            + f" in {seconds:.1f}s"
        ),
    }


def run_compact(base_path: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run pending compactions of a merge-on-read table, or schedule one and run it.

    Raises:
        ConfigError: the table is copy-on-write.
    """
    from engine.fs.storage import Storage
    from engine.services.compaction import run_pending_compactions, schedule_compaction
    from engine.services.lock import TableLock

    started = time.monotonic()
    storage = Storage(base_path)
    cfg = table_config(storage, options)
    table_type = cfg.get(hc.TABLE_TYPE)
    if table_type != hc.TableType.MERGE_ON_READ:
        raise ConfigError(
            f"Table at {base_path} is {table_type}: only MERGE_ON_READ tables "
            "(hudi_mor models) are compacted"
        )
    with TableLock(storage, cfg).hold():
        done = run_pending_compactions(storage)
        if not done and schedule_compaction(storage, cfg, force=True) is not None:
            done = run_pending_compactions(storage)
    seconds = time.monotonic() - started
    if not done:
        return {"instant_time": None, "message": "nothing to compact"}
    return {
        "instant_time": done[-1],
        "message": f"compaction committed {', '.join(done)} in {seconds:.1f}s",
    }


def table_health(base_path: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The health of a table (what ``dbt-hudi health`` shows), judged with ``options``.

    Returns:
        ``healthy``, ``findings`` (check, severity, subject, message, fix), ``facts`` and
        ``text``: the view as plain text for the log.
    """
    from engine.cli.render import health_text, plain
    from engine.inspect import health, open_table

    report = health(open_table(base_path, options))
    return {
        "healthy": report.healthy,
        "findings": plain(report.findings),
        "facts": report.facts,
        "text": health_text(report),
    }
