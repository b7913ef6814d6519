"""A suite's scores: every (model, benchmark) pair's public, fresh and reference scores
(:class:`SuiteData`), read from one long table by :func:`read_suite`.

The table has one row per (model, benchmark, parent, form) with the columns ``model``,
``benchmark``, ``parent``, ``form`` and ``correct`` (other names with ``columns=``):

* ``form`` ``public`` (``public_form``): the item as the benchmark publishes it;
* any other form except ``reference``: a fresh form of the parent (``fresh1``,
  ``fresh2``, ...); a parent with fresh forms needs its public form too, and every parent
  of a (model, benchmark) with fresh forms needs the same fresh forms;
* ``reference`` (``reference_form``): the model's score on an item of a separate
  reference benchmark of the same task, its own parents (ConStat's reference; the fresh
  forms serve as its "rephrased" reference when there are no reference rows).

``correct`` is a number in [0, 1]. A pair may lack fresh forms (then only ConStat can
test it, against reference rows) and parents may have a public form without fresh forms
(a public run over the whole benchmark; the matched-form tests use the parents that have
both). Log-likelihood tables for the order-based test are given per pair with
``logliks={(model, benchmark): table}``, each in the format of the ``contamination``
command: a ``kind`` column (``canonical`` marks the published order, anything else a
shuffled order), a ``loglik`` column and optionally a ``shard`` column.

A manifest of harness runs (one row per (model, benchmark, form) naming a file) is read
by :func:`truescore_fast.io.read_suite_manifest` into the same :class:`SuiteData`.

What the data do not say: the reader checks that the rows fit together; it cannot check
that the fresh forms are faithful rewrites, that the reference benchmark measures the
same skill, or that the models were scored with the same prompts and settings.
"""

from __future__ import annotations

import math
import os
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._files import read_columns
from truescore_fast._text import NameSpellings
from truescore_fast._validation import one_line
from truescore_fast.errors import ArgumentError

__all__ = [
    "SUITE_COLUMNS",
    "OrderData",
    "SuiteData",
    "SuitePair",
    "read_order_table",
    "read_suite",
]

#: The roles of a suite table's columns (``columns=`` maps a role to another name).
SUITE_COLUMNS: tuple[str, ...] = ("model", "benchmark", "parent", "form", "correct")

_EMPTY = np.zeros(0, dtype=np.float64)


@dataclass(frozen=True)
class OrderData:
    """A pair's log-likelihoods for the order-based test: per shard (one shard ``"all"``
    without a shard column) the published order's value and the shuffled orders'."""

    shards: tuple[str, ...]
    canonical: npt.NDArray[np.float64]  # (r,)
    shuffled: tuple[npt.NDArray[np.float64], ...]  # r arrays


@dataclass(frozen=True)
class SuitePair:
    """One (model, benchmark): ``public`` (n,) over ``parents``; ``matched_public`` (n_f,)
    and ``fresh`` (n_f, K) over ``fresh_parents`` (the parents with fresh forms, K forms
    named ``fresh_forms``; n_f = 0 without); ``reference`` (n_r,) over
    ``reference_parents``; ``order`` the log-likelihoods, or None."""

    model: str
    benchmark: str
    parents: tuple[str, ...]
    public: npt.NDArray[np.float64]
    fresh_parents: tuple[str, ...] = ()
    fresh_forms: tuple[str, ...] = ()
    matched_public: npt.NDArray[np.float64] = field(default_factory=lambda: _EMPTY)
    fresh: npt.NDArray[np.float64] = field(default_factory=lambda: _EMPTY.reshape(0, 0))
    reference_parents: tuple[str, ...] = ()
    reference: npt.NDArray[np.float64] = field(default_factory=lambda: _EMPTY)
    order: OrderData | None = None

    @property
    def has_fresh(self) -> bool:
        """Whether the matched-form tests apply (at least 2 parents with fresh forms)."""
        return len(self.fresh_parents) >= 2


