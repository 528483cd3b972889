"""``python -m engine.cli``: the ``dbt-hudi`` command."""

import sys

from engine.cli.app import main

sys.exit(main())
