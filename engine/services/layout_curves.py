"""Row orders of clustering: linear, z-order and Hilbert (``hoodie.layout.optimize.strategy``).

Linear sorts by the sort columns, lexicographically (ascending, nulls first, as Spark's sort).
The curves map each sort column to an unsigned coordinate of ``bits`` bits, then order the rows
by their position along the curve, so rows close in every column land in the same files and the
files' column ranges stay narrow on each column (what data skipping through column stats needs).

Coordinates (``hoodie.layout.optimize.build.curve.method``):

* ``direct``: from the value itself: numbers, dates and times scaled linearly between the
  group's min and max; text and bytes by their first 8 bytes (big-endian); booleans 0 or 1;
* ``sample``: from the value's dense rank among the group's values, scaled to the same range
  (evenly spread whatever the distribution).

Nulls take coordinate 0. Both curves are computed here in vectorised numpy: z-order interleaves
the coordinates' bits, Hilbert follows Skilling's transpose algorithm ("Programming the Hilbert
curve", AIP Conf. Proc. 707, 2004) and then interleaves the transposed bits. Ties keep the
input order (stable sorts).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import ConfigError

__all__ = ["curve_coordinates", "hilbert_index", "order_rows", "z_order_index"]

_MAX_TOTAL_BITS = 63


def _bits_for(dims: int) -> int:
    return max(1, min(21, _MAX_TOTAL_BITS // max(dims, 1)))


def _scaled(values: np.ndarray, top: int) -> np.ndarray:
    """Floats scaled linearly onto ``0..top`` (NaN: 0)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return np.zeros(values.shape, dtype=np.uint64)
    low, high = float(finite.min()), float(finite.max())
    span = high - low
    out = np.zeros(values.shape, dtype=np.float64)
    if span > 0:
        out = np.where(np.isfinite(values), (values - low) / span * top, 0.0)
    return np.clip(out, 0, top).astype(np.uint64)


def _prefix_bytes(column: pa.ChunkedArray, bits: int) -> np.ndarray:
    """The first 8 bytes of each text or binary value, big-endian, shifted to ``bits`` bits."""
    values = column.to_pylist()
    out = np.zeros(len(values), dtype=np.uint64)
    for k, v in enumerate(values):
        if v is None:
            continue
        raw = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        out[k] = int.from_bytes(raw[:8].ljust(8, b"\0"), "big")
    return out >> np.uint64(64 - bits)


def _direct(column: pa.ChunkedArray, bits: int) -> np.ndarray:
    top = (1 << bits) - 1
    t = column.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        return _prefix_bytes(column, bits)
    if pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return _prefix_bytes(column, bits)
    if pa.types.is_boolean(t):
        flags: np.ndarray = pc.fill_null(column, False).to_numpy(zero_copy_only=False)
        return np.asarray(flags.astype(np.uint64) * np.uint64(top), dtype=np.uint64)
    if pa.types.is_date32(t):
        column = pc.cast(column, pa.int32())
    elif pa.types.is_temporal(t):
        column = pc.cast(column, pa.int64())
    try:
        floats = pc.cast(column, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ConfigError(f"Cannot order type {t} along a curve: {e}") from None
    return _scaled(pc.fill_null(floats, float("nan")).to_numpy(zero_copy_only=False), top)


def _ranked(column: pa.ChunkedArray, bits: int) -> np.ndarray:
    top = (1 << bits) - 1
    ranks = pc.rank(column, sort_keys="ascending", tiebreaker="dense").to_numpy()
    nulls = pc.is_null(column).to_numpy(zero_copy_only=False)
    dense = np.where(nulls, 0.0, ranks.astype(np.float64))  # values 1..k, nulls 0
    span = max(float(dense.max()) if dense.size else 0.0, 1.0)
    return (dense / span * top).astype(np.uint64)


def curve_coordinates(
    table: pa.Table, columns: Sequence[str], method: str, bits: int
) -> list[np.ndarray]:
    """One unsigned coordinate array per column (see the module notes)."""
    convert = _ranked if method == "sample" else _direct
    return [convert(table.column(c), bits) for c in columns]


def _interleave(coords: list[np.ndarray], bits: int) -> np.ndarray:
    out = np.zeros(coords[0].shape, dtype=np.uint64)
    one = np.uint64(1)
    for bit in range(bits - 1, -1, -1):
        shift = np.uint64(bit)
        for c in coords:
            out = (out << one) | ((c >> shift) & one)
    return out


def z_order_index(coords: list[np.ndarray], bits: int) -> np.ndarray:
    """Position on the z-order (Morton) curve: the coordinates' bits interleaved."""
    return _interleave(coords, bits)


def hilbert_index(coords: list[np.ndarray], bits: int) -> np.ndarray:
    """Position on the ``len(coords)``-dimensional Hilbert curve of order ``bits``."""
    x = [c.copy() for c in coords]
    n = len(x)
    top = np.uint64(1 << (bits - 1))
    q = top
    while q > 1:  # inverse undo excess work
        p = q - np.uint64(1)
        for i in range(n):
            high = (x[i] & q) != 0
            x[0] = np.where(high, x[0] ^ p, x[0])
            t = np.where(high, np.uint64(0), (x[0] ^ x[i]) & p)
            x[0] ^= t
            x[i] ^= t
        q >>= np.uint64(1)
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros(x[0].shape, dtype=np.uint64)
    q = top
    while q > 1:
        t = np.where((x[n - 1] & q) != 0, t ^ (q - np.uint64(1)), t)
        q >>= np.uint64(1)
    for i in range(n):
        x[i] ^= t
    return _interleave(x, bits)


def order_rows(table: pa.Table, columns: Sequence[str], strategy: str, method: str) -> pa.Table:
    """``table`` in the order clustering writes it (no columns: unchanged).

    Raises:
        ConfigError: a sort column the table does not have.
    """
    if not columns or table.num_rows == 0:
        return table
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ConfigError(
            f"Sort columns {missing} (hoodie.clustering.plan.strategy.sort.columns) are not "
            f"columns of the table ({', '.join(table.column_names)})"
        )
    if strategy == "linear":
        keys = [(c, "ascending", "at_start") for c in columns]
        return table.take(pc.sort_indices(table, sort_keys=keys))
    bits = _bits_for(len(columns))
    coords = curve_coordinates(table, columns, method, bits)
    index = hilbert_index(coords, bits) if strategy == "hilbert" else z_order_index(coords, bits)
    return table.take(pa.array(np.argsort(index, kind="stable")))
