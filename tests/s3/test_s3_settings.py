"""Where a table on S3 takes its endpoint, region and credentials from, and the two spellings of
one table (pure Python: no server, no Spark)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.fs.s3 import canonical_uri, resolve_s3_settings
from engine.fs.storage import Storage

pytestmark = pytest.mark.unit

_AWS_ENV = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in _AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    return tmp_path


def test_s3a_keys_win_over_environment_and_profile(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://env.example:9000")
    s = resolve_s3_settings(
        {
            "spark.hadoop.fs.s3a.endpoint": "minio.local:9000",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": "opt-key",
            "fs.s3a.secret.key": "opt-secret",
            "fs.s3a.path.style.access": "true",
            "fs.s3a.endpoint.region": "eu-west-1",
        }
    )
    assert (s.endpoint, s.scheme, s.endpoint_url) == (
        "minio.local:9000",
        "http",
        "http://minio.local:9000",
    )
    assert (s.access_key, s.secret_key, s.region, s.path_style) == (
        "opt-key",
        "opt-secret",
        "eu-west-1",
        True,
    )
    assert "opt-secret" not in repr(s)


def test_environment_then_profile(monkeypatch: pytest.MonkeyPatch, clean_env: Path) -> None:
    (clean_env / "credentials").write_text(
        "[default]\naws_access_key_id = d-key\naws_secret_access_key = d-secret\n"
        "[dev]\naws_access_key_id = dev-key\naws_secret_access_key = dev-secret\n"
    )
    (clean_env / "config").write_text(
        "[profile dev]\nregion = ap-south-1\nendpoint_url = http://127.0.0.1:4566\n"
    )
    s = resolve_s3_settings()
    assert (s.access_key, s.secret_key, s.endpoint, s.region) == ("d-key", "d-secret", None, None)
    monkeypatch.setenv("AWS_PROFILE", "dev")
    s = resolve_s3_settings()
    assert (s.access_key, s.region, s.endpoint_url) == (
        "dev-key",
        "ap-south-1",
        "http://127.0.0.1:4566",
    )
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    s = resolve_s3_settings({"hoodie.aws.session.token": "ignored-without-key"})
    assert (s.access_key, s.region, s.session_token) == ("env-key", "us-west-2", None)
    s = resolve_s3_settings({"hoodie.aws.access.key": "h-key", "hoodie.aws.secret.key": "h-secret"})
    assert (s.access_key, s.secret_key) == ("h-key", "h-secret")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"fs.s3a.access.key": "k"}, "fs.s3a.secret.key"),
        ({"fs.s3a.path.style.access": "yes"}, "fs.s3a.path.style.access"),
        ({"fs.s3a.endpoint": "ftp://host"}, "ftp"),
    ],
)
def test_malformed_settings_are_errors_naming_the_key(options: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        resolve_s3_settings(options)


def test_both_spellings_are_one_table_spelled_s3a_in_metadata() -> None:
    settings = resolve_s3_settings({"fs.s3a.endpoint": "http://127.0.0.1:1"})
    a = Storage("s3://bucket/lake/t/", settings)
    b = Storage("s3a://bucket/lake/t", settings)
    assert a.root == b.root == "bucket/lake/t"
    assert a.uri("p/f.parquet") == b.uri("p/f.parquet") == "s3a://bucket/lake/t/p/f.parquet"
    assert a.qualified("x") == "s3a://bucket/lake/t/x"
    assert {"s3://bucket/lake/t/", "s3a://bucket/lake/t/"} <= set(a.known_prefixes())
    assert canonical_uri("S3://bucket") == "s3a://bucket"
    assert a.child(".hoodie/metadata").root == "bucket/lake/t/.hoodie/metadata"


def test_storage_pickles_with_its_settings_not_its_filesystem() -> None:
    settings = resolve_s3_settings(
        {
            "fs.s3a.endpoint": "http://127.0.0.1:1",
            "fs.s3a.access.key": "k",
            "fs.s3a.secret.key": "s",
        }
    )
    copy = pickle.loads(pickle.dumps(Storage("s3://bucket/t", settings)))
    assert copy.s3 == settings and copy.root == "bucket/t"
    assert "'s'" not in repr(copy.s3)


def test_the_sdk_chain_runs_a_profiles_credential_process(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path
) -> None:
    """Below the fs.s3a.* keys, credentials come from the AWS SDK's chain: here a profile's
    ``credential_process``, which a hand-written reader of the two files never ran."""
    import json
    import sys

    script = clean_env / "issue_credentials.py"
    issued = {"Version": 1, "AccessKeyId": "proc-key", "SecretAccessKey": "proc-secret"}
    script.write_text(f"print({json.dumps(json.dumps({**issued, 'SessionToken': 'proc-tok'}))})")
    (clean_env / "config").write_text(
        f"[profile ci]\nregion = eu-north-1\ncredential_process = {sys.executable} {script}\n"
    )
    monkeypatch.setenv("AWS_PROFILE", "ci")
    s = resolve_s3_settings()
    assert (s.access_key, s.secret_key, s.session_token, s.region) == (
        "proc-key",
        "proc-secret",
        "proc-tok",
        "eu-north-1",
    )


def test_a_missing_profile_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path
) -> None:
    monkeypatch.setenv("AWS_PROFILE", "nowhere")
    with pytest.raises(ConfigError, match="nowhere"):
        resolve_s3_settings()
