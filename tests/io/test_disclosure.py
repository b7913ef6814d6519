"""Disclosure records and the weighted kappa of ``io/disclosure.py``: the schema, the worked
examples, every problem named by its field (against an independent validator), records
with non-finite numbers, repeated keys or deep nesting, and ``linear_weighted_kappa``
(against scikit-learn, seeded, its coverage, memory checks)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as ts
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from sklearn.metrics import cohen_kappa_score
from truescore_fast._random import philox_key
from truescore_fast._validation import memory_limit
from truescore_fast.cli import main
from truescore_fast.io.disclosure import (
    CONTAMINATION_TYPES,
    disclosure_schema,
    linear_weighted_kappa,
    validate_disclosure,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "disclosure"


TYPES = ("direct", "derivative", "temporal", "distributional", "acquired")


def full_record():
    return json.loads((EXAMPLES / "private_test_set.json").read_text())


# --- schema and examples ---------------------------------------------------------------


def test_schema_is_draft_2020_12_and_names_the_five_types():
    import jsonschema

    schema = disclosure_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert tuple(CONTAMINATION_TYPES) == TYPES
    status = schema["properties"]["contamination"]["else"]
    assert tuple(status["required"]) == TYPES
    assert set(schema["required"]) == {
        "mitigations",
        "contamination",
        "evaluation_run",
        "audit_evidence",
    }


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.name)
def test_worked_examples_are_valid(path):
    result = validate_disclosure(path)
    assert result.valid, result.problems
    assert validate_disclosure(json.loads(path.read_text())).valid


def _leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    yield path


def _set(obj, path, value):
    for part in path[:-1]:
        obj = obj[part]
    obj[path[-1]] = value


def test_unknown_is_valid_for_every_field_and_every_entry():
    record = full_record()
    paths = [p for p in _leaves(record) if p and p[0] != "score" and p[0] != "schema_version"]
    assert len(paths) > 30
    for path in paths:
        changed = copy.deepcopy(record)
        _set(changed, path, "unknown")
        assert validate_disclosure(changed).valid, path


def test_the_independent_reference_validator_agrees_on_mutations():
    # Cross-check the messages' verdicts with jsonschema's own is_valid on many mutations.
    import jsonschema

    validator = jsonschema.Draft202012Validator(disclosure_schema())
    record = full_record()
    rng = np.random.default_rng(0)
    junk = ["", "unknwn", -1, 0, 1.5, None, True, [], {}, ["direct"], "open"]
    for path in [p for p in _leaves(record) if p]:
        for value in rng.choice(np.array(junk, dtype=object), 3, replace=False):
            changed = copy.deepcopy(record)
            _set(changed, path, value)
            result = validate_disclosure(changed)
            assert result.valid == validator.is_valid(changed), (path, value)
            assert result.valid == (not result.problems)


def test_every_problem_is_listed_and_names_its_field():
    bad = {
        "mitigations": [{"name": "", "closes": ["direct", "sideways"]}],
        "contamination": {t: "open" for t in TYPES[:4]} | {"derivative": "maybe"},
        "evaluation_run": {
            "elicitation_budget": {"attempts_per_item": 0, "decoding": "greedy"},
            "exposure": "unknwn",
        },
        "audit_evidence": [
            {"test": "t", "data": "x.csv", "p_value": 1.5},
            {"test": "u", "data": "y"},
        ],
        "extra": 1,
    }
    problems = validate_disclosure(bad).problems
    expected_fields = [
        "extra:",
        "audit_evidence[0].p_value:",
        "audit_evidence[1]: needs interval or p_value",
        "contamination.acquired: required",
        "contamination.derivative: 'maybe'",
        "evaluation_run.elicitation_budget.attempts_per_item:",
        "evaluation_run.exposure: 'unknwn'",
        "mitigations[0].closes[1]: 'sideways'",
        "mitigations[0].name:",
    ]
    assert len(problems) == len(expected_fields)
    for field in expected_fields:
        assert any(p.startswith(field) for p in problems), (field, problems)


def test_missing_top_level_fields_are_each_reported():
    problems = validate_disclosure({}).problems
    for field in ("mitigations", "contamination", "evaluation_run", "audit_evidence"):
        assert any(p.startswith(f"{field}: required") for p in problems)


def test_file_errors(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    result = validate_disclosure(broken)
    assert not result.valid and "not valid JSON" in result.problems[0]
    with pytest.raises(FileNotFoundError):
        validate_disclosure(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="obj_or_path"):
        validate_disclosure(42)
    top = tmp_path / "list.json"
    top.write_text("[]")
    assert not validate_disclosure(top).valid


# --- linear-weighted kappa -------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_kappa_matches_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    cats = ["none", "partial", "full", "extensive"]
    n = int(rng.integers(5, 60))
    a = rng.choice(cats, n)
    b = np.where(rng.random(n) < 0.6, a, rng.choice(cats, n))
    res = linear_weighted_kappa(a, b, categories=cats, n_resamples=200)
    ref = cohen_kappa_score(a, b, labels=cats, weights="linear")
    assert res.estimate == pytest.approx(ref, abs=1e-12)
    assert res.low <= res.estimate <= res.high or res.n_items < 10


def test_kappa_integer_scale_with_unused_categories():
    a = [0, 1, 1, 2, 0, 1]
    b = [0, 1, 2, 2, 1, 1]
    res = linear_weighted_kappa(a, b, categories=[0, 1, 2, 3, 4], n_resamples=100)
    ref = cohen_kappa_score(a, b, labels=[0, 1, 2, 3, 4], weights="linear")
    assert res.estimate == pytest.approx(ref, abs=1e-12)


def test_kappa_bootstrap_is_seeded():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, 40)
    b = np.clip(a + rng.integers(-1, 2, 40), 0, 2)
    one = linear_weighted_kappa(a, b, categories=[0, 1, 2], seed=5)
    assert one == linear_weighted_kappa(a, b, categories=[0, 1, 2], seed=5)
    other = linear_weighted_kappa(a, b, categories=[0, 1, 2], seed=6)
    assert (one.low, one.high) != (other.low, other.high)


def test_kappa_interval_coverage():
    # Items drawn from a known joint distribution of two coders' codes; the population
    # kappa is computed from that distribution, independently of the code under test.
    joint = np.array([[0.30, 0.06, 0.01], [0.05, 0.25, 0.06], [0.01, 0.05, 0.21]])
    joint /= joint.sum()
    k = 3
    w = np.abs(np.subtract.outer(np.arange(k), np.arange(k))) / (k - 1)
    truth = 1 - (w * joint).sum() / (w * np.outer(joint.sum(1), joint.sum(0))).sum()
    rng = np.random.default_rng(123)
    reps, covered = 200, 0
    for r in range(reps):
        cells = rng.choice(9, size=150, p=joint.ravel())
        res = linear_weighted_kappa(
            cells // 3, cells % 3, categories=[0, 1, 2], n_resamples=500, seed=r
        )
        covered += res.low <= truth <= res.high
    se = math.sqrt(0.95 * 0.05 / reps)
    assert abs(covered / reps - 0.95) <= 4 * se


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        ([0, 1], [0], {}, "same length"),
        ([0, 5], [0, 1], {}, r"a\[1\] = 5"),
        ([0, 1], [0, "x"], {}, r"b\[1\]"),
        ([], [], {}, "a must be non-empty"),
        ([[0]], [[0]], {}, "1-D"),
        ([0, 1], [0, 1], {"categories": [0]}, "at least two"),
        ([0, 1], [0, 1], {"categories": [0, 1, 1]}, "repeat"),
        ([0, 1], [0, 1], {"alpha": 1.5}, "alpha"),
        ([0, 1], [0, 1], {"n_resamples": 0}, "n_resamples"),
        ([0, 1], [0, 1], {"seed": -1}, "seed"),
        ([1, 1, 1], [1, 1, 1], {}, "undefined"),
    ],
)
def test_kappa_errors(a, b, kwargs, match):
    args = {"categories": [0, 1, 2]} | kwargs
    with pytest.raises(ValueError, match=match):
        linear_weighted_kappa(a, b, **args)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=15), st.lists(st.integers(0, 3), max_size=15))
def test_kappa_any_input_gives_a_finite_result_or_value_error(a, b):
    try:
        res = linear_weighted_kappa(a, b, categories=[0, 1, 2], n_resamples=50)
    except ValueError:
        return
    assert math.isfinite(res.estimate) and res.estimate <= 1.0
    assert not any(math.isnan(x) for x in (res.low, res.high))


# --- item 5: disclosure records with NaN or a repeated key ----------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "disclosure" / "private_test_set.json"


@pytest.mark.parametrize("field", ["p_value", "statistic"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_number_in_a_record_mapping_is_a_problem(field: str, value: float) -> None:
    pytest.importorskip("jsonschema")
    record = json.loads(EXAMPLE.read_text())
    assert ts.validate_disclosure(record).valid
    record["audit_evidence"][0][field] = value
    result = ts.validate_disclosure(record)
    assert not result.valid
    assert result.problems[0] == (
        f"audit_evidence[0].{field}: {value!r} is not a JSON number (JSON has no NaN or Infinity)"
    )


def _with_p_value(text: str) -> str:
    """The example record's JSON text with its first p-value written as ``text``."""
    record = json.loads(EXAMPLE.read_text())
    record["audit_evidence"][0]["p_value"] = "@@"
    out = json.dumps(record, indent=2).replace('"p_value": "@@"', text)
    assert text in out
    return out


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_nan_or_infinity_in_a_record_file_is_invalid(tmp_path: Path, literal: str) -> None:
    pytest.importorskip("jsonschema")
    text = _with_p_value(f'"p_value": {literal}')
    path = tmp_path / "record.json"
    path.write_text(text)
    result = ts.validate_disclosure(path)
    assert not result.valid
    assert "JSON has no NaN or Infinity" in result.problems[0]
    assert main(["disclose", "validate", str(path)]) == 1


