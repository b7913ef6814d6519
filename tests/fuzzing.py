"""The fuzz cases' machinery, shared by tests/package/test_fuzz.py and the child process of
``test_extreme_counts_in_one_subprocess``: hypothesis strategies for valid and hostile
arguments, the checks of a result (``check``, ``dropin``), the case registry (``CASES``,
``case``), the public functions found by introspection, and the extreme counts
(``run_extreme_counts``). See test_fuzz.py's docstring for what is fuzzed and why."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import os
import pkgutil
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest
import truescore_fast as ts
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from reference import ref_moments_mpmath

EXAMPLES = int(os.environ.get("TRUESCORE_FUZZ_EXAMPLES", "25"))
SLOW = {  # functions that simulate: fewer examples
    "suite_study",
    "plot_heatmap",
    "write_report",
    "audit_prune",
    "budget_study",
    "coverage_study",
    "detection_study",
    "did_estimate",
    "leakage_audit",
    "stress_grid",
    "matched_form_audits",
    "sequential_study",
    "sequential_order_study",
}


def _settings(name: str) -> settings:
    n = max(2, EXAMPLES // 4) if name in SLOW else EXAMPLES
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


# FileNotFoundError: a path that does not exist (the functions that read files say so).
DOCUMENTED = (
    ValueError,
    TypeError,
    OverflowError,
    MemoryError,
    FileNotFoundError,
    ts.MissingExtraError,
)

# --- hostile values --------------------------------------------------------------------

SPECIAL = [
    0.0,
    -0.0,
    5e-324,
    1e-320,
    2.2250738585072014e-308,
    1e-300,
    1e-17,
    0.5,
    1.0,
    -1.0,
    3.0,
    1e154,
    2e162,
    1e300,
    1e308,
    -1e308,
    1.7976931348623157e308,
    math.nan,
    math.inf,
    -math.inf,
]

numbers = st.one_of(
    st.sampled_from(SPECIAL),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.floats(min_value=-1.0, max_value=1.0),
)

BAD_DTYPES = [
    np.float32,
    np.int64,
    np.uint8,
    np.bool_,
    np.complex128,
    np.longdouble,
    "M8[D]",
    "m8[s]",
    "<U4",
    object,
]


@st.composite
def arrays(draw: Any, ndim: int = 1, max_side: int = 8) -> Any:
    """A value an array argument might be given: mostly float arrays of ``ndim``
    dimensions, sometimes other shapes, dtypes and Python containers."""
    kind = draw(st.sampled_from(["float", "float", "float", "shape", "dtype", "python"]))
    shape = tuple(draw(st.integers(0, max_side)) for _ in range(ndim))
    size = int(np.prod(shape))
    values = np.array(draw(st.lists(numbers, min_size=size, max_size=size)), dtype=np.float64)
    values = values.reshape(shape)
    if kind == "float":
        return values
    if kind == "shape":
        new = draw(st.sampled_from([(), (1, 1), (2, 2), (0,), (3,), (1, 2, 2), (2, 0)]))
        flat = values.ravel() if values.size else np.zeros(1)
        return np.resize(flat, int(np.prod(new))).reshape(new)
    if kind == "dtype":
        dtype = draw(st.sampled_from(BAD_DTYPES))
        with np.errstate(all="ignore"):
            finite = np.nan_to_num(values, nan=0.0, posinf=1.0, neginf=-1.0)
            if dtype in ("M8[D]", "m8[s]", "<U4"):
                return np.clip(finite, -1000, 1000).astype(np.int64).astype(dtype)
            return finite.astype(dtype)
    return draw(
        st.sampled_from(
            [
                values.tolist(),
                None,
                "1,2",
                {1: 2},
                {1.0, 2.0},
                [1.0, [2.0]],
                [1 + 2j, 3.0],
                [10**400, 1],
                [True, False],
                3.0,
            ]
        )
    )


@st.composite
def scores(draw: Any, ndim: int = 1, low: float = 0.0) -> Any:
    """Mostly valid scores in [low, 1] (so a case gets past validation), else hostile."""
    if draw(st.booleans()):
        return draw(arrays(ndim=ndim))
    shape = tuple(draw(st.integers(1, 8)) for _ in range(ndim))
    size = int(np.prod(shape))
    unit = st.one_of(st.sampled_from([low, 1.0, 0.5, 5e-324, -0.0]), st.floats(low, 1.0))
    return np.array(draw(st.lists(unit, min_size=size, max_size=size))).reshape(shape)


HOSTILE_COUNTS = [
    -1,
    0,
    2**63,
    2**64,
    10**400,
    2.0,
    2.5,
    1e300,
    math.nan,
    math.inf,
    np.int64(3),
    np.uint8(2),
    np.array(3),
    True,
    "3",
    None,
    [3],
]


def counts(low: int = 1, high: int = 30) -> Any:
    return st.one_of(st.integers(low - 2, high), st.sampled_from(HOSTILE_COUNTS))


HOSTILE_SEEDS = [
    None,
    True,
    1.5,
    "7",
    -1,
    2**64,
    2**200,
    np.int64(3),
    np.uint64(2**64 - 1),
    np.random.SeedSequence(5),
    np.random.PCG64(3),
    [1, 2, 3],
    [-1],
    np.array([2**40, 3], dtype=np.uint64),
    {1: 2},
]

seeds = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**200),
    st.sampled_from(HOSTILE_SEEDS),
    st.builds(np.random.default_rng, st.integers(0, 2**32)),
)

alphas = st.one_of(
    st.sampled_from(
        [
            0.05,
            1e-300,
            5e-324,
            1e-17,
            0.999999,
            0.0,
            -0.0,
            1.0,
            -0.1,
            math.nan,
            math.inf,
            True,
            np.float32(0.1),
            np.array(0.05),
            np.array([0.05]),
            "0.05",
            0.05j,
            10**400,
            None,
        ]
    ),
    st.floats(min_value=0.0, max_value=1.0),
)

threads = st.sampled_from([None, 1, 2, 0, -1, 2**31, 2**63, 2**64, 1.5, True, "2", np.int64(2)])

populations = st.one_of(
    st.integers(-3, 60),
    st.sampled_from(
        [None, 2**63, 2**64, 1e300, 10**400, math.nan, math.inf, 12.5, np.int64(40)]
        + [np.array(40), "40", True, [40], 40.0]
    ),
)


def choice(*valid: Any) -> Any:
    return st.sampled_from(list(valid) + ["", "nope", valid[0].upper() if valid else "", None, 3])


class Args:
    """Draws each argument valid, or hostile about one time in three."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def __call__(self, valid: Any, hostile: Any) -> Any:
        if self.data.draw(st.sampled_from([False, False, True])):
            return self.data.draw(hostile)
        return valid() if callable(valid) and not isinstance(valid, type) else valid


