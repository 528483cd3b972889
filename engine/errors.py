"""Errors raised by the engine.

Every error derives from :class:`HudiError` so callers (the dbt adapter, the CLI) can catch one
type. Messages name the offending key, value, path or instant so a user can act on them.
"""

from __future__ import annotations


class HudiError(Exception):
    """Base class of every error the engine raises."""


class ConfigError(HudiError):
    """A ``hoodie.*`` option is unknown, malformed, or contradicts the table's properties."""


class TableNotFoundError(HudiError):
    """No Hudi table (``.hoodie/hoodie.properties``) exists at the given base path."""


class TimelineError(HudiError):
    """The timeline is inconsistent or an instant transition is not allowed."""


class FileNameError(HudiError):
    """A base or log file name does not follow Hudi's naming grammar."""


class LogFormatError(HudiError):
    """A log file or log block does not follow Hudi's log format."""


class HFileFormatError(HudiError):
    """An HFile (a metadata table base file or HFILE_DATA_BLOCK content) is not as Hudi writes it:
    a bad magic, trailer, block, or an unsupported compression codec."""


class SchemaError(HudiError):
    """Incoming data does not fit the table schema (missing key column, incompatible type)."""


class SchemaEvolutionError(SchemaError):
    """The batch's schema cannot evolve the table's: a narrowing, an incompatible type, a
    missing column, or a value the evolved type cannot hold exactly. Raised before anything is
    written; the message names each column (dotted path), the table's type and the incoming
    type."""


class RecordKeyError(HudiError):
    """A record key or partition value cannot be generated (null/empty key field)."""


class NullOrderingValueError(HudiError):
    """A record's ordering (precombine) value is null in a write that combines records (Hudi
    refuses it: a payload cannot be ordered without it)."""


class KeyMovedError(HudiError):
    """A one-job global-index write found an incoming key stored in another partition than the
    one it arrives in: that write task cannot reach the other partition's file group, so the
    attempt is rolled back and the write runs again as the two-job write
    (:mod:`engine.write.partition_write`)."""


class WriteConflictError(HudiError):
    """Another writer committed changes to the same file groups meanwhile."""


class ClusteringUpdateError(WriteConflictError):
    """A write updates a file group a pending clustering rewrites (Hudi's
    ``hoodie.clustering.updates.strategy`` rejects it)."""


class LockTimeoutError(HudiError):
    """The table lock could not be acquired in time."""


class QueryError(HudiError):
    """A read option or filter is malformed, or the table cannot be read by this engine."""


class PreCommitValidationError(HudiError):
    """A pre-commit validator (``hoodie.precommit.validators``) or an audit of the staged
    snapshot refused the write: its instant was rolled back, nothing of it is visible. The
    message names each failed validator, its query, and the values expected and found."""
