"""The steps both directions take: a write by the engine or by Apache Hudi (the oracle told),
Hudi's write options on a table, Hudi's table services and its own checks of a table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from engine import write_hudi
from engine.fs.properties import parse_properties_text
from engine.timeline.instant import Action
from tests.hudi_jvm.cases import Case
from tests.hudi_jvm.judge import MOR, SPARK_SCHEMA, Judge


def ours(spark: Any, judge: Judge, batch: pa.Table, options: dict[str, Any], op: str) -> str:
    """The engine writes ``batch`` with ``op``; the oracle takes it. Returns the instant."""
    frame = spark.createDataFrame(batch.to_pylist(), SPARK_SCHEMA)
    result = write_hudi(
        frame, str(judge.path), {**options, "hoodie.datasource.write.operation": op}
    )
    (judge.deleted if op == "delete" else judge.upserted)(batch)
    return result.instant_time


def hudi_write(judge: Judge, batch: pa.Table, options: dict[str, Any], op: str) -> None:
    """Apache Hudi's datasource writes ``batch`` with ``op``; the oracle takes it."""
    judge.hudi.write(judge.path, batch, {**options, "hoodie.datasource.write.operation": op})
    (judge.deleted if op == "delete" else judge.upserted)(batch)


def version_options(case: Case) -> dict[str, str]:
    """On Hudi 1.1: write the case's table version and keep it (no upgrade to 9)."""
    if case.release == "0.15.0":
        return {}
    return {
        "hoodie.write.table.version": str(case.table_version),
        "hoodie.write.auto.upgrade": "false",
    }


def hudi_options(case: Case, path: Path, table_name: str) -> dict[str, Any]:
    """Hudi's write options on our table: the table's own settings and key generator."""
    props = parse_properties_text((path / ".hoodie" / "hoodie.properties").read_text("latin-1"))
    keygen = {
        "hoodie.datasource.write.keygenerator.class": props.get("hoodie.table.keygenerator.class"),
        "hoodie.datasource.write.keygenerator.type": props.get("hoodie.table.keygenerator.type"),
    }
    own = {k: v for k, v in keygen.items() if v}
    return {**case.table_options(table_name), **version_options(case), **own}


def table_name(case: Case, prefix: str) -> str:
    """The name the case's table is registered under in Hudi's catalog."""
    return f"{prefix}_{case.name.replace('-', '_').replace('.', '_')}"


def run_services(
    judge: Judge, case: Case, hudi: dict[str, Any], name: str, *, since: int, clean: bool = True
) -> None:
    """Hudi's procedures: compaction (merge-on-read, due at once), clustering (not on the bucket
    index), cleaning and archival, each judged. Hudi's batch writes to a merge-on-read table
    compact inline every 5 deltacommits, so "compacted" counts from ``since`` (the completed
    commits before Hudi's writes)."""
    jvm, path = judge.hudi, judge.path
    conf = ",".join(f"{k}={v}" for k, v in hudi.items() if k.startswith("hoodie.write"))
    with_conf = f", options => '{conf}'" if conf else ""
    if case.table_type == MOR:
        due = ",".join(filter(None, [conf, "hoodie.compact.inline.max.delta.commits=1"]))
        ran = jvm.sql(
            f"CALL run_compaction(op => 'scheduleandexecute', path => '{path}', options => '{due}')"
        )
        assert judge.completed(Action.COMMIT) > since, f"Hudi compacted: {ran}"
        judge.check("Hudi's run_compaction")
    if case.index != "BUCKET":  # Hudi clusters a bucket table only with consistent hashing
        before = judge.completed(Action.REPLACE_COMMIT, Action.CLUSTERING)
        jvm.sql(f"CALL run_clustering(path => '{path}', op => 'scheduleandexecute'{with_conf})")
        assert judge.completed(Action.REPLACE_COMMIT, Action.CLUSTERING) > before, "Hudi clustered"
        judge.check("Hudi's run_clustering")
    if not clean:
        return
    jvm.sql(f"CALL run_clean(table => '{name}', retain_commits => 1{with_conf})")
    judge.check("Hudi's run_clean", cleaned=True)
    jvm.sql(
        f"CALL archive_commits(path => '{path}', min_commits => 2, max_commits => 3, "
        "retain_commits => 1)"
    )
    judge.check("Hudi's archival")


def hudis_own_checks(judge: Judge, case: Case, name: str) -> None:
    """Hudi's timeline, file-listing and commit procedures read the table; on a table with a
    metadata table its validation finds the files the file system holds, and the checks of its
    HoodieMetadataTableValidator pass (file slices, base files, file groups, column stats, bloom
    filters, record index: :meth:`HudiJvm.validate_metadata`)."""
    jvm = judge.hudi
    commits = jvm.sql(f"CALL show_commits(table => '{name}', limit => 100)")
    assert {r["commit_time"] for r in commits} >= {p.instant_time for p in judge.points[-1:]}
    fsview = jvm.sql(f"CALL show_fsview_all(table => '{name}', path_regex => '*')")
    assert fsview or not case.partitioned, "Hudi's file system view lists our file groups"
    if case.metadata:
        partitions = jvm.sql(f"CALL show_metadata_table_partitions(table => '{name}')")
        assert partitions is not None
        # non-verbose, it returns the files whose listing or size differs from the storage's
        mismatches = jvm.sql(f"CALL validate_metadata_table_files(table => '{name}')")
        assert mismatches == [], f"Hudi's metadata validation: {mismatches}"
        judged = jvm.validate_metadata(judge.path)
        assert judged["passed"], "Hudi's metadata table validator: " + "; ".join(judged["failures"])
