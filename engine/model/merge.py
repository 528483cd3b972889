"""Record merging: the one home of payload semantics (precombine and combine-with-stored).

Two operations, vectorised over Arrow tables, shared by the copy-on-write writer (incoming batch
against the base file it rewrites) and the merge-on-read reader (log records against base rows):

* :func:`precombine` keeps one version per record key inside a batch.
* :func:`combine_with_stored` merges the precombined batch with the stored rows.

Rules per payload class (``payload.class`` write option, or the table's persisted payload)::

    payload                         precombine (in a batch)        combine with stored
    OverwriteWithLatestAvroPayload  greatest ordering value wins   incoming wins
    DefaultHoodieRecordPayload,     greatest ordering value wins   stored row kept when its
      EventTimeAvroPayload                                         ordering value is greater
    PartialUpdateAvroPayload        winner, its nulls filled from  as Default; the incoming
                                    older versions                 row's nulls keep stored values
    OverwriteNonDefaults...Payload  greatest ordering value wins   incoming wins; its nulls
                                                                   keep stored values

Among a file slice's log records, written by different commits, commit-time payloads
(:attr:`MergeSpec.is_commit_time`) keep the latest record whatever its ordering value
(:func:`latest_arrival`, Hudi 1.x's ``CommitTimeRecordMerger``); inside one batch the table's
precombine still keeps the greatest ordering value.

Ties on the ordering value go to the later arrival (row position, or the ``__arrival`` column);
without an ordering field the latest arrival wins. A null ordering value is the smallest.

Deletes: a row whose boolean ``_hoodie_is_deleted`` is true (soft delete) is a delete record that
takes part in ordering like any row; a row flagged in ``__delete_record`` (operation ``delete``, log
delete blocks) is a hard delete: with a null ordering value it always wins, with a value it is
ordered like any row. A delete that wins against a stored row removes it; a delete with no stored
row writes nothing. With event-time payloads a stored row whose ordering value is greater than the
delete's survives.

Rows of the stored table that the batch does not change are returned untouched (with their meta
columns), so a rewrite keeps their ``_hoodie_commit_time`` and ``_hoodie_commit_seqno``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import config
from engine.model.promote import promote_array
from engine.model.schema import HOODIE_META_COLUMNS, RECORD_KEY_COLUMN

__all__ = [
    "ARRIVAL_COLUMN",
    "DELETE_RECORD_COLUMN",
    "INSERT_COLUMN",
    "INTERNAL_COLUMNS",
    "IS_DELETED_COLUMN",
    "CombineResult",
    "MergeSpec",
    "combine_with_stored",
    "delete_mask",
    "latest_arrival",
    "precombine",
]

IS_DELETED_COLUMN = "_hoodie_is_deleted"
DELETE_RECORD_COLUMN = "__delete_record"
ARRIVAL_COLUMN = "__arrival"
# true on a record the index found in no file group: a merge-on-read append of it counts in
# numInserts, as Hudi's append handle counts a record without a current location
INSERT_COLUMN = "__insert"
INTERNAL_COLUMNS = (DELETE_RECORD_COLUMN, ARRIVAL_COLUMN, INSERT_COLUMN)

_EVENT_TIME_PAYLOADS = frozenset(
    {config.DEFAULT_PAYLOAD, config.EVENT_TIME_PAYLOAD, config.PARTIAL_UPDATE_PAYLOAD}
)
_FILLING_PAYLOADS = frozenset(
    {config.PARTIAL_UPDATE_PAYLOAD, config.OVERWRITE_NON_DEFAULTS_PAYLOAD}
)


@dataclass(frozen=True, slots=True)
class MergeSpec:
    """How records of one key merge: the payload class and the ordering (precombine) field."""

    payload_class: str = config.OVERWRITE_WITH_LATEST_PAYLOAD
    ordering_field: str | None = None

    @property
    def is_event_time(self) -> bool:
        """Whether a stored row with a greater ordering value beats an incoming one."""
        return self.payload_class in _EVENT_TIME_PAYLOADS and self.ordering_field is not None

    @property
    def is_commit_time(self) -> bool:
        """Whether, among records of different commits, the latest write wins whatever its
        ordering value (merge mode COMMIT_TIME_ORDERING; no ordering field to compare)."""
        return not self.is_event_time and self.payload_class != config.PARTIAL_UPDATE_PAYLOAD

    @property
    def fills_nulls(self) -> bool:
        """Whether null fields of the newer record keep the older record's values."""
        return self.payload_class in _FILLING_PAYLOADS