def test_a_key_repeated_in_one_object_is_invalid(tmp_path: Path) -> None:
    pytest.importorskip("jsonschema")
    # The first copy is invalid; the parser's default (last wins) would hide it.
    text = _with_p_value('"p_value": "very small", "p_value": 0.011')
    path = tmp_path / "record.json"
    path.write_text(text)
    result = ts.validate_disclosure(path)
    assert not result.valid
    assert result.problems == (
        "(file): not valid JSON: the key 'p_value' appears twice in one object",
    )
    assert main(["disclose", "validate", str(path)]) == 1


def test_validate_disclosure_names_a_directory(tmp_path):
    pytest.importorskip("jsonschema")
    with pytest.raises(ValueError, match="is a directory"):
        ts.validate_disclosure(tmp_path)


# --- validate_disclosure: no RecursionError from any path, one reader ---------------------


def _nested(levels: int) -> dict:
    record: dict = {}
    for _ in range(levels):
        record = {"x": record}
    return record


@pytest.mark.parametrize("levels", [70, 5000])
def test_a_deep_record_is_a_problem_not_a_recursion_error(tmp_path, levels) -> None:
    pytest.importorskip("jsonschema")
    for record in (_nested(levels), {"contamination": _nested(levels)}):
        result = ts.validate_disclosure(record)
        assert not result.valid and "nested more than 64 levels" in result.problems[0]
    path = tmp_path / "deep.json"
    path.write_text('{"x": ' * levels + "{}" + "}" * levels, encoding="utf-8")
    result = ts.validate_disclosure(path)
    assert not result.valid and "nested" in result.problems[0]
    path.write_text('{"contamination": ' + "[" * levels + "]" * levels + "}", encoding="utf-8")
    assert not ts.validate_disclosure(str(path)).valid


