"""The README's quickstart works as written: its profile is a `type: hudi` profile the adapter
takes, its model renders and passes the model config validation, and its Python blocks (hudi-rs,
then Spark) read the table that model's options write."""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from dbt.adapters.hudi.connections import HudiCredentials
from dbt.adapters.hudi.options import parse_model_config

REPO = Path(__file__).resolve().parents[2]
README_PATH = "/tmp/lake/analytics/orders"


def quickstart() -> str:
    text = (REPO / "README.md").read_text()
    return text.split("[start:quickstart]", 1)[1].split("[end:quickstart]", 1)[0]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", quickstart(), flags=re.S)


def model_config() -> dict[str, Any]:
    """The quickstart model's ``config()``, rendered as dbt renders it (Jinja)."""
    captured: dict[str, Any] = {}
    jinja2.Environment().from_string(blocks("sql")[0]).render(
        config=lambda **kw: captured.update(kw) or ""
    )
    return captured


@pytest.mark.unit
def test_the_profile_is_one_the_adapter_takes() -> None:
    profile = yaml.safe_load(blocks("yaml")[0])
    (project,) = profile.values()
    output = project["outputs"][project["target"]]
    assert (output["type"], output["method"]) == ("hudi", "session")
    known = {f.name for f in fields(HudiCredentials)} | {"type", "server_side_parameters"}
    assert set(output) - known == set()


@pytest.mark.unit
def test_the_model_renders_and_validates() -> None:
    config = model_config()
    cfg = parse_model_config("orders", config.pop("materialized"), config)
    assert cfg.record_key_fields == ("order_id",) and cfg.partition_fields == ("order_date",)


@pytest.mark.spark
@pytest.mark.interop
def test_the_reading_blocks_read_the_models_table(spark: Any, tmp_path: Path) -> None:
    from engine import write_hudi

    config = model_config()
    cfg = parse_model_config("orders", config.pop("materialized"), config)
    select = blocks("sql")[0].split("}}", 1)[1]
    path = tmp_path / "lake" / "analytics" / "orders"
    options = cfg.write_options(table_name="orders", database="analytics", operation="bulk_insert")
    write_hudi(spark.sql(select), str(path), options)

    hudi_rs, with_spark = blocks("python")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(hudi_rs.replace(README_PATH, str(path)), {})
        exec(with_spark.replace(README_PATH, str(path)), {"spark": spark})
    printed = out.getvalue()
    assert re.search(r"^0 .* open ", printed, flags=re.M)  # hudi-rs: one row, through pandas
    assert printed.count("|  open|") == 2  # Spark: read_hudi, then format("hudi") filtered
