"""Parquet codec measurement for base files: encode time, size and read time per codec.

Writes one partition's worth of the benchmark data (a tenth of ``base.parquet``, as a base file
of a 1M-row table holds) through the engine's own base-file writer with each codec, then reads it
back whole, A B C A B C, and prints the medians and the load average::

    python bench/codecs.py DATA_DIR [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from engine.fs.storage import Storage  # noqa: E402
from engine.io.bloom_filter import BloomFilterSpec  # noqa: E402
from engine.io.parquet import read_base_file, write_base_file  # noqa: E402
from engine.model.schema import META_COLUMNS  # noqa: E402

CODECS = ("snappy", "zstd", "gzip")


def partition_rows(data: Path) -> pa.Table:
    """The first partition of ``base.parquet`` with the five meta columns in front."""
    base = pq.read_table(data / "base.parquet")
    first = pc.min(base["dt"]).as_py()
    rows = base.filter(pc.equal(base["dt"], first))
    n = rows.num_rows
    meta = {
        META_COLUMNS[0]: pa.array(["20240101000000000"] * n),
        META_COLUMNS[1]: pa.array([f"20240101000000000_0_{i}" for i in range(n)]),
        META_COLUMNS[2]: rows["id"],
        META_COLUMNS[3]: pa.array([f"dt={first}"] * n),
        META_COLUMNS[4]: pa.array(["f-0_0-1-1_20240101000000000.parquet"] * n),
    }
    return pa.table({**meta, **{c: rows[c] for c in rows.column_names}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("data", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    table = partition_rows(args.data)
    out = Path(tempfile.mkdtemp(prefix="codecs-"))
    storage = Storage(str(out))
    times: dict[str, dict[str, list[float]]] = {c: {"write": [], "read": []} for c in CODECS}
    sizes: dict[str, int] = {}
    for rep in range(args.reps + 1):  # rep 0 warms up
        for codec in CODECS:
            rel = f"{codec}-{rep}.parquet"
            t0 = time.perf_counter()
            size = write_base_file(
                storage,
                rel,
                table,
                avro_schema_with_meta="{}",
                bloom=BloomFilterSpec(),
                compression=codec,
            )
            t1 = time.perf_counter()
            read_base_file(storage, rel)
            t2 = time.perf_counter()
            os.remove(out / rel)
            sizes[codec] = size
            if rep:
                times[codec]["write"].append(t1 - t0)
                times[codec]["read"].append(t2 - t1)
    load = os.getloadavg()[0]
    print(f"{table.num_rows:,} rows, median of {args.reps}, load average {load:.1f}")
    print("| codec | write s | read s | size MB |")
    print("|---|---|---|---|")
    for codec in CODECS:
        w = statistics.median(times[codec]["write"])
        r = statistics.median(times[codec]["read"])
        print(f"| {codec} | {w:.3f} | {r:.3f} | {sizes[codec] / 2**20:.1f} |")
    print(json.dumps({"rows": table.num_rows, "load": load, "sizes": sizes, "times": times}))


if __name__ == "__main__":
    main()
