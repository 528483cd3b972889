"""`make demo`: build the example dbt project twice on embedded Spark, then show its Hudi tables.

Run 1 loads the day-1 seeds; run 2 loads ``examples/changes/`` (updated, new and deleted rows),
so the Hudi models upsert, append log blocks and replace partitions. Each ``dbt build`` is its
own process, as a user would run it: the Derby metastore and the tables persist between them.
Afterwards every table's timeline and row count are printed, read by the engine's Arrow reader
and by hudi-rs (the independent reader) when it is installed.

Everything is written under ``examples/target/demo/`` (removed at the start of each demo), or
under ``--work DIR``.

``--connect sc://host:port`` runs both builds through that Spark Connect server (the profile's
``connect`` target, ``SPARK_REMOTE``); ``--connect`` alone starts a server from the installed
pyspark for the demo's duration (``make demo-connect``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
WORK = EXAMPLES / "target" / "demo"
SCHEMA = "shop"
HUDI_MODELS = ("customers", "customer_changes", "orders", "daily_revenue")


def _dbt(args: list[str], project: Path, env: dict[str, str]) -> None:
    dbt = Path(sys.executable).parent / "dbt"
    command = [str(dbt), *args, "--project-dir", str(project), "--profiles-dir", str(project)]
    print(f"\n$ dbt {' '.join(args)}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, cwd=project, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"dbt {' '.join(args)} failed (exit code {done.returncode})")
    print(f"(dbt {args[0]} took {time.monotonic() - started:.0f}s)", flush=True)


def _prepare(work: Path) -> tuple[Path, dict[str, str]]:
    shutil.rmtree(work, ignore_errors=True)
    project = work / "project"
    shutil.copytree(
        EXAMPLES, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages")
    )
    home = work / "home"
    home.mkdir(parents=True)
    env = dict(os.environ)
    env["DBT_HUDI_HOME"] = str(home)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
    return project, env


def _hudi_rs_count(base_path: str) -> int | None:
    try:
        from hudi import HudiTableBuilder
    except ImportError:
        return None
    table = HudiTableBuilder.from_base_uri(base_path).build()
    return sum(batch.num_rows for batch in table.read())


def _show_table(name: str, base_path: Path) -> None:
    from engine.fs.properties import read_properties
    from engine.fs.storage import Storage
    from engine.read.arrow import read_table
    from engine.timeline.timeline import Timeline

    storage = Storage(str(base_path))
    props = read_properties(storage)
    table_type = next((v for k, v in props.items() if k.endswith(".table.type")), "?")
    print(f"\n== {SCHEMA}.{name}  ({table_type})  {base_path}")
    print("   timeline:")
    for instant in Timeline.load(storage).instants:
        print(f"     {instant.instant_time}  {instant.action.value:<14} {instant.state.name}")
    rows = read_table(str(base_path))
    print(f"   rows (engine reader): {rows.num_rows}")
    rs_count = _hudi_rs_count(str(base_path))
    if rs_count is not None:
        print(f"   rows (hudi-rs):       {rs_count}")
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie")])
    for row in sorted(data.to_pylist(), key=lambda r: tuple(str(v) for v in r.values())):
        print("     " + ", ".join(f"{k}={v}" for k, v in row.items()))


def _versions() -> str:
    """What the demo runs on: the package, dbt-core, dbt-spark, PySpark (Spark) and Java."""
    from importlib.metadata import version

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    java_line = (java.stderr.splitlines() or ["java: unknown"])[0]
    packages = ("dbt-hudi", "dbt-core", "dbt-spark", "pyspark")
    return ", ".join(f"{name} {version(name)}" for name in packages) + f"; {java_line}"


@contextmanager
def _target(connect: str | None, work: Path, env: dict[str, str]) -> Iterator[str]:
    """The profile target to build with: ``local``, or ``connect`` with ``SPARK_REMOTE`` set
    (to the given server, or to one started here and stopped afterwards)."""
    if connect is None:
        env.pop("SPARK_REMOTE", None)
        yield "local"
        return
    if connect != "start":
        env["SPARK_REMOTE"] = connect
        yield "connect"
        return
    from tests.cluster.launch import start_connect_server

    server, url = start_connect_server(work / "connect-server")
    print(f"Spark Connect server started at {url} (pid {server.proc.pid})")
    try:
        env["SPARK_REMOTE"] = url
        yield "connect"
    finally:
        server.stop()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--connect",
        nargs="?",
        const="start",
        metavar="sc://HOST:PORT",
        help="build through a Spark Connect server (started here when no URL is given)",
    )
    parser.add_argument("--work", type=Path, default=WORK, help="where everything is written")
    parser.add_argument(
        "--builds", type=int, choices=(1, 2), default=2, help="2: the day-2 seeds as well"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    sys.path.insert(0, str(REPO))
    work = args.work.resolve()
    project, env = _prepare(work)
    print(f"dbt-hudi demo in {work}")
    print(f"versions: {_versions()}")

    with _target(args.connect, work, env) as target:
        print("\n#### run 1: day-1 seeds")
        _dbt(["build", "--target", target], project, env)

        if args.builds == 2:
            print("\n#### run 2: day-2 seeds (updates, new rows, a deleted order)")
            for changed in sorted((project / "changes").glob("*.csv")):
                shutil.copy(changed, project / "seeds" / changed.name)
            _dbt(["build", "--target", target], project, env)

    print("\n#### the Hudi tables (customer_changes: fed only by the changes of customers)")
    for name in HUDI_MODELS:
        _show_table(name, Path(env["DBT_HUDI_HOME"]) / "hudi" / SCHEMA / name)


if __name__ == "__main__":
    main()
