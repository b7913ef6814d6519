"""Argument checks shared by every public function.

One place for the error messages: each names the argument and the problem, and every
check raises ``ValueError`` (``TypeError`` for values that are not real numbers) and never
returns NaN, because a NaN that slips past the edge surfaces later as a wrong number in
somebody's report.
"""

from __future__ import annotations

import importlib
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from types import ModuleType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from truescore_fast.errors import ArgumentError, ArgumentTypeError, SizeError, literal

__all__ = [
    "ALTERNATIVES",
    "MAX_COUNT",
    "MAX_THREADS",
    "Alternative",
    "MissingExtraError",
    "check_alpha",
    "check_bool",
    "check_index",
    "check_sequence",
    "check_array_size",
    "check_memory",
    "check_size",
    "check_labels",
    "check_open_unit",
    "check_population_sizes",
    "check_population_total",
    "group_offsets",
    "optional_module",
    "check_gaps",
    "check_choice",
    "check_n_threads",
    "check_population_size",
    "check_positive_int",
    "check_unit_interval",
    "threads_used",
    "check_same_length",
    "cluster_codes",
    "dropin_1d",
    "dropin_alpha",
    "finite_1d",
    "float_array",
    "format_bytes",
    "memory_error",
    "memory_limit",
    "one_line",
    "p_values_1d",
    "paired_1d",
    "real_scalar",
    "short_int",
]


def real_scalar(
    name: str,
    value: Any,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
    what: str = "",
) -> float:
    """``value`` as a float: one finite real number in ``low``..``high`` (``low_open`` /
    ``high_open``: that end excluded); the one check for real scalar arguments. A 0-d
    array counts as its element; a bool, a string, a complex number, ``None``, an array
    of one element or anything else that is not a real number is a ``TypeError`` naming
    ``name``; NaN, an infinity, an int beyond the largest double (``10**400``) or a value
    out of range a ``ValueError`` naming it, ``what`` appended (what the number means)."""
    inside = type(value) is float and (low < value or value == low and not low_open)
    if inside and (value < high or value == high and not high_open) and value - value == 0.0:
        return value  # a finite plain float in range: the common case
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating, Decimal)
    ):
        raise ArgumentTypeError(name, f"{name} must be a real number; got {one_line(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise ArgumentError(
            name, f"{name} is beyond the largest double; got {short_int(int(value))}"
        ) from None
    if not math.isfinite(number):
        raise ArgumentError(name, f"{name} must be a finite number; got {one_line(value)}")
    too_low = number <= low if low_open else number < low
    too_high = number >= high if high_open else number > high
    if too_low or too_high:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        span = f"{left}{low:g}, {high:g}{right}"
        raise ArgumentError(name, f"{name} must lie in {span}{what}; got {one_line(value)}")
    return number


