"""Every argument of every public function, given hostile values one at a time (issue 23,
"errors that name their argument"): ``VALID`` holds one valid call per public function
that takes arguments; :func:`walk` replaces each argument of it by each of ``HOSTILE``
and collects the findings. A refusal must be a documented exception (ValueError,
TypeError, ...) of one line whose message names the argument replaced; a truescore
drop-in must instead raise exactly what truescore 0.7.4 raises (type and message) and
return a result where truescore returns one. A value may also be accepted (an array
where an array is expected); what must be refused is tested case by case elsewhere
(tests/package/test_validation.py). Run in a child process by
tests/package/test_argument_names.py, so that a crash fails a test, not the run."""

from __future__ import annotations

import inspect
import io
import math
import os
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import methods
import numpy as np
import truescore_fast as ts
from fuzzing import COUNT_CALLS, DOCUMENTED, _forms, _gaps, _public_functions, _shuffled

_P, _F = _forms()
_C, _S = _shuffled()


def _pairs(n: int = 12) -> tuple[list[str], list[str], list[str]]:
    q = [f"question {i} about topic {i % 3}?" for i in range(n)]
    c = [f"the answer is {i} because {'reasons ' * (i % 4)}" for i in range(n)]
    wrong = [f"perhaps {i + 1}, probably" for i in range(n)]
    return q, c, wrong


def _table() -> io.StringIO:
    rows = ["model,parent,form,correct"]
    for model in ("m1", "m2"):
        for parent in range(6):
            for form in ("public", "f1", "f2"):
                rows.append(f"{model},{parent},{form},{(parent + len(form)) % 2}")
    return io.StringIO("\n".join(rows) + "\n")


def _suite_table() -> io.StringIO:
    rows = ["model,benchmark,parent,form,correct"]
    for model in ("m1", "m2"):
        for parent in range(6):
            for form in ("public", "fresh1"):
                rows.append(f"{model},b,{parent},{form},{(parent + len(form)) % 2}")
    return io.StringIO("\n".join(rows) + "\n")


def _suite_table_file() -> str:
    path = Path(tempfile.mkdtemp(prefix="walking-suite-")) / "suite.csv"
    path.write_text(_suite_table().getvalue())
    return str(path)


def _suite_manifest() -> str:
    folder = Path(tempfile.mkdtemp(prefix="walking-suite-"))
    (folder / "manifest.csv").write_text(
        "model,benchmark,form,path\n"
        f"m,arith,public,{_HARNESS}/arith-public.json\n"
        f"m,arith,fresh1,{_HARNESS}/arith-fresh1.json\n"
    )
    return str(folder / "manifest.csv")


class _SuiteResult:
    """A stand-in for a suite audit's result (what the report reads): two tests on one pair."""

    q, fdr, n_tests = 0.05, "bh", 2

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(
            {
                "model": ["m1", "m1"],
                "benchmark": ["b1", "b1"],
                "test": ["matched_form", "constat"],
                "p_value": [0.001, 0.2],
                "adjusted_p_value": [0.002, 0.2],
                "flagged": [True, False],
                "estimate": [0.1, 0.05],
                "low": [0.05, -0.01],
                "high": [0.15, 0.11],
            }
        )


_Q, _CORRECT, _WRONG = _pairs()
_HARNESS = str(Path(__file__).resolve().parents[1] / "examples" / "harness" / "inspect")

# function name -> a valid call's keyword arguments (callables are called per use, for
# values a call may consume, such as a text stream)
VALID: dict[str, dict[str, Any]] = {name: dict(kw) for name, (_, kw) in COUNT_CALLS.items()}
VALID.update(
    {
        "audit_prune": {"questions": _Q, "correct": _CORRECT, "incorrect": _WRONG, "n_splits": 2},
        "leakage_audit": {
            "questions": _Q,
            "correct": _CORRECT,
            "incorrect": _WRONG,
            "n_splits": 2,
        },
        "feature_differences": {"questions": _Q, "correct": _CORRECT, "incorrect": _WRONG},
        "surface_features": {"answers": _CORRECT, "questions": _Q},
        "benjamini_hochberg": {"p_values": [0.01, 0.04, 0.5]},
        "holm": {"p_values": [0.01, 0.04, 0.5]},
        "holm_correction": {"p_values": [0.01, 0.04, 0.5], "names": ["a", "b", "c"]},
        "combine_shards": {"p_values": [0.01, 0.3, 1.0]},
        "exchangeability_test": {"canonical_loglik": -3.0, "permuted_logliks": np.arange(-5.0, 0)},
        "hoeffding_interval": {"d": _gaps()},
        "bernstein_interval": {"d": _gaps()},
        "wald_interval": {"d": _gaps(), "population_size": 40},
        "betting_interval": {"d": _gaps(), "population_size": 40},
        "hoeffding_serfling_interval": {"d": _gaps(), "population_size": 40},
        "matched_form_audits": {"table": _table},
        "read_audit_table": {"table": _table},
        "read_harness_runs": {
            "public": f"{_HARNESS}/arith-public.json",
            "fresh": [f"{_HARNESS}/arith-fresh1.json"],
            "match_key": "metadata.parent_id",
        },
        "stress_population": {"setting": ts.stress_settings()[0]},
        "validate_disclosure": {"obj_or_path": {"contamination": {}}},
        "adjust": {"p_values": [0.01, 0.04, 0.5]},
        "read_suite": {"source": _suite_table_file()},
        "read_order_table": {
            "table": {"kind": ["canonical", "x"], "loglik": [1.0, 0.0]},
        },
        "simulate_suite": {"models": 3, "benchmarks": 1, "parents": 20, "leaks": ()},
        "read_suite_manifest": {"manifest": _suite_manifest(), "match_key": "metadata.parent_id"},
        "plot_heatmap": {"result": _SuiteResult(), "path": None, "test": "constat"},
        "write_report": {"result": _SuiteResult(), "path": "report.html", "title": "t"},
    }
)


