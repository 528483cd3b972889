"""On the local S3 server, a snapshot read of a table Apache Hudi wrote with a metadata table
sends fewer LIST requests when it lists through the ``files`` partition: the server's own
request log is counted, with and without the table announcing ``files``, and with the read's
``hoodie.metadata.enable`` on (the default) and off."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cli import canonical_json_lines
from engine.read.arrow import read_table
from engine.read.filter import parse_filter
from tests.s3.server import S3Server

pytestmark = pytest.mark.interop

TABLE = "trips_mor_avro__v8_trips_8i3u1d"  # three partitions, a metadata table with files


def _upload(s3: S3Server, local: Path, uri: str, drop_files_index: bool) -> None:
    client = s3.client()
    prefix = uri.removeprefix(f"s3://{s3.bucket}/")
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        body = path.read_bytes()
        if drop_files_index and path.relative_to(local).as_posix() == ".hoodie/hoodie.properties":
            body = re.sub(rb"(hoodie\.table\.metadata\.partitions=.*?)files,?", rb"\1", body)
        client.put_object(Bucket=s3.bucket, Key=f"{prefix}/{path.relative_to(local)}", Body=body)


def _list_requests(log: Path, start: int) -> list[str]:
    """The LIST requests the server logged after byte ``start`` of its log."""
    text = log.read_bytes()[start:].decode(errors="replace")
    return [line for line in text.splitlines() if "GET /" in line and "list-type=2" in line]


def _server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server fixture's request log (the newest, should several servers have run)."""
    return max(
        tmp_path_factory.getbasetemp().glob("moto[0-9]*/server.log"),
        key=lambda p: p.stat().st_mtime,
    )


def test_a_snapshot_read_sends_fewer_list_requests(
    s3: S3Server,
    corpus_table: Callable[[str], Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    log = _server_log(tmp_path_factory)
    counts = {}
    rows = {}
    for drop in (False, True):
        uri = s3.table_uri("mdt-listing")
        _upload(s3, corpus_table(TABLE), uri, drop_files_index=drop)
        start = log.stat().st_size
        rows[drop] = sorted(canonical_json_lines(read_table(uri).to_pylist()))
        counts[drop] = len(_list_requests(log, start))
    assert rows[False] == rows[True] and len(rows[False]) >= 3
    # the data timeline, the metadata timeline and the files partition, against the data
    # timeline, the base path and each of the three partitions
    assert counts[False] < counts[True], counts
    print(
        f"LIST requests of a snapshot read: {counts[False]} through files, {counts[True]} listing"
    )


@pytest.mark.parametrize("table", ["cow__v9_txns_simple_meta", "mor_avro__v9_txns_simple_meta"])
def test_reading_through_the_metadata_table_sends_fewer_list_requests(
    table: str,
    s3: S3Server,
    corpus_table: Callable[[str], Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """One upload of a table Hudi 1.1 wrote (three partitions), read as it is and with the
    read's ``hoodie.metadata.enable=false``; a filtered read through it (data skipping) lists
    no more than the plain one plus the ``column_stats`` partition."""
    log = _server_log(tmp_path_factory)
    uri = s3.table_uri("mdt-v9")
    _upload(s3, corpus_table(table), uri, drop_files_index=False)
    reads = {
        "metadata": ({}, ()),
        "storage": ({"hoodie.metadata.enable": "false"}, ()),
        "skipping": ({}, (parse_filter("txn_id = TXN-011"),)),
    }
    counts, rows = {}, {}
    for name, (options, filters) in reads.items():
        start = log.stat().st_size
        rows[name] = sorted(canonical_json_lines(read_table(uri, options, filters).to_pylist()))
        counts[name] = len(_list_requests(log, start))
    assert rows["metadata"] == rows["storage"] and len(rows["metadata"]) >= 8
    assert len(rows["skipping"]) == 1
    assert counts["metadata"] < counts["storage"], counts
    assert counts["skipping"] <= counts["metadata"] + 1, counts
    print(f"{table}: LIST requests of a snapshot read {counts}")