@dataclass(frozen=True)
class CombineResult:
    """Outcome of :func:`combine_with_stored`.

    Attributes:
        stored: the stored rows the batch was combined with.
        changed: rows whose new version comes from the batch (incoming or merged); their meta
            columns are the incoming ones and a writer re-stamps them.
        num_updates: stored keys rewritten with a new version.
        num_inserts: keys written that had no stored row.
        num_deletes: stored rows removed.
        kept: for each stored row, whether it stays as it is (one of :attr:`unchanged`).
        replaces: for each row of ``changed``, the stored row it replaces (-1: an insert).
    """

    stored: pa.Table
    changed: pa.Table
    num_updates: int
    num_inserts: int
    num_deletes: int
    kept: np.ndarray
    replaces: np.ndarray

    @classmethod
    def appended(cls, stored: pa.Table, changed: pa.Table) -> CombineResult:
        """``changed`` inserted after every stored row (a write that looks no key up)."""
        return cls(
            stored,
            changed,
            0,
            changed.num_rows,
            0,
            np.ones(stored.num_rows, dtype=bool),
            np.full(changed.num_rows, -1, dtype=np.int64),
        )

    @cached_property
    def unchanged(self) -> pa.Table:
        """The stored rows kept as they were (meta columns preserved)."""
        return self.stored if self.kept.all() else self.stored.filter(pa.array(self.kept))

    def merged_rows(self, changed: pa.Table) -> pa.Table:
        """The rows of the merge, ``changed`` (the rows of :attr:`changed`, restamped) in
        place of the stored ones they replace, in the order Hudi's merge handle writes them:
        the stored rows in their order, an updated one replaced in place, a deleted one gone,
        then the inserts as they arrived.

        Why: a rewritten file whose stored keys keep their places keeps its bloom filter's rows
        too (:meth:`engine.io.bloom_filter.BloomFilterSpec.continued`); and one ``take`` over
        the stored rows costs less than filtering them first."""
        updated = self.replaces >= 0
        if not updated.any():
            return pa.concat_tables([self.unchanged, changed]) if self.stored.num_rows else changed
        n = self.stored.num_rows
        slot = np.arange(n, dtype=np.int64)
        slot[self.replaces[updated]] = n + np.nonzero(updated)[0]
        removed = ~self.kept
        removed[self.replaces[updated]] = False
        order = np.concatenate([slot[~removed], n + np.nonzero(~updated)[0]])
        return pa.concat_tables([self.stored, changed]).take(order)

    @property
    def keeps_stored_rows(self) -> bool:
        """Whether :meth:`merged_rows` starts with every stored row's key in its place."""
        return self.num_deletes == 0


