"""S3 settings of a table on an object store: endpoint, region, credentials, addressing.

A table on S3 is reached from the driver and from every Spark task, and a task may run in another
process on another host: it cannot see what the driver read from its environment or its AWS
profile. The driver therefore resolves one :class:`S3Settings` (frozen, picklable) from the usual
places, in Hadoop S3A's order of precedence, and every task builds its own pyarrow
``S3FileSystem`` from it:

1. the options of the write or read and the Spark session's configuration: ``fs.s3a.*`` keys,
   also spelled ``spark.hadoop.fs.s3a.*`` (``fs.s3a.endpoint``, ``fs.s3a.endpoint.region``,
   ``fs.s3a.access.key``, ``fs.s3a.secret.key``, ``fs.s3a.session.token``,
   ``fs.s3a.path.style.access``, ``fs.s3a.connection.ssl.enabled``), and Hudi's AWS keys
   (``hoodie.aws.access.key``, ``hoodie.aws.secret.key``, ``hoodie.aws.session.token``);
2. the environment: ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``, ``AWS_REGION``/
   ``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``;
3. the AWS profile (``AWS_PROFILE``, else ``default``) in ``~/.aws/credentials`` and
   ``~/.aws/config`` (``AWS_SHARED_CREDENTIALS_FILE``, ``AWS_CONFIG_FILE``).

Settings left unresolved stay unset, so each task falls back to the AWS SDK's own chain
(instance profiles, container roles) on its host.

``s3://`` and ``s3a://`` name the same objects; :func:`canonical_uri` gives the one spelling the
engine writes into the table's metadata and hands to Spark (``s3a://``, the scheme Hadoop's S3A
connector serves), whichever spelling the user gave.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from engine import config
from engine.errors import ConfigError

__all__ = [
    "S3_SCHEMES",
    "S3Settings",
    "canonical_uri",
    "is_s3_uri",
    "resolve_s3_settings",
    "split_s3_uri",
]

S3_SCHEMES = ("s3", "s3a")
CANONICAL_SCHEME = "s3a"
_HADOOP_PREFIX = "spark.hadoop."

# Hudi's AWS credential keys (HoodieAWSConfig)
HOODIE_AWS_ACCESS_KEY = config.AWS_ACCESS_KEY.key
HOODIE_AWS_SECRET_KEY = config.AWS_SECRET_KEY.key
HOODIE_AWS_SESSION_TOKEN = config.AWS_SESSION_TOKEN.key


def is_s3_uri(path: str) -> bool:
    """Whether ``path`` is an ``s3://`` or ``s3a://`` URI."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.lower() in S3_SCHEMES


def split_s3_uri(path: str) -> tuple[str, str]:
    """``(bucket, key)`` of an S3 URI, the key without leading or trailing ``/``.

    Raises:
        ConfigError: not an S3 URI, or no bucket.
    """
    if not is_s3_uri(path):
        raise ConfigError(f"Not an s3:// or s3a:// path: {path!r}")
    rest = path.partition("://")[2]
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise ConfigError(f"S3 path {path!r} names no bucket")
    return bucket, key.strip("/")


def canonical_uri(path: str) -> str:
    """``path`` spelled ``s3a://bucket/key`` (``s3://`` and ``s3a://`` are the same objects)."""
    bucket, key = split_s3_uri(path)
    return f"{CANONICAL_SCHEME}://{bucket}/{key}" if key else f"{CANONICAL_SCHEME}://{bucket}"


