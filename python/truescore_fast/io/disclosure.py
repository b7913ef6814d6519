"""A disclosure record for a reported benchmark score, and coder agreement on such records.

A score is a joint property of the model, the harness, the elicitation budget, the sampled
population and the contamination status; a leaderboard that publishes the model and the
score alone leaves capability and leakage indistinguishable. The record below answers the
question a reporter faces at publication: given the mitigations applied, which
contamination threats remain open?

The five contamination types, each named by the mitigation it defeats
(:data:`CONTAMINATION_TYPES`):

``direct``
    The test items themselves were in the training data. A private held-out test set
    closes this type, and only this type.
``derivative``
    Rewritten, translated, solved or otherwise derived copies of test items were in the
    training data. Survives holding out the originals.
``temporal``
    The items' sources were public before the model's training cutoff. Survives private
    test sets and rewriting; closed by items created after the cutoff.
``distributional``
    Training on data from the benchmark's own generator, templates or sources, so the
    model learns the benchmark's distribution rather than the skill. Survives fresh,
    post-cutoff items drawn the same way.
``acquired``
    Exposure during the evaluation run itself: tools, retrieval, retries, feedback. A
    property of one run, not of the benchmark release, so it must be recorded with the
    score.

The record has four fields, and the string ``"unknown"`` is a valid entry for every one
of them and for every entry inside them -- an honest "unknown" is the point:

``mitigations``
    The mitigations applied, each with the types it closes.
``contamination``
    For each of the five types: ``"closed"``, ``"open"`` or ``"unknown"``.
``evaluation_run``
    The elicitation budget (attempts per item, decoding, prompt variants...) and the
    exposure during the run (tools, retrieval, retries).
``audit_evidence``
    The audits behind the statuses: which test, its statistic, interval or p-value, and
    where its data lives.

The JSON Schema (draft 2020-12) ships with the package (:func:`disclosure_schema`).
:func:`validate_disclosure` needs the optional ``jsonschema`` dependency
(``pip install truescore-fast[disclose]``).

A valid record is a complete *disclosure*, not a clean score: a record full of "open" and
"unknown" is valid, and says exactly how little is known.

Reference:
    J. Angulo, V. Yeste, H. Espinos-Morato (Universidad Europea): a taxonomy of benchmark
    contamination by the mitigation each type defeats, and a four-field disclosure
    protocol. Implemented from the paper's abstract; its title and venue are not recorded
    here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._bootstrap_intervals import percentile_interval
from truescore_fast._files import NotJsonError, read_json_file
from truescore_fast._random import SeedLike, philox_key, philox_stream
from truescore_fast._result import Result
from truescore_fast._validation import (
    check_alpha,
    check_array_size,
    check_memory,
    check_positive_int,
    check_sequence,
    optional_module,
)
from truescore_fast.errors import ArgumentError

__all__ = [
    "CONTAMINATION_TYPES",
    "DisclosureValidation",
    "KappaResult",
    "disclosure_schema",
    "disclosure_template",
    "linear_weighted_kappa",
    "validate_disclosure",
]

#: The five contamination types a record covers, each with what it is and what closes it.
CONTAMINATION_TYPES: Mapping[str, str] = {
    "direct": "test items in training data; closed by a private held-out test set",
    "derivative": "derived copies of test items (rewrites, translations, solutions) in "
    "training data; survives holding out the originals",
    "temporal": "item sources public before the training cutoff; survives private sets and "
    "rewriting, closed by items created after the cutoff",
    "distributional": "training on the benchmark's own generator, templates or sources; "
    "survives fresh items drawn the same way",
    "acquired": "exposure during the evaluation run itself (tools, retrieval, retries); "
    "recorded with the score, not the benchmark",
}


def disclosure_schema() -> dict[str, Any]:
    """The disclosure record's JSON Schema (draft 2020-12), as shipped in the package."""
    text = (
        resources.files("truescore_fast")
        .joinpath("schemas/disclosure.schema.json")
        .read_text(encoding="utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def disclosure_template() -> dict[str, Any]:
    """A record to fill in: the schema's shape with ``"unknown"`` in every field.

    Built from :func:`disclosure_schema`: an object field lists its required members
    (all its members when none is required), each filled the same way; a field that
    accepts ``"unknown"`` instead of a list or a number gets ``"unknown"``; a constant
    (``schema_version``) gets its value. The template validates as it is
    (:func:`validate_disclosure`: "unknown" is valid everywhere) -- a valid record that
    discloses nothing. Replace the unknowns you can answer; leave the rest.
    """
    schema = disclosure_schema()
    record: dict[str, Any] = {
        name: _template_value(schema["properties"][name]) for name in schema["properties"]
    }
    return record


def _template_value(node: Mapping[str, Any]) -> Any:
    if "const" in node:
        return node["const"]
    if node.get("type") == "object" and "properties" in node:
        names = node.get("required") or list(node["properties"])
        return {name: _template_value(node["properties"][name]) for name in names}
    # "unknown" or an object: the object's own fields, each unknown, are easier to fill
    inner = node.get("else")
    if isinstance(inner, Mapping) and inner.get("type") == "object":
        return _template_value(inner)
    return "unknown"


@dataclass(frozen=True, repr=False)
class DisclosureValidation(Result):
    """The outcome of validating one disclosure record.

    Attributes:
        valid: True when the record satisfies the schema.
        problems: every problem found, each naming the field (``contamination.acquired``,
            ``audit_evidence[0].p_value``...), in document order.
        source: the file validated, or ``"<object>"``.

    Valid means complete and well-formed, not clean: see the module docstring.
    """

    valid: bool
    problems: tuple[str, ...]
    source: str

    def __repr__(self) -> str:
        return (
            f"DisclosureValidation(valid={self.valid}, problems={len(self.problems)}, "
            f"source={self.source!r})"
        )

    def summary(self) -> str:
        """``SOURCE: valid`` or the list of problems."""
        if self.valid:
            return f"{self.source}: valid disclosure record"
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        lines = [f"{self.source}: invalid disclosure record ({count} {noun})"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


def _field_name(path: Sequence[Any]) -> str:
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "(record)"


def _message(error: Any) -> str:
    field = _field_name(list(error.absolute_path))
    validator, value = error.validator, error.validator_value
    if validator == "const" and value == "unknown":
        return (
            f"{field}: {error.instance!r} is not allowed; the only string accepted here is "
            '"unknown"'
        )
    if validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        where = f"{field}." if field != "(record)" else ""
        return f'{where}{missing}: required field is missing (use "unknown" if not known)'
    if validator == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(str(k) for k in error.instance if k not in allowed)
        where = f"{field}." if field != "(record)" else ""
        return "; ".join(f"{where}{k}: unexpected field (not in the schema)" for k in extra)
    if validator == "anyOf" and all(set(s) == {"required"} for s in value):
        options = " or ".join(s["required"][0] for s in value)
        return f'{field}: needs {options} (either may be "unknown")'
    if validator == "enum":
        options = ", ".join(repr(v) for v in value)
        return f"{field}: {error.instance!r} is not one of {options}"
    return f"{field}: {error.message}"


class _NotJsonError(ValueError):
    """Text that Python's json module would accept but JSON does not (or should not)."""


def _refuse_constant(name: str) -> Any:
    raise _NotJsonError(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A repeated key is legal to the parser but lets a later copy hide an invalid one.
    record: dict[str, Any] = {}
    for key, value in pairs:
        if key in record:
            raise _NotJsonError(f"the key {key!r} appears twice in one object")
        record[key] = value
    return record


def _non_finite_numbers(record: Any) -> list[str]:
    """One problem per NaN or infinite number anywhere in ``record``, in document order.

    JSON has no such numbers, and a NaN p-value passes every range check of the schema.
    """
    problems = []
    stack: list[tuple[list[Any], Any]] = [([], record)]
    while stack:  # iterative: the depth of a record is the caller's
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(
                f"{_field_name(path)}: {value!r} is not a JSON number (JSON has no NaN or "
                "Infinity)"
            )
        elif isinstance(value, Mapping):
            stack.extend((path + [k], v) for k, v in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((path + [i], v) for i, v in reversed(list(enumerate(value))))
    return problems


# Deeper records are refused before schema validation, which recurses once per level
# (a RecursionError at a few hundred levels); a valid record is at most a few levels deep.
MAX_RECORD_DEPTH = 64


def _depth(record: Any) -> int:
    """How many levels of objects and arrays ``record`` nests, counted up to
    ``MAX_RECORD_DEPTH + 1`` (iteratively: the depth of a record is the caller's); 0 for
    a scalar."""
    deepest = 0
    stack: list[tuple[int, Any]] = [(0, record)]
    while stack:
        level, value = stack.pop()
        if isinstance(value, Mapping):
            children: Any = value.values()
        elif isinstance(value, (list, tuple)):
            children = value
        else:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_RECORD_DEPTH:
            return deepest  # deep enough to refuse; counting further costs time
        stack.extend((level + 1, child) for child in children)
    return deepest


def validate_disclosure(obj_or_path: Mapping[str, Any] | str | Path) -> DisclosureValidation:
    """Validate a disclosure record against the shipped JSON Schema, listing every problem.

    Args:
        obj_or_path: the record as a mapping (parsed JSON), or the path of a JSON file.

    Returns:
        A :class:`DisclosureValidation`; ``.valid``, ``.problems``, ``.summary()``. A file
        that is not valid JSON is reported as invalid with the parser's message; so is a
        key repeated within one object (the parser would keep the last copy silently) and
        NaN or Infinity (which JSON does not have, in a file or in a mapping).

    Raises:
        MissingExtraError: (an ImportError) ``jsonschema`` is not installed (install the
            ``disclose`` extra).
        FileNotFoundError: the path does not exist.
        ValueError: ``obj_or_path`` is neither a mapping nor a path.
    """
    jsonschema = optional_module(
        "jsonschema",
        requirement="jsonschema>=4.18",
        extra="disclose",
        purpose="validate_disclosure",
    )

    if isinstance(obj_or_path, (str, Path)):
        source = str(obj_or_path)
        try:  # the reader the command line uses too; a directory or FIFO is named as such
            record: Any = read_json_file(
                obj_or_path,
                "(file)",
                object_pairs_hook=_unique_keys,
                parse_constant=_refuse_constant,
            )
        except NotJsonError as error:
            return DisclosureValidation(False, (str(error),), source)
    elif isinstance(obj_or_path, Mapping):
        record, source = dict(obj_or_path), "<object>"
    else:
        raise ArgumentError(
            "obj_or_path",
            f"obj_or_path must be a mapping or the path of a JSON file; got "
            f"{type(obj_or_path).__name__}",
        )
    if _depth(record) > MAX_RECORD_DEPTH:  # the schema validator recurses once per level
        deep = (
            f"(record): nested more than {MAX_RECORD_DEPTH} levels deep; a disclosure "
            "record is a few levels deep"
        )
        return DisclosureValidation(False, (deep,), source)
    validator = jsonschema.Draft202012Validator(disclosure_schema())
    errors = sorted(
        validator.iter_errors(record),
        key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
    )
    messages = _non_finite_numbers(record) + [_message(e) for e in errors]
    problems = tuple(dict.fromkeys(messages))  # ordered, de-duplicated
    return DisclosureValidation(not problems, problems, source)


# ---------------------------------------------------------------------------------------
# Linear-weighted kappa for two coders on an ordinal variable
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class KappaResult(Result):
    """Linear-weighted Cohen's kappa with a bootstrap interval.

    Attributes:
        estimate: linear-weighted kappa, ``1 - sum(w * observed) / sum(w * expected)``
            with ``w_ij = |i - j| / (k - 1)`` over the ordered ``categories``; equal to
            scikit-learn's
            ``cohen_kappa_score(weights="linear")``.
        low, high: percentile bootstrap interval at level 1 - alpha, resampling items (rows)
            with replacement; resamples in which kappa is undefined (no expected
            disagreement) are left out and counted in ``n_undefined``.
        alpha: the interval has level 1 - alpha.
        n_items: items coded by both coders.
        n_resamples: bootstrap resamples drawn; n_undefined: of them, left out.
        categories: the ordinal scale, lowest first.

    Kappa corrects for chance agreement, so under heavy class skew it falls even when
    coders almost always agree: a low kappa is not by itself evidence of disagreement.
    """

    estimate: float
    low: float
    high: float
    alpha: float
    n_items: int
    n_resamples: int
    n_undefined: int
    categories: tuple[Any, ...]

    _repr_fields = ("estimate", "low", "high", "alpha", "n_items")

    def summary(self) -> str:
        lo, hi = self.low, self.high
        return (
            f"linear-weighted kappa {self.estimate:.3f}, {1.0 - self.alpha:.0%} interval "
            f"[{lo:.3f}, {hi:.3f}] (bootstrap over {self.n_items} items, "
            f"{self.n_resamples} resamples)"
        )


def _codes(name: str, values: npt.ArrayLike, index: dict[Any, int]) -> npt.NDArray[np.intp]:
    check_array_size(name, values, 48.0)  # a pointer, a Python object and a code per value
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise ArgumentError(name, f"{name} must be 1-D; got shape {arr.shape}")
    if arr.size == 0:
        raise ArgumentError(name, f"{name} must be non-empty")
    out = np.empty(arr.size, dtype=np.intp)
    for i, v in enumerate(arr.tolist()):
        try:
            out[i] = index[v]
        except (KeyError, TypeError) as error:
            raise ArgumentError(name, f"{name}[{i}] = {v!r} is not one of categories") from error
    return out


def _weighted_kappa_many(
    a: npt.NDArray[np.intp], b: npt.NDArray[np.intp], rows: npt.NDArray[np.intp], k: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    # rows: (R, n) item indices. Returns observed and expected weighted disagreement.
    weights = np.abs(np.subtract.outer(np.arange(k), np.arange(k))) / (k - 1)
    ra, rb = a[rows], b[rows]
    n = rows.shape[1]
    observed = weights[ra, rb].mean(axis=1)
    offset = (np.arange(rows.shape[0]) * k)[:, None]
    pa = np.bincount((ra + offset).ravel(), minlength=rows.shape[0] * k).reshape(-1, k) / n
    pb = np.bincount((rb + offset).ravel(), minlength=rows.shape[0] * k).reshape(-1, k) / n
    expected = np.einsum("ri,ij,rj->r", pa, weights, pb)
    return observed, expected


def linear_weighted_kappa(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    categories: Sequence[Any],
    alpha: float = 0.05,
    n_resamples: int = 2000,
    seed: SeedLike = 0,
) -> KappaResult:
    """Linear-weighted kappa between two coders on an ordinal variable, with an interval.

    Args:
        a: first coder's codes, one per item.
        b: second coder's codes for the same items, in the same order.
        categories: the ordinal scale, lowest first (at least two categories); every code
            must be one of them. Categories never used still count for the weights.
        alpha: the interval has level 1 - alpha.
        n_resamples: bootstrap resamples over items.
        seed: seed of the bootstrap (NumPy Philox keyed by ``philox_key(seed)``).

    Returns:
        A :class:`KappaResult`. The interval is a percentile bootstrap over items: it
        treats items as independent draws and says nothing about other coders.

    Raises:
        ValueError: naming the argument, for unequal lengths, a code outside
            ``categories``, fewer than two or repeated categories, a bad ``alpha``,
            ``n_resamples`` or ``seed``, or data with no expected disagreement (both coders
            use a single, identical category), where kappa is undefined.
        MemoryError: naming ``n_resamples`` when its kappas (about 25 bytes each) would
            not fit in memory, before anything is drawn.
    """
    cats = check_sequence("categories", categories, "categories")
    if len(cats) < 2:
        raise ArgumentError("categories", "categories must list at least two ordered categories")
    try:
        index = {c: i for i, c in enumerate(cats)}
    except TypeError as error:
        raise ArgumentError("categories", f"categories must be hashable: {error}") from error
    if len(index) != len(cats):
        raise ArgumentError("categories", "categories must not repeat a category")
    check_alpha(alpha)
    check_positive_int("n_resamples", n_resamples)
    ai = _codes("a", a, index)
    bi = _codes("b", b, index)
    if ai.size != bi.size:
        raise ArgumentError(
            "a",
            f"a and b must have the same length (one code per item); got {ai.size} and {bi.size}",
        )
    n, k = ai.size, len(cats)
    obs, exp = _weighted_kappa_many(ai, bi, np.arange(n)[None, :], k)
    if not exp[0] > 0.0:
        raise ValueError(
            "kappa is undefined: a and b use one and the same category for every item "
            "(no disagreement is expected by chance)"
        )
    kappa = float(1.0 - obs[0] / exp[0])
    # The percentile interval needs every resample's kappa: one float64 each, written into
    # one array (plus the defined ones and the percentile's sorted copy: ~25 bytes a
    # resample), checked to fit before anything is drawn.
    check_memory(
        "n_resamples",
        25.0 * n_resamples,
        "use fewer {n_resamples} (10,000 give the interval's ends to about two digits)",
    )
    rng = philox_stream(philox_key(seed))
    reps = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // n)
    for start in range(0, n_resamples, chunk):
        rows = rng.integers(0, n, size=(min(chunk, n_resamples - start), n))
        o, e = _weighted_kappa_many(ai, bi, rows, k)
        reps[start : start + rows.shape[0]] = np.where(
            e > 0.0, 1.0 - o / np.where(e > 0.0, e, 1.0), np.nan
        )
    defined = reps[~np.isnan(reps)]
    if defined.size:
        lo, hi = (float(x) for x in percentile_interval(defined, alpha))
    else:  # every resample undefined (a handful of items): no information
        lo, hi = -math.inf, math.inf
    return KappaResult(
        estimate=kappa,
        low=lo,
        high=hi,
        alpha=alpha,
        n_items=n,
        n_resamples=int(n_resamples),
        n_undefined=int(reps.size - defined.size),
        categories=cats,
    )
