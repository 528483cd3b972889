"""Lossless promotion of Arrow values to an evolved schema's types.

Every place that turns values of one type into another on the way to or from a file (the write
handles aligning a batch or an old base file to the commit schema, the readers conforming old
base files and old log blocks to the query schema, compaction) goes through
:func:`promote_array`. It never narrows: a value the target type cannot hold exactly (an int64
beyond int32, a double that is not a float, an int beyond float's 24-bit mantissa, a decimal
that would lose digits, bytes that are not UTF-8) raises
:class:`~engine.errors.SchemaEvolutionError` naming the column, both types and the value.

Nested types follow field by field: a struct gains the target's new fields as nulls (old files
of an evolved table) and loses the fields the target does not have (a column dropped by
``hoodie.datasource.write.schema.allow.auto.evolution.column.drop``); lists and maps promote
their elements and values.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import SchemaEvolutionError

__all__ = ["is_list_type", "is_nested_type", "promote_array", "promote_table"]

_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


def promote_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: reordered, promoted, missing ones null."""
    if table.schema.equals(schema):
        return table
    names = set(table.column_names)
    columns = [
        promote_array(table.column(f.name), f.type, f.name)
        if f.name in names
        else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def promote_array(array: Any, target: pa.DataType, path: str) -> Any:
    """``array`` (Array or ChunkedArray) as ``target``, value for value.

    Raises:
        SchemaEvolutionError: the types are incompatible or a value does not fit exactly.
    """
    if array.type.equals(target):
        return array
    if isinstance(array, pa.ChunkedArray):
        chunks = [_promote(chunk, target, path) for chunk in array.chunks]
        return pa.chunked_array(chunks, type=target)
    return _promote(array, target, path)


def _promote(array: pa.Array, target: pa.DataType, path: str) -> pa.Array:
    source = array.type
    if source.equals(target):
        return array
    if pa.types.is_dictionary(source):
        return _promote(array.dictionary_decode(), target, path)
    if pa.types.is_null(source):
        return pa.nulls(len(array), target)
    if pa.types.is_struct(target):
        return _promote_struct(array, target, path)
    if is_list_type(target):
        return _promote_list(array, target, path)
    if pa.types.is_map(target):
        return _promote_map(array, target, path)
    if is_nested_type(source):
        raise _mismatch(path, source, target)
    return _exact_cast(array, target, path)


def is_list_type(dtype: pa.DataType) -> bool:
    """list, large list or fixed-size list."""
    t = pa.types
    return bool(t.is_list(dtype) or t.is_large_list(dtype) or t.is_fixed_size_list(dtype))


def is_nested_type(dtype: pa.DataType) -> bool:
    """struct, list or map."""
    return bool(pa.types.is_struct(dtype) or is_list_type(dtype) or pa.types.is_map(dtype))


def _mismatch(path: str, source: pa.DataType, target: pa.DataType) -> SchemaEvolutionError:
    return SchemaEvolutionError(f"Column {path!r}: values of type {source} cannot become {target}")


def _promote_struct(array: pa.Array, target: pa.StructType, path: str) -> pa.Array:
    if not pa.types.is_struct(array.type):
        raise _mismatch(path, array.type, target)
    source: pa.StructType = array.type
    present = {source.field(i).name: i for i in range(source.num_fields)}
    children = array.flatten()  # parent nulls folded into the children, offset applied
    fields = [target.field(i) for i in range(target.num_fields)]
    arrays = [
        _promote(children[present[f.name]], f.type, f"{path}.{f.name}")
        if f.name in present
        else pa.nulls(len(array), f.type)
        for f in fields
    ]
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)


def _null_offsets(array: pa.Array) -> pa.Array:
    """Offsets of a list or map array, null where the array is null (how ``from_arrays`` takes
    parent nulls of a sliced array)."""
    offsets = array.offsets
    if not array.null_count:
        return offsets
    nulls = pa.concat_arrays([array.is_null(), pa.array([False])])
    return pc.if_else(nulls, pa.scalar(None, offsets.type), offsets)


def _promote_list(array: pa.Array, target: pa.DataType, path: str) -> pa.Array:
    if not is_list_type(array.type):
        raise _mismatch(path, array.type, target)
    if pa.types.is_fixed_size_list(array.type):
        array = array.cast(pa.list_(array.type.value_field))
    values = _promote(array.values, target.value_type, f"{path}.element")
    factory = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
    return factory.from_arrays(_null_offsets(array), values, type=target)


def _promote_map(array: pa.Array, target: pa.MapType, path: str) -> pa.Array:
    if not pa.types.is_map(array.type):
        raise _mismatch(path, array.type, target)
    keys = _promote(array.keys, target.key_type, f"{path}.key")
    items = _promote(array.items, target.item_type, f"{path}.value")
    return pa.MapArray.from_arrays(_null_offsets(array), keys, items, type=target)


def _cast(array: pa.Array, target: pa.DataType) -> pa.Array:
    source = array.type
    if pa.types.is_integer(source) and pa.types.is_decimal(target):
        # Arrow sizes int -> decimal casts by the type, not the values: go through 38 digits
        return array.cast(pa.decimal128(38, 0)).cast(target, safe=True)
    # Arrow's checked int -> float cast refuses every value past the mantissa, even those the
    # float holds exactly (2**30); the round trip of _exact_cast is the exact test
    safe = not (pa.types.is_integer(source) and pa.types.is_floating(target))
    return array.cast(target, safe=safe)


def _exact_cast(array: pa.Array, target: pa.DataType, path: str) -> pa.Array:
    """Cast a primitive array and prove every value survives the trip back unchanged."""
    source = array.type
    try:
        out = _cast(array, target)
    except pa.ArrowInvalid as e:
        value = _first_failing(array, target)
        raise SchemaEvolutionError(
            f"Column {path!r}: value {value!r} of type {source} does not fit {target} ({e})"
        ) from e
    except _CAST_ERRORS as e:
        raise _mismatch(path, source, target) from e
    try:
        back = out.cast(source, safe=False)
    except _CAST_ERRORS as e:
        raise _mismatch(path, source, target) from e
    differs = pc.fill_null(pc.not_equal(back, array), False)
    if pa.types.is_floating(source):
        differs = pc.and_(differs, pc.invert(pc.fill_null(pc.is_nan(array), False)))
    if pc.any(differs).as_py():
        index = pc.index(differs, True).as_py()
        raise SchemaEvolutionError(
            f"Column {path!r}: value {array[index].as_py()!r} of type {source} cannot be "
            f"stored exactly as {target} (it would become {out[index].as_py()!r})"
        )
    return out


def _first_failing(array: pa.Array, target: pa.DataType) -> Any:
    """The first value whose cast fails (for the error message only)."""
    for value in array.to_pylist():
        try:
            _cast(pa.array([value], array.type), target)
        except _CAST_ERRORS:
            return value
    return None
