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
2. below those, the AWS SDK's own resolution, botocore's: credentials from its provider chain
   (the environment's ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``,
   the profile's keys in ``~/.aws/credentials`` and ``~/.aws/config``, assume-role, SSO,
   ``credential_process``, ...), the region from ``AWS_REGION``/``AWS_DEFAULT_REGION`` or the
   profile, the endpoint from ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL`` or the profile's
   ``endpoint_url``; the profile is ``AWS_PROFILE`` (else ``default``), its files
   ``AWS_SHARED_CREDENTIALS_FILE`` and ``AWS_CONFIG_FILE``.

The chain's host-bound providers (an EC2 instance profile, an ECS/EKS container role) are left
to each task: what the driver's host may assume is not what a task's host may, so settings left
unresolved stay unset and each task's SDK resolves them on its own host.

``s3://`` and ``s3a://`` name the same objects; :func:`canonical_uri` gives the one spelling the
engine writes into the table's metadata and hands to Spark (``s3a://``, the scheme Hadoop's S3A
connector serves), whichever spelling the user gave.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from engine import config
from engine.errors import ConfigError

if TYPE_CHECKING:
    import botocore.session

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
# botocore's providers of the driver host's own identity, left to each task's host
_HOST_BOUND_PROVIDERS = ("container-role", "iam-role")


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


def _aws_session() -> botocore.session.Session:
    """botocore's session of the environment's profile, without the host-bound credential
    providers (the module notes). Imported here: botocore takes half a second to import, and
    only a table on S3 needs it."""
    import botocore.session

    session = botocore.session.Session()
    resolver = session.get_component("credential_provider")
    for host_bound in _HOST_BOUND_PROVIDERS:
        if resolver.get_provider(host_bound) is not None:
            resolver.remove(host_bound)
    return session


@dataclass(frozen=True)
class _SdkSettings:
    """What the AWS SDK resolves below the options: credentials, region, endpoint."""

    access_key: str | None = None
    secret_key: str | None = None
    token: str | None = None
    region: str | None = None
    endpoint_url: str | None = None


def _sdk_settings() -> _SdkSettings:
    """Credentials, region and endpoint as botocore resolves them.

    Raises:
        ConfigError: the named profile does not exist, or an AWS file or credential source is
            malformed.
    """
    import botocore.exceptions

    try:
        session = _aws_session()
        scoped = session.get_scoped_config()
        credentials = session.get_credentials()
        region = session.get_config_variable("region")
    except botocore.exceptions.BotoCoreError as e:
        raise ConfigError(f"Cannot resolve the AWS profile's settings: {e}") from None
    frozen = credentials.get_frozen_credentials() if credentials is not None else None
    return _SdkSettings(
        access_key=frozen.access_key if frozen else None,
        secret_key=frozen.secret_key if frozen else None,
        token=frozen.token if frozen else None,
        region=_env("AWS_REGION") or _str(region),
        endpoint_url=_str(scoped.get("endpoint_url")),
    )


def _parse_bool(key: str, text: str | None) -> bool | None:
    if text is None:
        return None
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ConfigError(f"Failed to parse {text!r} for config {key!r}: expected true or false")
    return lowered == "true"


def _endpoint(options: Mapping[str, Any], sdk: _SdkSettings) -> tuple[str | None, str]:
    """(host[:port], scheme) of the endpoint; ``fs.s3a.connection.ssl.enabled`` picks the
    scheme of an endpoint given without one."""
    raw = (
        _option(options, "endpoint")
        or _env("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
        or sdk.endpoint_url
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
    configuration), then the AWS SDK's resolution (see the module doc).

    Raises:
        ConfigError: a malformed endpoint or boolean, or an access key without its secret.
    """
    options = options or {}
    sdk = _sdk_settings()
    endpoint, scheme = _endpoint(options, sdk)
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
    else:
        access, secret, token = sdk.access_key, sdk.secret_key, sdk.token
    region = _option(options, "endpoint.region") or sdk.region
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