@dataclass(frozen=True)
class SuiteData:
    """Every (model, benchmark) pair of a suite, in order of first appearance."""

    pairs: tuple[SuitePair, ...]

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.model for p in self.pairs))

    @property
    def benchmarks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.benchmark for p in self.pairs))

    def pair(self, model: str, benchmark: str) -> SuitePair | None:
        """The pair's data, or None when the suite has none."""
        for argument, given in (("model", model), ("benchmark", benchmark)):
            if not isinstance(given, str):
                raise ValueError(f"{argument} must be a string; got {one_line(given)}")
        return next((p for p in self.pairs if (p.model, p.benchmark) == (model, benchmark)), None)

    @classmethod
    def from_scores(
        cls,
        forms: Mapping[tuple[str, str], Mapping[str, Mapping[str, float]]],
        *,
        references: Mapping[tuple[str, str], Mapping[str, float]] | None = None,
        orders: Mapping[tuple[str, str], OrderData] | None = None,
        public_form: str = "public",
    ) -> SuiteData:
        """A suite from checked scores: ``forms[(model, benchmark)][parent][form]`` (the
        public form named ``public_form``, any other a fresh form),
        ``references[(model, benchmark)][reference parent]`` and ``orders``. Pairs in the
        order of ``forms`` and then of the pairs only ``references`` has."""
        if not isinstance(public_form, str) or not public_form:
            raise ValueError(
                f"public_form must be a non-empty string; got {one_line(public_form)}"
            )
        references = {} if references is None else references
        orders = {} if orders is None else orders
        _check_scores("forms", forms, 2)
        _check_scores("references", references, 1)
        _check_keyed("orders", orders)
        for key, order in orders.items():
            if not isinstance(order, OrderData):
                raise ValueError(f"orders[{key!r}] must be OrderData; got {one_line(order)}")
        keys = list(dict.fromkeys([*forms, *references]))
        return cls(
            tuple(
                _pair(
                    key, forms.get(key, {}), references.get(key, {}), public_form, orders.get(key)
                )
                for key in keys
            )  # fmt: skip
        )


def _check_keyed(name: str, mapping: Any) -> None:
    if not isinstance(mapping, Mapping):
        raise ValueError(f"{name} must map (model, benchmark) pairs; got {one_line(mapping)}")
    for key in mapping:
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key)):
            raise ValueError(f"{name} keys must be (model, benchmark) pairs; got {one_line(key)}")


def _check_scores(name: str, mapping: Any, depth: int) -> None:
    """``mapping[(model, benchmark)]`` nested ``depth`` mappings deep (parent, then form)
    down to scores in [0, 1]."""
    _check_keyed(name, mapping)

    def walk(value: Any, where: str, level: int) -> None:
        if level == 0:
            _score(value, where, "the score")
            return
        if not isinstance(value, Mapping):
            raise ValueError(f"{where} must be a mapping; got {one_line(value)}")
        for label, inner in value.items():
            if not isinstance(label, str):
                raise ValueError(f"{where} keys must be strings; got {one_line(label)}")
            walk(inner, f"{where}[{label!r}]", level - 1)

    for key, value in mapping.items():
        walk(value, f"{name}[{key!r}]", depth)


def _column_names(columns: Mapping[str, str] | None) -> dict[str, str]:
    names = {role: role for role in SUITE_COLUMNS}
    if columns is None:
        return names
    if not isinstance(columns, Mapping):
        raise ValueError(
            f"columns must map roles ({', '.join(SUITE_COLUMNS)}) to column names; got "
            f"{one_line(columns)}"
        )
    for role, name in columns.items():
        if role not in names:
            raise ValueError(f"columns: unknown role {role!r}; the roles are {SUITE_COLUMNS}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"columns: {role!r} must name a column; got {one_line(name)}")
        names[role] = name.strip()
    if len(set(names.values())) < len(names):
        raise ValueError(f"columns must name {len(names)} different columns; got {names}")
    return names


def _label(value: Any) -> str:
    """A cell as a label; a missing cell (None, or NaN as pandas fills one) is empty."""
    if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return ""
    return str(value).strip()


def _score(raw: Any, where: str, column: str) -> float:
    try:
        value = float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {column} must be a number; got {one_line(raw)}") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{where}: {column} must lie in [0, 1]; got {value}")
    return value


