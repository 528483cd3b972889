"""A row-at-a-time model of a copy-on-write table, and the sorted form read rows are compared in.

The model is written independently of ``engine.model.merge`` (plain dicts, one record at a
time) from Hudi's payload rules: it is what the engine's vectorised merge must agree with.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any

OVERWRITE = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
PARTIAL = "org.apache.hudi.common.model.PartialUpdateAvroPayload"
NON_DEFAULTS = "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload"
PAYLOADS = (OVERWRITE, DEFAULT, PARTIAL, NON_DEFAULTS)
# merge mode COMMIT_TIME_ORDERING (and its version 6 payloads): the latest write wins whatever its
# ordering value, so a sequence may draw ordering values that go down from commit to commit
COMMIT_TIME_PAYLOADS = (OVERWRITE, NON_DEFAULTS)

Row = dict[str, Any]


def _ord_newer(new: Any, old: Any) -> bool:
    """Ordering comparison with ties to the newer arrival; None is the smallest value."""
    if new is None:
        return old is None
    if old is None:
        return True
    return bool(new >= old)


class Oracle:
    """Expected table content after each commit.

    Args:
        payload: payload class name.
        ordering: ordering field, or None.
        identity: row -> (record key, partition path).
        fields: data column names (order irrelevant).
    """

    def __init__(
        self,
        payload: str,
        ordering: str | None,
        identity: Callable[[Row], tuple[str, str]],
        fields: Sequence[str],
    ) -> None:
        self.payload = payload
        self.ordering = ordering
        self.identity = identity
        self.fields = list(fields)
        self.rows: dict[tuple[str, str], Row] = {}
        self.history: list[tuple[str, dict[tuple[str, str], Row]]] = []

    # ---- one batch ------------------------------------------------------------------------

    def _is_delete(self, row: Row) -> bool:
        return bool(row.get("_hoodie_is_deleted")) or bool(row.get("__hard_delete"))

    def _ord(self, row: Row) -> Any:
        return row.get(self.ordering) if self.ordering else None

    def _fill(self, newer: Row, older: Row) -> Row:
        out = dict(newer)
        for name in self.fields:
            if name in ("_hoodie_is_deleted",):
                continue
            if out.get(name) is None:
                out[name] = older.get(name)
        return out

    def _rank(self, arrival: int, row: Row) -> tuple[Any, ...]:
        """Total order of versions of one key: unordered hard deletes last, then the ordering
        value (None smallest), then arrival."""
        hard_unordered = bool(row.get("__hard_delete")) and self._ord(row) is None
        ordering = self._ord(row)
        return (
            hard_unordered,
            ordering is not None,
            ordering if ordering is not None else 0,
            arrival,
        )

    def precombine(self, batch: Iterable[Row]) -> dict[tuple[str, str], Row]:
        versions: dict[tuple[str, str], list[tuple[tuple[Any, ...], Row]]] = {}
        for arrival, row in enumerate(batch):
            versions.setdefault(self.identity(row), []).append((self._rank(arrival, row), row))
        merged: dict[tuple[str, str], Row] = {}
        for ident, ranked in versions.items():
            ordered = [row for _, row in sorted(ranked, key=lambda item: item[0])]
            result = dict(ordered[-1])
            if self.payload == PARTIAL:
                # every field takes its newest non-null value
                for older in reversed(ordered[:-1]):
                    result = self._fill(result, older)
            merged[ident] = result
        return merged

    def apply(self, batch: Sequence[Row], operation: str, instant: str) -> None:
        """Apply one committed write (``insert_overwrite``: the partitions the batch writes
        start empty, and its records, combined, are inserts)."""
        if operation == "insert_overwrite":
            touched = {self.identity(r)[1] for r in batch}
            self.rows = {i: r for i, r in self.rows.items() if i[1] not in touched}
        if operation == "delete":
            # deletes by key carry no ordering value (they always remove the stored row)
            ordering = {self.ordering: None} if self.ordering else {}
            batch = [{**r, **ordering, "__hard_delete": True} for r in batch]
        incoming = self.precombine(batch)
        event_time = self.payload in (DEFAULT, PARTIAL) and self.ordering is not None
        for ident, row in incoming.items():
            stored = self.rows.get(ident)
            if stored is None:
                if not self._is_delete(row) and operation != "delete":
                    self.rows[ident] = self._stamp(row, instant)
                continue
            stored_newer = False
            if event_time:
                s_ord, i_ord = self._ord(stored), self._ord(row)
                hard_unordered = row.get("__hard_delete") and i_ord is None
                if not hard_unordered and s_ord is not None and (i_ord is None or s_ord > i_ord):
                    stored_newer = True
            if stored_newer:
                continue
            if self._is_delete(row):
                del self.rows[ident]
                continue
            if self.payload in (PARTIAL, NON_DEFAULTS):
                row = self._fill(row, stored)
            self.rows[ident] = self._stamp(row, instant)
        self.history.append((instant, copy.deepcopy(self.rows)))

    def restore(self, instant: str) -> None:
        """A restore to ``instant``: the rows as of it; later commits leave the history."""
        self.history = [(t, rows) for t, rows in self.history if t <= instant]
        self.rows = copy.deepcopy(self.history[-1][1]) if self.history else {}

    def _stamp(self, row: Row, instant: str) -> Row:
        out = {name: row.get(name) for name in self.fields}
        out["_hoodie_commit_time"] = instant
        return out

    # ---- expectations ----------------------------------------------------------------------

    @staticmethod
    def as_set(rows: dict[tuple[str, str], Row], columns: Sequence[str]) -> list[tuple[Any, ...]]:
        out = []
        for (key, partition), row in rows.items():
            out.append((key, partition, *(row.get(c) for c in columns)))
        return sorted(out, key=repr)

    def expected(self, columns: Sequence[str], as_of: str | None = None) -> list[tuple[Any, ...]]:
        if as_of is None:
            return self.as_set(self.rows, columns)
        state: dict[tuple[str, str], Row] = {}
        for instant, snapshot in self.history:
            if instant <= as_of:
                state = snapshot
        return self.as_set(state, columns)

    def changed(self, columns: Sequence[str], begin: str, end: str) -> list[tuple[Any, ...]]:
        """An incremental query's rows: those of the state as of ``end`` that a commit in
        ``(begin, end]`` last changed."""
        state: dict[tuple[str, str], Row] = {}
        for instant, snapshot in self.history:
            if instant <= end:
                state = snapshot
        changed = {k: r for k, r in state.items() if begin < r["_hoodie_commit_time"] <= end}
        return self.as_set(changed, columns)


def actual_set(rows: Iterable[Row], columns: Sequence[str]) -> list[tuple[Any, ...]]:
    out = [
        (r["_hoodie_record_key"], r["_hoodie_partition_path"], *(r.get(c) for c in columns))
        for r in rows
    ]
    return sorted(out, key=repr)
