"""Every result type the package defines follows one protocol (truescore_fast._result).

For one instance of each type, built by the public functions on small data: ``str`` is
``summary()``; ``repr`` is one short line; ``to_dict()`` passes strict JSON
(``allow_nan=False``) and keeps the key numbers; ``_repr_html_`` gives a table or a
``<pre>`` block; ``to_frame()`` exists exactly on tabular results. A last test finds every
dataclass in the package by introspection, so a new result type without the protocol,
or without an instance here, fails the suite.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import pkgutil

import numpy as np
import pytest
import truescore_fast as tf
from prune_example import load_example  # the bundled Audit-Prune example
from truescore_fast._result import Result, TabularResult
from truescore_fast.compare.families import family_bootstrap_difference, holm_correction
from truescore_fast.compare.pacost import paired_confidence_test
from truescore_fast.io.disclosure import linear_weighted_kappa, validate_disclosure

# Dataclasses that are not results of this package's protocol, each with the reason.
NOT_RESULTS = {
    # truescore drop-ins: fields and text stay exactly truescore's.
    "ComparisonResult": "truescore drop-in",
    "ContaminationResult": "truescore drop-in",
    "CombinedContamination": "truescore drop-in",
    # Inputs and internal records, not results.
    "AuditData": "parsed input table (read_audit_table)",
    "StressSetting": "an input setting of stress_grid",
    "Cell": "calibration engine's internal task",
    "RowLayout": "what a calibration kernel's row of sums holds",
    "StudyEntry": "an entry of the catalog (_catalog.py)",
    "HarnessFormat": "an entry of the catalog (_catalog.py)",
    "SuiteTest": "an entry of the catalog (_catalog.py)",
    "Design": "calibration's internal sampling design",
    "Study": "an entry of the study registry",
    "StudyOptions": "the studies' shared keywords (an input)",
    "StudySettings": "the command line's study settings (an input)",
    "StudyRun": "the tables a registered study prints",
    "HarnessReader": "an entry of the harness-format registry",
    "SuiteData": "parsed input suite (read_suite)",
    "SuitePair": "one pair of a parsed input suite",
    "OrderData": "one pair's parsed log-likelihoods",
    "_Options": "ConStat's checked options (an input)",
}


def _gaps(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    public = (rng.random(n) < 0.7).astype(float)
    fresh = (rng.random((n, 2)) < 0.6).astype(float)
    return public, fresh


def _audit():
    public, fresh = _gaps(1, 60)
    control = _gaps(2, 40)
    return tf.matched_form_audit(public, fresh, control=control, transport_radius=0.01, seed=3)


def _constat():
    rng = np.random.default_rng(25)
    ability = np.linspace(0.2, 0.9, 7)[:, None]
    s, r = (
        (rng.random((7, 40)) < ability).astype(float),
        (rng.random((7, 30)) < ability).astype(float),
    )
    return s[0], r[0], s, r


def _did():
    rng = np.random.default_rng(4)
    exposed = (rng.random((30, 4)) < [0.4, 0.6, 0.4, 0.5]).astype(float)
    unexposed = (rng.random((30, 4)) < 0.45).astype(float)
    return tf.did_estimate(exposed, unexposed, replicates=99, seed=1)


def _leakage():
    pytest.importorskip("sklearn")
    return tf.leakage_audit(*load_example()[:3])


def _prune():
    pytest.importorskip("sklearn")
    return tf.audit_prune(*load_example()[:3])


def _disclosure():
    pytest.importorskip("jsonschema")
    return validate_disclosure({"contamination": {}})


def _shuffled():
    rng = np.random.default_rng(6)
    shuffled = rng.normal(size=(12, 5))
    return shuffled.mean(axis=1) + rng.normal(0.3, 1.0, size=12), shuffled


# Type name -> (factory, {attribute: key in to_dict} numbers that must round-trip).
FACTORIES = {
    "MatchedFormAudit": (_audit, ("estimate", "alpha", "public_score")),
    "ControlBank": (lambda: _audit().control, ("estimate", "n")),
    "Interval": (lambda: tf.hoeffding_interval(_gaps(1, 50)[0] - 0.5), ("low", "high", "alpha")),
    "Intervals": (
        lambda: tf.wald_intervals(np.vstack([_gaps(s, 30)[0] - 0.5 for s in range(3)])),
        ("alpha",),
    ),
    "RandomizationTest": (lambda: tf.randomization_test(*_gaps(1, 40)), ("estimate", "p_value")),
    "ConStatTest": (
        lambda: tf.constat_test(*_constat(), n_bootstrap=30),
        ("estimate", "low", "high", "p_value", "alpha"),
    ),
    "ConStatTests": (
        lambda: tf.constat_tests(*_constat()[2:], n_bootstrap=30),
        ("alpha", "delta", "n_bootstrap", "seed"),
    ),
    "BootstrapResult": (
        lambda: tf.finite_population_bootstrap(
            np.arange(20.0), population_size=100, replicates=200, seed=1
        ),
        ("estimate", "standard_error", "low", "high", "alpha"),
    ),
    "PatternTest": (
        lambda: tf.pattern_permutation_test(
            np.random.default_rng(5).choice([-0.5, 0.0, 0.5], size=(3, 20)), draws=99, seed=2
        ),
        ("observed", "p_value", "null_mean"),
    ),
    "SeedContrast": (
        lambda: tf.seed_contrast([0.1, 0.3, -0.05, 0.2, 0.15, 0.25]),
        ("estimate", "low", "high", "p_value", "alpha"),
    ),
    "DiDResult": (_did, ("replicates", "alpha")),
    "FamilyBootstrapResult": (
        lambda: family_bootstrap_difference(
            [1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
            [0.0, 0.0, 1.0, 0.0, 0.0, 1.0],
            families=[0, 0, 1, 1, 2, 2],
            n_resamples=200,
        ),
        ("estimate", "low", "high", "p_value", "standard_error", "alpha"),
    ),
    "HolmResult": (lambda: holm_correction([0.01, 0.04, 0.3]), ("alpha",)),
    "PairedConfidenceResult": (
        lambda: paired_confidence_test([0.9, 0.8, 0.7, 0.95, 0.6], [0.7, 0.8, 0.5, 0.9, 0.65]),
        ("estimate", "low", "p_value", "alpha"),  # high is +inf: one-sided
    ),
    "KappaResult": (
        lambda: linear_weighted_kappa(
            [0, 1, 2, 2, 1, 0, 1], [0, 1, 2, 1, 1, 0, 2], categories=[0, 1, 2], n_resamples=100
        ),
        ("estimate", "low", "high", "alpha"),
    ),
    "DisclosureValidation": (_disclosure, ("valid",)),
    "LeakageAudit": (_leakage, ("estimate", "low", "high", "p_value", "alpha")),
    "PruneResult": (_prune, ("reached_chance",)),
    "PruneStep": (lambda: _prune().steps[0], ("estimate", "low", "high")),
    "ShardedLikelihoodResult": (
        lambda: tf.sharded_likelihood_test(*_shuffled()),
        ("statistic", "p_value", "estimate", "alpha"),
    ),
    "PooledContamination": (
        lambda: tf.exchangeability_tests(*_shuffled()).combine("stouffer"),
        ("method", "p_value", "statistic", "level"),
    ),
    "ExchangeabilityTests": (
        lambda: tf.exchangeability_tests(*_shuffled()),
        ("alpha",),
    ),
    "ShardOrders": (lambda: tf.shard_orders(20, 4, 3, seed=1), ("n_examples", "seed")),
    "OrderScores": (
        lambda: tf.score_orders(
            [[1, 2, 3]] * 8,
            tf.shard_orders(8, 2, 3, seed=1),
            lambda windows: [np.full(len(w) - 1, -1.5) for w in windows],
            context_len=4,
            stride=2,
            progress=False,
        ),
        ("seed", "context_len", "stride", "tokens_scored"),
    ),
    "AuditState": (
        lambda: tf.SequentialAudit(200).update(*_gaps(1, 60)),
        ("n_parents", "estimate", "decision", "alpha"),
    ),
    "ShardState": (
        lambda: tf.SequentialExchangeabilityTest(20, 2, max_permutations=9).update(
            0, [1.0, -1.0], canonical_loglik=0.0
        ),
        ("shard", "draws", "exceedances", "p_low", "p_high"),
    ),
    "SequentialVerdict": (
        lambda: tf.SequentialExchangeabilityTest(20, 2, max_permutations=9).verdict(),
        ("decision", "p_low", "p_high", "orders_scored"),
    ),
    "SuiteAudit": (
        lambda: tf.suite_audit(
            tf.simulate_suite(models=3, benchmarks=1, parents=30, leaks=((0, 0, 0.8),)),
            tests=("randomization",),
        ),
        ("q", "fdr", "n_tests"),
    ),
    "StudyTable": (
        lambda: tf.coverage_study(
            np.linspace(-1.0, 1.0, 40), [10], intervals=("hoeffding",), replications=50, seed=1
        ),
        ("title",),
    ),
}


@pytest.fixture(scope="module", params=sorted(FACTORIES))
def case(request):
    factory, keys = FACTORIES[request.param]
    result = factory()
    assert type(result).__name__ == request.param
    return result, keys


def test_str_is_summary(case):
    result, _ = case
    text = result.summary()
    assert isinstance(text, str) and text
    assert str(result) == text


def test_repr_is_one_short_line(case):
    result, _ = case
    text = repr(result)
    assert "\n" not in text and len(text) < 200, text
    assert text.startswith(type(result).__name__ + "(")


def test_to_dict_is_strict_json_and_keeps_the_numbers(case):
    result, keys = case
    back = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    for key in keys:
        want = getattr(result, key)
        got = back[key]
        if isinstance(want, float) and math.isinf(want):
            assert got == ("inf" if want > 0 else "-inf")
        else:
            assert got == want, key
    names = {f.name for f in dataclasses.fields(result)} - set(type(result)._dict_exclude)
    assert set(back) == names


def test_a_zero_d_array_alpha_gives_the_same_dict():
    # alpha passed as np.array(0.05) (a 0-d array, as np.asarray or a reduction gives) is
    # kept by the result as given; to_dict raised TypeError in 24 result types
    checked = []
    for name, (factory, _) in sorted(FACTORIES.items()):
        result = factory()
        fields = {f.name for f in dataclasses.fields(result)}
        if "alpha" not in fields or not isinstance(result.alpha, float):
            continue  # no alpha field of its own
        zero_d = dataclasses.replace(result, alpha=np.array(result.alpha))
        want = json.dumps(result.to_dict(), allow_nan=False)
        assert json.dumps(zero_d.to_dict(), allow_nan=False) == want, name
        assert "shape" not in repr(zero_d), name
        checked.append(name)
    assert len(checked) >= 18, checked


def test_html_is_a_table_or_a_pre_block(case):
    result, _ = case
    html = result._repr_html_()
    assert isinstance(html, str) and ("<table>" in html or "<pre>" in html)


def test_to_frame_exactly_on_tabular_results(case):
    result, _ = case
    if not isinstance(result, TabularResult):
        assert not hasattr(result, "to_frame")
        return
    pd = pytest.importorskip("pandas")
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) > 0
    assert "<table>" in result._repr_html_()


def test_non_finite_numbers_follow_the_documented_convention():
    from truescore_fast._result import to_plain

    assert to_plain(np.array([1.0, math.nan, math.inf, -math.inf])) == [1.0, None, "inf", "-inf"]
    assert to_plain(np.float32(0.5)) == 0.5 and type(to_plain(np.int64(3))) is int
    assert to_plain((np.int64(1), {"a": np.bool_(True)})) == [1, {"a": True}]


def _package_dataclasses() -> dict[str, type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(tf.__path__, "truescore_fast."):
        if info.name == "truescore_fast.__main__":  # importing it runs the command line
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                isinstance(obj, type)
                and dataclasses.is_dataclass(obj)
                and obj.__module__ == module.__name__
            ):
                found[name] = obj
    return found


def test_every_result_type_has_the_protocol_and_a_case_here():
    types = _package_dataclasses()
    results = {name: cls for name, cls in types.items() if name not in NOT_RESULTS}
    assert set(results) == set(FACTORIES), "add the new result type to FACTORIES"
    for name, cls in results.items():
        assert issubclass(cls, Result), name
        assert cls.__dataclass_params__.repr is False, f"{name}: declare it with repr=False"
        assert cls.summary is not Result.summary, f"{name} must define summary()"