def _col(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _bool_or_false(table: pa.Table, name: str) -> pa.Array:
    if name not in table.column_names:
        return pa.array(np.zeros(table.num_rows, dtype=bool))
    col = _col(table, name)
    if not pa.types.is_boolean(col.type):
        return pa.array(np.zeros(table.num_rows, dtype=bool))
    return pc.fill_null(col, False)


def delete_mask(table: pa.Table) -> pa.Array:
    """Rows that are delete records (soft ``_hoodie_is_deleted`` or hard ``__delete_record``)."""
    return pc.or_(
        _bool_or_false(table, IS_DELETED_COLUMN), _bool_or_false(table, DELETE_RECORD_COLUMN)
    )


def _ordering(table: pa.Table, spec: MergeSpec) -> pa.Array | None:
    if spec.ordering_field is None or spec.ordering_field not in table.column_names:
        return None
    return _col(table, spec.ordering_field)


def _arrival(table: pa.Table) -> pa.Array:
    if ARRIVAL_COLUMN in table.column_names:
        return _col(table, ARRIVAL_COLUMN)
    return pa.array(np.arange(table.num_rows, dtype=np.int64))


def precombine(
    table: pa.Table, spec: MergeSpec, *, key_column: str = RECORD_KEY_COLUMN
) -> pa.Table:
    """Keep one version per record key (see the module docstring for the rules).

    Args:
        table: Records of one batch; must hold ``key_column`` and, if set, the ordering field.
        spec: Payload class and ordering field.
        key_column: Column holding the record key.

    Returns:
        One row per distinct key, same columns; order is not meaningful.
    """
    n = table.num_rows
    if n <= 1:
        return table
    keys = _col(table, key_column)
    if pc.count_distinct(keys).as_py() == n:
        return table
    ordering = _ordering(table, spec)
    hard_unordered = _bool_or_false(table, DELETE_RECORD_COLUMN)
    if ordering is not None:
        hard_unordered = pc.and_(hard_unordered, pc.is_null(ordering))
    helper = {
        "k": keys,
        "c": pc.cast(hard_unordered, pa.int8()),
        "o": ordering if ordering is not None else pa.nulls(n, pa.int8()),
        "a": _arrival(table),
    }
    order = pc.sort_indices(
        pa.table(helper),
        sort_keys=[
            ("k", "ascending", "at_start"),
            ("c", "ascending", "at_start"),
            ("o", "ascending", "at_start"),
            ("a", "ascending", "at_start"),
        ],
    )
    is_last = _last_of_runs(pc.take(keys, order))
    order_np = order.to_numpy()
    winners = order_np[is_last]
    result = table.take(pa.array(winners))
    if spec.payload_class != config.PARTIAL_UPDATE_PAYLOAD:
        return result
    return _fill_from_older_versions(table, result, order_np, is_last, key_column)


def _last_of_runs(sorted_keys: pa.Array) -> np.ndarray:
    """Mask of the last row of each run of equal keys (keys sorted): each run's winner."""
    n = len(sorted_keys)
    is_last = np.ones(n, dtype=bool)
    is_last[:-1] = pc.not_equal(sorted_keys.slice(0, n - 1), sorted_keys.slice(1)).to_numpy(
        zero_copy_only=False
    )
    return is_last


def latest_arrival(
    table: pa.Table, *, fills_nulls: bool = False, key_column: str = RECORD_KEY_COLUMN
) -> pa.Table:
    """The latest arrival of each key, data or delete record, whatever its ordering value:
    commit-time ordering among records of different commits (a slice's log records).

    Args:
        table: Records with ``key_column`` and, for the arrival order, ``__arrival`` (else the
            row position).
        fills_nulls: the winner's null fields take the newest non-null value of the key's
            records since its last delete (Hudi 1.1's ``CommitTimePartialRecordMerger``,
            partial update mode IGNORE_DEFAULTS).
        key_column: Column holding the record key.

    Returns:
        One row per distinct key, same columns; order is not meaningful.
    """
    if table.num_rows <= 1:
        return table
    keys = _col(table, key_column)
    helper = pa.table({"k": keys, "a": _arrival(table)})
    order = pc.sort_indices(helper, sort_keys=[("k", "ascending"), ("a", "ascending")]).to_numpy()
    is_last = _last_of_runs(pc.take(keys, pa.array(order)))
    winners = table.take(pa.array(order[is_last]))
    if not fills_nulls:
        return winners
    since = order[
        _since_last_delete(delete_mask(table).to_numpy(zero_copy_only=False)[order], is_last)
    ]
    return _fill_from_older_versions(
        table, winners, since, _last_of_runs(pc.take(keys, pa.array(since))), key_column
    )


def _since_last_delete(is_delete: np.ndarray, is_last: np.ndarray) -> np.ndarray:
    """Mask of the sorted rows at or after the last delete of their key's run (every row of a
    run without deletes)."""
    n = len(is_delete)
    is_first = np.ones(n, dtype=bool)
    is_first[1:] = is_last[:-1]
    run_id = np.cumsum(is_first) - 1
    positions = np.arange(n)
    last_delete = np.full(run_id[-1] + 1, -1, dtype=np.int64)
    np.maximum.at(last_delete, run_id, np.where(is_delete, positions, -1))
    return np.asarray(positions >= last_delete[run_id])


def _fill_from_older_versions(
    table: pa.Table,
    winners: pa.Table,
    order: np.ndarray,
    is_last: np.ndarray,
    key_column: str,
) -> pa.Table:
    """Partial update inside a batch: each column takes its newest non-null value per key."""
    n = len(order)
    is_first = np.ones(n, dtype=bool)
    is_first[1:] = is_last[:-1]
    run_id = np.cumsum(is_first) - 1
    positions = np.arange(n)
    skip = {key_column, IS_DELETED_COLUMN, *INTERNAL_COLUMNS, *HOODIE_META_COLUMNS}
    columns: dict[str, pa.Array] = {}
    for name in table.column_names:
        if name in skip:
            continue
        sorted_col = pc.take(_col(table, name), pa.array(order))
        valid = pc.is_valid(sorted_col).to_numpy(zero_copy_only=False)
        pos = np.where(valid, positions, -1)
        newest = np.full(run_id[-1] + 1, -1, dtype=np.int64)
        np.maximum.at(newest, run_id, pos)
        take_idx = pa.array(newest, mask=newest < 0)
        columns[name] = pc.take(sorted_col, take_idx)
    out = winners
    for name, values in columns.items():
        out = out.set_column(out.schema.get_field_index(name), out.schema.field(name), values)
    return out


def combine_with_stored(
    stored: pa.Table,
    incoming: pa.Table,
    spec: MergeSpec,
    *,
    key_column: str = RECORD_KEY_COLUMN,
) -> CombineResult:
    """Merge a precombined batch (one row per key) into stored rows.

    Args:
        stored: Current rows (a base file, or base rows of a file slice).
        incoming: Precombined new records, same data columns as ``stored`` (delete records may
            carry only the key, the delete flags and the ordering field).
        spec: Payload class and ordering field.
        key_column: Column holding the record key in both tables.

    Returns:
        The rows to keep untouched, the rows to (re)write, and the counts of updates, inserts
        and deletes.
    """
    idx = pc.index_in(_col(incoming, key_column), value_set=_col(stored, key_column))
    matched = pc.is_valid(idx)
    is_delete = delete_mask(incoming)
    stored_newer = _stored_is_newer(stored, incoming, idx, spec)
    takes_effect = pc.and_(matched, pc.invert(stored_newer))
    deleted = pc.and_(takes_effect, is_delete)
    written = pc.and_(pc.invert(is_delete), pc.or_(pc.invert(matched), takes_effect))
    updated = pc.and_(written, matched)

    replaced = pc.filter(idx, takes_effect).to_numpy(zero_copy_only=False)
    keep = np.ones(stored.num_rows, dtype=bool)
    keep[replaced.astype(np.int64)] = False

    changed = incoming.filter(written)
    replaces = pc.filter(idx, written)
    if spec.fills_nulls and changed.num_rows:
        changed = _fill_from_stored(changed, stored, replaces, key_column)
    return CombineResult(
        stored=stored,
        changed=changed,
        num_updates=int(pc.sum(pc.cast(updated, pa.int64())).as_py() or 0),
        num_inserts=changed.num_rows - int(pc.sum(pc.cast(updated, pa.int64())).as_py() or 0),
        num_deletes=int(pc.sum(pc.cast(deleted, pa.int64())).as_py() or 0),
        kept=keep,
        replaces=pc.fill_null(replaces, -1).to_numpy(zero_copy_only=False).astype(np.int64),
    )


def _stored_is_newer(
    stored: pa.Table, incoming: pa.Table, idx: pa.Array, spec: MergeSpec
) -> pa.Array:
    """For each incoming record, whether the stored row it matches (``idx``) wins by the
    ordering field (event-time payloads only): a greater stored value, or a null incoming one
    (the smallest), except for a hard delete without ordering value."""
    stored_newer = pa.array(np.zeros(incoming.num_rows, dtype=bool))
    inc_ord = _ordering(incoming, spec)
    ordering_field = spec.ordering_field
    if not spec.is_event_time or inc_ord is None or ordering_field not in stored.column_names:
        return stored_newer
    stored_ord = pc.take(_col(stored, str(ordering_field)), idx)
    if stored_ord.type != inc_ord.type:
        inc_ord = promote_array(inc_ord, stored_ord.type, str(ordering_field))
    greater = pc.fill_null(pc.greater(stored_ord, inc_ord), False)
    null_incoming = pc.and_(pc.is_null(inc_ord), pc.is_valid(stored_ord))
    stored_newer = pc.or_(greater, null_incoming)
    hard_unordered = pc.and_(_bool_or_false(incoming, DELETE_RECORD_COLUMN), pc.is_null(inc_ord))
    return pc.and_(stored_newer, pc.invert(hard_unordered))


def _fill_from_stored(
    changed: pa.Table, stored: pa.Table, stored_idx: pa.Array, key_column: str
) -> pa.Table:
    """Null fields of the written rows keep the stored values (rows without a stored match
    have a null index and stay as they are)."""
    skip = {key_column, IS_DELETED_COLUMN, *INTERNAL_COLUMNS, *HOODIE_META_COLUMNS}
    out = changed
    for name in changed.column_names:
        if name in skip or name not in stored.column_names:
            continue
        new = _col(changed, name)
        old = pc.take(_col(stored, name), stored_idx)
        if old.type != new.type:
            old = promote_array(old, new.type, name)
        merged = pc.if_else(pc.is_null(new), old, new)
        out = out.set_column(out.schema.get_field_index(name), out.schema.field(name), merged)
    return out
