"""A local S3-compatible server for the object-storage tests: moto in server mode.

A real server process (``python -m moto.server``) on 127.0.0.1 and a free port, started once per
test session and stopped by its pid; the tests reach it over HTTP exactly as they would reach S3,
from the driver, from Spark's Python workers and from hudi-rs. One bucket per session.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

ACCESS_KEY = "dbt-hudi-test-key"
SECRET_KEY = "dbt-hudi-test-secret"
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Server:
    """A running server and the session's bucket."""

    endpoint_url: str
    bucket: str
    pid: int

    @property
    def env(self) -> dict[str, str]:
        """The environment that points AWS clients (pyarrow, boto3, hudi-rs) at the server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    @property
    def s3a_options(self) -> dict[str, str]:
        """The same settings as Hadoop S3A keys (what a profile or a Spark conf would give)."""
        return {
            "fs.s3a.endpoint": self.endpoint_url,
            "fs.s3a.access.key": ACCESS_KEY,
            "fs.s3a.secret.key": SECRET_KEY,
            "fs.s3a.path.style.access": "true",
        }

    @property
    def hudi_rs_options(self) -> dict[str, str]:
        """hudi-rs storage options (object_store's keys) for the server."""
        return {
            "aws_endpoint_url": self.endpoint_url,
            "aws_access_key_id": ACCESS_KEY,
            "aws_secret_access_key": SECRET_KEY,
            "aws_region": REGION,
            "aws_allow_http": "true",
        }

    def table_uri(self, name: str, scheme: str = "s3") -> str:
        """A fresh table base path in the session's bucket."""
        return f"{scheme}://{self.bucket}/{name}-{uuid.uuid4().hex[:8]}"

    def client(self):  # type: ignore[no-untyped-def]
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/moto-api/", timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"moto server at {url} not ready after {seconds}s")


@contextmanager
def s3_server(log_path: str) -> Iterator[S3Server]:
    """Start ``python -m moto.server`` on a free port and a bucket; stop it by pid at the end."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "true"},
        )
    try:
        _wait_ready(url, proc)
        server = S3Server(url, f"dbt-hudi-{uuid.uuid4().hex[:8]}", proc.pid)
        server.client().create_bucket(Bucket=server.bucket)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
