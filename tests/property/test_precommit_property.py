"""Property: random batches under random pre-commit validators; the table holds exactly the
batches that pass.

Each step draws a batch (upserts with soft deletes, or deletes by key) and one or two of Hudi's
SQL validators: a single-value count of the table or of its rows with ``v = 'x'``, an
equality on the rows of key ``a`` (none may change or go), an inequality on the count. The
model decides each validator from the rows before the batch and after it (the model with the
batch applied to a copy): a batch all of whose validators pass must commit, any other must be
refused and leave the table as it was. After every step hudi-rs must read the model's rows.
Copy-on-write and merge-on-read, table versions 6 and 9; ``make test`` runs 8 sequences,
``make test-long`` 80.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import strategies as st

from engine.errors import PreCommitValidationError
from tests.hudi_rs import hudi_rs_rows
from tests.property import runner
from tests.property.oracle import OVERWRITE, Oracle, Row

pytestmark = [pytest.mark.spark, pytest.mark.interop]

PKG = "org.apache.hudi.client.validator."
KINDS = {
    "single": (PKG + "SqlQuerySingleResultPreCommitValidator", "single.value"),
    "equality": (PKG + "SqlQueryEqualityPreCommitValidator", "equality"),
    "inequality": (PKG + "SqlQueryInequalityPreCommitValidator", "inequality"),
}
# (kind, query) of each drawn validator; single-value queries take their expected value
QUERIES = {
    "count": ("single", "select count(*) from <TABLE_NAME>#{n}"),
    "count_x": ("single", "select count(*) from <TABLE_NAME> where v = 'x'#{n}"),
    "keep_a": ("equality", "select id, dt, v from <TABLE_NAME> where id = 'a'"),
    "count_changes": ("inequality", "select count(*) from <TABLE_NAME>"),
}

record = runner.records("abcd", st.integers(0, 4))
validator = st.tuples(st.sampled_from(sorted(QUERIES)), st.integers(0, 6))
step = st.tuples(
    st.sampled_from(["upsert", "upsert", "upsert", "delete"]),
    st.lists(record, min_size=1, max_size=5),
    st.lists(validator, min_size=1, max_size=2, unique_by=lambda v: v[0]),
)
sequence = st.tuples(
    st.sampled_from(["COPY_ON_WRITE", "MERGE_ON_READ"]),
    st.sampled_from(["6", "9"]),
    st.lists(step, min_size=1, max_size=4),
)


def passes(name: str, n: int, before: list[Row], after: list[Row]) -> bool:
    """Whether validator ``name`` (expecting ``n``) passes, by Hudi's rules on the model."""
    if name == "count":
        return len(after) == n
    if name == "count_x":
        return sum(1 for r in after if r["v"] == "x") == n
    if name == "keep_a":
        rows_a = [
            {(r["id"], r["dt"], r["v"]) for r in rows if r["id"] == "a"} for rows in (before, after)
        ]
        return rows_a[0] <= rows_a[1]
    return len(before) != len(after)  # count_changes


def validator_options(drawn: list[tuple[str, int]]) -> dict[str, str]:
    by_kind: dict[str, list[str]] = {}
    for name, n in drawn:
        kind, query = QUERIES[name]
        by_kind.setdefault(kind, []).append(query.format(n=n))
    options = {"hoodie.precommit.validators": ",".join(KINDS[k][0] for k in by_kind)}
    for kind, queries in by_kind.items():
        options[f"hoodie.precommit.validators.{KINDS[kind][1]}.sql.queries"] = ";".join(queries)
    return options


def run_sequence(spark: Any, table_type: str, version: str, steps: list[Any]) -> None:
    with runner.scratch_table("precommit-property-") as path:
        options = runner.table_options(
            OVERWRITE, {"hoodie.datasource.write.table.type": table_type}, version=version
        )
        oracle: Oracle = runner.model(OVERWRITE)
        for k, (operation, rows, drawn) in enumerate(steps):
            if operation == "delete" and not oracle.history:
                operation = "upsert"  # a table starts with data
            batch = [{**r, "ts": runner.ordering_value(OVERWRITE, k, r["ts"])} for r in rows]
            trial = copy.deepcopy(oracle)
            trial.apply(batch, operation, "99999999999999999")
            before, after = list(oracle.rows.values()), list(trial.rows.values())
            verdict = all(passes(name, n, before, after) for name, n in drawn)
            context = (table_type, version, steps, k, verdict)
            audited = {**options, **validator_options(drawn)}
            if verdict:
                runner.commit(spark, path, audited, oracle, batch, operation)
            else:
                with pytest.raises(PreCommitValidationError):
                    runner.commit(spark, path, audited, oracle, batch, operation)
            runner.judge(hudi_rs_rows(path), oracle, context)


@runner.sequence_groups(sequence, sequences=80 if runner.LONG else 4)
def test_only_batches_that_pass_their_validators_are_committed(spark, group) -> None:  # type: ignore[no-untyped-def]
    runner.run_group(spark, group, run_sequence)
