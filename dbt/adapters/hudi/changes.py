"""``{{ hudi_changes(ref('orders')) }}``: the upstream Hudi model's changes since this model's
last successful commit.

The checkpoint is the upstream instant this model has consumed up to (on table versions 8 and
9 the completion time of that upstream write, as incremental queries there range on it). It lives
in this model's own commits, in extraMetadata under ``_dbt_hudi.checkpoint.<schema>.<upstream>``
(a write option under Hudi's ``commitmeta.key.prefix``, as Hudi's streamer keeps
``deltastreamer.checkpoint.key``), so it advances exactly when this model's commit succeeds: a
failed or killed run leaves it where it was and the next run reads the same changes again.

What the view holds (the upstream's data columns, plus ``change_op`` and ``change_instant``)::

    first run / --full-refresh   the upstream snapshot as of its latest instant, change_op 'i'
    upstream with CDC            the CDC query (checkpoint, latest]: the after image of 'i'/'u',
                                 the before image of 'd'; an update whose data is unchanged
                                 (a record upserted again as it was) is left out
    upstream without CDC         the incremental query (checkpoint, latest], change_op 'u'
                                 (no deletes: the table kept no change log)

Only the latest change of each record (record key and partition fields) is kept, so the view
upserts cleanly (of two changes one instant made, a delete and an insert, the insert: an insert
overwrite deletes a record with the replaced file group and writes it in a new one);
``change_op = 'd'`` can become ``_hoodie_is_deleted`` in the model's SELECT.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from engine import HOODIE_META_COLUMNS, META_COLUMNS, HudiTable, read_hudi, spark_table
from engine import config as hoodie
from engine.errors import QueryError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CHANGE_INSTANT", "CHANGE_OP", "changes_frame", "checkpoint_key", "take_checkpoints"]

CHANGE_OP = "change_op"
CHANGE_INSTANT = "change_instant"
_CHECKPOINT_PREFIX = "_dbt_hudi.checkpoint."
_pending: dict[tuple[str, str], dict[str, str]] = {}
_lock = threading.Lock()


def checkpoint_key(upstream_schema: str, upstream_identifier: str) -> str:
    """The extraMetadata key of a consumer's checkpoint on one upstream model."""
    return f"{_CHECKPOINT_PREFIX}{upstream_schema}.{upstream_identifier}".lower()


def remember_checkpoint(model: tuple[str, str], key: str, instant: str) -> None:
    """Keep ``key = instant`` for the next commit of ``model`` (schema, identifier)."""
    with _lock:
        _pending.setdefault(_normal(model), {})[key] = instant


def take_checkpoints(model: tuple[str, str]) -> dict[str, str]:
    """The checkpoints to commit with ``model``'s write (as write options), forgotten here."""
    with _lock:
        return _pending.pop(_normal(model), {})


def _normal(model: tuple[str, str]) -> tuple[str, str]:
    return (model[0].lower(), model[1].lower())


def changes_frame(
    spark: SparkSession, upstream_path: str, begin: str | None, end: str, as_of: str
) -> DataFrame:
    """The upstream's changes in ``(begin, end]`` (``begin`` None: its snapshot as of
    ``as_of``, the instant of its latest write; ``end`` is when that write completed, the
    bound incremental queries take on table versions 8 and 9)."""
    from pyspark.sql import functions as F

    upstream = spark_table(upstream_path, spark)
    snapshot = read_hudi(spark, upstream_path, {"as.of.instant": as_of})
    data = [c for c in snapshot.columns if c not in HOODIE_META_COLUMNS]
    if begin is None:
        frame = snapshot.select(
            *data,
            F.lit("i").alias(CHANGE_OP),
            F.col(META_COLUMNS[0]).alias(CHANGE_INSTANT),
        )
        return frame
    query = {
        hoodie.QUERY_TYPE.key: "incremental",
        hoodie.READ_BEGIN_INSTANTTIME.key: begin,
        hoodie.READ_END_INSTANTTIME.key: end,
    }
    if not upstream.cdc_enabled:
        rows = read_hudi(spark, upstream_path, query)
        frame = rows.select(
            *data, F.lit("u").alias(CHANGE_OP), F.col(META_COLUMNS[0]).alias(CHANGE_INSTANT)
        )
        return _latest_per_record(frame, upstream)
    query[hoodie.QUERY_INCREMENTAL_FORMAT.key] = "cdc"
    cdc = read_hudi(spark, upstream_path, query)
    image_schema = snapshot.select(*data).schema
    before = F.from_json(F.col("before"), image_schema)
    after = F.from_json(F.col("after"), image_schema)
    # a record upserted again with the same values is an update to Hudi, not a change here
    rewritten = (F.col("op") == "u") & (before == after)
    frame = (
        cdc.where(~rewritten)
        .select(
            F.coalesce(after, before).alias("image"),
            F.col("op").alias(CHANGE_OP),
            F.col("ts_ms").alias(CHANGE_INSTANT),
        )
        .select(*[F.col(f"image.{c}").alias(c) for c in data], CHANGE_OP, CHANGE_INSTANT)
    )
    return _latest_per_record(frame, upstream)


def _latest_per_record(frame: DataFrame, upstream: HudiTable) -> DataFrame:
    """One row per record (record key and partition fields): its latest change."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    options = upstream.options()
    record_key = options.get(hoodie.RECORDKEY_FIELDS) or ()
    keys = [*record_key, *options.get(hoodie.PARTITION_FIELDS)]
    if not record_key:
        raise QueryError(
            f"hudi_changes: the table at {upstream.uri} records no record key fields; its "
            "changes cannot be told apart per record"
        )
    # one instant can change a record twice: an insert overwrite deletes it with the replaced
    # file group and inserts it in a new one; the record is what the instant left, so a
    # delete ranks after an insert or update of the same instant
    latest = Window.partitionBy(*keys).orderBy(
        F.col(CHANGE_INSTANT).desc(), (F.col(CHANGE_OP) == "d").asc()
    )
    ranked = frame.withColumn("__dbt_hudi_change_rank", F.row_number().over(latest))
    return ranked.where(F.col("__dbt_hudi_change_rank") == 1).drop("__dbt_hudi_change_rank")
