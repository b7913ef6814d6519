"""Fuzz every public function (issue 10, "keep it so"): any input gives a result with no
NaN in it (p-values in [0, 1], interval ends in order), or one of the documented
exceptions whose message names an argument of the function.

One hypothesis case per public function (``CASES``); ``test_every_public_function_has_
a_fuzz_case`` finds the public functions by introspection, so a new one without a case
fails the suite. Each argument of a case is either a valid value or, about one time in
three, a hostile one: bad dtypes (complex, datetime, timedelta, strings, objects, bool),
shapes (0-d, empty, 2-d where 1-d is expected, ragged), NaN and infinities, magnitudes
from the smallest subnormal to the largest double (and -0.0), counts of every kind
(negative, floats, strings, numpy ints, 2**63, 10**400) and every kind of seed. An
interval end or a sum beyond the largest double may be infinite (a bound, documented);
a NaN never is an answer. The truescore drop-ins are held to truescore itself instead:
the same exception (type and message) or the same result.

Counts a compiled kernel would be handed (2**63, 2**64, 10**400, n_threads beyond int)
are also tried exhaustively, every count argument of every function against every such
value, in ONE child process (``test_extreme_counts_in_one_subprocess``): a crash there
fails that test instead of killing the run.

Examples per case: ``TRUESCORE_FUZZ_EXAMPLES`` (default 25, 6 for the studies that
simulate); the runs are derandomized, so the suite is reproducible, and a campaign is a
larger setting of the variable.
"""

from __future__ import annotations

import inspect
import io
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import truescore_fast as ts
from fuzzing import (
    CASES,
    COUNT_CALLS,
    COUNT_PARAMETERS,
    Args,
    _forms,
    _gaps,
    _public_functions,
    _settings,
    _shuffled,
    alphas,
    arrays,
    case,
    check,
    choice,
    counts,
    dropin,
    numbers,
    populations,
    run_in_child,
    scores,
    seeds,
    threads,
)
from hypothesis import given
from hypothesis import strategies as st


@case("exchangeability_test")
def _exchangeability_test(a: Args, name: str) -> None:
    canonical = a(-3.0, st.one_of(numbers, st.sampled_from([np.float32(1.0), "1", 1j, None])))
    permuted = a(lambda: np.arange(-5.0, 0.0), arrays())
    dropin(name, canonical, permuted, alpha=a(0.05, alphas))


@case("combine_shards")
def _combine_shards(a: Args, name: str) -> None:
    dropin(name, a(lambda: np.array([0.01, 0.3, 1.0]), arrays()), alpha=a(0.05, alphas))