def read_suite(
    source: Any,
    *,
    columns: Mapping[str, str] | None = None,
    public_form: str = "public",
    reference_form: str = "reference",
    logliks: Mapping[tuple[str, str], Any] | None = None,
) -> SuiteData:
    """Read a suite from one long table (see the module docstring for its rows).

    Args:
        source: A path to a CSV, TSV, JSON Lines or Parquet table (gzip-compressed or not;
            ``"-"`` is standard input), an open CSV text file, or a mapping of columns (a
            pandas DataFrame works).
        columns: Column names by role, for names other than the roles' own:
            ``{"model": "system", "correct": "acc"}``; roles ``model``, ``benchmark``,
            ``parent``, ``form``, ``correct``.
        public_form: The form value marking the public form.
        reference_form: The form value marking a reference-benchmark item.
        logliks: ``{(model, benchmark): table}``: each pair's log-likelihoods for the
            order-based test, a path or a mapping of columns in the ``contamination``
            format (``kind``, ``loglik``, optional ``shard``). A path that is relative is
            read as given (from the working directory).

    Returns:
        A :class:`SuiteData`, pairs in order of first appearance.

    Raises:
        ValueError: a missing column, an empty label, a correctness that is not a number
            in [0, 1], a (model, benchmark, parent, form) given twice, a parent with fresh
            forms but no public form, parents of one pair with different fresh forms, a
            log-likelihood table for a pair the suite lacks or that cannot be used.
    """
    names = _column_names(columns)
    for argument, given in (("public_form", public_form), ("reference_form", reference_form)):
        if not isinstance(given, str) or not given.strip():
            raise ValueError(f"{argument} must be a non-empty string; got {one_line(given)}")
    if public_form.strip() == reference_form.strip():
        raise ArgumentError("public_form", "public_form and reference_form must differ")
    fast = _read_coded(source, names, public_form.strip(), reference_form.strip())
    if fast is not None:
        keys, forms_of, references_of = fast
        orders = _orders(logliks, set(keys))
        return SuiteData(
            tuple(
                _coded_pair(key, forms_of.get(key), references_of.get(key), orders.get(key))
                for key in keys
            )
        )
    cols = read_columns(source, "source", expected=", ".join(names.values()))
    missing = [names[r] for r in SUITE_COLUMNS if names[r] not in cols]
    if missing and "path" in cols:
        raise ValueError(
            "source has a path column: it looks like a manifest of harness runs; read it with "
            "truescore_fast.read_suite_manifest(...) (the command line does so itself)"
        )
    if missing:
        raise ValueError(
            f"source is missing the column(s) {missing} (need "
            f"{', '.join(names[r] for r in SUITE_COLUMNS)}; columns= maps other names); got "
            f"{sorted(cols)}"
        )
    grouped: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    references: dict[tuple[str, str], dict[str, float]] = {}
    reference_name = reference_form.strip()
    rows = len(cols[names["parent"]])
    if rows == 0:
        raise ArgumentError("source", "source has no rows")
    spellings = NameSpellings()  # names stripped; two spellings of one name refused
    named = f"source {source}" if isinstance(source, (str, os.PathLike)) else "source"
    for i in range(rows):
        model, benchmark, parent, form = (
            _label(cols[names[r]][i]) for r in ("model", "benchmark", "parent", "form")
        )
        where = f"{named} row {i + 1}"
        if not (model and benchmark and parent and form):
            raise ValueError(f"{where}: empty model, benchmark, parent or form")
        spellings.check("model", cols[names["model"]][i], where)
        spellings.check("benchmark", cols[names["benchmark"]][i], where)
        value = _score(cols[names["correct"]][i], where, names["correct"])
        if form == reference_name:
            reference = references.setdefault((model, benchmark), {})
            if parent in reference:
                raise ValueError(
                    f"{where}: reference item {parent!r} given twice (model {model!r}, "
                    f"benchmark {benchmark!r})"
                )
            reference[parent] = value
            continue
        forms = grouped.setdefault((model, benchmark), {}).setdefault(parent, {})
        if form in forms:
            raise ValueError(
                f"{where}: form {form!r} of parent {parent!r} given twice (model {model!r}, "
                f"benchmark {benchmark!r})"
            )
        forms[form] = value
    orders = _orders(logliks, set(grouped) | set(references))
    return SuiteData.from_scores(
        grouped, references=references, orders=orders, public_form=public_form.strip()
    )


