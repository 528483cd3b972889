"""Data skipping on the corpus's v9 ``*_meta`` tables (Apache Hudi 1.1 wrote their
``column_stats``): a selective filter on a non-partition column reads fewer files, with the rows
of the read without skipping and of hudi-rs's read, both filtered; turning skipping or the
metadata table off for the read reads every file again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from engine.cli import canonical_json_lines
from engine.fs.storage import Storage
from engine.read.arrow import apply_filters, read_table
from engine.read.filter import ReadFilter, parse_filter
from engine.read.plan import QueryPlan, parse_read_query, plan_query
from tests.hudi_rs import hudi_rs_rows

pytestmark = pytest.mark.interop

META_TABLES = ("cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta")
SELECTIVE = (
    "txn_id = TXN-001",  # a string
    "amount > 5000",  # a decimal
    "txn_datetime < 2024-01-15T10:00:00Z",  # a timestamp: no file holds one
    "fee_amount >= 40",
    "merchant_name = Amazon",  # a column with nulls
)
NO_SKIPPING = {"hoodie.enable.data.skipping": "false"}


def _plan(base: Path, filters: list[ReadFilter], options: dict[str, str]) -> QueryPlan:
    return plan_query(Storage(str(base)), parse_read_query(options, filters))


def _rows(table: pa.Table) -> list[str]:
    return sorted(canonical_json_lines(table.to_pylist()))


@pytest.mark.parametrize("table", META_TABLES)
@pytest.mark.parametrize("text", SELECTIVE)
def test_a_selective_filter_reads_fewer_files(
    table: str, text: str, corpus_table: Callable[[str], Path]
) -> None:
    base = corpus_table(table)
    filters = [parse_filter(text)]
    skipping, every = _plan(base, filters, {}), _plan(base, filters, NO_SKIPPING)
    assert skipping.files_read < every.files_read
    assert skipping.skipped_slices == len(every.file_slices) - len(skipping.file_slices) > 0
    rows = _rows(read_table(str(base), filters=filters))
    assert rows == _rows(read_table(str(base), NO_SKIPPING, filters))
    judged = apply_filters(pa.Table.from_pylist(hudi_rs_rows(base)), filters)
    assert rows == _rows(judged)
    print(f"{table} {text}: {skipping.files_read} of {every.files_read} files read")


@pytest.mark.parametrize(
    "options", [NO_SKIPPING, {"hoodie.metadata.enable": "false"}], ids=["skipping", "metadata"]
)
def test_turned_off_for_the_read_every_file_is_read(
    options: dict[str, str], corpus_table: Callable[[str], Path]
) -> None:
    base = corpus_table("cow__v9_txns_simple_meta")
    filters = [parse_filter("txn_id = TXN-001")]
    plan = _plan(base, filters, options)
    assert plan.skipped_slices == 0
    assert plan.files_read == _plan(base, [], {}).files_read


def test_merge_on_read_slices_with_log_files_are_skipped_by_their_stats(
    corpus_table: Callable[[str], Path],
) -> None:
    """As of an instant whose slices carry log files, a slice goes only when its base file
    and every log file are excluded, and the rows stay those of the full read filtered."""
    base = corpus_table("mor_avro__v9_txns_simple_meta")
    options = {"as.of.instant": "20260307162611195"}
    filters = [parse_filter("txn_id = TXN-001")]  # updated in a log file
    every = _plan(base, filters, {**options, **NO_SKIPPING})
    assert any(s.log_files for s in every.file_slices)
    skipping = _plan(base, filters, options)
    assert skipping.files_read < every.files_read
    assert any(s.log_files for s in skipping.file_slices)
    rows = _rows(read_table(str(base), options, filters))
    assert rows == _rows(apply_filters(read_table(str(base), options), filters))
    assert len(rows) == 1