@dataclass(frozen=True)
class S3Settings:
    """How to reach S3 (or an S3-compatible server); what a task needs to build its filesystem.

    Secrets are kept out of ``repr`` so they never reach a log or an error message.
    """

    endpoint: str | None = None  # host[:port], no scheme
    scheme: str = "https"
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    path_style: bool | None = None  # None: path style with an endpoint, virtual hosts without

    @property
    def endpoint_url(self) -> str | None:
        """``scheme://host:port`` of the endpoint, or ``None`` for AWS's own."""
        return f"{self.scheme}://{self.endpoint}" if self.endpoint else None

    def filesystem(self) -> pafs.S3FileSystem:
        """A pyarrow filesystem on these settings (built where it is used, never shipped)."""
        kwargs: dict[str, Any] = {"scheme": self.scheme}
        if self.endpoint:
            kwargs["endpoint_override"] = self.endpoint
        region = self.region or ("us-east-1" if self.endpoint else None)
        if region:
            kwargs["region"] = region
        if self.access_key and self.secret_key:
            kwargs.update(access_key=self.access_key, secret_key=self.secret_key)
            if self.session_token:
                kwargs["session_token"] = self.session_token
        if self.path_style is False:
            kwargs["force_virtual_addressing"] = True
        return pafs.S3FileSystem(**kwargs)

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of a boto3 S3 client on these settings."""
        kwargs: dict[str, Any] = {"region_name": self.region or "us-east-1"}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        if self.access_key and self.secret_key:
            kwargs.update(
                aws_access_key_id=self.access_key,
                aws_secret_access_key=self.secret_key,
                aws_session_token=self.session_token,
            )
        return kwargs


def _option(options: Mapping[str, Any], name: str) -> str | None:
    """``fs.s3a.<name>`` from ``options``, also spelled ``spark.hadoop.fs.s3a.<name>``."""
    for key in (f"fs.s3a.{name}", f"{_HADOOP_PREFIX}fs.s3a.{name}"):
        value = options.get(key)
        if value is not None and str(value).strip():
            return str(value).strip()
    return None


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _profile() -> dict[str, str]:
    """The AWS profile's keys from the shared credentials and config files."""
    name = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") or "default"
    home = os.path.expanduser("~")
    found: dict[str, str] = {}
    config_file = os.environ.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config")
    creds_file = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(
        home, ".aws", "credentials"
    )
    section = name if name == "default" else f"profile {name}"
    for path, wanted in ((config_file, section), (creds_file, name)):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path)
        except configparser.Error as e:
            raise ConfigError(f"Cannot parse the AWS file {path}: {e}") from None
        if parser.has_section(wanted):
            found.update({k: v.strip() for k, v in parser.items(wanted)})
    return found


def _parse_bool(key: str, text: str | None) -> bool | None:
    if text is None:
        return None
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ConfigError(f"Failed to parse {text!r} for config {key!r}: expected true or false")
    return lowered == "true"


def _endpoint(options: Mapping[str, Any], profile: Mapping[str, str]) -> tuple[str | None, str]:
    """(host[:port], scheme) of the endpoint; ``fs.s3a.connection.ssl.enabled`` picks the
    scheme of an endpoint given without one."""
    raw = (
        _option(options, "endpoint")
        or _env("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
        or profile.get("endpoint_url")
    )
    ssl = _parse_bool("fs.s3a.connection.ssl.enabled", _option(options, "connection.ssl.enabled"))
    scheme = "https" if ssl is None or ssl else "http"
    if not raw:
        return None, scheme
    if "://" in raw:
        given, _, raw = raw.partition("://")
        if given.lower() not in ("http", "https"):
            raise ConfigError(f"S3 endpoint {raw!r}: scheme {given!r} is not http or https")
        scheme = given.lower()
    return raw.rstrip("/"), scheme


def resolve_s3_settings(options: Mapping[str, Any] | None = None) -> S3Settings:
    """The S3 settings from ``options`` (write/read options and the Spark session's
    configuration), the environment and the AWS profile, in that order (see the module doc).

    Raises:
        ConfigError: a malformed endpoint or boolean, or an access key without its secret.
    """
    options = options or {}
    profile = _profile()
    endpoint, scheme = _endpoint(options, profile)
    given_key = _option(options, "access.key") or _str(options.get(HOODIE_AWS_ACCESS_KEY))
    given_secret = _option(options, "secret.key") or _str(options.get(HOODIE_AWS_SECRET_KEY))
    if bool(given_key) != bool(given_secret):
        raise ConfigError(
            "An S3 access key needs its secret key and the other way round: set both "
            f"fs.s3a.access.key and fs.s3a.secret.key (or {HOODIE_AWS_ACCESS_KEY} and "
            f"{HOODIE_AWS_SECRET_KEY})"
        )
    access: str | None
    secret: str | None
    token: str | None
    if given_key:
        token = _option(options, "session.token") or _str(options.get(HOODIE_AWS_SESSION_TOKEN))
        access, secret = given_key, given_secret
    elif _env("AWS_ACCESS_KEY_ID") and _env("AWS_SECRET_ACCESS_KEY"):
        access, secret = _env("AWS_ACCESS_KEY_ID"), _env("AWS_SECRET_ACCESS_KEY")
        token = _env("AWS_SESSION_TOKEN")
    else:
        access = profile.get("aws_access_key_id")
        secret = profile.get("aws_secret_access_key")
        token = profile.get("aws_session_token")
    region = (
        _option(options, "endpoint.region")
        or _env("AWS_REGION", "AWS_DEFAULT_REGION")
        or profile.get("region")
    )
    path_style = _parse_bool("fs.s3a.path.style.access", _option(options, "path.style.access"))
    return S3Settings(
        endpoint=endpoint,
        scheme=scheme,
        region=region,
        access_key=access,
        secret_key=secret,
        session_token=token,
        path_style=path_style,
    )


def _str(value: Any) -> str | None:
    return str(value).strip() or None if value is not None else None