def _toy_scorer(windows: Any) -> list[np.ndarray]:
    """A TokenScorer: -1.5 nats a token."""
    return [np.full(len(w) - 1, -1.5) for w in windows]


def _examples_file() -> str:
    path = Path(tempfile.mkdtemp(prefix="walking-examples-")) / "bench.txt"
    path.write_text("one\ntwo\nthree\n")
    return str(path)


VALID.update(
    {
        "window_spans": {"n_tokens": 10, "context_len": 4, "stride": 2},
        "sliding_window_loglik": {
            "tokens": [1, 2, 3, 4, 5],
            "scorer": _toy_scorer,
            "context_len": 4,
            "stride": 2,
        },
        "score_orders": {
            "examples": [[1, 2, 3]] * 6,
            "orders": ts.shard_orders(6, 2, 2),
            "scorer": _toy_scorer,
            "context_len": 4,
            "stride": 2,
            "progress": False,
        },
        "read_examples": {"path": _examples_file()},
    }
)
VALID["coverage_study"]["progress"] = False
for _name in ("budget_study", "detection_study", "stress_grid", "sequential_study"):
    VALID[_name]["progress"] = False
VALID["sequential_order_study"]["progress"] = False
VALID["seed_contrast"]["method"] = "exact"

# The values each argument is given in turn: an array where a number is expected and a
# 2-D one, complex and datetime arrays, a string, NaN, a complex number, a dict, -1, a
# number beyond the largest double, an object of no use.
HOSTILE: list[tuple[str, Callable[[], Any]]] = [
    ("array", lambda: np.array([0.05, 0.5])),
    ("2-D array", lambda: np.ones((2, 2))),
    ("complex array", lambda: np.array([0.5 + 1j, 0.25])),
    ("datetime64 array", lambda: np.arange(3).astype("M8[D]")),
    ("string", lambda: "abc"),
    ("nan", lambda: math.nan),
    ("complex", lambda: 0.5 + 1j),
    ("dict", lambda: {1: 2}),
    ("-1", lambda: -1),
    ("10**400", lambda: 10**400),
    ("object", object),
]

# Accepted by no argument of this library's own API (the drop-ins do as truescore does):
# the real part of a complex number, a date read as a count of days
NEVER_ACCEPTED = {"complex array", "datetime64 array", "complex"}

# Labels, written with str(): any value names a test (a date too)
LABELS = {("holm_correction", "names")}

DROPINS = {
    "exchangeability_test",
    "combine_shards",
    "paired_bootstrap",
    "paired_permutation",
    "holm",
    "benjamini_hochberg",
}


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        with np.errstate(all="ignore"):
            return "result", call()
    except Exception as error:  # sorted by the caller
        return "error", error


def _materialised(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: (v() if callable(v) and k == "table" else v) for k, v in kwargs.items()}