# ---- the fast path: a CSV, TSV or Parquet file read by pyarrow into codes -------------
#
# The rows become integer codes (dictionary-encoded labels) and one float64 array; the
# grouping is done with NumPy sorts, and each pair's arrays are slices. Anything the fast
# path does not accept as it is (a label with surrounding spaces or empty, a score that is
# not a number in [0, 1], a duplicate row, a parent without its public form, parents with
# different fresh forms, another column type) sends the file to the row-by-row reader,
# which names the row and what is wrong: the two give the same SuiteData on a good file.

_Coded = tuple[
    list[tuple[str, str]],
    dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...], npt.NDArray[np.float64]]],
    dict[tuple[str, str], tuple[tuple[str, ...], npt.NDArray[np.float64]]],
]


def _arrow_table(source: Any, names: Mapping[str, str]) -> Any:
    """The table as pyarrow reads it (labels dictionary-encoded, scores float64), or None
    when pyarrow is absent, the source is not a CSV/TSV/Parquet path, or pyarrow cannot
    read it as such (the row-by-row reader then says why). A plain file is streamed from
    disk (its bytes are never held whole); a gzip file is decompressed by
    ``read_input_bytes``, whose budget refuses one that would not fit in memory."""
    from truescore_fast._files import STDIN, check_input_file, read_input_bytes, table_suffix

    if not isinstance(source, (str, os.PathLike)) or str(source) == STDIN:
        return None
    kind = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".parquet": "parquet", ".pq": "parquet"}
    delimiter = kind.get(table_suffix(source))
    if delimiter is None:
        return None
    try:
        import pyarrow as pa
        import pyarrow.csv as pa_csv
        import pyarrow.parquet as pa_parquet
    except ImportError:
        return None
    path = check_input_file(source)
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    # pyarrow skips a UTF-8 byte-order mark (Excel's "CSV UTF-8"), as the row reader does
    stream: Any = pa.BufferReader(read_input_bytes(source)[1]) if gzipped else str(path)
    labels = pa.dictionary(pa.int32(), pa.string())
    try:
        if delimiter == "parquet":
            return pa_parquet.read_table(stream)
        types = {names[r]: labels for r in ("model", "benchmark", "parent", "form")}
        types[names["correct"]] = pa.float64()
        return pa_csv.read_csv(
            stream,
            parse_options=pa_csv.ParseOptions(delimiter=delimiter),
            convert_options=pa_csv.ConvertOptions(column_types=types, strings_can_be_null=False),
        )
    except (pa.ArrowException, OSError, ValueError):
        return None


def _numbers(chunks: Sequence[Any]) -> npt.NDArray[Any]:
    """Numeric pyarrow arrays without nulls as one NumPy array, read from their buffers
    where they are plain numbers (pyarrow's own to_numpy imports pandas, ~0.2 s)."""
    import pyarrow as pa

    parts = []
    for chunk in chunks:
        kind = chunk.type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)) or chunk.null_count:
            parts.append(chunk.to_numpy(zero_copy_only=False))
            continue
        letter = "f" if pa.types.is_floating(kind) else "iu"[pa.types.is_unsigned_integer(kind)]
        dtype = np.dtype(f"{letter}{kind.bit_width // 8}")
        at = chunk.offset * dtype.itemsize
        parts.append(np.frombuffer(chunk.buffers()[1], dtype, count=len(chunk), offset=at))
    return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.empty(0)


def _codes(column: Any) -> tuple[npt.NDArray[np.int32], list[str]] | None:
    """A label column's codes and labels, or None when a label is missing, empty or has
    surrounding spaces."""
    import pyarrow as pa

    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.dictionary_encode()
    if not (pa.types.is_dictionary(column.type) and pa.types.is_string(column.type.value_type)):
        return None
    column = column.unify_dictionaries()
    chunks = column.chunks
    if not chunks or any(c.null_count for c in chunks):
        return None
    dictionary = chunks[0].dictionary.to_pylist()
    if any(not d or d != d.strip() for d in dictionary):
        return None
    codes = _numbers([c.indices for c in chunks])
    return codes.astype(np.int32, copy=False), dictionary


