"""Property: on a CDC table (copy-on-write, and merge-on-read with compaction interleaved), the CDC
query between any two instants is exactly the change list a simple model of the writes produces,
in every supplemental logging mode.

A sequence mixes upserts (updates and new keys), inserts of new keys, deletes by key and insert
overwrites of the partitions a batch touches, over two partitions. The model keeps the rows by
key and records, per instant, ``i`` (after image), ``u`` (before and after), ``d`` (before).
After the sequence, every range ``(begin, end]`` over the instants (and from before the first)
is queried with the Arrow reader; the full range also through ``read_hudi``; and hudi-rs must
read the snapshot the model holds. The tables write ``_hoodie_operation``
(``hoodie.allow.operation.metadata.field``): the snapshot's values are the model's (``I`` for a
key a write inserted, ``U`` for one it replaced). ``make test`` runs five sequences (the logging
mode drawn with them, one DATA_BEFORE sequence given), ``make test-long`` thirty.

On merge-on-read a sequence also compacts; updates and deletes go to log files, whose changes
the query infers against the file slice before them (Hudi's LOG_FILE case), inserts to small
base files (rewritten with a ``.cdc`` file) or new file groups. A compaction changes no row: it
adds no change, and every range that starts or ends at it reads the same changes. hudi-rs reads
the snapshot after every step (it lists the ``.cdc`` files among a slice's log files).
``make test`` runs three merge-on-read sequences (one given), ``make test-long`` thirty; on
table versions 8 and 9 (log files named by their delta commit, ranges of completion times) the
given one and one generated each, sixteen each under ``make test-long``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from engine import SparkRunner, config, read_hudi, write_hudi
from engine.fs.storage import Storage
from engine.read.arrow import read_table
from engine.services.compaction import execute_compaction, schedule_compaction
from engine.timeline.timeline import Timeline
from tests.hudi_rs import hudi_rs_rows
from tests.keyed_table import SCHEMA, write_options
from tests.property.runner import scratch_table

# the subject is the change records each write makes, not where a write runs:
# writes take the driver path (tests/conftest.py write_path)
pytestmark = [pytest.mark.spark, pytest.mark.interop, pytest.mark.driver_writes]

LONG = bool(os.environ.get("HUDI_TEST_LONG"))
KEYS = "abcdefgh"
DATA = ("id", "dt", "ts", "v")
Change = tuple[str, str, tuple[Any, ...] | None, tuple[Any, ...] | None]


def partition_of(key: str) -> str:
    return "p1" if key < "e" else "p2"


step = st.tuples(
    st.sampled_from(["upsert", "upsert", "insert", "delete", "insert_overwrite"]),
    st.lists(st.sampled_from(KEYS), min_size=1, max_size=4, unique=True),
)
sequence = st.lists(step, min_size=2, max_size=5)
mor_step = st.one_of(step, st.just(("compact", [])))
mor_sequence = st.lists(mor_step, min_size=2, max_size=6)


class Model:
    """Rows by key, and the change list of every instant."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[Any, ...]] = {}
        self.changes: list[Change] = []
        self.operations: dict[str, str] = {}  # key -> _hoodie_operation of its stored record

    def apply(self, operation: str, rows: list[tuple[Any, ...]], t: str) -> None:
        if operation == "insert_overwrite":
            touched = {r[1] for r in rows}
            for key, old in sorted(self.rows.items()):
                if old[1] in touched:
                    self.changes.append(("d", t, old, None))
                    del self.rows[key]
        for row in rows:
            key = row[0]
            old = self.rows.get(key)
            if operation == "delete":
                if old is not None:
                    self.changes.append(("d", t, old, None))
                    del self.rows[key]
                continue
            self.changes.append(("u", t, old, row) if old is not None else ("i", t, None, row))
            self.rows[key] = row
            self.operations[key] = "U" if old is not None else "I"


def batch(operation: str, keys: list[str], model: Model, n: int) -> tuple[str, list[Any]]:
    """The rows of one step (inserts only of absent keys: an insert does not look keys up).
    Ordering values go down from step to step: the table's payload, OverwriteWithLatest, is
    commit-time ordering, and the latest write must win (on merge-on-read, over a slice's
    earlier log records too)."""
    if operation == "insert":
        keys = [k for k in keys if k not in model.rows] or keys
        operation = "insert" if all(k not in model.rows for k in keys) else "upsert"
    if operation == "delete" and not model.rows:
        operation = "upsert"
    return operation, [(k, partition_of(k), 1000 - n, f"{k}{n}") for k in keys]


def query_changes(rows: list[dict[str, Any]]) -> list[Change]:
    def data(image: str | None) -> tuple[Any, ...] | None:
        return None if image is None else tuple(json.loads(image)[c] for c in DATA)

    return sorted((r["op"], r["ts_ms"], data(r["before"]), data(r["after"])) for r in rows)


def cdc_query(begin: str, end: str | None = None) -> dict[str, str]:
    options = {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.query.incremental.format": "cdc",
        "hoodie.datasource.read.begin.instanttime": begin,
    }
    if end is not None:
        options["hoodie.datasource.read.end.instanttime"] = end
    return options


def compact(path: str) -> str | None:
    """Compact every file slice with log files; the compaction's instant (None: nothing to do)."""
    storage = Storage(path)
    instant = schedule_compaction(storage, config.parse_options({}), force=True)
    if instant is None:
        return None
    execute_compaction(storage, instant, runner=SparkRunner().compact)
    return instant


def snapshot(path: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in DATA) for r in hudi_rs_rows(path))


