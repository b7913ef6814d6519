"""The argument checks of ``_validation.py`` as every public function meets them: non-real
and ragged values, alpha and other real scalars (also beyond every double on the command
line), counts and population sizes beyond int64, and memory errors that name the argument."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
import truescore_fast as tf
import truescore_fast as ts
from truescore_fast import _core
from truescore_fast._validation import format_bytes, memory_error, real_scalar

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


# ------------------------------------- arguments pybind11 would have refused unclearly


def test_alpha_must_be_one_real_number():
    with pytest.raises(TypeError, match="alpha"):
        tf.exchangeability_tests(np.zeros(4), np.zeros((4, 2)), alpha=np.array([0.05]))
    with pytest.raises(TypeError, match="alpha"):
        tf.seed_contrast(np.arange(5.0), alpha=np.array([0.05]))
    assert tf.seed_contrast(np.arange(5.0), alpha=np.float32(0.05)).alpha == np.float32(0.05)


@pytest.mark.parametrize("count", [2**63, 2**64])
def test_counts_beyond_int64_are_refused_by_name(count):
    with pytest.raises(ValueError, match="draws"):
        tf.seed_contrast(np.arange(50.0), method="monte_carlo", draws=count)
    with pytest.raises(ValueError, match="n_examples"):
        tf.shard_orders(count, 1, 1)


@pytest.mark.parametrize("size", [2**63, 1e300])
def test_population_sizes_beyond_int64_are_refused_by_name(size):
    with pytest.raises(ValueError, match="population_size"):
        tf.finite_population_bootstrap(np.arange(10.0), population_size=size)


def test_an_output_too_large_to_allocate_names_its_argument():
    with pytest.raises(MemoryError, match="n_bootstrap"):
        _core.bootstrap_means(np.arange(5.0), 2**61, 1, 2)
    with pytest.raises(MemoryError, match="n_resamples"):
        _core.sign_flip_test(
            np.arange(5.0), exact=False, n_resamples=2**61, key0=1, key1=2, alpha_tail=0.05
        )
    with pytest.raises(MemoryError, match="replicates"):
        _core.rao_wu_replicates(
            np.arange(4.0), np.array([0, 4]), np.array([3]), np.ones(1), np.ones(1), 2**61, 1, 2
        )


# --- scalar population sizes beyond int64 ------------------------------------------------

HUGE_SIZES = [2**63, 2**64, 1e300, 10**400, np.uint64(2**63), np.array(2.0**70)]


@pytest.mark.parametrize("size", HUGE_SIZES, ids=repr)
@pytest.mark.parametrize(
    "call",
    [
        lambda n: ts.wald_interval(np.linspace(-0.5, 0.5, 10), population_size=n),
        lambda n: ts.hoeffding_serfling_interval(np.linspace(-0.5, 0.5, 10), population_size=n),
        lambda n: ts.betting_interval(np.linspace(-0.5, 0.5, 10), population_size=n),
        lambda n: ts.wald_intervals(np.zeros((2, 10)), population_size=n),
        lambda n: ts.matched_form_intervals(np.zeros((2, 10)), population_size=n),
        lambda n: ts.matched_form_audit(np.ones(10), np.zeros((10, 2)), population_size=n),
        lambda n: ts.plan_audit_size(np.linspace(-0.5, 0.5, 20), population_size=n),
        lambda n: ts.finite_population_bootstrap(np.arange(10.0), population_size=n),
    ],
    ids=["wald", "hs", "betting", "wald_intervals", "mfi", "audit", "plan", "fpb"],
)
def test_a_scalar_population_size_beyond_int64_names_population_size(call, size) -> None:
    with pytest.raises(ValueError, match="population_size must be"):
        call(size)


def test_the_largest_int64_population_size_still_works() -> None:
    d = np.linspace(-0.5, 0.5, 10)
    near_infinite = ts.wald_interval(d, population_size=2**63 - 1)
    assert near_infinite.low == pytest.approx(ts.wald_interval(d).low, rel=1e-12)


# --- one check for real scalar arguments -------------------------------------------------


@pytest.mark.parametrize(
    "value", [True, np.True_, "0.05", 0.05 + 0j, None, np.array([0.05]), [0.05], object()]
)
def test_real_scalar_refuses_what_is_not_one_real_number(value) -> None:
    with pytest.raises(TypeError, match="^level must be a real number"):
        real_scalar("level", value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400, -(10**400)])
def test_real_scalar_refuses_non_finite_values(value) -> None:
    with pytest.raises(ValueError, match="^level "):
        real_scalar("level", value)


def test_real_scalar_range_and_accepted_forms() -> None:
    assert real_scalar("r", np.array(0.25), low=0.0) == 0.25
    assert real_scalar("r", np.float32(0.5), low=0.0) == 0.5
    assert real_scalar("r", Decimal("0.5"), low=0.0) == 0.5
    assert real_scalar("r", 3, low=0.0) == 3.0
    assert real_scalar("r", 0.0, low=0.0) == 0.0
    with pytest.raises(ValueError, match=r"r must lie in \(0, 1\)"):
        real_scalar("r", 0.0, low=0.0, high=1.0, low_open=True, high_open=True)
    with pytest.raises(ValueError, match=r"r must lie in \[0, inf\]"):
        real_scalar("r", -1e-300, low=0.0)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda v: ts.seed_contrast(np.arange(5.0), alpha=v), "alpha"),
        (lambda v: ts.wald_interval(np.zeros(5), alpha=v), "alpha"),
        (
            lambda v: ts.matched_form_audit(np.ones(5), np.zeros((5, 2)), transport_radius=v),
            "transport_radius",
        ),
        (lambda v: ts.plan_audit_size(np.linspace(-0.5, 0.5, 20), deltas=[0.1, v]), "deltas"),
        (lambda v: ts.plan_audit_size(np.linspace(-0.5, 0.5, 20), power=v), "power"),
        (lambda v: ts.leakage_audit(["q"] * 10, ["a"] * 10, ["b"] * 10, alpha=v), "alpha"),
    ],
    ids=["seed_contrast alpha", "wald alpha", "radius", "deltas", "power", "leakage alpha"],
)
@pytest.mark.parametrize("value", [np.array([0.05]), "0.05", True, 0.05j, None])
def test_every_real_scalar_argument_is_checked_alike(call, name, value) -> None:
    with pytest.raises(TypeError, match=f"^{name} must be a real number"):
        call(value)


# --- the command line: numbers beyond every double name the flag --------------------------

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


AUDIT = [str(ROOT / "examples" / "audit_example.csv")]


SHARDED = [str(ROOT / "examples" / "contamination_sharded.csv"), "--shard-column", "shard"]


HUGE_FLAG_VALUES = [str(10**400), "1e400", "-" + str(10**400), "9" * 5000]


NUMERIC_FLAGS = [
    (["audit", *AUDIT], "--population-size"),
    (["audit", *AUDIT], "--radius"),
    (["audit", *AUDIT], "--alpha"),
    (["audit", *AUDIT], "--guardrail"),
    (["contamination", *SHARDED], "--alpha"),
    (["calibrate", "coverage"], "--replications"),
    (["calibrate", "coverage"], "--threads"),
    (["calibrate", "coverage"], "--seed"),
]


def test_every_numeric_flag_beyond_every_double_is_one_line_naming_it() -> None:
    import subprocess
    import sys

    # one child runs every case (a child per case would cost a second each)
    code = """
