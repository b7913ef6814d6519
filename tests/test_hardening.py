"""Issue 10, items 3-11: inputs that used to give a wrong or non-finite answer now give a
correct result or one clear error naming the argument."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as ts
from truescore_fast.cli import main

# --- item 3: population sizes beyond 64-bit integer arithmetic ------------------------


def test_stratum_sizes_whose_sum_overflows_int64_are_refused() -> None:
    values = np.arange(10.0)
    strata = np.repeat([0, 1], 5)
    with pytest.raises(ValueError, match="population_size sums to"):
        ts.finite_population_bootstrap(
            values, strata=strata, population_size=[2**62, 2**62], replicates=10
        )
    fine = ts.finite_population_bootstrap(
        values, strata=strata, population_size=[2**62, 2**61], replicates=10
    )
    assert fine.estimate == pytest.approx((2 * 2.0 + 7.0) / 3)


@pytest.mark.parametrize("size", [2**63, 1e300, np.uint64(2**63)])
def test_a_population_size_beyond_int64_is_refused(size: object) -> None:
    with pytest.raises(ValueError, match="population_size must be below 2\\*\\*63"):
        ts.finite_population_bootstrap(np.arange(10.0), population_size=size, replicates=10)


# --- item 4: values that are not real numbers ------------------------------------------

NOT_REAL = {
    "complex": np.array([1.0 + 1j, 2.0, 3.0, 4.0]),
    "complex list": [1.0 + 1j, 2.0, 3.0, 4.0],
    "datetime64": np.array(["2020-01-01"] * 4, dtype="M8[D]"),
    "timedelta64": np.arange(4).astype("m8[s]"),
    "numeric strings": np.array(["1", "2", "3", "4"]),
    "string list": ["1", "2", "3", "4"],
    "None inside": np.array([1.0, None, 2.0, 3.0], dtype=object),
    "complex inside objects": np.array([1.0, 2j, 2.0, 3.0], dtype=object),
}


@pytest.mark.parametrize("bad", list(NOT_REAL.values()), ids=list(NOT_REAL))
def test_non_real_values_are_a_type_error_naming_the_argument(bad: object) -> None:
    with pytest.raises(TypeError, match="values must hold real numbers"):
        ts.seed_contrast(bad)
    with pytest.raises(TypeError, match="values must hold real numbers"):
        ts.finite_population_bootstrap(bad, population_size=10, replicates=10)
    with pytest.raises(TypeError, match="confidence_original must hold real numbers"):
        ts.paired_confidence_test(bad, np.zeros(4))
    with pytest.raises(TypeError, match="canonical must hold real numbers"):
        ts.sharded_likelihood_test(bad, np.zeros((4, 3)))
    with pytest.raises(TypeError, match="public must hold real numbers"):
        ts.matched_form_audit(bad, np.zeros((4, 2)))
    with pytest.raises(TypeError, match="d must hold real numbers"):
        ts.wald_interval(bad)


def test_real_values_of_any_real_dtype_are_converted() -> None:
    from decimal import Decimal
    from fractions import Fraction

    expect = ts.seed_contrast([1.0, 0.0, 1.0, 1.0]).estimate
    for same in (
        [True, False, True, True],
        np.array([1, 0, 1, 1], dtype=np.uint8),
        np.array([1, 0, 1, 1], dtype=np.float32),
        np.array([1, 0, 1, 1], dtype=np.longdouble),
        np.array([1, 0, 1, 1], dtype=object),
        [Decimal(1), Decimal(0), Fraction(1), 1],
    ):
        assert ts.seed_contrast(same).estimate == expect


def test_ragged_values_are_a_value_error_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="values must be an array of numbers"):
        ts.seed_contrast([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="values holds a number too large"):
        ts.seed_contrast([10**400, 1])


# --- item 5: disclosure records with NaN or a repeated key ----------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "disclosure" / "private_test_set.json"


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


# --- item 6: the SLCT at log-likelihoods whose squares overflow ------------------------


@pytest.mark.parametrize("variant", ["corrected", "published"])
@pytest.mark.parametrize("exponent", [520, 600, 1000])
def test_sharded_likelihood_test_is_scale_free_up_to_the_largest_double(
    variant: str, exponent: int
) -> None:
    rng = np.random.default_rng(1)
    canonical = rng.normal(size=8) + 0.5
    shuffled = rng.normal(size=(8, 5)) / 4
    base = ts.sharded_likelihood_test(canonical, shuffled, variant=variant)
    big = ts.sharded_likelihood_test(
        np.ldexp(canonical, exponent), np.ldexp(shuffled, exponent), variant=variant
    )
    assert big.statistic == base.statistic
    assert big.p_value == base.p_value
    assert big.contaminated == base.contaminated
    assert big.estimate == math.ldexp(base.estimate, exponent)
    assert big.sd_difference == math.ldexp(base.sd_difference, exponent)
    np.testing.assert_array_equal(big.differences, np.ldexp(base.differences, exponent))


def test_sharded_likelihood_test_refuses_differences_beyond_the_largest_double() -> None:
    with pytest.raises(ValueError, match="canonical minus the shuffled means overflows"):
        ts.sharded_likelihood_test(np.array([1e308, -1e308]), np.array([[-1e308], [1e308]]))