def check_alpha(alpha: float, name: str = "alpha") -> float:
    """``alpha`` (returned as given) if it is one real number strictly between 0 and 1:
    :func:`real_scalar`'s checks, so never an array a binding would choke on."""
    if type(alpha) is float and 1e-323 <= alpha < 1.0:  # the common case (alpha / 2 > 0)
        return alpha
    if isinstance(alpha, np.ndarray) and alpha.ndim == 0:
        alpha = alpha[()]
    value = real_scalar(name, alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    if value / 2.0 == 0.0:
        raise ArgumentError(
            name,
            f"{name} must be at least 1e-323 (alpha / 2, a two-sided tail, underflows to 0 "
            f"below it); got {one_line(value)}",
        )
    return alpha


def dropin_alpha(alpha: Any, name: str = "alpha") -> Any:
    """``alpha`` if ``0 < alpha < 1``, checked as truescore checks it (the drop-ins)."""
    if not 0.0 < alpha < 1.0:
        raise ArgumentError(name, f"{name} must lie in (0, 1); got {alpha}")
    return alpha


_REAL_KINDS = "biuf"  # bool, signed and unsigned integers, floats


# ---- Memory ------------------------------------------------------------------------------
#
# One place for "this would need more memory than there is": the compiled core's
# (truescore/memory.hpp), which its own checks use too, so every such error reads the same
# way, names the argument that sets the size and says how to reduce it.


def format_bytes(nbytes: float) -> str:
    """``nbytes`` for people: "512 bytes", "3.2 MB", "24.0 GB", "8.0 EB" (powers of 1000)."""
    from truescore_fast import _core

    return _core.format_bytes(float(nbytes))


# Where the memory that can still be had is read (names a test can point elsewhere)
_MEMINFO = "/proc/meminfo"
_SELF_CGROUP = "/proc/self/cgroup"
_CGROUP_ROOT = "/sys/fs/cgroup"
_ADDRESS_SPACE = True  # the address-space limit (ulimit -v) too


def memory_limit() -> int | None:
    """Most bytes one allocation can hope to get now: the machine's available memory
    (Linux's ``MemAvailable``, not its total; the physical memory without /proc), or less
    when the cgroup's limit less its use (v2 ``memory.max`` - ``memory.current``; v1 too)
    or the address-space limit (``ulimit -v``) is lower; ``None`` when none is known."""
    from truescore_fast import _core

    return _core.memory_limit(
        meminfo=_MEMINFO,
        self_cgroup=_SELF_CGROUP,
        cgroup_root=_CGROUP_ROOT,
        address_space=_ADDRESS_SPACE,
    )


def memory_error(name: str, nbytes: float, advice: str | None = None) -> SizeError:
    """The error for ``name`` needing ``nbytes`` that cannot be had (one line; the core's
    words). ``advice`` says how to need less (default "use a smaller <name>"): a template
    whose argument names are in braces ("use fewer {n_shards}", other braces doubled),
    so the command line can write them as its flags."""
    from truescore_fast import _core

    error: SizeError = _core.memory_error(name, float(nbytes), advice, memory_limit())
    return error


def check_memory(name: str, nbytes: float, advice: str | None = None) -> None:
    """Raise :func:`memory_error` unless ``nbytes`` (an estimate made before allocating,
    set by the argument ``name``) fits in :func:`memory_limit`."""
    limit = memory_limit()
    if not nbytes < (limit if limit else 2.0**62):
        raise memory_error(name, nbytes, advice)


def _field(name: str) -> str:
    """``name`` in an advice template: a field when it is an argument's name."""
    return f"{{{name}}}" if name.isidentifier() else literal(name)


_SMALL_COPY = 1 << 23  # elements: a copy below 64 MB needs no look at the machine


def check_size(
    name: str, count: float, bytes_per_value: float = 8.0, advice: str | None = None
) -> None:
    """The check before allocating: raise :class:`SizeError` (one line naming ``name``)
    when ``count`` values of ``bytes_per_value`` bytes each, a size the argument ``name``
    sets, cannot fit in :func:`memory_limit`. Pass the count as computed from the
    arguments, before any allocation (a float product, so it never overflows); ``name``
    may name a product ("n_shards x max_permutations") when several arguments set it."""
    check_memory(name, float(count) * float(bytes_per_value), advice)


def check_array_size(name: str, values: Any, bytes_per_value: float | None = None) -> None:
    """:func:`check_size` for an array argument, before the work on it allocates: a
    zero-stride ``np.broadcast_to`` view has a logical size far beyond the memory it
    occupies, and the first mask or copy of it (``np.isfinite``, a float64 conversion)
    would allocate that size. ``bytes_per_value`` defaults to what validating it costs
    per value: a boolean mask, and a float64 copy unless it is already C-contiguous
    float64. Anything without a NumPy ``size`` (a list: it exists already) passes."""
    size = getattr(values, "size", None)
    if not isinstance(size, (int, np.integer)) or size < _SMALL_COPY:
        return
    if bytes_per_value is None:
        dtype = getattr(values, "dtype", None)
        flags = getattr(values, "flags", None)
        in_place = dtype == np.float64 and flags is not None and flags.c_contiguous
        bytes_per_value = 1.0 if in_place else 9.0
    check_size(name, float(size), bytes_per_value, f"pass a smaller {_field(name)}")


def _check_copy(name: str, arr: npt.NDArray[Any], itemsize: int = 8) -> None:
    """Refuse an array whose C-contiguous float64 copy cannot fit in memory when a copy
    is coming: another dtype, or a layout that is not C-contiguous (a zero-stride
    ``np.broadcast_to`` view of one row, which costs nothing until it is copied)."""
    if arr.size >= _SMALL_COPY and (arr.dtype != np.float64 or not arr.flags.c_contiguous):
        check_memory(
            name,
            float(arr.size) * itemsize,
            f"pass a smaller {_field(name)}, or a C-contiguous float64 array (read in place)",
        )


def float_array(
    name: str, values: npt.ArrayLike, keep_strides: bool = False
) -> npt.NDArray[np.float64]:
    """``values`` as a float64 array; a float64 array comes back as the same object.

    Only real numbers are converted: complex values (whose imaginary part a cast would
    drop), dates, durations, strings (even numeric ones) and other objects raise
    ``TypeError`` naming the argument; a ragged nesting raises ``ValueError``. An array
    whose float64 C-contiguous copy would not fit in memory (say a zero-stride
    ``np.broadcast_to`` view) raises ``MemoryError`` naming the argument, unless
    ``keep_strides`` (the caller reads it strided, without that copy).
    """
    if type(values) is np.ndarray and values.dtype == np.float64:
        if not keep_strides:
            _check_copy(name, values)
        return values
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as error:
        raise ArgumentError(name, f"{name} must be an array of numbers: {error}") from error
    kind = raw.dtype.kind
    if kind == "O":
        odd = [v for v in raw.flat if not isinstance(v, (numbers.Real, Decimal))][:1]
        if odd:
            raise ArgumentTypeError(
                name,
                f"{name} must hold real numbers; got a {type(odd[0]).__name__} "
                f"({one_line(odd[0], 40)})",
            )
    elif kind not in _REAL_KINDS:
        raise ArgumentTypeError(name, f"{name} must hold real numbers; got dtype {raw.dtype}")
    if raw.dtype != np.float64 or not keep_strides:
        _check_copy(name, raw)
    try:
        return np.asarray(raw, dtype=np.float64)
    except OverflowError as error:  # a Python int beyond the largest double
        raise ArgumentError(
            name, f"{name} holds a number too large for a double: {error}"
        ) from error


def finite_1d(name: str, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``values`` as a non-empty, 1-D, all-finite float64 array."""
    return _nonempty_finite_1d(name, float_array(name, values))


def _nonempty_finite_1d(name: str, arr: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``arr`` itself if it is 1-D, non-empty and all finite (truescore's three checks)."""
    if arr.ndim != 1:
        raise ArgumentError(name, f"{name} must be 1-D; got shape {arr.shape}")
    if arr.size == 0:
        raise ArgumentError(name, f"{name} must be non-empty")
    if not np.isfinite(arr).all():
        raise ArgumentError(name, f"{name} contains non-finite values")
    return arr


def p_values_1d(
    name: str, values: npt.ArrayLike, *, dropin: bool = False
) -> npt.NDArray[np.float64]:
    """``values`` as a non-empty, 1-D float64 array of p-values, each in [0, 1].

    ``dropin=True``: converted as truescore converts them (``holm`` and
    ``benjamini_hochberg`` are drop-ins); otherwise as :func:`finite_1d` (non-real values
    are a ``TypeError`` naming ``name``).
    """
    arr = dropin_1d(name, values) if dropin else finite_1d(name, values)
    if np.any((arr < 0.0) | (arr > 1.0)):
        raise ArgumentError(name, f"{name} must lie in [0, 1]")
    return arr


# Largest count the compiled core takes (an int64), and the largest thread count (an
# int; the core starts at most 4 threads per core whatever is asked for).
MAX_COUNT = 2**63 - 1
MAX_THREADS = 2**31 - 1


def check_positive_int(name: str, value: Any, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """``value`` as an int in [``minimum``, ``maximum``] (bools and floats are refused)."""
    if type(value) is int and minimum <= value <= maximum:  # the common case
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentError(name, f"{name} must be an integer; got {one_line(value)}")
    if value < minimum:
        raise ArgumentError(name, f"{name} must be at least {minimum}; got {value}")
    if value > maximum:
        raise ArgumentError(name, f"{name} must be at most {maximum}; got {value}")
    return int(value)


def check_index(name: str, value: Any, size: int, of: str) -> int:
    """``value`` as an index into ``size`` items (``of`` names them in the message): an
    integer from 0 to size - 1 (no negative index: -1 would quietly mean the last)."""
    index = check_positive_int(name, value, minimum=0)
    if index >= size:
        raise ArgumentError(name, f"{name} must be below {of} ({size}); got {index}")
    return index


def check_n_threads(n_threads: int | None) -> int | None:
    """``None`` (every usable CPU) or a positive thread count (the core caps it per usable
    CPU: :func:`threads_used`)."""
    if n_threads is None:
        return None
    return check_positive_int("n_threads", n_threads, maximum=MAX_THREADS)


def threads_used(n_threads: int | None) -> int:
    """Threads a call runs on for a checked ``n_threads`` (what Python-side work split by
    thread, such as the calibration engine's chunks, must size itself by): the compiled
    core's one thread policy (parallel.hpp: ``resolve_threads``), asked, not copied."""
    from truescore_fast import _core

    return _core.resolve_threads(0 if n_threads is None else n_threads)


def check_gaps(name: str, values: npt.ArrayLike, ndim: int = 1) -> npt.NDArray[np.float64]:
    """Gaps as a C-contiguous float64 array of ``ndim`` dimensions, finite and in [-1, 1],
    with at least two parents (the last axis)."""
    arr = np.ascontiguousarray(float_array(name, values))
    if arr.ndim != ndim:
        raise ArgumentError(name, f"{name} must be {ndim}-D; got shape {arr.shape}")
    if arr.shape[-1] < 2:
        raise ArgumentError(name, f"{name} needs at least 2 parents; got {arr.shape[-1]}")
    if not np.isfinite(arr).all():
        raise ArgumentError(name, f"{name} contains non-finite values (NaN or inf)")
    if arr.size and (arr.min() < -1.0 or arr.max() > 1.0):
        raise ArgumentError(
            name,
            f"{name} must lie in [-1, 1] (a gap is public minus mean fresh correctness); "
            f"got values in [{arr.min():.6g}, {arr.max():.6g}]",
        )
    return arr


def check_unit_interval(name: str, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Correctness scores as a float64 array, finite and in [0, 1]."""
    arr = float_array(name, values)
    # min and max first (a NaN makes both NaN, an infinity lies outside [0, 1]): the
    # finiteness check runs only when the range check fails, and decides the message.
    if arr.size and (arr.min() >= 0.0 and arr.max() <= 1.0):
        return arr
    if not np.isfinite(arr).all():
        raise ArgumentError(name, f"{name} contains non-finite values (NaN or inf)")
    if arr.size:
        raise ArgumentError(
            name,
            f"{name} must lie in [0, 1] (correctness, binary or averaged); "
            f"got values in [{arr.min():.6g}, {arr.max():.6g}]",
        )
    return arr


def check_population_size(
    population_size: Any, n: int, name: str = "population_size"
) -> int | None:
    """``None`` or an integer N no smaller than the sample size ``n``."""
    if population_size is None:
        return None
    if isinstance(population_size, np.ndarray) and population_size.ndim == 0:
        population_size = population_size[()]
    if isinstance(population_size, (float, np.floating)) and float(population_size).is_integer():
        population_size = int(population_size)
    if isinstance(population_size, bool) or not isinstance(population_size, (int, np.integer)):
        raise ArgumentError(
            name,
            f"{name} must be an integer (the number of parents N); "
            f"got {one_line(population_size)}",
        )
    if population_size < n:
        raise ArgumentError(
            name,
            f"{name} must be at least the number of sampled parents n = {n}; "
            f"got {population_size}",
        )
    if population_size >= _INT64_LIMIT:
        raise _too_large(name, short_int(int(population_size)))
    return int(population_size)


def short_int(value: int) -> str:
    """An int for a message: as is up to 19 digits, else like ``1.00000e+400`` (which
    ``f"{value:.6g}"`` cannot do beyond the largest double)."""
    digits = str(abs(value))
    if len(digits) <= 19:
        return str(value)
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:6]}e+{len(digits) - 1}"


def one_line(value: Any, width: int = 80) -> str:
    """``repr(value)`` for an error message: on one line (a 2-D array's repr spans
    several) and at most ``width`` characters."""
    text = re.sub(r"\s*\n\s*", " ", repr(value))
    return text if len(text) <= width else f"{text[: width - 3]}..."


def check_bool(name: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` if it is True or False (a NumPy bool too; ``None`` with ``optional``).
    Anything else (``"no"``, which is truthy, ``1``, an array) is a ``TypeError`` naming
    ``name``, never read as its truth value."""
    if isinstance(value, (bool, np.bool_)) or (optional and value is None):
        return value
    allowed = "True, False or None" if optional else "True or False"
    raise ArgumentTypeError(name, f"{name} must be {allowed}; got {one_line(value)}")


def check_sequence(name: str, value: Any, what: str = "values") -> tuple[Any, ...]:
    """``value`` as a tuple: a list, tuple, 1-D array or other ordered sequence. A string
    (which would be read one character at a time: ``names="abc"`` is not three names), a
    mapping, a set (no order) or a single value is a ``TypeError`` naming ``name``."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ArgumentError(
                name, f"{name} must be a 1-D sequence of {what}; got shape {value.shape}"
            )
        return tuple(value.tolist())
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        kind = "a string" if isinstance(value, (str, bytes)) else f"a {type(value).__name__}"
        if isinstance(value, Mapping):
            kind = "a mapping"
        raise ArgumentTypeError(
            name, f"{name} must be a sequence of {what}, not {kind}; got {one_line(value)}"
        )
    return tuple(value)


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices`` (compared as given, so case matters)."""
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ArgumentError(name, f"{name} must be one of {options}; got {one_line(value)}")
    return value


def paired_1d(
    name_a: str, a: npt.ArrayLike, name_b: str, b: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Two non-empty, 1-D, all-finite float64 arrays of the same length (paired data)."""
    arr_a = finite_1d(name_a, a)
    arr_b = finite_1d(name_b, b)
    if arr_a.shape != arr_b.shape:
        raise ArgumentError(
            name_a,
            f"{name_a} and {name_b} must have the same length (one value per pair); "
            f"got {arr_a.size} and {arr_b.size}",
        )
    return arr_a, arr_b


def check_same_length(name_a: str, a: npt.NDArray[Any], name_b: str, b: npt.NDArray[Any]) -> None:
    """Raise ``ValueError`` unless the 1-D arrays ``a`` and ``b`` have equal length."""
    if a.shape[0] != b.shape[0]:
        raise ArgumentError(
            name_a,
            f"{name_a} and {name_b} must have the same length; got {a.shape[0]} and {b.shape[0]}",
        )


def cluster_codes(
    name: str, labels: npt.ArrayLike, expected: int
) -> tuple[npt.NDArray[np.int64], int]:
    """Cluster labels (any sortable values) as codes 0..G-1, and G.

    Raises ``ValueError`` unless ``labels`` is 1-D with one entry per observation (in
    truescore's words: ``paired_bootstrap(clusters=...)`` is a drop-in).
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ArgumentError(name, f"{name} must be one-dimensional; got shape {arr.shape}")
    if arr.shape[0] != expected:
        raise ArgumentError(
            name,
            f"{name} has {arr.shape[0]} entries but there are {expected} observations; "
            "every observation needs to say which cluster it belongs to",
        )
    uniques, inverse = np.unique(arr, return_inverse=True)
    return np.asarray(inverse, dtype=np.int64).ravel(), int(uniques.shape[0])


def check_open_unit(name: str, value: Any) -> float:
    """``value`` as a float strictly between 0 and 1: a confidence level, a step, a share.

    (:func:`check_alpha` is for error rates; this is for everything else in (0, 1).)
    """
    return real_scalar(name, value, low=0.0, high=1.0, low_open=True, high_open=True)


def check_population_sizes(
    name: str, sizes: Any, n: Any, labels: Sequence[str] | None = None
) -> npt.NDArray[np.int64]:
    """Several population sizes at once (one per audit, one per stratum) as int64.

    ``sizes[j]`` must be an integer (an integer-valued float is accepted) no smaller than
    its sample size ``n[j]`` (``n`` may be one int for all). ``labels[j]`` names entry j
    in the message (``"stratum 'a'"``). The vector form of :func:`check_population_size`.
    """
    arr = np.asarray(sizes)
    if arr.ndim != 1:
        raise ArgumentError(
            name, f"{name} must be a scalar or a 1-D sequence; got shape {arr.shape}"
        )
    if (
        arr.dtype.kind == "O"
        and arr.size
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr)
    ):  # Python ints beyond uint64
        if max(int(v) for v in arr) >= _INT64_LIMIT:
            raise _too_large(name, short_int(max(int(v) for v in arr)))
    if arr.dtype.kind not in "iuf" or (
        arr.dtype.kind == "f" and not (np.isfinite(arr) & (arr == np.round(arr))).all()
    ):
        raise ArgumentError(
            name, f"{name} must hold integers (population sizes N); got {one_line(sizes)}"
        )
    if arr.size and arr.max() >= _INT64_LIMIT:
        raise _too_large(name, f"{arr.max():.6g}")
    need = np.broadcast_to(np.asarray(n, dtype=np.int64), arr.shape)
    short = np.flatnonzero(arr < need)
    if short.size:
        j = int(short[np.argmin(arr[short])])
        where = "" if labels is None else f" for {labels[j]}"
        raise ArgumentError(
            name, f"{name}{where} must be at least the sample size n = {need[j]}; got {arr[j]:.0f}"
        )
    return arr.astype(np.int64)


_INT64_LIMIT = 2**63  # a size must be below it to be held by an int64


def _too_large(name: str, got: str) -> ArgumentError:
    return ArgumentError(
        name, f"{name} must be below 2**63 (sizes are counted in 64-bit integers); got {got}"
    )


def check_population_total(name: str, sizes: npt.NDArray[np.int64]) -> int:
    """The sum of validated population sizes (one per stratum), if an int64 holds it."""
    total = sum(int(v) for v in sizes)
    if total >= _INT64_LIMIT:
        raise ArgumentError(
            name,
            f"{name} sums to {total:.6g} over the strata, more than 64-bit integer arithmetic "
            "holds (2**63 - 1)",
        )
    return total


def check_labels(name: str, labels: npt.ArrayLike, size: int, unit: str = "observation") -> Any:
    """``labels`` as a 1-D array with one label per ``unit`` (``size`` of them), finite
    when numeric and mutually comparable (they are sorted to form groups)."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ArgumentError(name, f"{name} must be 1-D; got shape {arr.shape}")
    if arr.shape[0] != size:
        raise ArgumentError(
            name, f"{name} must hold one label per {unit} ({size}); got {arr.shape[0]}"
        )
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ArgumentError(name, f"{name} contains non-finite labels")
    return arr


def group_offsets(
    name: str, labels: npt.ArrayLike
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64], npt.NDArray[Any]]:
    """Group observations by label: ``(order, offsets, uniques)``.

    ``order`` sorts the observations stably by label, so group g (the g-th smallest label,
    ``uniques[g]``) is ``order[offsets[g]:offsets[g + 1]]``, in its original order.
    """
    try:
        uniques, codes = np.unique(np.asarray(labels), return_inverse=True)
    except TypeError as error:
        raise ArgumentError(name, f"{name} labels must be mutually comparable: {error}") from error
    codes = codes.reshape(-1)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=uniques.shape[0])
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return order, offsets, uniques


class MissingExtraError(ImportError):
    """An optional dependency of truescore_fast is not installed (the message says which
    and how to install it; the command line prints it as a one-line error)."""


def optional_module(
    module: str, *, requirement: str, extra: str | None, purpose: str
) -> ModuleType:
    """``import module``, or :class:`MissingExtraError` naming who needs it and the fix.

    ``requirement`` is the distribution to install (``"scikit-learn>=1.3"``), ``extra``
    the truescore-fast extra that provides it (None: install the requirement itself),
    ``purpose`` what needs it (``"Audit-Prune"``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        fix = f"pip install 'truescore-fast[{extra}]'" if extra else f"pip install '{requirement}'"
        raise MissingExtraError(
            f"{purpose} needs {requirement}, which is not installed: {fix}"
        ) from error


Alternative = Literal["greater", "less", "two-sided"]
ALTERNATIVES: tuple[str, ...] = ("greater", "less", "two-sided")


# --- The truescore drop-ins ------------------------------------------------------------
# A drop-in raises what truescore 0.7.4 raises for the same input: the same message, as
# the same type (an argument check's ArgumentError is a ValueError, as truescore's). Its
# array arguments go through np.asarray(values, dtype=float), whose own TypeError or
# ValueError (a set, a dict, a generator, a complex number, a string) is what truescore
# raises too; then the same shape and finiteness checks in the same words.


def dropin_1d(name: str, values: Any) -> npt.NDArray[np.float64]:
    """``values`` as a non-empty, 1-D, all-finite float array, checked as truescore does
    (one too large to check, say a zero-stride view of 10**10 values, is refused first)."""
    check_array_size(name, values)
    return _nonempty_finite_1d(name, np.asarray(values, dtype=float))
