"""The two scenarios each case runs, judged after every step (tests/hudi_jvm/judge.py).

- :func:`hudi_continues_ours`: the engine bulk-inserts, upserts, deletes, compacts, cleans and
  savepoints; Hudi's Spark datasource upserts and deletes with the table's own settings (and
  once with its default index), its next write rolls back a write the engine left inflight, its
  procedures compact, cluster, clean and archive; then the engine writes on.
- :func:`we_continue_hudis`: Hudi bulk-inserts, upserts and deletes with its defaults (on 1.1
  the metadata table on), compacts and clusters; the engine upserts, deletes, compacts and
  cleans; Hudi writes again (its metadata table must take what we wrote) and the engine once
  more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import HudiTable, spark_table, write_hudi
from engine.timeline.instant import Action
from tests.faults.harness import uncommit
from tests.hudi_jvm.cases import Case
from tests.hudi_jvm.client import HudiJvm
from tests.hudi_jvm.judge import MOR, SPARK_SCHEMA, Judge, keys
from tests.hudi_jvm.steps import (
    hudi_options,
    hudi_write,
    hudis_own_checks,
    ours,
    run_services,
    table_name,
    version_options,
)


def our_options(case: Case) -> dict[str, Any]:
    """The engine's options: the case's table, services only when the scenario runs them, the
    metadata table on versions 8 and 9."""
    options = {
        **case.table_options("judged"),
        "hoodie.write.table.version": str(case.table_version),
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
    }
    if case.metadata:
        options["hoodie.metadata.enable"] = "true"
    return options


def our_writes(spark: Any, judge: Judge, table: HudiTable, options: dict[str, Any]) -> None:
    """bulk_insert, upsert, delete, compaction (merge-on-read), clean and savepoint."""
    ours(spark, judge, judge.batch(keys(*range(8)), "bulk"), options, "bulk_insert")
    judge.check("our bulk_insert")
    ours(spark, judge, judge.batch(keys(1, 2, 8, 9), "up1"), options, "upsert")
    ours(spark, judge, judge.batch(keys(3), "del"), options, "delete")
    judge.check("our upsert and delete")
    if judge.table_type == MOR:
        assert table.compact(options), "our compaction ran"
        judge.check("our compaction")
    ours(spark, judge, judge.batch(keys(2, 10), "up2"), options, "upsert")
    table.clean({**options, "hoodie.cleaner.commits.retained": "1"})
    judge.check("our clean", cleaned=True)
    table.savepoint(options=options)


def hudi_writes(spark: Any, judge: Judge, case: Case, options: dict[str, Any]) -> dict[str, Any]:
    """Hudi's upsert and delete with the table's settings, an upsert with Hudi's default index,
    and Hudi's write after one of ours left inflight; Hudi's options returned."""
    hudi = hudi_options(case, judge.path, "judged")
    hudi_write(judge, judge.batch(keys(1, 4, 11, 12), "hudi1"), hudi, "upsert")
    judge.check("Hudi's upsert")
    hudi_write(judge, judge.batch(keys(5, 11), "hudi-del"), hudi, "delete")
    judge.check("Hudi's delete")
    if case.index != "BUCKET":  # another index on a bucket table breaks its layout
        default_index = {k: v for k, v in hudi.items() if k != "hoodie.index.type"}
        hudi_write(judge, judge.batch(keys(6, 13), "hudi-default"), default_index, "upsert")
        judge.check("Hudi's upsert with its default index")
    dead = judge.batch(keys(1, 14), "dead")
    frame = spark.createDataFrame(dead.to_pylist(), SPARK_SCHEMA)
    upsert = {**options, "hoodie.datasource.write.operation": "upsert"}
    t = write_hudi(frame, str(judge.path), upsert).instant_time
    uncommit(judge.path, t)  # what a writer killed before its commit leaves
    hudi_write(judge, judge.batch(keys(7, 15), "hudi2"), hudi, "upsert")
    # Hudi 0.15 rolls our write back under a later instant than its own write's, and its
    # merge-on-read reader stops at that rollback block: a file group both wrote reads without
    # Hudi's write until the next commit (docs/format-notes.md; so it does after its own failed
    # write). hudi-rs and the engine are judged here, Apache Hudi after the next step.
    hudi_lags = case.release == "0.15.0" and case.table_type == MOR
    judge.check("Hudi's write after our failed one", hudi_reads=not hudi_lags)
    assert t not in {i.instant_time for i in judge.timeline().instants}, "Hudi rolled it back"
    return hudi


def our_writes_after(spark: Any, judge: Judge, table: HudiTable, options: dict[str, Any]) -> None:
    """The engine upserts, deletes, compacts (merge-on-read) and cleans after Hudi."""
    ours(spark, judge, judge.batch(keys(0, 4, 16), "up3"), options, "upsert")
    judge.check("our upsert after Hudi")
    ours(spark, judge, judge.batch(keys(12), "del2"), options, "delete")
    judge.check("our delete after Hudi")
    if judge.table_type == MOR:
        table.compact(options)
        judge.check("our compaction after Hudi")
    table.clean({**options, "hoodie.cleaner.commits.retained": "1"})
    judge.check("our clean after Hudi", cleaned=True)


def hudi_continues_ours(spark: Any, jvm: HudiJvm, path: Path, case: Case) -> None:
    judge = Judge(path, jvm, case.table_type)
    options = our_options(case)
    table = spark_table(str(path))
    our_writes(spark, judge, table, options)
    name = jvm.register(table_name(case, "judged"), path)
    hudis_own_checks(judge, case, name)
    commits = judge.completed(Action.COMMIT)
    hudi = hudi_writes(spark, judge, case, options)
    run_services(judge, case, hudi, name, since=commits)
    our_writes_after(spark, judge, table, options)


def we_continue_hudis(spark: Any, jvm: HudiJvm, path: Path, case: Case) -> None:
    judge = Judge(path, jvm, case.table_type)
    hudi = {**case.table_options("judged"), **version_options(case)}
    hudi_write(judge, judge.batch(keys(*range(8)), "bulk"), hudi, "bulk_insert")
    judge.check("Hudi's bulk_insert")
    hudi_write(judge, judge.batch(keys(1, 2, 8, 9), "up1"), hudi, "upsert")
    hudi_write(judge, judge.batch(keys(3), "del"), hudi, "delete")
    judge.check("Hudi's upsert and delete")
    name = jvm.register(table_name(case, "hudis"), path)
    run_services(judge, case, hudi, name, since=judge.completed(Action.COMMIT), clean=False)

    options = {**case.table_options("judged"), "hoodie.write.table.version": case.table_version}
    # no key changes partition here; Hudi 1.1's tables merge by event time, with which the
    # engine moves no record (docs/format-notes.md), so its global indexes update in place
    options["hoodie.simple.index.update.partition.path"] = "false"
    options["hoodie.bloom.index.update.partition.path"] = "false"
    table = spark_table(str(path))
    our_writes_after(spark, judge, table, options)

    hudi_write(judge, judge.batch(keys(1, 4, 11, 13), "hudi2"), hudi, "upsert")
    judge.check("Hudi's upsert after ours")
    hudi_write(judge, judge.batch(keys(6, 13), "hudi-del2"), hudi, "delete")
    judge.check("Hudi's delete after ours")
    hudis_own_checks(judge, case, name)
    ours(spark, judge, judge.batch(keys(0, 7, 17), "ours2"), options, "upsert")
    judge.check("our upsert after Hudi's")