# --- checking an outcome ----------------------------------------------------------------


def _walk(value: Any, path: str = "result") -> None:
    """No NaN anywhere; p-values in [0, 1]; interval ends in order."""
    if isinstance(value, (float, np.floating)):
        assert not math.isnan(value), f"{path} is NaN"
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            assert not np.isnan(value).any(), f"{path} holds NaN"
        elif value.dtype.kind == "O":
            for i, item in enumerate(value.ravel()[:50]):
                _walk(item, f"{path}[{i}]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        _walk({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{path}.{key}")
        p = value.get("p_value")
        if isinstance(p, (float, np.floating)):
            assert 0.0 <= p <= 1.0, f"{path}.p_value = {p}"
        low, high = value.get("low"), value.get("high")
        if isinstance(low, (float, np.floating)) and isinstance(high, (float, np.floating)):
            assert low <= high, f"{path}: low {low} > high {high}"
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value[:200]):
            _walk(item, f"{path}[{index}]")


def _names(function: Callable[..., Any], aliases: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(inspect.signature(function).parameters) + aliases


def check(function: Callable[..., Any], call: Callable[[], Any], aliases: tuple[str, ...]) -> Any:
    """``call()`` returns a result without NaN, or raises a documented exception whose
    message names an argument of ``function`` (or one of ``aliases``)."""
    try:
        with np.errstate(over="raise", invalid="raise"):  # a silent NaN or overflow is a finding
            result = call()
    except FloatingPointError as error:
        pytest.fail(f"unguarded floating-point error: {error}")
    except DOCUMENTED as error:
        message = str(error)
        names = _names(function, aliases)
        assert any(name in message for name in names), (type(error).__name__, message)
        return None
    _walk(result)
    return result


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "result", call()
    except Exception as error:  # compared between the two libraries
        # truescore's type: an ArgumentError counts as the builtin ValueError it is
        builtin = next(c for c in type(error).__mro__ if c.__module__ == "builtins")
        return "error", (builtin.__name__, str(error))


def _same(ours: Any, theirs: Any) -> bool:
    if dataclasses.is_dataclass(ours):
        return all(
            _same(getattr(ours, f.name), getattr(theirs, f.name))
            for f in dataclasses.fields(theirs)
        )
    if isinstance(ours, (np.ndarray, list, tuple)) or isinstance(theirs, np.ndarray):
        a, b = np.asarray(ours), np.asarray(theirs)
        return a.shape == b.shape and bool(np.all((a == b) | ((a != a) & (b != b))))
    if isinstance(ours, float) and isinstance(theirs, float):
        return ours == theirs or (math.isnan(ours) and math.isnan(theirs))
    return bool(ours == theirs)


def _finite(result: Any) -> bool:
    fields = [getattr(result, f.name) for f in dataclasses.fields(result)]
    return all(math.isfinite(v) for v in fields if isinstance(v, float))


def dropin(name: str, *args: Any, same: tuple[str, ...] | None = None, **kwargs: Any) -> None:
    """A truescore drop-in answers as truescore 0.7.4 does: the same exception, type and
    message, or a result whose fields ``same`` (default: all) are equal. Documented
    differences: where truescore's result is not finite (NaN from an overflow, sd = inf
    beyond ~1e154), ours may be finite or a ValueError."""
    truescore = pytest.importorskip("truescore")
    assert not ts.is_patched()
    with np.errstate(all="ignore"):
        ours = _outcome(lambda: getattr(ts, name)(*args, **kwargs))
        theirs = _outcome(lambda: getattr(truescore, name)(*args, **kwargs))
    if theirs[0] == "result" and dataclasses.is_dataclass(theirs[1]) and not _finite(theirs[1]):
        assert ours[0] == "result" or ours[1][0] == "ValueError", ours
        if ours[0] == "result":
            _walk(ours[1])
        return
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "error":
        assert ours[1] == theirs[1]
        return
    if same is None:
        assert _same(ours[1], theirs[1]), (ours[1], theirs[1])
    else:
        for field in same:
            assert _same(getattr(ours[1], field), getattr(theirs[1], field)), field
    _walk(ours[1])


# --- one case per public function ---------------------------------------------------------

Case = Callable[[Args], None]
CASES: dict[str, Case] = {}


def case(*names: str) -> Callable[[Callable[[Args, str], None]], Callable[[Args, str], None]]:
    def register(body: Callable[[Args, str], None]) -> Callable[[Args, str], None]:
        for name in names:
            CASES[name] = lambda a, body=body, name=name: body(a, name)
        return body

    return register


def _shuffled() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(6)
    shuffled = rng.normal(size=(6, 5))
    return shuffled.mean(axis=1) + rng.normal(0.3, 1.0, size=6), shuffled


def _gaps(n: int = 12, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=n)


def _forms(n: int = 12, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    return (rng.random(n) < 0.7).astype(float), (rng.random((n, k)) < 0.5).astype(float)


def public_names() -> list[tuple[str, Any]]:
    """``(name, object)`` of every public name: ``truescore_fast.__all__`` and the
    ``__all__`` of every public submodule (the command line excluded)."""
    modules = [ts] + [
        importlib.import_module(f"truescore_fast.{m.name}")
        for m in pkgutil.iter_modules(ts.__path__)
        if not m.name.startswith("_") and m.name != "cli"
    ]
    return [(attr, getattr(m, attr)) for m in modules for attr in getattr(m, "__all__", ())]


def run_in_child(expression: str, timeout: float = 900) -> Any:
    """The JSON value of ``expression`` (tests/ importable) evaluated in a child process,
    so that a crash fails the calling test instead of the run."""
    tests = os.path.dirname(os.path.abspath(__file__))
    code = (
        f"import json, sys, warnings; sys.path.insert(0, {tests!r}); "
        f"warnings.simplefilter('ignore'); import fuzzing, walking; "
        f"print(json.dumps({expression}))"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return json.loads(child.stdout.strip().splitlines()[-1])


def _public_functions() -> dict[str, Callable[..., Any]]:
    """Every public function (:func:`public_names`)."""
    found: dict[str, Callable[..., Any]] = {}
    for attr, obj in public_names():
        if callable(obj) and not inspect.isclass(obj):
            found[attr] = obj
    return found


# --- extreme counts, in one child process -------------------------------------------------

EXTREME = [2**63, 2**64, -1, 10**400, -(2**63) - 1, 2.5, 1e300, math.inf, math.nan]
EXTREME += [np.int64(-1), np.uint64(2**64 - 1), "8", None, True, np.array([4])]

# function -> (a valid call's keyword arguments, the count arguments to push)
_P, _F = _forms()
_C, _S = _shuffled()
COUNT_CALLS: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "shard_orders": (
        ts.shard_orders,
        {"n_examples": 20, "n_shards": 4, "permutations_per_shard": 3},
    ),
    "exchangeability_tests": (ts.exchangeability_tests, {"canonical": _C, "permuted": _S}),
    "sharded_likelihood_test": (ts.sharded_likelihood_test, {"canonical": _C, "shuffled": _S}),
    "wald_intervals": (ts.wald_intervals, {"d": np.zeros((2, 10)), "population_size": 20}),
    "matched_form_intervals": (ts.matched_form_intervals, {"d": np.zeros((2, 10))}),
    "matched_form_audit": (
        ts.matched_form_audit,
        {"public": _P, "fresh": _F, "population_size": 40, "guardrail": 30},
    ),
    "randomization_test": (
        ts.randomization_test,
        {"public": _P, "fresh": _F, "method": "monte_carlo", "n_resamples": 9},
    ),
    "seed_contrast": (
        ts.seed_contrast,
        {"values": np.arange(1.0, 7.0), "method": "monte_carlo", "draws": 9},
    ),
    "paired_confidence_test": (
        ts.paired_confidence_test,
        {
            "confidence_original": np.arange(6.0),
            "confidence_rephrased": np.zeros(6),
            "method": "sign_flip",
            "n_resamples": 9,
            "exact": False,
        },
    ),
    "finite_population_bootstrap": (
        ts.finite_population_bootstrap,
        {"values": np.arange(12.0), "population_size": 50, "replicates": 9, "resample_size": 6},
    ),
    "pattern_permutation_test": (
        ts.pattern_permutation_test,
        {"gaps": np.random.default_rng(5).choice([-0.5, 0.5], (3, 20)), "draws": 9},
    ),
    "did_estimate": (ts.did_estimate, {"exposed": np.ones((8, 4)), "unexposed": np.ones((8, 4))}),
    "constat_test": (
        ts.constat_test,
        {
            "scores": np.full(6, 0.5),
            "reference_scores": np.full(5, 0.5),
            "models_scores": np.linspace(0.1, 0.9, 30).reshape(5, 6),
            "models_reference_scores": np.linspace(0.1, 0.9, 25).reshape(5, 5),
        },
    ),
    "constat_tests": (
        ts.constat_tests,
        {
            "scores": np.linspace(0.1, 0.9, 36).reshape(6, 6),
            "reference_scores": np.linspace(0.1, 0.9, 30).reshape(6, 5),
        },
    ),
    "family_bootstrap_difference": (
        ts.family_bootstrap_difference,
        {"treated": np.arange(6.0), "control": np.ones(6), "families": np.arange(6) // 2},
    ),
    "linear_weighted_kappa": (
        ts.linear_weighted_kappa,
        {"a": [0, 1, 2, 1], "b": [0, 2, 2, 1], "categories": [0, 1, 2], "n_resamples": 9},
    ),
    "paired_bootstrap": (ts.paired_bootstrap, {"a": _P, "b": _F[:, 0], "n_bootstrap": 9}),
    "paired_permutation": (ts.paired_permutation, {"a": _P, "b": _F[:, 0], "n_resamples": 9}),
    "plan_audit_size": (ts.plan_audit_size, {"gaps": np.linspace(-0.5, 0.5, 20)}),
    "coverage_study": (
        ts.coverage_study,
        {"population": np.linspace(-1, 1, 40), "n": 10, "intervals": "wald", "replications": 9},
    ),
    "budget_study": (
        ts.budget_study,
        {"gaps": np.zeros((2, 30)) + [[0.1], [-0.1]], "sizes": 10, "replications": 9},
    ),
    "detection_study": (
        ts.detection_study,
        {"public": _P, "fresh": _F, "sizes": 10, "deltas": 0.1, "replications": 9},
    ),
    "stress_grid": (
        ts.stress_grid,
        {"settings": ts.stress_settings()[:1], "replications": 9, "intervals": "wald"},
    ),
}
COUNT_CALLS["suite_audit"] = (
    ts.suite_audit,
    {
        "source": ts.simulate_suite(models=6, benchmarks=1, parents=12, leaks=(), seed=1),
        "tests": ("randomization", "constat"),
        "n_bootstrap": 9,
    },
)
COUNT_CALLS["suite_study"] = (
    ts.suite_study,
    {
        "models": 3,
        "benchmarks": 1,
        "parents": 10,
        "leaks": (),
        "tests": ("randomization",),
        "replications": 2,
        "progress": False,
    },
)
COUNT_CALLS["audit_order"] = (ts.audit_order, {"population_size": 40})
COUNT_CALLS["betting_confidence_sequence"] = (
    ts.betting_confidence_sequence,
    {"d": np.zeros(10), "population_size": 20},
)
COUNT_CALLS["besag_clifford_p_value"] = (
    ts.besag_clifford_p_value,
    {"exceedances": 3, "draws": 9, "h": 3, "max_draws": 19},
)
COUNT_CALLS["sequential_order_verdict"] = (
    ts.sequential_order_verdict,
    {"canonical_logliks": _C[:2], "permuted_logliks": [_S[0], _S[1]], "max_permutations": 9},
)
COUNT_CALLS["sequential_study"] = (
    ts.sequential_study,
    {"public": _P, "fresh": _F, "max_parents": 10, "look_every": 5, "replications": 9},
)
COUNT_CALLS["sequential_order_study"] = (
    ts.sequential_order_study,
    {"n_shards": 2, "max_permutations": 9, "h": 2, "replications": 9},
)
for _name in ("hoeffding_intervals", "bernstein_intervals", "betting_intervals"):
    COUNT_CALLS[_name] = (getattr(ts, _name), {"d": np.zeros((2, 10))})
COUNT_CALLS["hoeffding_serfling_intervals"] = COUNT_CALLS["wald_intervals"]

COUNT_PARAMETERS = {
    "n_examples",
    "n_shards",
    "permutations_per_shard",
    "n_resamples",
    "n_bootstrap",
    "replicates",
    "replications",
    "resample_size",
    "draws",
    "min_models",
    "guardrail",
    "n_threads",
    "n",
    "sizes",
    "population_size",
    "max_parents",
    "look_every",
    "max_permutations",
    "h",
    "exceedances",
    "max_draws",
}


DROPINS = {"paired_bootstrap", "paired_permutation"}


def run_extreme_counts() -> list[str]:
    """Every count argument of every COUNT_CALLS function, set to every EXTREME value:
    the findings (empty when all is well). Run in a child process."""
    findings = []
    for name, (fn, valid) in COUNT_CALLS.items():
        for param in inspect.signature(fn).parameters:
            if param not in COUNT_PARAMETERS:
                continue
            for value in EXTREME:
                kwargs = {**valid, param: value}
                if name in DROPINS:  # truescore's exception, type and message
                    import truescore

                    with np.errstate(all="ignore"):
                        ours = _outcome(partial(fn, **kwargs))
                        theirs = _outcome(partial(getattr(truescore, name), **kwargs))
                    if ours[0] != theirs[0] or (ours[0] == "error" and ours[1] != theirs[1]):
                        findings.append(f"{name}({param}={value!r:.30}): {ours} != {theirs}")
                    continue
                try:
                    with np.errstate(all="ignore"):
                        result = fn(**kwargs)
                except DOCUMENTED as error:
                    if param not in str(error):
                        findings.append(f"{name}({param}={value!r:.30}): {error!r:.200}")
                    continue
                except Exception as error:
                    findings.append(f"{name}({param}={value!r:.30}): {error!r:.200}")
                    continue
                try:
                    _walk(result)
                except AssertionError as error:
                    findings.append(f"{name}({param}={value!r:.30}): {error}")
    return findings


# ------------------------------------------ the rank test's property cases (contamination)

any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)


wide_float = st.one_of(
    st.floats(min_value=-1e308, max_value=1e308, allow_nan=False),
    any_float,
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308]),
)


def assert_sane_rank_test(p, mean, sd, z, values):
    """A rank test's result on any values is sane: p in (1/(m+1), 1], finite mean, sd >= 0
    (infinite only where the true sd exceeds the largest double), z not NaN."""
    m = len(values)
    assert 0.0 < p <= 1.0 and p >= 1.0 / (m + 1) - 1e-15
    assert math.isfinite(mean)
    assert sd >= 0.0
    if not math.isfinite(sd):
        # Only where the true sd exceeds the largest double (values near +-1.8e308).
        assert ref_moments_mpmath(values)[1] == math.inf
    assert not math.isnan(z)
