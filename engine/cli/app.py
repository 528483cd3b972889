"""The ``dbt-hudi`` command: argument parsing, the verbs' registry, errors and closed pipes.

Exit status: 0 on success; 1 when ``health`` finds something to act on; 2 on any error, with
one line on stderr (``ERROR: <kind>: <message>``); 141 when the reader of stdout went away
(``dbt-hudi read ... | head -1``), with nothing on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from engine.cli.clustering import add_clustering_parser
from engine.cli.read import add_read_parser
from engine.cli.report import add_report_parser
from engine.cli.restore import add_restore_parsers
from engine.cli.services import add_service_parsers
from engine.cli.tables import add_inspect_parsers
from engine.errors import HudiError

__all__ = ["build_parser", "main"]

BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE, what a shell reports for a killed pipe writer


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, exit status 2 (the verbs' subparsers share this)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"ERROR: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON for scripts")
    parser = _Parser(
        prog="dbt-hudi",
        description="Inspect, read and maintain Apache Hudi tables (table versions 6, 8 and 9).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB")
    add_read_parser(sub, [common])
    add_inspect_parsers(sub, [common])
    add_service_parsers(sub, [common])
    add_clustering_parser(sub, [common])
    add_restore_parsers(sub, [common])
    add_report_parser(sub, [common])
    return parser


def _stdout_gone() -> int:
    # Python flushes stdout again at exit: point it at /dev/null so that flush cannot fail
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return BROKEN_PIPE_STATUS


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dbt-hudi`` console script."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2), already printed
        return int(e.code or 0)
    try:
        status = int(args.handler(args))
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        return _stdout_gone()
    except HudiError as e:
        print(f"ERROR: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"ERROR: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ERROR: interrupted", file=sys.stderr)
        return 130