def test_a_record_64_levels_deep_is_still_checked_against_the_schema() -> None:
    pytest.importorskip("jsonschema")
    result = ts.validate_disclosure({"contamination": _nested(62)})
    assert not any("nested" in p for p in result.problems)  # schema problems only


def test_the_command_line_reads_a_record_through_the_api_reader(tmp_path, monkeypatch) -> None:
    pytest.importorskip("jsonschema")
    from truescore_fast import _files as _io
    from truescore_fast.cli import main

    seen = []
    real = _io.read_json_file

    def spy(*args, **kwargs):
        seen.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr("truescore_fast.io.disclosure.read_json_file", spy)
    path = tmp_path / "deep.json"
    path.write_text('{"x": ' * 5000 + "{}" + "}" * 5000, encoding="utf-8")
    assert main(["disclose", "validate", str(path)]) == 1
    assert seen == [str(path)]


def _beyond_memory() -> int:
    limit = memory_limit()
    assert limit is not None
    return limit


def test_kappa_resamples_beyond_memory_are_refused_before_drawing() -> None:
    n = _beyond_memory() // 8  # 25 bytes a resample needed: about 3 times the machine
    with pytest.raises(MemoryError, match=r"^n_resamples needs [\d.,]+ [GTPE]B of memory"):
        ts.linear_weighted_kappa([1, 2, 3, 1], [1, 2, 2, 1], categories=[1, 2, 3], n_resamples=n)


def test_kappa_resamples_are_unchanged_by_the_preallocated_array() -> None:
    # The seeded result is what the chunked draws give: a small case against a loop.
    a, b = [1, 2, 3, 1, 2, 3, 3, 1], [1, 2, 2, 1, 3, 3, 2, 1]
    got = ts.linear_weighted_kappa(a, b, categories=[1, 2, 3], n_resamples=300, seed=4)
    rng = np.random.Generator(np.random.Philox(key=np.array(philox_key(4), dtype=np.uint64)))
    rows = rng.integers(0, 8, size=(300, 8))
    w = np.abs(np.subtract.outer(np.arange(3), np.arange(3))) / 2
    ai, bi = np.array(a) - 1, np.array(b) - 1
    kappas = []
    for r in rows:
        pa, pb = np.bincount(ai[r], minlength=3) / 8, np.bincount(bi[r], minlength=3) / 8
        e = pa @ w @ pb
        kappas.append(1 - w[ai[r], bi[r]].mean() / e if e > 0 else np.nan)
    k = np.array(kappas)
    assert got.n_undefined == int(np.isnan(k).sum())
    lo, hi = np.percentile(k[~np.isnan(k)], [2.5, 97.5])
    assert (got.low, got.high) == pytest.approx((lo, hi), abs=1e-12)
