"""The ``dbt-hudi`` command (``python -m engine.cli``): read, inspect and maintain Hudi tables.

One module per concern: :mod:`~engine.cli.app` (parsing, errors, pipes), :mod:`~engine.cli.read`
(rows as canonical JSON), :mod:`~engine.cli.tables` (timeline, commit, partitions, file groups,
properties, schema, health), :mod:`~engine.cli.services` (compact, clean, rollback, archive),
:mod:`~engine.cli.render` (JSON and rich tables), :mod:`~engine.cli.report` (the HTML page).
"""

from engine.cli.app import build_parser, main
from engine.cli.read import canonical_json_lines, canonical_value

__all__ = ["build_parser", "canonical_json_lines", "canonical_value", "main"]
