"""Auto-generated record keys: tables written without a record key field (keyless tables).

Hudi 0.14 makes the record key itself when ``hoodie.datasource.write.recordkey.field`` is not
given: ``<instant_time>_<spark partition id>_<row index in the partition>``, the shape of
``_hoodie_commit_seqno``. Such keys are unique in the table (the instant time is), and nothing
about them is persisted: ``hoodie.table.recordkey.fields`` stays absent, which is how a reader or
a later writer knows the table is keyless. The configured (or inferred) key generator still makes
the partition path.

What a keyless table cannot do is what needs a key the writer knows: upsert and delete (the
keys a batch would get are new ones, so nothing would ever match), combining duplicates before
an insert, dropping duplicates, and virtual keys (``populate.meta.fields=false``). Each is refused
before anything is written, as Hudi refuses it. A write with no operation given is a bulk_insert,
as Hudi's datasource deduces.

Keys are made on the runner in two halves: the batch's tasks make ``_<partition id>_<row>`` when
the batch is keyed (the batch is persisted then, so a retried task sees the same rows), and the
instant time is put in front once the instant is requested (``WriteJob.locate``).
"""

from __future__ import annotations

from engine import config
from engine.config import HoodieConfig, WriteOperation
from engine.errors import ConfigError

__all__ = [
    "KEYLESS_OPERATIONS",
    "auto_record_key",
    "check_auto_keys",
    "is_keyless",
    "keyless_keygen_class",
    "write_operation",
]

# operations that write new records only: the keys they need are the ones they make
KEYLESS_OPERATIONS = frozenset(
    {
        WriteOperation.INSERT,
        WriteOperation.BULK_INSERT,
        WriteOperation.INSERT_OVERWRITE,
        WriteOperation.INSERT_OVERWRITE_TABLE,
        WriteOperation.DELETE_PARTITION,
    }
)


def auto_record_key(instant_time: str, partition_id: int, row: int) -> str:
    """The key Hudi generates for row ``row`` of Spark partition ``partition_id``."""
    return f"{instant_time}_{partition_id}_{row}"


def is_keyless(cfg: HoodieConfig) -> bool:
    """No record key field given, nor persisted: the write generates its keys."""
    return not (cfg.get(config.RECORDKEY_FIELD) or cfg.get(config.RECORDKEY_FIELDS))


def keyless_keygen_class(partition_fields: tuple[str, ...]) -> str:
    """The key generator Hudi infers for a keyless table: from the partition fields alone."""
    if not partition_fields:
        return config.NON_PARTITIONED_KEYGEN
    return config.SIMPLE_KEYGEN if len(partition_fields) == 1 else config.COMPLEX_KEYGEN


def write_operation(cfg: HoodieConfig) -> WriteOperation:
    """The write's operation: the one given, else bulk_insert for a keyless write (Hudi's
    datasource deduction), else upsert."""
    if not cfg.is_set(config.OPERATION) and is_keyless(cfg):
        return WriteOperation.BULK_INSERT
    return cfg.get(config.OPERATION)


def check_auto_keys(
    cfg: HoodieConfig, operation: WriteOperation, props: dict[str, str] | None, base_path: str
) -> None:
    """Refuse what a keyless write cannot do, before anything is written.

    Raises:
        ConfigError: a keyed write to a keyless table, an operation that needs record keys, or a
            config Hudi refuses with auto-generated keys; the message names the key or operation.
    """
    keyless_table = props is not None and not props.get(config.RECORDKEY_FIELDS.key)
    if keyless_table and cfg.get(config.RECORDKEY_FIELD):
        fields = config.format_value(cfg.get(config.RECORDKEY_FIELD))
        raise ConfigError(
            f"Table at {base_path} has auto-generated record keys (no "
            f"{config.RECORDKEY_FIELDS.key}): config {config.RECORDKEY_FIELD.key}={fields!r} "
            "cannot give it keys (recreate the table to key it)"
        )
    if not is_keyless(cfg):
        if cfg.get(config.INSERT_DROP_DUPS):
            raise ConfigError(
                f"{config.INSERT_DROP_DUPS.key}=true (write to {base_path}): dropping incoming "
                "duplicates of stored keys is not implemented, so the write is refused rather "
                "than writing them"
            )
        return
    if operation not in KEYLESS_OPERATIONS:
        allowed = ", ".join(sorted(o.value for o in KEYLESS_OPERATIONS))
        raise ConfigError(
            f"Operation {operation.value!r} needs record keys, and the write to {base_path} has "
            f"none (config {config.RECORDKEY_FIELD.key!r} is not set, so keys are generated): "
            f"set the record key field, or use one of {allowed}"
        )
    refused = (
        (config.COMBINE_BEFORE_INSERT, True, "Enabling"),
        (config.INSERT_DROP_DUPS, True, "Enabling"),
        (config.POPULATE_META_FIELDS, False, "Disabling"),
    )
    for option, value, verb in refused:
        if cfg.get(option) is value:
            raise ConfigError(
                f"{verb} {option.key!r} is not supported with auto generation of record keys "
                f"(config {config.RECORDKEY_FIELD.key!r} is not set for the write to {base_path})"
            )
    if cfg.get(config.INDEX_TYPE).is_bucket:
        # a bucket is the hash of the record key, which a keyless write only makes in its tasks
        raise ConfigError(
            f"{config.INDEX_TYPE.key}=BUCKET needs record keys to hash, and the write to "
            f"{base_path} has none (config {config.RECORDKEY_FIELD.key!r} is not set)"
        )
