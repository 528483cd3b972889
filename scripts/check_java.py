"""Stop early, with one clear sentence, when no Java 17+ is available for PySpark."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

MIN_JAVA = 17


def java_major() -> int | None:
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        ).stderr
    except OSError:
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def main() -> int:
    major = java_major()
    if major is None or major < MIN_JAVA:
        found = "no java was found" if major is None else f"java {major} was found"
        print(
            f"dbt-hudi needs Java {MIN_JAVA} or newer for PySpark, but {found}: install a JDK "
            f"(e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME to one.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
