"""``spark.read.format("hudi").load(path)``: a Python Data Source over the engine's reader.

Options are Hudi's read keys (see :mod:`engine.read.plan`); ``path`` is the table's base path::

    from engine import config
    spark.read.format("hudi")
         .option(config.QUERY_TYPE.key, "incremental")
         .option(config.READ_BEGIN_INSTANTTIME.key, "20240101000000000")
         .load("/warehouse/trips")

Planning runs once, when Spark asks for the schema; filters Spark pushes down that name partition
columns prune the planned file slices by partition path (no second listing), and filters on other
columns skip slices by the metadata table's column stats (:mod:`engine.read.data_skipping`) where
the table has them. Every filter is also handed back to Spark, which evaluates it on the rows.
Each file slice is one input partition, read by :func:`engine.read.arrow.read_file_slice` as
Arrow record batches.

Register it with :func:`engine.spark.register` (the dbt adapter does so on connection).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
    Not,
)
from pyspark.sql.types import StructType

from engine.errors import QueryError
from engine.fs.s3 import is_s3_uri, resolve_s3_settings
from engine.fs.storage import Storage
from engine.model.cdc_schema import cdc_query_schema
from engine.read.arrow import plan_schema, read_file_slice
from engine.read.cdc import CdcPlan, changes_table, plan_changes, read_split
from engine.read.filter import ReadFilter, partition_pruner
from engine.read.plan import (
    QueryPlan,
    ReadQuery,
    parse_read_query,
    plan_query,
    skip_by_column_stats,
)
from engine.view.fs_view import FileSlice

__all__ = ["HudiChangesReader", "HudiDataSource", "HudiDataSourceReader", "to_read_filter"]

PATH_OPTION = "path"
FORMAT_NAME = "hudi"


def to_read_filter(f: Filter) -> ReadFilter | None:
    """The engine's form of a pushed Spark filter on a top-level column, else ``None``."""
    simple: list[tuple[type[Filter], str]] = [
        (EqualTo, "="),
        (GreaterThan, ">"),
        (GreaterThanOrEqual, ">="),
        (LessThan, "<"),
        (LessThanOrEqual, "<="),
    ]
    for kind, op in simple:
        if isinstance(f, kind):
            attribute = f.attribute  # type: ignore[attr-defined]
            return ReadFilter(attribute[0], op, f.value) if len(attribute) == 1 else None  # type: ignore[attr-defined]
    if isinstance(f, In) and len(f.attribute) == 1:
        return ReadFilter(f.attribute[0], "IN", tuple(f.value))
    if isinstance(f, Not):
        inner = f.child
        if isinstance(inner, EqualTo) and len(inner.attribute) == 1:
            return ReadFilter(inner.attribute[0], "!=", inner.value)
        if isinstance(inner, In) and len(inner.attribute) == 1:
            return ReadFilter(inner.attribute[0], "NOT IN", tuple(inner.value))
    return None


class _SlicePartition(InputPartition):
    """One file slice to read."""

    def __init__(self, file_slice: FileSlice) -> None:
        super().__init__(file_slice)
        self.file_slice = file_slice


class HudiDataSource(DataSource):
    """Batch reads of Hudi tables (table version 6): snapshot, read-optimized, time travel,
    incremental."""

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self._plan: QueryPlan | None = None
        self._arrow_schema: pa.Schema | None = None

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _query(self) -> tuple[str, ReadQuery]:
        options = {k: v for k, v in dict(self.options).items() if k != PATH_OPTION}
        path = self.options.get(PATH_OPTION)
        if not path:
            raise QueryError("Reading format 'hudi' needs a path: .load('<base path>')")
        return str(path), parse_read_query(options)

    def _storage(self, path: str) -> Storage:
        """The table's storage; on S3 its settings come from the load's ``fs.s3a.*`` options
        (this runs in a Python worker: the driver's environment is not here)."""
        options = dict(self.options)
        return Storage(path, resolve_s3_settings(options) if is_s3_uri(path) else None)

    def _ensure_plan(self) -> tuple[QueryPlan, pa.Schema]:
        if self._plan is None or self._arrow_schema is None:
            path, query = self._query()
            self._plan = plan_query(self._storage(path), query)
            self._arrow_schema = plan_schema(self._plan)
        return self._plan, self._arrow_schema

    def schema(self) -> StructType:
        from pyspark.sql.pandas.types import from_arrow_schema

        if self._query()[1].is_cdc:
            return from_arrow_schema(cdc_query_schema())
        _, arrow_schema = self._ensure_plan()
        return from_arrow_schema(arrow_schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        path, query = self._query()
        if query.is_cdc:
            return HudiChangesReader(plan_changes(self._storage(path), str(query.begin), query.end))
        plan, arrow_schema = self._ensure_plan()
        return HudiDataSourceReader(plan, arrow_schema)


class HudiChangesReader(DataSourceReader):
    """The CDC query (:mod:`engine.read.cdc`): one input partition per split."""

    def __init__(self, plan: CdcPlan) -> None:
        self.plan = plan

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(i) for i in range(len(self.plan.splits))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        index: int | None = partition.value
        if index is None:
            return  # Spark reads one empty partition when the query has no splits
        storage = self.plan.storage
        rows = read_split(storage, self.plan.splits[index], self.plan.mode)
        yield from changes_table(rows).to_batches()


class HudiDataSourceReader(DataSourceReader):
    """Reads the planned file slices, pruned by pushed filters on partition columns and skipped
    by column stats on the others."""

    def __init__(self, plan: QueryPlan, arrow_schema: pa.Schema) -> None:
        self.plan = plan
        self.arrow_schema = arrow_schema
        self.partition_filters: list[ReadFilter] = []
        self.column_filters: list[ReadFilter] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        partition_fields = set(self.plan.table.partition_fields)
        for f in filters:
            converted = to_read_filter(f)
            if converted is not None and converted.field in partition_fields:
                self.partition_filters.append(converted)
            elif converted is not None:
                self.column_filters.append(converted)
            # rows are filtered by Spark in any case: pruning is only a shortcut
            yield f

    def _slices(self) -> Sequence[FileSlice]:
        slices = self.plan.file_slices
        keep = partition_pruner(self.plan.table, self.partition_filters, self.plan.avro_schema)
        if keep is not None:
            slices = tuple(s for s in slices if keep(s.partition_path))
        if not self.column_filters or not slices:
            return slices
        return skip_by_column_stats(self.plan, self.column_filters, slices)

    def partitions(self) -> Sequence[InputPartition]:
        return [_SlicePartition(s) for s in self._slices()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        file_slice: FileSlice | None = partition.value
        if file_slice is None:
            return  # Spark reads one empty partition when the plan has no slices
        plan = replace(self.plan, file_slices=(file_slice,))
        table = read_file_slice(plan, file_slice, self.arrow_schema)
        yield from table.to_batches()