@case("paired_bootstrap", "paired_permutation")
def _paired_dropins(a: Args, name: str) -> None:
    x, y = _forms()
    count = "n_bootstrap" if name == "paired_bootstrap" else "n_resamples"
    kwargs = {count: a(40, counts(1, 60)), "alpha": a(0.05, alphas), "seed": a(0, seeds)}
    if name == "paired_bootstrap" and a(False, st.booleans()):
        kwargs["clusters"] = a(lambda: np.arange(12) // 3, arrays())
    # Resampled with Philox streams: the random fields agree in distribution only
    # (tests/compare/test_paired.py), the others exactly.
    same = ("difference", "level", "method", "n_pairs")
    dropin(name, a(x, scores()), a(lambda: y[:, 0], scores()), same=same, **kwargs)


@case("holm", "benjamini_hochberg")
def _p_value_dropins(a: Args, name: str) -> None:
    dropin(name, a(lambda: np.array([0.01, 0.04, 0.5]), arrays()))


@case("exchangeability_tests")
def _exchangeability_tests(a: Args, name: str) -> None:
    canonical, permuted = _shuffled()
    canonical = a(canonical, arrays())
    ragged = a(False, st.booleans())
    permuted = a(permuted.ravel() if ragged else permuted, arrays(ndim=2))
    offsets = a([0, 5, 10, 15, 20, 25, 30] if ragged else None, arrays())
    method = a("fisher", choice("fisher", "stouffer", "average"))
    fn = ts.exchangeability_tests

    def call() -> Any:
        batch = fn(
            canonical, permuted, offsets=offsets, alpha=a(0.05, alphas), n_threads=a(1, threads)
        )
        return batch, batch.combine(method)

    check(fn, call, ("shard", "method", "z overflows"))


@case("sharded_likelihood_test")
def _sharded(a: Args, name: str) -> None:
    canonical, shuffled = _shuffled()
    canonical, shuffled = a(canonical, arrays()), a(shuffled, arrays(ndim=2))
    fn = ts.sharded_likelihood_test
    check(
        fn,
        lambda: fn(
            canonical,
            shuffled,
            variant=a("corrected", choice("corrected", "published")),
            alpha=a(0.05, alphas),
            n_threads=a(1, threads),
        ),
        ("shard differences", "t statistic", "SLCT"),
    )


@case("shard_orders")
def _shard_orders(a: Args, name: str) -> None:
    fn = ts.shard_orders
    check(
        fn,
        lambda: fn(a(20, counts(1, 40)), a(4, counts(1, 8)), a(3, counts(1, 5)), seed=a(0, seeds)),
        (),
    )


def _toy_scorer(windows: Any) -> list[np.ndarray]:
    return [np.full(len(w) - 1, -1.5) for w in windows]


token_lists = st.one_of(
    st.lists(st.integers(0, 60), max_size=12),
    st.sampled_from([[-1], [2**63], [1.5, 2.0], "abc", None, [[1, 2]], np.array([1, 2])]),
)


@case("window_spans")
def _window_spans(a: Args, name: str) -> None:
    fn = ts.window_spans
    check(fn, lambda: fn(a(10, counts(0, 40)), a(4, counts(1, 9)), a(2, counts(1, 9))), ())


@case("sliding_window_loglik")
def _sliding_window_loglik(a: Args, name: str) -> None:
    fn = ts.sliding_window_loglik
    tokens = a([1, 2, 3, 4, 5, 6, 7], token_lists)
    scorer = a(lambda: _toy_scorer, st.sampled_from([None, 3, "abc", lambda w: [[0.0]] * len(w)]))
    kwargs = {"context_len": a(4, counts(1, 9)), "stride": a(2, counts(1, 9))}
    check(fn, lambda: fn(tokens, scorer, **kwargs), ())


@case("score_orders")
def _score_orders(a: Args, name: str) -> None:
    fn = ts.score_orders
    examples = a(
        lambda: [[1, 2, 3], [4, 5], [6], [7, 8, 9], [1], [2, 3]],
        st.sampled_from([[[1]] * 5, [[-1]] * 6, "abc", None, 3, [["a"]] * 6, [[1.5]] * 6]),
    )
    kwargs = {
        "context_len": a(4, counts(1, 9)),
        "stride": a(2, counts(1, 9)),
        "batch_size": a(3, counts(1, 9)),
        "text_field": a("text", st.sampled_from([3, None, "text"])),
        "progress": False,
    }
    orders = a(lambda: ts.shard_orders(6, 2, 3, seed=1), st.sampled_from([None, "orders", 3]))
    check(fn, lambda: fn(examples, orders, _toy_scorer, **kwargs), ())


@case("read_examples")
def _read_examples(a: Args, name: str) -> None:
    # the file's content errors name the file and the line (tests/io/test_scoring.py);
    # here the arguments: hostile text_field values, every format
    fn = ts.read_examples
    contents = {"b.txt": "one\ntwo", "b.jsonl": '{"text": "one"}\n"two"\n', "b.json": '["x"]'}
    with tempfile.TemporaryDirectory() as scratch:
        name = a("b.txt", st.sampled_from(sorted(contents)))
        path = Path(scratch) / name
        path.write_text(contents[name])
        field = a("text", st.sampled_from([3, None, b"text", ["text"]]))
        check(fn, lambda: fn(path, text_field=field), ())


@case("hoeffding_interval", "bernstein_interval")
def _iid_interval(a: Args, name: str) -> None:
    fn = getattr(ts, name)
    d = a(_gaps, scores(low=-1.0))
    check(fn, lambda: fn(d, alpha=a(0.05, alphas)), ())


@case("wald_interval", "betting_interval", "hoeffding_serfling_interval")
def _population_interval(a: Args, name: str) -> None:
    fn = getattr(ts, name)
    d = a(_gaps, scores(low=-1.0))
    size = a(40, populations)
    check(fn, lambda: fn(d, population_size=size, alpha=a(0.05, alphas)), ())


@case(
    "hoeffding_intervals",
    "bernstein_intervals",
    "wald_intervals",
    "betting_intervals",
    "hoeffding_serfling_intervals",
    "matched_form_intervals",
)
def _batched_intervals(a: Args, name: str) -> None:
    fn = getattr(ts, name)
    d = a(lambda: np.vstack([_gaps(10, s) for s in range(3)]), scores(ndim=2, low=-1.0))
    kwargs: dict[str, Any] = {"alpha": a(0.05, alphas), "n_threads": a(1, threads)}
    if "population_size" in inspect.signature(fn).parameters:
        kwargs["population_size"] = a(40, st.one_of(populations, arrays()))
    if name == "matched_form_intervals":
        kwargs["methods"] = a(None, st.sampled_from([("wald",), ("nope",), (), "wald", [1]]))
    check(fn, lambda: fn(d, **kwargs), ("methods",))


@case("matched_form_audit")
def _matched_form_audit(a: Args, name: str) -> None:
    public, fresh = _forms()
    fn = ts.matched_form_audit
    radius = st.sampled_from([0.0, 0.04, 1e308, math.inf, -1.0, math.nan, 10**400, -0.0, 5e-324])
    kwargs = {
        "population_size": a(None, populations),
        "control": a(None, st.sampled_from([_forms(8), (np.ones(3),), ([1, 0], [[0], [1]])])),
        "transport_radius": a(0.0, radius),
        "alpha": a(0.05, alphas),
        "guardrail": a(30, counts(0, 40)),
        "fallback": a("betting", choice("betting", "hoeffding", "bernstein")),
        "seed": a(0, seeds),
        "control_reading": a("wald", choice("wald", "hoeffding", "fixed")),
    }
    check(fn, lambda: fn(a(public, scores()), a(fresh, scores(ndim=2)), **kwargs), ("control",))


def _table_text(a: Args) -> Any:
    rows = ["model,parent,form,correct"]
    for model in ("m1", "m2"):
        for parent in range(6):
            for form in ("public", "f1", "f2"):
                rows.append(f"{model},{parent},{form},{(parent + len(form)) % 2}")
    good = "\n".join(rows) + "\n"
    hostile = st.sampled_from(
        [
            good.replace(",1\n", ",nan\n", 1),
            good.replace(",1\n", ",2\n", 1),
            good.replace("correct", "score"),
            "\ufeff" + good.replace("\n", "\r\n"),
            good + "m1,0,public,1\n",
            "model,parent,form,correct\n",
            "",
            good.replace(",f2,", ",public,", 1),
        ]
    )
    return io.StringIO(a(good, hostile))


@case("read_audit_table", "matched_form_audits")
def _tables(a: Args, name: str) -> None:
    fn = getattr(ts, name)
    table = _table_text(a)
    if name == "read_audit_table":
        check(fn, lambda: fn(table), ("column", "parent", "correct", "form", "row"))
    else:
        check(
            fn,
            lambda: fn(table, seed=a(0, seeds), alpha=a(0.05, alphas)),
            ("column", "parent", "correct", "form", "row", "seed", "alpha"),
        )


@case("randomization_test")
def _randomization(a: Args, name: str) -> None:
    public, fresh = _forms()
    fn = ts.randomization_test
    kwargs = {
        "alternative": a("greater", choice("greater", "less", "two-sided")),
        "method": a("auto", choice("auto", "exact", "monte_carlo")),
        "n_resamples": a(99, counts(1, 200)),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    check(fn, lambda: fn(a(public, scores()), a(fresh, scores(ndim=2)), **kwargs), ())


@case("seed_contrast")
def _seed_contrast(a: Args, name: str) -> None:
    fn = ts.seed_contrast
    values = a(lambda: np.array([0.1, 0.3, -0.05, 0.2, 0.15, 0.25]), arrays())
    kwargs = {
        "alpha": a(0.05, alphas),
        "method": a("auto", choice("auto", "exact", "monte_carlo")),
        "draws": a(50, counts(1, 100)),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    check(fn, lambda: fn(values, **kwargs), ())


@case("paired_confidence_test")
def _pacost(a: Args, name: str) -> None:
    fn = ts.paired_confidence_test
    original = a(lambda: np.array([0.9, 0.8, 0.7, 0.95, 0.6]), arrays())
    rephrased = a(lambda: np.array([0.7, 0.8, 0.5, 0.9, 0.65]), arrays())
    kwargs = {
        "alternative": a("greater", choice("greater", "less", "two-sided")),
        "method": a("t", choice("t", "wilcoxon", "sign_flip")),
        "alpha": a(0.05, alphas),
        "n_resamples": a(64, counts(1, 100)),
        "exact": a(None, st.sampled_from([True, False, None, 1, "yes"])),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    check(fn, lambda: fn(original, rephrased, **kwargs), ())


@case("finite_population_bootstrap")
def _fpb(a: Args, name: str) -> None:
    fn = ts.finite_population_bootstrap
    values = a(lambda: np.arange(12.0), arrays())
    stratified = a(False, st.booleans())
    kwargs = {
        "population_size": a(
            [30, 40] if stratified else 100, st.one_of(populations, arrays(), st.just({0: 30}))
        ),
        "strata": a(lambda: np.arange(12) % 2 if stratified else None, arrays()),
        "method": a("rao_wu", choice("rao_wu", "bbh")),
        "replicates": a(20, counts(1, 40)),
        "resample_size": a(None, counts(1, 20)),
        "alpha": a(0.05, alphas),
        "statistic": a(None, st.sampled_from([np.median, lambda v: math.nan, len, "mean"])),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    check(fn, lambda: fn(values, **kwargs), ("Rao-Wu", "stratum", "strata"))


@case("pattern_permutation_test")
def _patterns(a: Args, name: str) -> None:
    fn = ts.pattern_permutation_test
    gaps = a(lambda: np.random.default_rng(5).choice([-0.5, 0.0, 0.5], (3, 20)), arrays(ndim=2))
    kwargs = {
        "pattern": a("harder", st.sampled_from(["harder", "easier", "nope", None, np.zeros(3)])),
        "min_models": a(2, counts(1, 4)),
        "draws": a(50, counts(1, 100)),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    check(fn, lambda: fn(gaps, **kwargs), ())


@case("constat_test", "constat_tests")
def _constat(a: Args, name: str) -> None:
    fn = getattr(ts, name)
    rng = np.random.default_rng(25)
    ability = np.linspace(0.2, 0.9, 7)[:, None]
    base_s = (rng.random((7, 8)) < ability).astype(float)
    base_r = (rng.random((7, 6)) < ability).astype(float)
    s = a(lambda: base_s, arrays(ndim=2))
    r = a(lambda: base_r, arrays(ndim=2))
    kwargs: dict[str, Any] = {
        "delta": a(0.0, st.sampled_from([0.0, -0.5, 2.0, math.nan, "0", None])),
        "alpha": a(0.05, alphas),
        "n_bootstrap": a(20, counts(1, 30)),
        "random_guess": a(None, st.sampled_from([0.25, 0.0, 1.0, -0.1, math.inf, "x"])),
        "smoothing": a(None, st.sampled_from([0.0, 1e-9, 1e6, -1.0, math.nan, 1e308])),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    if name == "constat_test":
        one_s, one_r = a(lambda: base_s[0], arrays()), a(lambda: base_r[0], arrays())
        check(fn, lambda: fn(one_s, one_r, s, r, **kwargs), ("reference models",))
    else:
        kwargs["reference_models"] = a(None, st.sampled_from([(0, 1, 2, 3, 4, 5), (0,), "ab", 3]))
        check(fn, lambda: fn(s, r, **kwargs), ())


@case("did_estimate")
def _did(a: Args, name: str) -> None:
    fn = ts.did_estimate
    rng = np.random.default_rng(4)
    exposed = a(lambda: (rng.random((12, 4)) < 0.5).astype(float), arrays(ndim=2))
    unexposed = a(lambda: (rng.random((12, 4)) < 0.45).astype(float), arrays(ndim=2))
    kwargs = {
        "models": a(None, st.sampled_from([["a"], [], "a", [1, 2]])),
        "shared_parents": a(False, st.sampled_from([True, 1, "yes", None])),
        "replicates": a(30, counts(1, 40)),
        "alpha": a(0.05, alphas),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    check(fn, lambda: fn(exposed, unexposed, **kwargs), ("column", "parents"))


@case("family_bootstrap_difference")
def _families(a: Args, name: str) -> None:
    fn = ts.family_bootstrap_difference
    kwargs = {
        "families": a(lambda: np.arange(6) // 2, arrays()),
        "control_families": a(None, arrays()),
        "alpha": a(0.05, alphas),
        "n_resamples": a(50, counts(1, 100)),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    treated = a(lambda: np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0]), arrays())
    control = a(lambda: np.array([0.0, 0.0, 1.0, 0.0, 0.0, 1.0]), arrays())
    check(fn, lambda: fn(treated, control, **kwargs), ("famil",))


@case("holm_correction")
def _holm_correction(a: Args, name: str) -> None:
    fn = ts.holm_correction
    p = a(lambda: [0.01, 0.04, 0.3], arrays())
    names = a(None, st.sampled_from([["a", "b", "c"], ["a"], "abc", [1, 2, 3]]))
    check(fn, lambda: fn(p, alpha=a(0.05, alphas), names=names), ())


@case("linear_weighted_kappa")
def _kappa(a: Args, name: str) -> None:
    fn = ts.linear_weighted_kappa
    x = a(lambda: [0, 1, 2, 2, 1, 0, 1], arrays())
    y = a(lambda: [0, 1, 2, 1, 1, 0, 2], arrays())
    kwargs = {
        "categories": a([0, 1, 2], st.sampled_from([[0], [], [0, 0, 1], "abc", None, [0.0, 1.5]])),
        "alpha": a(0.05, alphas),
        "n_resamples": a(50, counts(1, 100)),
        "seed": a(0, seeds),
    }
    check(fn, lambda: fn(x, y, **kwargs), ())


@case("validate_disclosure")
def _disclosure(a: Args, name: str) -> None:
    pytest.importorskip("jsonschema")
    fn = ts.validate_disclosure
    deep: Any = {}
    for _ in range(3000):
        deep = {"x": deep}
    record = a(
        lambda: {"contamination": {}},
        st.sampled_from(
            [
                deep,
                [deep],
                {"contamination": {"p_value": math.nan}},
                {"contamination": {"p_value": 10**400}},
                "/no/such/file.json",
                "",
                Path("."),
                None,
                3,
                b"{}",
                {"contamination": {"p_value": "0.5"}},
                {1: 2},
            ]
        ),
    )
    check(fn, lambda: fn(record), ("record", "disclosure", "file", "JSON", "directory"))


@case("disclosure_schema", "disclosure_template", "stress_settings", "is_patched")
def _no_arguments(a: Args, name: str) -> None:
    fn = getattr(ts, name)
    check(fn, fn, ())


@case("audit_order")
def _audit_order(a: Args, name: str) -> None:
    fn = ts.audit_order
    check(fn, lambda: fn(a(40, populations), seed=a(0, seeds)), ())


@case("betting_confidence_sequence")
def _confidence_sequence(a: Args, name: str) -> None:
    fn = ts.betting_confidence_sequence
    d = a(_gaps, scores(low=-1.0))
    size = a(40, populations)
    horizon = a(None, st.sampled_from([1, 7, 40, 10**6, 0, -3, 2.5, "auto", True]))
    check(fn, lambda: fn(d, population_size=size, alpha=a(0.05, alphas), horizon=horizon), ())


@case("besag_clifford_p_value")
def _besag_clifford(a: Args, name: str) -> None:
    fn = ts.besag_clifford_p_value
    check(
        fn,
        lambda: fn(
            a(3, counts(0, 12)),
            a(9, counts(0, 30)),
            h=a(3, counts(1, 12)),
            max_draws=a(19, counts(1, 30)),
        ),  # fmt: skip
        (),
    )


@case("sequential_order_verdict")
def _order_verdict(a: Args, name: str) -> None:
    fn = ts.sequential_order_verdict
    canonical, shuffled = _shuffled()
    rows = a(lambda: [row[:3] for row in shuffled], st.sampled_from([[], [[1.0]], "x", [[]]]))
    check(
        fn,
        lambda: fn(
            a(canonical, arrays()),
            rows,
            max_permutations=a(9, counts(1, 12)),
            h=a(2, counts(1, 5)),
            alpha=a(0.05, alphas),
        ),  # fmt: skip
        (),
    )


# checkpoint= values that must be refused naming the argument (a path that cannot be
# written, a directory, not a path); a valid path would write a file, so none is drawn
BAD_CHECKPOINTS = st.sampled_from([3, b"c.jsonl", ".", "/no/such/dir/c.jsonl"])


@case("sequential_study")
def _sequential_study(a: Args, name: str) -> None:
    fn = ts.sequential_study
    public, fresh = _forms(40)
    kwargs = {
        "deltas": a(0.1, st.sampled_from([(), 0.9, -0.1, math.nan, "0.1", (0.0, 0.2)])),
        "max_parents": a(30, counts(2, 40)),
        "look_every": a(10, counts(1, 20)),
        "effect_size": a(0.05, st.one_of(numbers, st.sampled_from([None, "x", 10**400]))),
        "relabel": a(True, st.sampled_from([False, 1, "yes", None])),
        "horizon": a("auto", st.sampled_from([None, 1, 25, 10**6, 0, 2.5, "x"])),
        "replications": a(20, counts(1, 30)),
        "alpha": a(0.05, alphas),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
        "progress": a(False, st.sampled_from([True, "yes", None])),
        "checkpoint": a(None, BAD_CHECKPOINTS),
    }
    check(fn, lambda: fn(a(public, scores()), a(fresh, scores(ndim=2)), **kwargs), ("bank",))


@case("sequential_order_study")
def _sequential_order_study(a: Args, name: str) -> None:
    fn = ts.sequential_order_study
    kwargs = {
        "n_shards": a(3, counts(1, 5)),
        "max_permutations": a(9, counts(1, 12)),
        "h": a(2, counts(1, 5)),
        "shifts": a((0.0, 1.0), st.one_of(numbers, st.sampled_from([(), "x", [math.inf]]))),
        "replications": a(20, counts(1, 30)),
        "alpha": a(0.05, alphas),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
        "progress": a(False, st.sampled_from([True, "yes", None])),
        "checkpoint": a(None, BAD_CHECKPOINTS),
    }
    check(fn, lambda: fn(**kwargs), ())


@case("read_harness_runs")
def _harness(a: Args, name: str) -> None:
    fn = ts.read_harness_runs
    here = Path(__file__).resolve().parents[2] / "examples" / "harness" / "inspect"
    paths = st.sampled_from(
        ["/no/such/run.json", ".", str(here), 3, None, str(here / "arith-fresh2.eval"), []]
    )
    public = a(str(here / "arith-public.json"), paths)
    fresh = a([str(here / "arith-fresh1.json")], st.one_of(paths, st.lists(paths, max_size=2)))
    kwargs = {
        "match_key": a("metadata.parent_id", st.sampled_from(["", "id", "nope", 3, None])),
        "metric": a("match", st.sampled_from([None, "nope", "", 1])),
        "harness": a("auto", choice("auto", "lm-eval", "inspect", "table")),
    }
    check(fn, lambda: fn(public, fresh, **kwargs), ("run", "file", "key", "metric", "harness"))


@case("patch_truescore", "unpatch_truescore")
def _patching(a: Args, name: str) -> None:
    pytest.importorskip("truescore")
    try:
        patched = ts.patch_truescore()
        assert patched and ts.is_patched()
        if a(False, st.booleans()):
            ts.patch_truescore()  # twice is harmless
    finally:
        ts.unpatch_truescore()
    assert not ts.is_patched()
    ts.unpatch_truescore()  # unpatching twice too


@case("stress_population")
def _stress_population(a: Args, name: str) -> None:
    fn = ts.stress_population
    setting = a(
        lambda: ts.stress_settings()[0],
        st.sampled_from(
            [
                ts.StressSetting(population_size=10, n=20, shape="symmetric", nonzero_share=0.5),
                ts.StressSetting(population_size=2**63, n=5, shape="symmetric", nonzero_share=0.5),
                ts.StressSetting(population_size=100, n=5, shape="nope", nonzero_share=0.5),
                ts.StressSetting(population_size=100, n=5, shape="symmetric", nonzero_share=2.0),
                ts.StressSetting(population_size=100, n=5, shape="skewed", nonzero_share=math.nan),
                None,
                (100, 5, "symmetric", 0.1),
            ]
        ),
    )
    check(fn, lambda: fn(setting), ("population_size", "shape", "nonzero_share", "n"))


@case("stress_grid")
def _stress_grid(a: Args, name: str) -> None:
    fn = ts.stress_grid
    kwargs = {
        "replications": a(20, counts(1, 30)),
        "intervals": a("wald", st.sampled_from(["nope", (), ("wald", "wald"), None, 3])),
        "alpha": a(0.05, alphas),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
        "progress": a(False, st.sampled_from([True, "yes", None])),
    }
    check(fn, lambda: fn(a(lambda: ts.stress_settings()[:1], st.just([])), **kwargs), ())


@case("coverage_study")
def _coverage(a: Args, name: str) -> None:
    fn = ts.coverage_study
    kwargs = {
        "design": a("srs", choice("srs", "stratified")),
        "intervals": a(("hoeffding",), st.sampled_from(["nope", (), ("wald", "wald"), None])),
        "replications": a(20, counts(1, 30)),
        "alpha": a(0.05, alphas),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
        "progress": a(False, st.sampled_from([True, "yes", None])),
        "sampler": a("auto", choice("auto")),
    }
    population = a(lambda: np.linspace(-1.0, 1.0, 40), scores(low=-1.0))
    n = a([10], st.one_of(counts(1, 50), st.sampled_from([[], [10, 10**400], [2.5]])))
    check(fn, lambda: fn(population, n, **kwargs), ("strata", "allocation", "sample"))


@case("budget_study")
def _budget(a: Args, name: str) -> None:
    fn = ts.budget_study
    gaps = a(lambda: np.vstack([_gaps(30, s) for s in range(2)]), scores(ndim=2, low=-1.0))
    kwargs = {
        "sizes": a(10, st.one_of(counts(1, 40), st.sampled_from([[], [10, 2**63]]))),
        "interval": a("wald", choice("wald", "betting")),
        "replications": a(20, counts(1, 30)),
        "alpha": a(0.05, alphas),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    check(fn, lambda: fn(gaps, **kwargs), ("models",))


@case("detection_study")
def _detection(a: Args, name: str) -> None:
    fn = ts.detection_study
    public, fresh = _forms(30)
    kwargs = {
        "sizes": a(12, st.one_of(counts(1, 40), st.sampled_from([[], [12, 2**63]]))),
        "deltas": a(0.2, st.one_of(st.sampled_from([[], 1.0, -0.1, math.nan, [0.1, 2]]), alphas)),
        "form_gaps": a((0.0,), st.sampled_from([[], 1.0, -0.1, math.nan, "0"])),
        "relabel": a(False, st.sampled_from([True, "yes"])),
        "replications": a(10, counts(1, 20)),
        "alpha": a(0.05, alphas),
        "guardrail": a(30, counts(0, 40)),
        "fallback": a("betting", choice("betting", "hoeffding")),
        "seed": a(0, seeds),
        "n_threads": a(1, threads),
    }
    check(fn, lambda: fn(a(public, scores()), a(fresh, scores(ndim=2)), **kwargs), ())


@case("plan_audit_size")
def _plan(a: Args, name: str) -> None:
    fn = ts.plan_audit_size
    gaps = a(lambda: _gaps(20), scores(low=-1.0))
    kwargs = {
        "deltas": a((0.05,), st.one_of(alphas, st.sampled_from([[], [0.1, 5e-324], 1e-300]))),
        "power": a(0.8, alphas),
        "alpha": a(0.05, alphas),
        "population_size": a(None, populations),
        "guardrail": a(30, counts(0, 40)),
    }
    check(fn, lambda: fn(gaps, **kwargs), ())


def _texts() -> Any:
    return st.one_of(
        st.lists(st.text(max_size=30), min_size=0, max_size=12),
        st.sampled_from([None, "abc", [1, 2], ["a", None], np.array(["a", "b"]), [b"x"]]),
    )


@case("surface_features")
def _surface(a: Args, name: str) -> None:
    fn = ts.surface_features
    answers = a(["yes, because 2 + 2 = 4", "maybe"], _texts())
    check(fn, lambda: fn(answers, a(["what is 2 + 2?", "why?"], _texts())), ())


@case("feature_differences")
def _feature_differences(a: Args, name: str) -> None:
    fn = ts.feature_differences
    q = a(["what is 2 + 2?", "why?"], _texts())
    check(fn, lambda: fn(q, a(["4", "because"], _texts()), a(["5", "no"], _texts())), ())


def _pairs(n: int = 20) -> tuple[list[str], list[str], list[str]]:
    q = [f"question {i} about topic {i % 3}?" for i in range(n)]
    c = [f"the answer is {i} because {'reasons ' * (i % 4)}" for i in range(n)]
    i_ = [f"perhaps {i + 1}, probably" for i in range(n)]
    return q, c, i_


@case("leakage_audit", "audit_prune")
def _prune(a: Args, name: str) -> None:
    pytest.importorskip("sklearn")
    fn = getattr(ts, name)
    q, c, i_ = _pairs()
    kwargs: dict[str, Any] = {
        "n_splits": a(2, counts(1, 25)),
        "alpha": a(0.05, alphas),
        "seed": a(0, seeds),
    }
    if name == "audit_prune":
        kwargs["step"] = a(0.2, alphas)
        kwargs["max_fraction"] = a(0.5, alphas)
    check(fn, lambda: fn(a(q, _texts()), a(c, _texts()), a(i_, _texts()), **kwargs), ())


@case("adjust")
def _adjust(a: Args, name: str) -> None:
    fn = ts.adjust
    p = a(lambda: np.array([0.01, 0.04, 0.5]), arrays())
    check(fn, lambda: fn(p, a("bh", choice("bh", "by", "holm"))), ())


def _suite_text(a: Args) -> Any:
    rows = ["model,benchmark,parent,form,correct"]
    for model in ("m1", "m2"):
        for parent in range(4):
            for form in ("public", "fresh1", "reference"):
                rows.append(f"{model},b,{form[0]}{parent},{form},{(parent + len(form)) % 2}")
    good = "\n".join(rows) + "\n"
    hostile = st.sampled_from(
        [
            good.replace(",1\n", ",nan\n", 1),
            good.replace(",1\n", ",-1\n", 1),
            good.replace("benchmark", "task"),
            good + "m1,b,p0,public,1\n",
            good + "m1,b,x9,fresh1,1\n",
            "model,benchmark,parent,form,correct\n",
            "",
            good.replace("m1,b,p0,public", "m1,,p0,public"),
        ]
    )
    return io.StringIO(a(good, hostile))


@case("read_suite")
def _read_suite(a: Args, name: str) -> None:
    fn = ts.read_suite
    table = _suite_text(a)
    kwargs = {
        "public_form": a("public", choice("public")),
        "reference_form": a("reference", choice("reference")),
    }
    aliases = ("column", "parent", "correct", "form", "row", "model", "benchmark")
    check(fn, lambda: fn(table, **kwargs), aliases)


@case("read_order_table")
def _read_order_table(a: Args, name: str) -> None:
    fn = ts.read_order_table
    good = {"kind": ["canonical", "x", "x"], "loglik": [1.0, 0.5, 2.0]}
    table = a(good, st.sampled_from([
        {"kind": ["canonical"], "loglik": [1.0]}, {"kind": ["x"], "loglik": [1.0]},
        {"kind": ["canonical", "x"], "loglik": [math.nan, 1.0]}, {"loglik": [1.0]},
        {"kind": ["canonical", "x"], "loglik": ["a", 1.0]}, {"kind": [], "loglik": []},
    ]))  # fmt: skip
    check(fn, lambda: fn(table), ("shard", "row", "loglik", "kind"))


@case("read_suite_manifest")
def _read_suite_manifest(a: Args, name: str) -> None:
    fn = ts.read_suite_manifest
    harness = Path(__file__).resolve().parents[2] / "examples" / "harness" / "inspect"
    good = (
        "model,benchmark,form,path\n"
        f"m,arith,public,{harness}/arith-public.json\n"
        f"m,arith,fresh1,{harness}/arith-fresh1.json\n"
    )
    text = a(good, st.sampled_from([
        good.replace("fresh1,", "public,"), good.replace(",path", ",file"),
        good.replace("arith-fresh1", "missing"), "model,benchmark,form,path\n",
        good.replace("m,arith,public", "m,,public"),
    ]))  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="fuzz-suite-"))
    (folder / "manifest.csv").write_text(text)
    key = a("metadata.parent_id", choice("metadata.parent_id"))
    check(fn, lambda: fn(folder / "manifest.csv", match_key=key), ("path", "row", "form"))


def _small_suite() -> Any:
    return ts.simulate_suite(models=6, benchmarks=1, parents=12, leaks=((0, 0, 0.5),), seed=1)


@case("suite_audit")
def _suite_audit(a: Args, name: str) -> None:
    fn = ts.suite_audit
    tests = ("randomization", "constat", "matched_form")
    kwargs = {
        "q": a(0.05, alphas),
        "fdr": a("bh", choice("bh", "by", "holm")),
        "tests": a(tests, st.sampled_from([(), ("order",), "randomization", ("x",), 3])),
        "alpha": a(0.05, alphas),
        "n_bootstrap": a(20, counts(1, 40)),
        "seed": a(0, seeds),
        "threads": a(1, threads),
    }
    check(fn, lambda: fn(_small_suite(), **kwargs), ("n_threads",))


@case("plot_heatmap", "write_report")
def _suite_report(a: Args, name: str) -> None:
    pytest.importorskip("matplotlib")
    fn = getattr(ts, name)
    result = a(
        lambda: ts.suite_audit(_small_suite(), tests=("randomization", "matched_form")),
        st.sampled_from([None, 3, "result", {"q": 0.05}]),
    )
    if name == "plot_heatmap":
        test = a(None, choice("randomization", "matched_form"))
        check(fn, lambda: fn(result, None, test=test), ())
    else:
        folder = Path(tempfile.mkdtemp(prefix="fuzz-report-"))
        path = a(folder / "report.html", st.sampled_from([folder, 3, "", folder / "x" / "r.html"]))
        check(fn, lambda: fn(result, path, title=a("Suite", st.sampled_from([3, None]))), ())


@case("simulate_suite")
def _simulate_suite(a: Args, name: str) -> None:
    fn = ts.simulate_suite
    kwargs = {
        "models": a(3, counts(1, 6)),
        "benchmarks": a(2, counts(1, 3)),
        "parents": a(10, counts(2, 20)),
        "fresh_forms": a(1, counts(1, 3)),
        "leaks": a(((0, 0, 0.3),), st.sampled_from([(), ((5, 0, 0.1),), ((0, 0, 2.0),), "x"])),
        "spread": a(1.0, numbers),
        "seed": a(0, seeds),
    }
    check(fn, lambda: fn(**kwargs), ())


@case("suite_study")
def _suite_study(a: Args, name: str) -> None:
    fn = ts.suite_study
    kwargs = {
        "models": a(3, counts(1, 4)),
        "benchmarks": 1,
        "parents": a(10, counts(2, 12)),
        "leaks": a(((0, 0, 0.3),), st.sampled_from([(), ((9, 0, 0.1),), "x"])),
        "tests": a(("randomization",), st.sampled_from([("order",), (), ("constat",)])),
        "fdr": a("bh", choice("bh", "by", "holm")),
        "replications": a(2, counts(2, 3)),
        "alpha": a(0.05, alphas),
        "seed": a(0, seeds),
        "progress": False,
    }
    check(fn, lambda: fn(**kwargs), ())


# --- the tests ----------------------------------------------------------------------------


def test_every_public_function_has_a_fuzz_case() -> None:
    public = _public_functions()
    assert len(public) >= 45  # a sanity check of the introspection itself
    missing = sorted(set(public) - set(CASES))
    assert not missing, f"public functions without a fuzz case: {missing}"
    stale = sorted(set(CASES) - set(public))
    assert not stale, f"fuzz cases of no public function: {stale}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_fuzz(name: str) -> None:
    @_settings(name)
    @given(data=st.data())
    def run(data: Any) -> None:
        CASES[name](Args(data))

    run()


def test_every_count_argument_is_pushed_to_the_extremes() -> None:
    public = _public_functions()
    expected = {
        name
        for name, fn in public.items()
        if COUNT_PARAMETERS & set(inspect.signature(fn).parameters)
    }
    covered = set(COUNT_CALLS) | {
        # a scalar population size is pushed by the hypothesis cases (``populations``);
        # these take no other count
        "wald_interval",
        "betting_interval",
        "hoeffding_serfling_interval",
    }
    assert expected <= covered, sorted(expected - covered)


@pytest.mark.slow
def test_extreme_counts_in_one_subprocess() -> None:
    findings = run_in_child("fuzzing.run_extreme_counts()", timeout=600)
    assert findings == [], "\n".join(findings)
