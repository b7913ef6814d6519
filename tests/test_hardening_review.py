"""Issue 10, review findings of the last session: scalar population sizes beyond int64,
tiny values in scale-free statistics, one check for real scalars, JSON Lines line
numbers, deep disclosure records, executor slices, Stouffer's docstring, CLI flags
beyond every double."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
import truescore_fast as ts
from truescore_fast import _numeric
from truescore_fast._validation import real_scalar

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


# --- scale_exponent: both ways -----------------------------------------------------------


@pytest.mark.parametrize("largest", [5e-324, 1e-320, 1e-300, 2.0**-401, 1e300, 1e308])
def test_scale_exponent_brings_values_into_the_headroom(largest: float) -> None:
    e = _numeric.scale_exponent(largest, 2.0**400)
    scaled = math.ldexp(largest, e)
    assert 2.0**398 <= scaled <= 2.0**400
    assert math.ldexp(scaled, -e) == largest  # exact both ways


@pytest.mark.parametrize("largest", [0.0, 2.0**-400, 1e-100, 1.0, 1e100, 2.0**400])
def test_scale_exponent_leaves_ordinary_values_alone(largest: float) -> None:
    assert _numeric.scale_exponent(largest, 2.0**400) == 0


# --- tiny values: a scale-free statistic is the same at x * 2**-1070 ----------------------

X = np.array([3.0, 5.0, 1.0, 7.0, 2.0, 6.0, 4.0, -1.0])
TINY = 2.0**-1070  # X * TINY is exact: every value has at most 4 significant bits


@pytest.mark.parametrize(
    "statistic",
    [
        lambda x: ts.paired_confidence_test(x, np.zeros(8)).statistic,
        lambda x: ts.paired_confidence_test(x, np.zeros(8), method="wilcoxon").p_value,
        lambda x: ts.paired_confidence_test(x, x[::-1] / 2, method="sign_flip").p_value,
        lambda x: ts.sharded_likelihood_test(x, np.resize(x[::-1], (8, 3))).statistic,
        lambda x: (
            (
                ts.sharded_likelihood_test(x, np.resize(x[::-1], (8, 3)), variant="published")
            ).statistic
        ),
        lambda x: tuple(ts.exchangeability_tests(x[:2], np.resize(x, (2, 7))).z_scores),
        lambda x: tuple(
            ts.exchangeability_tests(x[:2], np.resize(x, 14), offsets=[0, 6, 14]).z_scores
        ),
        lambda x: (
            ts.exchangeability_tests(x[:2], np.resize(x, (2, 7))).combine("stouffer").p_value
        ),
        lambda x: (ts.seed_contrast(x).p_value, ts.seed_contrast(x).n_positive),
        lambda x: (
            ts.family_bootstrap_difference(x, x[::-1] * 2, families=np.arange(8) // 2).p_value
        ),
    ],
    ids=[
        "pacost t",
        "pacost wilcoxon",
        "pacost sign flip",
        "slct corrected",
        "slct published",
        "exchangeability z",
        "exchangeability z ragged",
        "stouffer",
        "seed contrast",
        "family bootstrap",
    ],
)
def test_scale_free_statistics_survive_subnormal_values(statistic) -> None:
    assert (X * TINY / TINY == X).all()
    assert statistic(X * TINY) == statistic(X)


def test_tiny_values_are_not_a_false_zero_variance() -> None:
    # each used to raise "zero variance" or report sd = 0, z = 0
    tiny = np.array([1e-320, 3e-320, 2e-320, 5e-320])
    assert ts.paired_confidence_test(tiny, np.zeros(4)).statistic > 0
    assert ts.sharded_likelihood_test(tiny, np.zeros((4, 2))).statistic > 0
    batch = ts.exchangeability_tests(tiny[:2], np.resize(tiny, (2, 4)))
    assert (batch.sds > 0).all() and batch.z_scores[0] < 0
    contrast = ts.seed_contrast(tiny)
    assert contrast.sd > 0 and contrast.low < contrast.high


def test_one_permutation_per_shard_has_z_zero() -> None:
    batch = ts.exchangeability_tests(np.array([1e-320, 2.0]), np.array([[3e-320], [1.0]]))
    assert list(batch.z_scores) == [0.0, 0.0]


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


# --- JSON Lines: one line-splitting rule, the right line number ---------------------------


def _bad_line_error(tmp_path, text: str, name: str = "rows.jsonl") -> str:
    from truescore_fast._files import read_rows

    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    with pytest.raises(ValueError) as error:
        read_rows(path)
    return str(error.value)


def test_json_lines_errors_count_blank_lines_and_crlf(tmp_path) -> None:
    # line 1 blank, 2 a row, 3 blank, 4 a row, 5 a broken row
    text = '\n{"a": 1}\r\n\r\n{"a": 2}\r\n{"a": \r\n'
    assert "rows.jsonl line 5:" in _bad_line_error(tmp_path, text)


def test_json_lines_do_not_end_inside_a_string(tmp_path) -> None:
    # U+2028, U+0085 and U+000C-free strings are legal JSON; str.splitlines would split
    # at the first two and number the broken row 6 instead of 4
    text = '{"a": "x\u2028y"}\n{"a": "x\u0085y"}\n\n[1]\n'
    message = _bad_line_error(tmp_path, text)
    assert "rows.jsonl line 4:" in message and "JSON object" in message


def test_a_lone_carriage_return_ends_a_line_as_in_csv(tmp_path) -> None:
    assert "line 3:" in _bad_line_error(tmp_path, '{"a": 1}\r{"a": 2}\r{"a"\r')


def test_a_json_array_file_reports_lines_of_the_file_itself(tmp_path) -> None:
    # the leading blank lines are part of the file: the parser's line number counts them
    message = _bad_line_error(tmp_path, '\n\n[{"a": 1},\n {"a": }]\n', "rows.json")
    assert "line 4" in message


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


# --- executor slices of no length: still bit-identical -----------------------------------


def test_executor_slices_of_zero_seconds_give_identical_results(monkeypatch) -> None:
    import json
    from concurrent.futures import ThreadPoolExecutor

    from truescore_fast.studies import _engine

    population = np.repeat([-1.0, -0.5, 0.0, 0.5, 1.0], [40, 60, 200, 60, 40])
    kw = dict(intervals=("wald", "betting"), replications=700, seed=9, progress=False)
    local = ts.coverage_study(population, [20, 60], n_threads=1, **kw)
    slices = []
    real = _engine._run_slice

    def counted(cell, begin, chunk, n_threads):
        out = real(cell, begin, chunk, n_threads)
        slices.append((begin, out[1]))
        return out

    monkeypatch.setattr(_engine, "_SLICE_SECONDS", 0.0)  # every slice ends after one chunk
    monkeypatch.setattr(_engine, "_CHUNK_SECONDS", 1e-9)  # of the smallest size
    monkeypatch.setattr(_engine, "_run_slice", counted)
    with ThreadPoolExecutor(2) as pool:
        sliced = ts.coverage_study(population, [20, 60], executor=pool, **kw)
    assert len(slices) > 2  # the two cells were cut into several slices each
    assert {begin for begin, _ in slices} != {0}
    assert json.dumps(sliced.to_dict(), sort_keys=True) == json.dumps(
        local.to_dict(), sort_keys=True
    )


# --- Stouffer pooling: what its docstring says, tested ------------------------------------


def _stouffer(counts, n_permutations):
    from truescore_fast.contamination.batch import ExchangeabilityTests

    counts = np.asarray(counts, dtype=np.int64)
    m = np.asarray(n_permutations, dtype=np.int64)
    k = counts.size
    tests = ExchangeabilityTests(
        p_values=(1.0 + counts) / (m + 1.0),
        counts=counts,
        z_scores=np.zeros(k),
        means=np.zeros(k),
        sds=np.ones(k),
        n_permutations=m,
        canonical=np.zeros(k),
        alpha=0.05,
    )
    return tests.combine("stouffer")


def test_stouffer_weighs_every_shard_equally_and_is_one_sided() -> None:
    from statistics import NormalDist

    normal = NormalDist()
    # two shards, 9 and 999 permutations: mid-p 0.05 and 0.5005; unweighted Z
    pooled = _stouffer([0, 500], [9, 999])
    z = (normal.inv_cdf(1 - 0.05) + normal.inv_cdf(1 - 0.5005)) / math.sqrt(2)
    assert pooled.statistic == pytest.approx(z, rel=1e-12)
    assert pooled.p_value == pytest.approx(1 - normal.cdf(z), rel=1e-12)
    # swapping which shard has more permutations changes nothing but the mid-p values
    assert _stouffer([0, 0], [9, 999]).statistic == pytest.approx(
        (normal.inv_cdf(0.95) + normal.inv_cdf(1 - 0.5 / 1000)) / math.sqrt(2), rel=1e-12
    )
    # one-sided: published orders at the top give a small p, at the bottom a p near 1
    assert _stouffer([0] * 5, [19] * 5).p_value < 1e-4
    assert _stouffer([19] * 5, [19] * 5).p_value > 1 - 1e-4


@pytest.mark.parametrize(("n_shards", "alpha", "size"), [(100, 0.05, 0.045), (3, 0.025, 0.021)])
def test_stouffer_size_as_documented_up_to_100_shards(n_shards, alpha, size) -> None:
    # under the null each shard's count is uniform on 0..19 (19 permutations)
    rng = np.random.default_rng(n_shards)
    reps = 3000
    hits = sum(
        _stouffer(rng.integers(0, 20, n_shards), [19] * n_shards).p_value <= alpha
        for _ in range(reps)
    )
    se = math.sqrt(size * (1 - size) / reps)
    assert abs(hits / reps - size) <= 3 * se
    assert "size 0.045 at level 0.05 and 0.021 at 0.025 for 2 to 100 shards" in " ".join(
        ts.ExchangeabilityTests.combine.__doc__.split()
    )


# --- alpha down to the smallest subnormal -------------------------------------------------


@pytest.mark.parametrize("method", ["hoeffding", "bernstein", "wald", "betting"])
def test_half_widths_stay_numbers_for_subnormal_alpha(method) -> None:
    # log(4 / alpha) overflowed below alpha ~ 4e-308: inf, and inf * 0 = NaN at zero spread
    fn = getattr(ts, f"{method}_interval")
    for d in (np.zeros(6), np.array([0.0, 1.0, 0.0, -1.0, 0.0, 0.5])):
        widths = [fn(d, alpha=a).half_width for a in (1e-300, 2.2250738585072014e-308, 1e-323)]
        assert all(not math.isnan(w) for w in widths), widths
        assert widths == sorted(widths)  # a smaller alpha never gives a narrower interval


def test_an_alpha_whose_half_underflows_is_refused() -> None:
    for call in (
        lambda: ts.wald_interval(np.zeros(6), alpha=5e-324),
        lambda: ts.seed_contrast(np.arange(6.0), alpha=5e-324),
        lambda: ts.matched_form_audit(np.ones(6), np.zeros((6, 2)), alpha=5e-324),
    ):
        with pytest.raises(ValueError, match="alpha must be at least 1e-323"):
            call()
    assert ts.seed_contrast(np.zeros(6), alpha=1e-310).high == 0.0  # no spread, no width


# --- the command line: numbers beyond every double name the flag --------------------------

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
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


# --- the Wald quantile: where its bits are the classic ones (the CHANGELOG's claim) --------


@pytest.mark.parametrize("alpha", [0.5, 0.05, 0.01, 0.002, 0.0019, 1e-3, 1e-10, 1e-300])
def test_wald_uses_the_classic_quantile_from_alpha_2e_3_up(alpha) -> None:
    from truescore_fast import _core

    quantile = _core.testing.normal_quantile
    d = np.array([0.5, -0.5, 0.0, 1.0, 0.5, 0.0, -1.0, 0.5])
    root = math.sqrt(1.0 * float(np.var(d, ddof=1)) / d.size)
    tail = alpha / 2
    z = quantile(1.0 - tail) if tail >= _numeric.SMALL_TAIL else -quantile(tail)
    assert ts.wald_interval(d, alpha=alpha).half_width == z * root
    # the Python side switches at the same tail
    assert _numeric.upper_quantile(quantile, tail) == z


def test_an_empty_object_array_of_population_sizes_names_the_argument() -> None:
    # found by the fuzz module (500 examples): max() of no Python ints
    with pytest.raises(ValueError, match="population_size must"):
        ts.wald_intervals(np.zeros((3, 10)), population_size=np.array([], dtype=object))
