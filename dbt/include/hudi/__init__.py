"""The hudi adapter's dbt project (macros and materializations)."""

import os

PACKAGE_PATH = os.path.dirname(__file__)
