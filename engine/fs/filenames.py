"""Names of base files and log files, and the identifiers inside them.

Grammar (table version 6)::

    base file:  {file_id}_{write_token}_{instant_time}.parquet
    log file:   .{file_id}_{base_instant_time}.log.{version}_{write_token}
    file_id:    {uuid}-{index}            (no "_")
    write_token {task_partition_id}-{stage_id}-{task_attempt_id}

The log file's instant is the base instant of the file slice it belongs to, not the instant that
wrote it (that one is in each log block's header). Log versions start at 1.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from engine.errors import FileNameError

BASE_FILE_EXTENSION = ".parquet"
# every base file format Hudi writes: parquet for data tables, HFile for the metadata table's
# partitions, ORC on request (what a file system view groups as base files)
BASE_FILE_EXTENSIONS = (".parquet", ".hfile", ".orc")
PARTITION_METAFILE_PREFIX = ".hoodie_partition_metadata"
# Token used by writers outside a Spark task (rollback command blocks), as Hudi does.
UNKNOWN_WRITE_TOKEN = "1-0-1"

_LOG_FILE_RE = re.compile(
    r"^\.(?P<file_id>.+)_(?P<instant>\d+)\.(?P<suffix>log|archive)\.(?P<version>\d+)"
    r"(?:_(?P<token>\d+-\d+-\d+))?(?P<cdc>\.cdc)?$"
)


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """The task attempt a writer runs in (a Spark task's stage and attempt): the last two parts
    of the write token of the files it names."""

    stage_id: int = 0
    task_attempt_id: int = 0


@dataclass(frozen=True, slots=True)
class BaseFileName:
    """Parsed base file name."""

    file_id: str
    write_token: str
    instant_time: str
    extension: str = BASE_FILE_EXTENSION

    @property
    def name(self) -> str:
        return format_base_file_name(
            self.file_id, self.write_token, self.instant_time, self.extension
        )


@dataclass(frozen=True, slots=True)
class LogFileName:
    """Parsed log file name; orders like Hudi's LogFileComparator (instant, version, token)."""

    file_id: str
    base_instant_time: str
    version: int
    write_token: str
    cdc: bool = False

    @property
    def name(self) -> str:
        return format_log_file_name(
            self.file_id, self.base_instant_time, self.version, self.write_token
        ) + (".cdc" if self.cdc else "")

    def sort_key(self) -> tuple[str, int, str]:
        return (self.base_instant_time, self.version, self.write_token)


def format_base_file_name(
    file_id: str, write_token: str, instant_time: str, extension: str = BASE_FILE_EXTENSION
) -> str:
    return f"{file_id}_{write_token}_{instant_time}{extension}"


def parse_base_file_name(name: str) -> BaseFileName:
    """Parse ``{file_id}_{write_token}_{instant_time}.{ext}``.

    Raises:
        FileNameError: the name does not follow the grammar.
    """
    stem, dot, ext = name.rpartition(".")
    parts = stem.split("_") if dot else []
    if len(parts) != 3 or not all(parts) or not parts[2].isdigit():
        raise FileNameError(f"Not a base file name: {name!r}")
    return BaseFileName(parts[0], parts[1], parts[2], "." + ext)


def is_base_file(name: str) -> bool:
    if not name.endswith(BASE_FILE_EXTENSION) or name.startswith("."):
        return False
    try:
        parse_base_file_name(name)
    except FileNameError:
        return False
    return True


def format_log_file_name(
    file_id: str, base_instant_time: str, version: int, write_token: str
) -> str:
    return f".{file_id}_{base_instant_time}.log.{version}_{write_token}"


def parse_log_file_name(name: str) -> LogFileName:
    """Parse ``.{file_id}_{base_instant_time}.log.{version}_{write_token}``.

    Raises:
        FileNameError: the name does not follow the grammar (the write token is required).
    """
    m = _LOG_FILE_RE.match(name)
    if m is None or m.group("suffix") != "log" or m.group("token") is None:
        raise FileNameError(f"Not a log file name: {name!r}")
    return LogFileName(
        m.group("file_id"),
        m.group("instant"),
        int(m.group("version")),
        m.group("token"),
        m.group("cdc") is not None,
    )


def is_log_file(name: str) -> bool:
    try:
        return not parse_log_file_name(name).cdc
    except FileNameError:
        return False


def new_file_id(index: int = 0, prefix: str | None = None) -> str:
    """A new file group id: a UUID (or ``prefix``, shared by a bulk insert) and an index."""
    return f"{prefix or uuid.uuid4()}-{index}"


def make_write_token(task_partition_id: int, stage_id: int, task_attempt_id: int) -> str:
    return f"{task_partition_id}-{stage_id}-{task_attempt_id}"


def partition_file_path(partition_path: str, name: str) -> str:
    """The path of file ``name`` relative to the base path (a non-partitioned table keeps its
    files at the base path itself)."""
    return f"{partition_path}/{name}" if partition_path else name