def run_sequence(
    spark: Any,
    mode: str,
    steps: list[tuple[str, list[str]]],
    version: int = 6,
    table_type: str = "COPY_ON_WRITE",
) -> None:
    """Write ``steps`` on a table of table version ``version`` and check every range. On
    versions 8 and 9 the range bounds are completion times (the changes keep the instant time
    of their write in ``ts_ms``)."""
    mor = table_type == "MERGE_ON_READ"
    with scratch_table("cdc-property-") as path:
        options = write_options(
            "orders",
            {
                "hoodie.table.cdc.enabled": "true",
                "hoodie.table.cdc.supplemental.logging.mode": mode,
                # several small files: inserts land in existing file groups (merges) too
                "hoodie.parquet.small.file.limit": "104857600",
                "hoodie.allow.operation.metadata.field": "true",
                "hoodie.write.table.version": str(version),
                "hoodie.datasource.write.table.type": table_type,
            },
        )
        model = Model()
        instants: list[str] = []
        for n, (wanted, keys) in enumerate(steps, start=1):
            if wanted == "compact":
                compacted = compact(path) if model.changes else None
                if compacted is not None:
                    instants.append(compacted)
                    assert snapshot(path) == sorted(model.rows.values()), (mode, steps, n)
                continue
            operation, rows = batch(wanted, keys, model, n)
            df = spark.createDataFrame(rows, SCHEMA)
            t = write_hudi(df, path, {**options, "hoodie.datasource.write.operation": operation})
            model.apply(operation, rows, t.instant_time)
            instants.append(t.instant_time)
            if mor:
                assert snapshot(path) == sorted(model.rows.values()), (mode, steps, n)
        if not instants:
            return  # only compactions: no table was ever written
        completion = Timeline.load(Storage(path)).completion_times()
        if version == 6:
            assert all(completion[t] == t for t in instants)
        else:
            assert all(completion[t] > t for t in instants)  # the range is on completion
        bounds = ["000", *(completion[t] for t in instants)]
        for i, begin in enumerate(bounds):
            for end in bounds[i + 1 :]:
                expected = sorted(c for c in model.changes if begin < completion[c[1]] <= end)
                got = query_changes(read_table(path, cdc_query(begin, end)).to_pylist())
                assert got == expected, (mode, steps, begin, end)
        spark_rows = [r.asDict() for r in read_hudi(spark, path, cdc_query("000")).collect()]
        assert query_changes(spark_rows) == sorted(model.changes)
        assert snapshot(path) == sorted(model.rows.values())
        stored = read_table(path).to_pylist()
        operations = {r["id"]: r["_hoodie_operation"] for r in stored}
        assert operations == {k: model.operations[k] for k in model.rows}, (mode, steps)


MODES = ("OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER")


def quick_settings(examples: int, long_examples: int) -> Any:
    """Hypothesis settings of a property run on the shared session: ``examples`` generated
    sequences besides the given ones (``long_examples`` under ``make test-long``; 0: the
    given ones only), reproducible outside it."""
    generated = long_examples if LONG else examples
    return settings(
        max_examples=max(generated, 1),
        phases=tuple(Phase) if generated else (Phase.explicit,),
        deadline=None,
        derandomize=not LONG,
        suppress_health_check=list(HealthCheck),
        database=None,
    )


def test_cdc_query_between_any_two_instants_equals_the_model(spark) -> None:  # type: ignore[no-untyped-def]
    @settings(
        max_examples=30 if LONG else 4,
        deadline=None,
        derandomize=not LONG,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(st.sampled_from(MODES), sequence)
    @example(
        "DATA_BEFORE",
        [("upsert", ["a", "e"]), ("upsert", ["a", "b"]), ("delete", ["e"]), ("insert", ["f"])],
    )
    def check(mode: str, steps: list[tuple[str, list[str]]]) -> None:
        run_sequence(spark, mode, steps)

    check()


@pytest.mark.parametrize("version", [8, 9])
def test_cdc_query_on_table_versions_8_and_9_ranges_on_completion_time(spark, version) -> None:  # type: ignore[no-untyped-def]
    """The same property on the 1.x table versions (Avro write stats with ``cdcStats``,
    layout-2 instants): the range ``(begin, end]`` is one of completion times. The given
    sequence in ``make test``, sixteen under ``make test-long``."""

    @quick_settings(0, 15)
    @given(st.sampled_from(MODES), sequence)
    @example(
        "OP_KEY_ONLY" if version == 8 else "DATA_BEFORE",  # DATA_BEFORE_AFTER: the dbt test
        [
            ("upsert", ["a", "e"]),
            ("upsert", ["a", "b"]),
            ("delete", ["e"]),
            ("insert_overwrite", ["b"]),
        ],
    )
    def check(mode: str, steps: list[tuple[str, list[str]]]) -> None:
        run_sequence(spark, mode, steps, version)

    check()


# generated merge-on-read sequences per table version (make test, make test-long); version 8,
# which writes 9's layout, only in make test-long
MOR_EXAMPLES = {6: (2, 30), 8: (1, 15), 9: (1, 15)}


@pytest.mark.parametrize("version", [6, pytest.param(8, marks=pytest.mark.long), 9])
def test_mor_cdc_query_between_any_two_instants_equals_the_model(spark, version) -> None:  # type: ignore[no-untyped-def]
    @quick_settings(*MOR_EXAMPLES[version])
    @given(st.sampled_from(MODES), mor_sequence)
    @example(
        "OP_KEY_ONLY",
        [
            ("upsert", ["a", "b", "e"]),
            ("upsert", ["a", "f"]),
            ("upsert", ["a", "b"]),  # log files on log files: before images from both
            ("delete", ["b"]),
            ("compact", []),
            ("upsert", ["a", "c"]),
            ("insert_overwrite", ["e"]),
        ],
    )
    def check(mode: str, steps: list[tuple[str, list[str]]]) -> None:
        run_sequence(spark, mode, steps, version, table_type="MERGE_ON_READ")

    check()