def walk() -> dict[str, Any]:
    """Every (function, argument, hostile value): the counts and the findings (in a
    temporary working directory: a checkpoint="abc" writes a file there)."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        try:
            return _walk()
        finally:
            os.chdir(here)


def _named(param: str, valid: Any, label: str, error: Exception) -> bool:
    """Whether ``error`` names the argument: its name, or for a well-typed string
    argument given "abc" (a column, a key, a form, a path), the value itself ('abc' not
    found, no such file: abc)."""
    message = str(error)
    typed = isinstance(valid, (str, Path)) or valid is None
    if isinstance(error, FileNotFoundError):
        return message.endswith(": abc")
    return param in message or (label == "string" and typed and "'abc'" in message)


def _walk() -> dict[str, Any]:
    report = _walk_functions()
    methods_report = _walk_methods()
    for key, value in methods_report["counts"].items():
        report["counts"][f"method_{key}"] = value
    report["findings"] += methods_report["findings"]
    return report


def _judge(where: str, outcome: tuple[str, Any], param: str, valid: Any, label: str) -> str | None:
    """The finding of one non-drop-in call, or None: a result must not come from a
    value never accepted; a refusal must be documented, name ``param``, be one line."""
    if outcome[0] == "result":
        if label in NEVER_ACCEPTED or (
            label == "string" and not isinstance(valid, str) and valid is not None
        ):
            return f"{where}: accepted silently"
        return None
    error = outcome[1]
    message = str(error)
    if not isinstance(error, DOCUMENTED) or not _named(param, valid, label, error):
        return f"{where}: {type(error).__name__}: {message:.150}"
    return f"{where}: a message of several lines: {message:.150}" if "\n" in message else None


def _walk_methods() -> dict[str, Any]:
    """Every argument of every public method and constructor (tests/methods.py)."""
    counts = {"methods": 0, "calls": 0, "refused": 0, "named": 0}
    findings: list[str] = []
    for name in sorted(methods.public_methods()):
        counts["methods"] += 1
        for param in methods.parameters(name):
            valid = methods.ARGUMENTS[name].get(param)
            for label, make in HOSTILE:
                call = methods.bound(name, np.random.default_rng(0))
                kwargs = {**methods.ARGUMENTS[name], param: make()}
                outcome = _outcome(partial(call, **kwargs))
                counts["calls"] += 1
                finding = _judge(f"{name}({param}={label})", outcome, param, valid, label)
                if outcome[0] == "result" and name in methods.CONTAINERS:
                    finding = None
                counts["refused"] += outcome[0] == "error"
                counts["named"] += outcome[0] == "error" and finding is None
                if finding is not None:
                    findings.append(finding)
    return {"counts": counts, "findings": findings}


def _walk_functions() -> dict[str, Any]:
    import truescore

    functions = _public_functions()
    findings: list[str] = []
    counts = {"functions": 0, "calls": 0, "refused": 0, "named": 0, "dropin_same": 0}
    for name, fn in sorted(functions.items()):
        if name not in VALID:
            continue
        counts["functions"] += 1
        for param in inspect.signature(fn).parameters:
            if param == "options":
                continue
            default = inspect.signature(fn).parameters[param].default
            valid = VALID[name].get(param, default)
            for label, make in HOSTILE:
                value = make()  # one object for both libraries: a repr may hold its address
                kwargs = {**_materialised(VALID[name]), param: value}
                counts["calls"] += 1
                ours = _outcome(lambda fn=fn, kwargs=kwargs: fn(**kwargs))
                if os.path.exists("abc"):  # a checkpoint written by checkpoint="abc"
                    os.remove("abc")
                where = f"{name}({param}={label})"
                if name in DROPINS:
                    kwargs = {**_materialised(VALID[name]), param: value}
                    theirs = _outcome(partial(getattr(truescore, name), **kwargs))
                    # the same message, as truescore's type (an argument check raises an
                    # ArgumentError, a ValueError subclass: every except catches it)
                    if ours[0] != theirs[0] or (
                        ours[0] == "error"
                        and (
                            not isinstance(ours[1], type(theirs[1]))
                            or str(ours[1]) != str(theirs[1])
                        )
                    ):
                        findings.append(
                            f"{where}: ours {ours[1]!r:.150} truescore {theirs[1]!r:.150}"
                        )
                    else:
                        counts["dropin_same"] += 1
                    continue
                if ours[0] == "result":
                    if (label in NEVER_ACCEPTED and (name, param) not in LABELS) or (
                        label == "string" and not isinstance(valid, str) and valid is not None
                    ):
                        findings.append(f"{where}: accepted silently")
                    continue
                error = ours[1]
                counts["refused"] += 1
                message = str(error)
                if not isinstance(error, DOCUMENTED):
                    findings.append(f"{where}: {type(error).__name__}: {message:.150}")
                elif not _named(param, valid, label, error) or "\n" in message:
                    findings.append(f"{where}: {type(error).__name__}: {message:.150}")
                else:
                    counts["named"] += 1
    return {"counts": counts, "findings": findings}


def signature_size(fn: Callable[..., Any]) -> int:
    """How many arguments ``fn`` takes (``**options`` not counted)."""
    return sum(
        1
        for p in inspect.signature(fn).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    )