import contextlib, io, json, sys
from truescore_fast.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as stop:
            code = stop.code
    out.append([code, err.getvalue()])
print(json.dumps(out))
"""
    cases = [
        (command, flag, value)
        for command, flag in NUMERIC_FLAGS
        for value in HUGE_FLAG_VALUES
        if not (flag == "--seed" and value[0] != "-" and "e" not in value)  # a valid seed
    ]
    argvs = [[*command, f"{flag}={value}"] for command, flag, value in cases]
    child = subprocess.run(
        [sys.executable, "-c", code, __import__("json").dumps(argvs)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    results = __import__("json").loads(child.stdout.strip().splitlines()[-1])
    for (command, flag, value), (exit_code, err) in zip(cases, results, strict=True):
        lines = err.strip().splitlines()
        where = f"{command[0]} {flag}={value[:12]}"
        assert exit_code == 1, (where, exit_code, err[-300:])
        assert len(lines) == 1 and flag in lines[0], (where, err[-300:])
        assert "Traceback" not in err and len(lines[0]) < 300, (where, lines[0][:300])


# --- memory: one message for every size check -------------------------------------------


def test_format_bytes_reads_like_a_person_would_write_it() -> None:
    assert format_bytes(512) == "512 bytes"
    assert format_bytes(24e9) == "24.0 GB"
    assert format_bytes(3.2e6) == "3.2 MB"
    assert format_bytes(8e18) == "8.0 EB"
    assert format_bytes(2.5e21) == "2,500.0 EB"


def test_memory_error_names_the_argument_size_and_remedy() -> None:
    message = str(memory_error("n_resamples", 24e9, "use fewer n_resamples"))
    assert message.startswith("n_resamples needs 24.0 GB of memory")
    assert message.endswith("use fewer n_resamples")


# --- issue 23: accepted silently, now refused naming the argument -------------------------


def test_a_string_where_a_sequence_is_expected_is_refused():
    with pytest.raises(TypeError, match="^names must be a sequence of names, not a string"):
        ts.holm_correction([0.01, 0.02, 0.03], names="abc")  # was three names a, b, c
    assert ts.holm_correction([0.01, 0.02, 0.03], names=("a", "b", "c")).names == ("a", "b", "c")
    with pytest.raises(TypeError, match="^categories must be a sequence of categories"):
        ts.linear_weighted_kappa([0, 1], [1, 0], categories="01")
    with pytest.raises(TypeError, match="^models must be a sequence of model names"):
        ts.did_estimate(np.full((6, 4), 0.5), np.full((6, 4), 0.5), models="m")
    with pytest.raises(TypeError, match="^permuted_logliks must be a sequence of arrays"):
        ts.sequential_order_verdict([-1.0], 3, max_permutations=9)


def test_holm_names_of_the_wrong_length_are_refused_before_converting_them():
    import tracemalloc

    names = [0.5] * 3_000_000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"^names must have one entry per p-value"):
            ts.holm_correction([0.01, 0.02, 0.03], names=names)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the 3,000,000 names were not turned into strings (about 150 MB) to be counted
    assert peak < 64 * 2**20, peak


@pytest.mark.parametrize("value", ["no", "yes", 1, 0, None, np.array([True, False])])
def test_a_flag_must_be_a_bool(value):
    exposed, unexposed = np.full((6, 4), 0.5), np.full((6, 4), 0.4)
    with pytest.raises(TypeError, match="^shared_parents must be True or False; got "):
        ts.did_estimate(exposed, unexposed, shared_parents=value, replicates=20)
    for good in (True, np.False_):
        ts.did_estimate(exposed, unexposed, shared_parents=good, replicates=20)
    if value is not None:  # exact=None is its default (choose by size)
        with pytest.raises(TypeError, match="^exact must be True, False or None; got "):
            ts.paired_confidence_test(np.arange(6.0), np.zeros(6), method="sign_flip", exact=value)


def test_seed_contrast_checks_draws_and_seed_whatever_the_method():
    values = np.arange(1.0, 7.0)  # six seeds: method="auto" runs the exact enumeration
    with pytest.raises(ValueError, match="^draws must be an integer; got nan"):
        ts.seed_contrast(values, draws=math.nan)
    with pytest.raises(TypeError, match="^seed must be a non-negative int"):
        ts.seed_contrast(values, method="exact", seed="abc")
    assert ts.seed_contrast(values, method="exact").p_value == 2 / 64  # all positive


@pytest.mark.parametrize("dtype", [np.complex128, "M8[D]"])
def test_complex_and_datetime_arrays_are_refused_by_our_own_api(dtype):
    canonical, permuted = np.zeros(2), np.arange(10).reshape(2, 5).astype(dtype)
    with pytest.raises(TypeError, match="^permuted must hold real numbers"):
        ts.exchangeability_tests(canonical, permuted)
    with pytest.raises(TypeError, match="^permuted_logliks must hold real numbers"):
        ts.sequential_order_verdict([0.0], [permuted[0]], max_permutations=9)


def test_the_dropin_keeps_truescores_answer_for_datetime_input():
    truescore = pytest.importorskip("truescore")
    permuted = np.arange(5).astype("M8[D]")
    ours = ts.exchangeability_test(-3.0, permuted)
    theirs = truescore.exchangeability_test(-3.0, permuted)
    assert (ours.p_value, ours.permutation_mean) == (theirs.p_value, theirs.permutation_mean)


def test_an_array_as_progress_or_design_is_named():
    population = np.linspace(-1.0, 1.0, 40)
    with pytest.raises(ValueError, match="^progress must be True, False or None"):
        ts.coverage_study(population, 10, replications=9, progress=np.array([True, False]))
    with pytest.raises(ValueError, match="^design must be one of"):
        ts.coverage_study(population, 10, replications=9, design=np.array(["srs", "srs"]))


def test_a_two_dimensional_value_in_a_message_stays_on_one_line():
    with pytest.raises(TypeError) as caught:
        ts.hoeffding_interval(np.zeros(5), alpha=np.ones((3, 3)))
    assert "\n" not in str(caught.value) and str(caught.value).startswith("alpha must be")


def test_indices_into_shards_are_integers_in_range():
    rng = np.random.default_rng(0)
    batch = ts.exchangeability_tests(rng.normal(size=3), rng.normal(size=(3, 5)))
    assert batch.shard(2).p_value == batch.p_values[2]
    for bad, match in [
        (2.0, "^index must be an integer; got 2.0"),
        (-1, "^index must be at least 0; got -1"),  # was the last shard, quietly
        (3, r"^index must be below the number of shards \(3\); got 3"),
        (np.array([0, 1]), "^index must be an integer"),
    ]:
        with pytest.raises(ValueError, match=match):
            batch.shard(bad)
    orders = ts.shard_orders(20, 4, 3)
    assert orders.canonical(3).tolist() == list(range(15, 20))
    with pytest.raises(ValueError, match="^shard must be at least 0; got -1"):
        orders.canonical(-1)  # was an empty array
    with pytest.raises(ValueError, match=r"^shard must be below n_shards \(4\); got 4"):
        orders.canonical(4)


def test_interval_membership_checks_its_value():
    interval = ts.wald_interval(np.array([0.0, 0.5, 1.0, 0.5]), population_size=10)
    assert interval.contains(0.5)
    with pytest.raises(TypeError, match="^value must be a real number; got 'a'"):
        interval.contains("a")
    intervals = ts.wald_intervals(np.array([[0.0, 0.5, 1.0, 0.5]] * 2), population_size=10)
    assert intervals.covers([0.5, 5.0]).tolist() == [True, False]
    with pytest.raises(TypeError, match="^value must hold real numbers"):
        intervals.covers(np.array([0.5 + 1j, 0.5]))  # was cast, imaginary part dropped
    with pytest.raises(ValueError, match=r"^value must be one number or one per audit \(2\)"):
        intervals.covers([0.1, 0.2, 0.3])
