"""Fixtures of the object-storage tests, imported by ``tests/conftest.py`` so that the property
and fault runners can run over local disks and S3 alike."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.s3.server import S3Server, s3_server


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The session's local S3 server; the environment points AWS clients at it meanwhile."""
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with s3_server(str(log)) as server:
        saved = {k: os.environ.get(k) for k in server.env}
        os.environ.update(server.env)
        try:
            yield server
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@pytest.fixture(params=["local", "s3"])
def table_location(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """Where a test's tables live, local disk or the S3 server: ``location(name)`` is a fresh
    base path."""
    if request.param == "local":
        return lambda name: str(tmp_path / name)
    server: S3Server = request.getfixturevalue("s3")
    return server.table_uri