def _read_coded(
    source: Any, names: Mapping[str, str], public: str, reference: str
) -> _Coded | None:
    table = _arrow_table(source, names)
    if table is None or any(names[r] not in table.column_names for r in SUITE_COLUMNS):
        return None
    if table.num_rows == 0:
        return None
    import pyarrow as pa

    score = table.column(names["correct"])
    if not (pa.types.is_floating(score.type) or pa.types.is_integer(score.type)) or (
        score.null_count
    ):
        return None
    values = _numbers(score.chunks).astype(np.float64, copy=False)
    if not np.all((values >= 0.0) & (values <= 1.0)):  # NaN fails too
        return None
    coded = {}
    for role in ("model", "benchmark", "parent", "form"):
        got = _codes(table.column(names[role]))
        if got is None:
            return None
        coded[role] = got
    del table, score  # the codes and the scores are all that is kept
    model, models = coded.pop("model")
    bench, benches = coded.pop("benchmark")
    for labels_of_role in (models, benches):  # NameSpellings' rule: two that look alike
        looks = {" ".join(unicodedata.normalize("NFKC", t).split()) for t in labels_of_role}
        if len(looks) != len(labels_of_role):
            return None  # the row reader names both spellings
    parent, parents = coded["parent"]
    form, forms = coded["form"]
    is_ref = np.zeros(len(forms), dtype=bool)
    if reference in forms:
        is_ref[forms.index(reference)] = True
    ref_row = is_ref[form]
    n_refs = int(np.count_nonzero(ref_row))
    pair = model.astype(np.int64) * len(benches) + bench
    del model, bench
    column_of = np.zeros(len(forms), dtype=np.int64)  # filled per pair
    labels: dict[bytes, tuple[str, ...]] = {}  # parent lists shared between pairs
    out_forms: dict[Any, Any] = {}
    out_refs: dict[Any, Any] = {}
    keys: list[tuple[str, str]] = []
    for refs_pass in (False, True):
        count = n_refs if refs_pass else values.shape[0] - n_refs
        if count == 0:
            continue
        rows = None if count == values.shape[0] else np.flatnonzero(ref_row == refs_pass)
        for piece in _pair_rows(pair if rows is None else pair[rows], rows):
            code = int(pair[piece[0]])
            key = (models[code // len(benches)], benches[code % len(benches)])
            if refs_pass:
                codes = parent[piece]
                if np.unique(codes).shape[0] != codes.shape[0]:
                    return None  # a reference item given twice
                out_refs[key] = (_labels(labels, codes, parents), values[piece])
                if key not in out_forms:
                    keys.append(key)
                continue
            keys.append(key)
            got = _coded_forms(piece, parent, form, forms, values, parents, public, column_of,
                               labels)  # fmt: skip
            if got is None:
                return None
            out_forms[key] = got
    return keys, out_forms, out_refs


def _pair_rows(
    pair: npt.NDArray[np.int64], rows: npt.NDArray[np.int64] | None
) -> Iterator[npt.NDArray[np.int64]]:
    """Each pair's rows (indices into the table, in file order), pairs in order of first
    appearance; ``pair`` is the pair code of the rows ``rows`` (None: every row). A table
    written pair by pair (the usual case) needs no sort."""
    n = pair.shape[0]
    at = np.arange(n) if rows is None else rows
    breaks = np.flatnonzero(pair[1:] != pair[:-1]) + 1
    if breaks.shape[0] + 1 == np.count_nonzero(np.bincount(pair)):  # each pair one run
        starts = np.r_[0, breaks]
        ends = np.r_[breaks, n]
        for begin, end in zip(starts.tolist(), ends.tolist(), strict=True):
            yield at[begin:end]
        return
    codes, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
    rank = np.empty(codes.shape[0], dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(codes.shape[0])
    ranked = rank[inverse]
    order = np.argsort(ranked, kind="stable")
    bounds = np.flatnonzero(np.diff(ranked[order])) + 1
    yield from np.split(at[order], bounds)


def _labels(
    cache: dict[bytes, tuple[str, ...]], codes: npt.NDArray[Any], parents: list[str]
) -> tuple[str, ...]:
    """The parent labels of ``codes``, one tuple shared by every pair with the same list."""
    key = codes.tobytes()
    found = cache.get(key)
    if found is None:
        found = cache[key] = tuple(parents[c] for c in codes.tolist())
    return found


def _coded_forms(
    piece: npt.NDArray[np.int64],
    parent: npt.NDArray[np.int32],
    form: npt.NDArray[np.int32],
    forms: list[str],
    values: npt.NDArray[np.float64],
    parents: list[str],
    public: str,
    column_of: npt.NDArray[np.int64],
    cache: dict[bytes, tuple[str, ...]],
) -> Any:
    """One pair's rows (in file order): (parent labels by first appearance, fresh form
    names, scores (n, 1 + K): the public form then the fresh forms in name order, NaN where
    a parent has no fresh forms), or None when a row repeats a (parent, form), a parent
    lacks its public form or parents differ in their fresh forms."""
    piece_forms = form[piece]
    present = np.flatnonzero(np.bincount(piece_forms, minlength=len(forms)))
    names = [forms[c] for c in present]
    if public not in names:
        return None
    fresh = sorted(n for n in names if n != public)
    for k, n in enumerate([public, *fresh]):
        column_of[forms.index(n)] = k
    codes, first, inverse = np.unique(parent[piece], return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")
    rank = np.empty(codes.shape[0], dtype=np.int64)
    rank[by_first] = np.arange(codes.shape[0])
    grid = np.full((codes.shape[0], 1 + len(fresh)), np.nan)
    grid[rank[inverse], column_of[piece_forms]] = values[piece]
    if np.count_nonzero(~np.isnan(grid)) != piece.shape[0]:
        return None  # a (parent, form) given twice
    if np.isnan(grid[:, 0]).any():
        return None  # a parent with fresh forms but no public form
    if fresh:
        have = ~np.isnan(grid[:, 1:])
        if not np.all(have.all(axis=1) | ~have.any(axis=1)):
            return None  # parents with different fresh forms
    return _labels(cache, codes[by_first], parents), tuple(fresh), grid


def _coded_pair(
    key: tuple[str, str],
    forms: Any,
    references: Any,
    order: OrderData | None,
) -> SuitePair:
    model, benchmark = key
    ref_parents, ref_values = references if references is not None else ((), _EMPTY)
    if forms is None:
        return SuitePair(model=model, benchmark=benchmark, parents=(), public=_EMPTY,
                         reference_parents=ref_parents,
                         reference=np.ascontiguousarray(ref_values), order=order)  # fmt: skip
    labels, fresh_names, grid = forms
    matched = ~np.isnan(grid[:, 1:]).any(axis=1) if fresh_names else np.zeros(len(labels), bool)
    kept = np.flatnonzero(matched)
    return SuitePair(
        model=model,
        benchmark=benchmark,
        parents=labels,
        public=np.ascontiguousarray(grid[:, 0]),
        fresh_parents=labels if kept.shape[0] == len(labels) else tuple(labels[i] for i in kept),
        fresh_forms=fresh_names if kept.shape[0] else (),
        matched_public=np.ascontiguousarray(grid[kept, 0]),
        fresh=np.ascontiguousarray(grid[kept][:, 1:]).reshape(
            kept.shape[0], len(fresh_names) if kept.shape[0] else 0
        ),
        reference_parents=ref_parents,
        reference=np.ascontiguousarray(ref_values),
        order=order,
    )


def _pair(
    key: tuple[str, str],
    parents: Mapping[str, Mapping[str, float]],
    references: Mapping[str, float],
    public_form: str,
    order: OrderData | None,
) -> SuitePair:
    model, benchmark = key
    where = f"model {model!r}, benchmark {benchmark!r}"
    public: list[tuple[str, float]] = []
    matched: list[tuple[str, float, list[float]]] = []
    fresh_names: tuple[str, ...] | None = None
    for parent, forms in parents.items():
        fresh = tuple(sorted(f for f in forms if f != public_form))
        if public_form not in forms:
            raise ValueError(
                f"parent {parent!r} ({where}) has fresh forms {list(fresh)} but no public form "
                f"({public_form!r})"
            )
        public.append((parent, float(forms[public_form])))
        if not fresh:
            continue
        if fresh_names is None:
            fresh_names = fresh
        elif fresh != fresh_names:
            raise ValueError(
                f"parent {parent!r} ({where}) has fresh forms {list(fresh)}; earlier parents "
                f"have {list(fresh_names)}: every parent with fresh forms needs the same ones"
            )
        matched.append((parent, float(forms[public_form]), [float(forms[f]) for f in fresh]))
    reference = list(references.items())
    k = len(fresh_names or ())
    return SuitePair(
        model=model,
        benchmark=benchmark,
        parents=tuple(p for p, _ in public),
        public=np.array([v for _, v in public], dtype=np.float64),
        fresh_parents=tuple(p for p, _, _ in matched),
        fresh_forms=fresh_names or (),
        matched_public=np.array([v for _, v, _ in matched], dtype=np.float64),
        fresh=np.array([f for _, _, f in matched], dtype=np.float64).reshape(len(matched), k),
        reference_parents=tuple(p for p, _ in reference),
        reference=np.array([v for _, v in reference], dtype=np.float64),
        order=order,
    )


def _orders(
    logliks: Mapping[tuple[str, str], Any] | None, known: set[tuple[str, str]]
) -> dict[tuple[str, str], OrderData]:
    if logliks is None:
        return {}
    if not isinstance(logliks, Mapping):
        raise ValueError(
            "logliks must map (model, benchmark) to a log-likelihood table; got "
            f"{one_line(logliks)}"
        )
    out = {}
    for key, table in logliks.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key)):
            raise ValueError(f"logliks keys must be (model, benchmark) pairs; got {one_line(key)}")
        if key not in known:
            raise ValueError(
                f"logliks: the suite has no scores for model {key[0]!r} on {key[1]!r}"
            )
        out[key] = read_order_table(table, name=f"logliks[{key!r}]")
    return out


def read_order_table(table: Any, *, name: str = "table") -> OrderData:
    """A log-likelihood table in the ``contamination`` command's format (``kind``,
    ``loglik``, optional ``shard``) as :class:`OrderData`; ``name`` names it in errors.
    Shards keep the order they first appear in; a shard needs its one canonical row and at
    least one shuffled row."""
    if not isinstance(name, str) or not name:
        raise ArgumentError("name", f"name must be a non-empty string; got {one_line(name)}")
    cols = read_columns(table, name, expected="kind, loglik")
    for required in ("kind", "loglik"):
        if required not in cols:
            raise ValueError(f"{name} has no column {required!r} (need kind, loglik[, shard])")
    shards: dict[str, tuple[list[float], list[float]]] = {}
    for i, (kind, raw) in enumerate(zip(cols["kind"], cols["loglik"], strict=True)):
        shard = _label(cols["shard"][i]) if "shard" in cols else "all"
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} row {i + 1}: loglik must be a number; got {one_line(raw)}"
            ) from None
        if not math.isfinite(value):
            raise ArgumentError(name, f"{name} row {i + 1}: loglik must be finite; got {value}")
        canonical, shuffled = shards.setdefault(shard, ([], []))
        (canonical if _label(kind).lower() == "canonical" else shuffled).append(value)
    if not shards:
        raise ArgumentError(name, f"{name} has no rows")
    for shard, (canonical, shuffled) in shards.items():
        if len(canonical) != 1 or not shuffled:
            raise ValueError(
                f"{name}: shard {shard!r} has {len(canonical)} canonical row(s) and "
                f"{len(shuffled)} shuffled: each shard needs exactly one canonical row and "
                "at least one shuffled"
            )
    return OrderData(
        shards=tuple(shards),
        canonical=np.array([c[0] for c, _ in shards.values()], dtype=np.float64),
        shuffled=tuple(np.array(s, dtype=np.float64) for _, s in shards.values()),
    )
