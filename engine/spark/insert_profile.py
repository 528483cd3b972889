"""The profile of a write that looks no key up (inserts, bulk inserts, replace writes, the
first write of a table): one aggregation Spark runs by itself, no Python task.

::

    keyed ──group by partition path: records, any bad key, a null ordering value──►
        a row per touched partition, collected by the driver

It answers what the write needs before anything is written: the touched partitions, the
records per partition the buckets are sized from, and whether a key is null or empty (or an
ordering value null, for writes that combine), which refuses the write. Spark aggregates
partially in each task, so only a few rows per task are shuffled; with no index lookup there
are no keys to keep for the write job.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from engine.model.keygen import KeyGenSpec
from engine.model.row_checks import BAD_KEY_COLUMN, NULL_ORDERING_COLUMN, refuse
from engine.model.schema import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from engine.spark.jobs import run_job
from engine.spark.profile import BatchProfile
from engine.write.index import PartitionKeyRange

__all__ = ["profile_inserts"]


def profile_inserts(keyed: DataFrame, spec: KeyGenSpec) -> BatchProfile:
    """Profile a batch whose keys are not looked up (see the module notes).

    Neither the key range nor ``distinct_keys`` is computed: only a lookup uses them.

    Raises:
        RecordKeyError: some record key is null or empty (nothing has been written yet).
        NullOrderingValueError: a record flagged ``__null_ordering`` (writes that combine).
    """
    key = F.col(RECORD_KEY_COLUMN)
    aggregates: list[Column] = [
        F.count(F.lit(1)).alias("n"),
        F.max(F.col(BAD_KEY_COLUMN)).alias("bad"),
    ]
    checked = NULL_ORDERING_COLUMN in keyed.columns
    if checked:
        aggregates.append(F.min(F.when(F.col(NULL_ORDERING_COLUMN), key)).alias("null_ordering"))
    grouped = keyed.groupBy(PARTITION_PATH_COLUMN).agg(*aggregates)
    rows = sorted(run_job(grouped.collect), key=lambda r: r[PARTITION_PATH_COLUMN])
    nulls = [r for r in rows if r["null_ordering"] is not None] if checked else []
    sample = (nulls[0]["null_ordering"], nulls[0][PARTITION_PATH_COLUMN]) if nulls else None
    refuse(spec, bad_key=any(r["bad"] for r in rows), null_ordering=sample)
    ranges = [PartitionKeyRange(r[PARTITION_PATH_COLUMN], int(r["n"]), "", "") for r in rows]
    return BatchProfile(ranges, indexed=False)
