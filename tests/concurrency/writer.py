"""One of two concurrent writer processes: ``rounds`` upserts, retried on write conflicts.

Usage: ``python -m tests.concurrency.writer SPEC_JSON`` with
``{"table", "work", "name", "rounds", "go", "results", "options"}``. Even rounds upsert the
writer's own partition (disjoint from the other writer: must never conflict), odd rounds the
shared partition (same keys as the other writer: conflicts are expected and retried). Every
attempt is recorded in the results file (JSON) for the test to rebuild the expected table.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

SCHEMA = "id string, dt string, ts long, v string"
SHARED = "shared"
MAX_ATTEMPTS = 12


def round_rows(name: str, r: int) -> tuple[str, list[tuple[str, str, int, str]]]:
    """(kind, rows) of round ``r``: two updates of existing keys and one new key."""
    tag = f"{name}-r{r}"
    if r % 2 == 0:
        part = f"own-{name}"
        keys = [f"{name}-o{r % 4}", f"{name}-o{(r + 1) % 4}", f"{name}-n{r}"]
        return "disjoint", [(k, part, r, tag) for k in keys]
    keys = [f"s{r % 4}", f"s{(r + 2) % 4}", f"{name}-s{r}"]
    return "same", [(k, SHARED, r, tag) for k in keys]


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    from engine import write_hudi
    from engine.errors import WriteConflictError
    from engine.spark.session import local_session

    spark = local_session(spec["work"], master="local[1]", extra_conf={"spark.driver.memory": "1g"})
    spark.createDataFrame([("x", "y", 0, "z")], SCHEMA).count()  # warm the JVM up
    with open(spec["ready"], "w") as f:
        f.write(str(os.getpid()))
    while not os.path.exists(spec["go"]):
        time.sleep(0.05)
    rng = random.Random(spec["name"])
    results: list[dict[str, Any]] = []
    for r in range(spec["rounds"]):
        kind, rows = round_rows(spec["name"], r)
        entry: dict[str, Any] = {"round": r, "kind": kind, "rows": rows, "conflicts": []}
        entry["start"] = time.time()
        for _ in range(MAX_ATTEMPTS):
            try:
                result = write_hudi(
                    spark.createDataFrame(rows, SCHEMA), spec["table"], spec["options"]
                )
            except WriteConflictError as e:
                entry["conflicts"].append(str(e))
                time.sleep(rng.uniform(0.0, 0.5))
                continue
            entry["instant"] = result.instant_time
            break
        entry["end"] = time.time()
        results.append(entry)
        with open(spec["results"], "w") as f:
            json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
