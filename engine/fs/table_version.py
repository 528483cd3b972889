"""Table versions and what their properties announce: timeline layout, folders, merge mode.

::

    table version     layout   instants in               archived history
    5, 6 (Hudi 0.x)   1        .hoodie/                  .hoodie/archived (log files)
    8 (1.0), 9 (1.1)  2        .hoodie/<timeline.path>/  <timeline folder>/<history.path>
                                                         (LSM tree of parquet files)

Table versions 8 and 9 also changed how a table names its ordering field
(``hoodie.table.ordering.fields`` in 9, ``hoodie.table.precombine.field`` before), how it states
merge semantics (``hoodie.record.merge.mode``, decisive in 9; 8 keeps the payload class too) and
how partition fields may carry a type (``field:SIMPLE`` for custom key generators). The helpers
here turn any of these spellings into the one form the engine works with, or raise naming the
property that cannot be honoured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from engine import config
from engine.config import TableType
from engine.errors import ConfigError, QueryError

__all__ = [
    "LAYOUT_1",
    "TableFormat",
    "effective_payload_class",
    "ordering_field",
    "partition_fields",
    "require_readable_base_format",
    "table_format",
]

T = TypeVar("T")

METAFOLDER = ".hoodie"
# table version -> timeline layout version it is written with
_LAYOUTS = {5: 1, 6: 1, 8: 2, 9: 2}
_READABLE_BASE_FORMATS = ("PARQUET",)
_IGNORE_DEFAULTS = "IGNORE_DEFAULTS"
# merge mode + partial update mode IGNORE_DEFAULTS -> the payload whose semantics they spell
_PARTIAL_PAYLOADS = {
    "EVENT_TIME_ORDERING": config.PARTIAL_UPDATE_PAYLOAD,
    "COMMIT_TIME_ORDERING": config.OVERWRITE_NON_DEFAULTS_PAYLOAD,
}


@dataclass(frozen=True, slots=True)
class TableFormat:
    """Where a table keeps its timeline, from its version properties.

    Attributes:
        table_version: ``hoodie.table.version``.
        layout_version: ``hoodie.timeline.layout.version`` (1 or 2).
        timeline_dir: folder of the active timeline, relative to the base path.
        history_dir: folder of the LSM archived timeline (layout 2), else ``None``.
    """

    table_version: int
    layout_version: int
    timeline_dir: str
    history_dir: str | None = None

    @property
    def has_completion_times(self) -> bool:
        """Layout 2 names completed instants ``<requested>_<completed>.<action>``."""
        return self.layout_version >= 2


LAYOUT_1 = TableFormat(6, 1, METAFOLDER)


def _prop(props: Mapping[str, str], option: config.ConfigOption[T]) -> T:
    for key in (option.key, *option.aliases):
        if props.get(key, "") != "":
            return option.parse(props[key])
    return option.default


def table_format(props: Mapping[str, str], *, where: str = "the table") -> TableFormat:
    """The table's version, layout and timeline folders.

    Raises:
        QueryError: a table version or layout this engine does not read; names both.
    """
    version = _prop(props, config.TABLE_VERSION)
    layout = _prop(props, config.TIMELINE_LAYOUT_VERSION)
    if _LAYOUTS.get(version) != layout:
        raise QueryError(
            f"Unsupported table at {where}: {config.TABLE_VERSION.key}={version}, "
            f"{config.TIMELINE_LAYOUT_VERSION.key}={layout} (supported: table version 6 with "
            "layout 1, table versions 8 and 9 with layout 2)"
        )
    if layout == 1:
        return TableFormat(version, 1, METAFOLDER)
    timeline_dir = f"{METAFOLDER}/{_prop(props, config.TIMELINE_PATH).strip('/')}"
    history_dir = f"{timeline_dir}/{_prop(props, config.TIMELINE_HISTORY_PATH).strip('/')}"
    return TableFormat(version, layout, timeline_dir, history_dir)


def ordering_field(props: Mapping[str, str]) -> str | None:
    """The ordering field (version 9 ``ordering.fields``, else ``precombine.field``).

    Raises:
        QueryError: several ordering fields (Hudi 1.1 allows a list; merging on a tuple of
            fields is not implemented here).
    """
    fields = _prop(props, config.ORDERING_FIELDS)
    if fields:
        if len(fields) > 1:
            raise QueryError(
                f"{config.ORDERING_FIELDS.key}={','.join(fields)}: several ordering fields are "
                "not supported"
            )
        return fields[0]
    return _prop(props, config.PRECOMBINE_FIELD)


def partition_fields(props: Mapping[str, str]) -> tuple[str, ...]:
    """Partition field names, without the ``:type`` suffix custom key generators persist."""
    return tuple(f.split(":", 1)[0] for f in _prop(props, config.PARTITION_FIELDS))


def effective_payload_class(props: Mapping[str, str]) -> str:
    """The payload class whose merge semantics the table asks for.

    ``hoodie.record.merge.mode`` decides when present (it is authoritative in table version 9
    and consistent with the payload class in 8): commit-time ordering is
    OverwriteWithLatestAvroPayload, event-time ordering DefaultHoodieRecordPayload; with
    ``hoodie.table.partial.update.mode=IGNORE_DEFAULTS`` (how Hudi 1.1 writes the partial-update
    payloads) they are OverwriteNonDefaultsWithLatestAvroPayload and PartialUpdateAvroPayload.
    Without a merge mode (version 6) the persisted payload class decides.

    Raises:
        QueryError: merge mode CUSTOM (a user's merger class, which cannot run here), or a
            partial update mode other than NONE and IGNORE_DEFAULTS.
    """
    mode = _prop(props, config.RECORD_MERGE_MODE)
    if mode is None:
        return _prop(props, config.PAYLOAD_CLASS)
    partial = (_prop(props, config.PARTIAL_UPDATE_MODE) or "NONE").strip().upper()
    if partial not in ("NONE", _IGNORE_DEFAULTS):
        raise QueryError(
            f"{config.PARTIAL_UPDATE_MODE.key}={partial} is not supported "
            f"(NONE and {_IGNORE_DEFAULTS} are)"
        )
    if partial == _IGNORE_DEFAULTS and mode in _PARTIAL_PAYLOADS:
        return _PARTIAL_PAYLOADS[mode]
    if mode == "CUSTOM":
        raise QueryError(
            f"{config.RECORD_MERGE_MODE.key}=CUSTOM is not supported: the table merges records "
            f"with a custom merger ({config.RECORD_MERGE_STRATEGY_ID.key}="
            f"{props.get(config.RECORD_MERGE_STRATEGY_ID.key, '')!r}, "
            f"{config.PAYLOAD_CLASS.key}={props.get(config.PAYLOAD_CLASS.key, '')!r})"
        )
    if mode == "COMMIT_TIME_ORDERING":
        return config.OVERWRITE_WITH_LATEST_PAYLOAD
    return config.DEFAULT_PAYLOAD


def require_readable_base_format(props: Mapping[str, str], *, where: str = "the table") -> None:
    """Raise when base files are in a format this engine cannot read (ORC, HFILE, Lance...).

    Raises:
        QueryError: names ``hoodie.table.base.file.format`` and its value.
    """
    value = props.get(config.BASE_FILE_FORMAT.key, "PARQUET").strip() or "PARQUET"
    if value.upper() not in _READABLE_BASE_FORMATS:
        raise QueryError(
            f"Unsupported base file format at {where}: {config.BASE_FILE_FORMAT.key}={value} "
            "(only PARQUET base files can be read)"
        )
    table_format_value = props.get(config.TABLE_FORMAT.key, "native").strip() or "native"
    if table_format_value.lower() != "native":
        raise QueryError(
            f"Unsupported table format at {where}: {config.TABLE_FORMAT.key}="
            f"{table_format_value} (only Hudi's native format can be read)"
        )


# ---- writing -----------------------------------------------------------------------------------

WRITABLE_VERSIONS = (6, 8, 9)
# Hudi 1.1 (table version 9) writes the partial-update payloads as a merge mode plus
# hoodie.table.partial.update.mode=IGNORE_DEFAULTS, the class kept as the legacy payload class
_PARTIAL_MODES = {
    config.PARTIAL_UPDATE_PAYLOAD: "EVENT_TIME_ORDERING",
    config.OVERWRITE_NON_DEFAULTS_PAYLOAD: "COMMIT_TIME_ORDERING",
}
_MERGE_MODES = {
    config.OVERWRITE_WITH_LATEST_PAYLOAD: "COMMIT_TIME_ORDERING",
    config.DEFAULT_PAYLOAD: "EVENT_TIME_ORDERING",
    config.EVENT_TIME_PAYLOAD: "EVENT_TIME_ORDERING",
}
# hoodie.record.merge.strategy.id of Hudi 1.0's built-in mergers
_MERGE_STRATEGY_IDS = {
    "COMMIT_TIME_ORDERING": "ce9acb64-bde0-424c-9b91-f6ebba25356d",
    "EVENT_TIME_ORDERING": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
}
# HoodieRecordMerger.PAYLOAD_BASED_MERGE_STRATEGY_UUID: the payload class merges
_PAYLOAD_BASED_STRATEGY_ID = "00000000-0000-0000-0000-000000000000"
_KEYGEN_TYPE_OF_CLASS = {cls: kind for kind, cls in config.KEYGEN_TYPES.items()}


def require_writable_version(version: int, *, key: str) -> int:
    """Raises ConfigError naming ``key`` unless ``version`` is 6, 8 or 9."""
    if version not in WRITABLE_VERSIONS:
        raise ConfigError(f"Config {key!r}={version}: table versions 6, 8 and 9 can be written")
    return version


def versioned_properties(props: Mapping[str, str], version: int) -> dict[str, str]:
    """The properties of a new table written in ``version`` from its version-6 properties.

    Versions 8 and 9 add the layout-2 timeline folders, the merge mode (and, in 8, the merge
    strategy id next to the payload class), and name the key generator by type; version 9 names
    the ordering field ``hoodie.table.ordering.fields``.

    Raises:
        ConfigError: a payload class without a 1.x merge mode (partial-update payloads).
    """
    out = dict(props)
    if version == 6:
        return out
    payload = out.get(config.PAYLOAD_CLASS.key, config.OVERWRITE_WITH_LATEST_PAYLOAD)
    if payload in _PARTIAL_MODES:
        if version == 9:
            return _partial_update_properties(out, payload)
        if _prop(out, config.TABLE_TYPE) is not TableType.COPY_ON_WRITE:
            raise ConfigError(
                f"Payload class {payload!r} cannot be written in a merge-on-read table of "
                f"version 8: Hudi 1.0 records it as {config.RECORD_MERGE_MODE.key}=CUSTOM with "
                "the payload class as the merger, and hudi-rs refuses to merge log records of "
                "a CUSTOM merge mode. Use table version 9, where Hudi 1.1 records it as a merge "
                f"mode with {config.PARTIAL_UPDATE_MODE.key}={_IGNORE_DEFAULTS}, or version 6"
            )
        return _custom_payload_properties(out, payload)
    mode = _MERGE_MODES.get(payload)
    if mode is None:
        raise ConfigError(
            f"Payload class {payload!r} has no merge mode in table version {version}: use "
            f"OverwriteWithLatestAvroPayload, DefaultHoodieRecordPayload or EventTimeAvroPayload"
        )
    out[config.TABLE_VERSION.key] = str(version)
    out[config.TIMELINE_LAYOUT_VERSION.key] = "2"
    out[config.TABLE_INITIAL_VERSION.key] = str(version)
    out[config.TIMELINE_PATH.key] = config.TIMELINE_PATH.default
    out[config.TIMELINE_HISTORY_PATH.key] = config.TIMELINE_HISTORY_PATH.default
    out[config.RECORD_MERGE_MODE.key] = mode
    out.pop(config.RECORD_MERGER_STRATEGY.key, None)
    keygen = out.pop(config.KEYGENERATOR_CLASS.key, None)
    if keygen is not None:
        out[config.KEYGENERATOR_TYPE_TABLE.key] = _KEYGEN_TYPE_OF_CLASS[keygen]
    if version == 8:
        out[config.RECORD_MERGE_STRATEGY_ID.key] = _MERGE_STRATEGY_IDS[mode]
        return out
    # version 9 keeps the payload class too: the merge mode decides for every 1.x reader, and
    # the exact class (EventTimeAvroPayload or DefaultHoodieRecordPayload) stays known
    ordering = out.pop(config.PRECOMBINE_FIELD.key, None)
    if ordering:
        out[config.ORDERING_FIELDS.key] = ordering
    return out


def _custom_payload_properties(props: dict[str, str], payload: str) -> dict[str, str]:
    """Version-8 copy-on-write properties of a partial-update payload, as Hudi 1.0 creates them
    (``inferMergingConfigsForPreV9Table``): merge mode CUSTOM, the payload class, and the
    payload-based merge strategy id. Readers only merge records of log files, which
    copy-on-write has none of: base files hold the merged rows."""
    out = versioned_properties({**props, config.PAYLOAD_CLASS.key: config.EVENT_TIME_PAYLOAD}, 8)
    out[config.PAYLOAD_CLASS.key] = payload
    out[config.RECORD_MERGE_MODE.key] = "CUSTOM"
    out[config.RECORD_MERGE_STRATEGY_ID.key] = _PAYLOAD_BASED_STRATEGY_ID
    return out


def _partial_update_properties(props: dict[str, str], payload: str) -> dict[str, str]:
    """Version-9 properties of a partial-update payload, as Hudi 1.1 creates them
    (``HoodieTableConfig.inferMergingConfigsForV9TableCreation``): the merge mode and its
    strategy id, ``IGNORE_DEFAULTS``, and the class as the legacy payload class only."""
    out = versioned_properties({**props, config.PAYLOAD_CLASS.key: config.EVENT_TIME_PAYLOAD}, 9)
    mode = _PARTIAL_MODES[payload]
    out.pop(config.PAYLOAD_CLASS.key, None)
    out[config.RECORD_MERGE_MODE.key] = mode
    out[config.RECORD_MERGE_STRATEGY_ID.key] = _MERGE_STRATEGY_IDS[mode]
    out[config.LEGACY_PAYLOAD_CLASS.key] = payload
    out[config.PARTIAL_UPDATE_MODE.key] = _IGNORE_DEFAULTS
    return out


def _copy_on_write_custom_payload(props: Mapping[str, str]) -> str | None:
    """The partial-update payload of a version-8 copy-on-write table Hudi 1.0 (or this engine)
    created with merge mode CUSTOM, else ``None`` (other CUSTOM tables stay refused)."""
    payload = props.get(config.PAYLOAD_CLASS.key, "")
    if (
        _prop(props, config.RECORD_MERGE_MODE) == "CUSTOM"
        and _prop(props, config.TABLE_TYPE) is TableType.COPY_ON_WRITE
        and payload in _PARTIAL_MODES
    ):
        return payload
    return None


def write_view_of_properties(props: Mapping[str, str]) -> dict[str, str]:
    """Properties of any readable version in the version-6 spelling the writer works with:
    ordering field, payload class from the merge mode, partition fields without types.

    Raises:
        QueryError: merge mode CUSTOM or several ordering fields (cannot be honoured).
    """
    out = dict(props)
    if _prop(props, config.TABLE_VERSION) < 8:
        return out
    derived = _copy_on_write_custom_payload(props) or effective_payload_class(props)
    # a persisted payload class (version 8, and tables this engine wrote) is the exact one
    out.setdefault(config.PAYLOAD_CLASS.key, derived)
    ordering = ordering_field(props)
    if ordering:
        out[config.PRECOMBINE_FIELD.key] = ordering
    fields = partition_fields(props)
    if fields:
        out[config.PARTITION_FIELDS.key] = ",".join(fields)
    return out
