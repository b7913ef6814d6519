"""The public methods, for the fuzz cases of tests/package/test_fuzz_methods.py and the
argument walk of tests/walking.py (issue 23: "every public function and method").

``public_methods()`` finds them by introspection: every function, classmethod or
staticmethod defined by this library on a class in a public ``__all__``, plus the
constructors of the classes a user builds (``CONSTRUCTED``). ``INSTANCES`` builds an
instance of each class from random data drawn with a given seed (a result from the call
that returns it), so a fuzz case varies the instance as well as the arguments;
``ARGUMENTS`` holds a valid call's keyword arguments for every method that takes some.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import truescore_fast as ts
from fuzzing import public_names
from truescore_fast.studies.options import StudyOptions, StudySettings
from truescore_fast.studies.registry import Study

# Containers that hold what they are given: the study functions check every value when
# the study runs (StudyOptions' docstring), so accepting one here is not a finding
CONTAINERS = {"StudyOptions", "StudyOptions.keywords", "Study.of"}

# The classes a user constructs (the others are results, made by the library's calls)
CONSTRUCTED = ("SequentialAudit", "SequentialExchangeabilityTest", "StudyOptions")


def public_classes() -> dict[str, type]:
    """Every public class but the exceptions (:func:`fuzzing.public_names`)."""
    return {
        attr: obj
        for attr, obj in public_names()
        if inspect.isclass(obj) and not issubclass(obj, BaseException)
    }


# Classes whose instances need an optional extra: left out where it is not installed
NEEDS_EXTRA = {"TransformersScorer": "torch"}


def public_methods() -> dict[str, tuple[type, str]]:
    """``"Class.method"`` -> (class, method name); ``"Class"`` for a constructor."""
    found: dict[str, tuple[type, str]] = {}
    for name, cls in public_classes().items():
        if name in NEEDS_EXTRA and importlib.util.find_spec(NEEDS_EXTRA[name]) is None:
            continue
        if name in CONSTRUCTED:
            found[name] = (cls, "__init__")
        for attr in dir(cls):
            if attr.startswith("_"):
                continue
            static = inspect.getattr_static(cls, attr)
            function = getattr(static, "__func__", static)
            if inspect.isfunction(function) and function.__module__.startswith("truescore_fast"):
                found[f"{name}.{attr}"] = (cls, attr)
    return found


def _gaps(rng: np.random.Generator, n: int = 12) -> np.ndarray:
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=n)


def _forms(rng: np.random.Generator, n: int = 12) -> tuple[np.ndarray, np.ndarray]:
    return (rng.random(n) < 0.7).astype(float), (rng.random((n, 2)) < 0.5).astype(float)


def _shuffled(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    shuffled = rng.normal(size=(4, 6))
    return shuffled.mean(axis=1) + rng.normal(0.3, 1.0, size=4), shuffled


def _pairs(rng: np.random.Generator, n: int = 12) -> tuple[list[str], ...]:
    q = [f"question {i} about topic {rng.integers(3)}?" for i in range(n)]
    c = [f"the answer is {i} because {'reasons ' * int(rng.integers(4))}" for i in range(n)]
    return q, c, [f"perhaps {i + 1}, probably" for i in range(n)]


def _sequential_audit(rng: np.random.Generator) -> Any:
    audit = ts.SequentialAudit(40, target_half_width=0.3)
    public, fresh = _forms(rng, 8)
    audit.update(public, fresh)
    return audit


def _sequential_test(rng: np.random.Generator) -> Any:
    test = ts.SequentialExchangeabilityTest(
        24, 3, max_permutations=9, h=2, seed=int(rng.integers(9))
    )
    for shard in range(3):
        test.update(shard, rng.normal(size=3), canonical_loglik=float(rng.normal()))
    return test


def _prune(rng: np.random.Generator) -> Any:
    return ts.audit_prune(*_pairs(rng), n_splits=2, step=0.25, seed=int(rng.integers(9)))


def _constat_suite(rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
    """A tested model's scores, then 6 models' (benchmark and reference benchmark)."""
    ability = np.linspace(0.2, 0.9, 6)[:, None]
    s, r = (
        (rng.random((6, 30)) < ability).astype(float),
        (rng.random((6, 20)) < ability).astype(float),
    )
    return s[0], r[0], s, r


def _study_table(rng: np.random.Generator) -> Any:
    return ts.plan_audit_size(_gaps(rng, 20), population_size=int(rng.integers(20, 60)))


def _order_scores(rng: np.random.Generator) -> Any:
    examples = [rng.integers(0, 50, size=3).tolist() for _ in range(6)]
    return ts.score_orders(
        examples,
        ts.shard_orders(6, 2, 2, seed=int(rng.integers(9))),
        lambda windows: [-np.log(50.0) * np.ones(len(w) - 1) for w in windows],
        context_len=4,
        stride=2,
        progress=False,
    )


class _ByteTokenizer:
    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))


def _transformers_scorer(rng: np.random.Generator) -> Any:
    """A TransformersScorer around a tiny torch model (an embedding and a linear layer
    returning ``.logits``) and a byte tokenizer: no transformers model is built."""
    import torch

    class TinyLM(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(256, 4)
            self.head = torch.nn.Linear(4, 256)

        def forward(self, input_ids: Any, use_cache: bool = False) -> Any:
            return type("Out", (), {"logits": self.head(self.embed(input_ids))})()

    torch.manual_seed(int(rng.integers(9)))
    return ts.TransformersScorer(TinyLM(), tokenizer=_ByteTokenizer())


INSTANCES: dict[str, Callable[[np.random.Generator], Any]] = {
    "OrderScores": _order_scores,
    "TransformersScorer": _transformers_scorer,
    "AuditState": lambda rng: _sequential_audit(rng).update(*_forms(rng, 4)),
    "BootstrapResult": lambda rng: ts.finite_population_bootstrap(
        rng.random(10), population_size=40, replicates=20
    ),
    "CombinedContamination": lambda rng: ts.combine_shards(rng.random(4)),
    "ComparisonResult": lambda rng: ts.paired_bootstrap(
        *_forms(rng)[0:1], rng.random(12), n_bootstrap=50
    ),
    "ConStatTest": lambda rng: ts.constat_test(*_constat_suite(rng), n_bootstrap=20),
    "ConStatTests": lambda rng: ts.constat_tests(*_constat_suite(rng)[2:], n_bootstrap=20),
    "ContaminationResult": lambda rng: ts.exchangeability_test(
        float(rng.normal()), rng.normal(size=9)
    ),
    "ControlBank": lambda rng: ts.matched_form_audit(*_forms(rng), control=_forms(rng)).control,
    "DiDResult": lambda rng: ts.did_estimate(
        rng.random((8, 4)), rng.random((8, 4)), replicates=20
    ),
    "DisclosureValidation": lambda rng: ts.validate_disclosure({"contamination": {}}),
    "ExchangeabilityTests": lambda rng: ts.exchangeability_tests(*_shuffled(rng)),
    "FamilyBootstrapResult": lambda rng: ts.family_bootstrap_difference(
        rng.random(6), rng.random(6), families=np.arange(6) // 2, n_resamples=50
    ),
    "HolmResult": lambda rng: ts.holm_correction(rng.random(4)),
    "Interval": lambda rng: ts.wald_interval(_gaps(rng), population_size=40),
    "Intervals": lambda rng: ts.wald_intervals(
        np.vstack([_gaps(rng), _gaps(rng)]), population_size=40
    ),
    "KappaResult": lambda rng: ts.linear_weighted_kappa(
        rng.integers(0, 3, 10), rng.integers(0, 3, 10), categories=[0, 1, 2], n_resamples=50
    ),
    "LeakageAudit": lambda rng: ts.leakage_audit(*_pairs(rng), n_splits=2),
    "MatchedFormAudit": lambda rng: ts.matched_form_audit(*_forms(rng), population_size=40),
    "PairedConfidenceResult": lambda rng: ts.paired_confidence_test(rng.random(8), rng.random(8)),
    "PatternTest": lambda rng: ts.pattern_permutation_test(
        rng.choice([-0.5, 0.5], (3, 12)), draws=50
    ),
    "PooledContamination": lambda rng: ts.exchangeability_tests(*_shuffled(rng)).combine(),
    "PruneResult": _prune,
    "PruneStep": lambda rng: _prune(rng).steps[0],
    "RandomizationTest": lambda rng: ts.randomization_test(*_forms(rng), n_resamples=50),
    "SeedContrast": lambda rng: ts.seed_contrast(rng.normal(size=6)),
    "SequentialAudit": _sequential_audit,
    "SequentialExchangeabilityTest": _sequential_test,
    "SequentialVerdict": lambda rng: _sequential_test(rng).verdict(),
    "ShardOrders": lambda rng: ts.shard_orders(20, 4, 3, seed=int(rng.integers(9))),
    "ShardState": lambda rng: _sequential_test(rng).shard_state(0),
    "ShardedLikelihoodResult": lambda rng: ts.sharded_likelihood_test(*_shuffled(rng)),
    "StudyOptions": lambda rng: StudyOptions(replications=int(rng.integers(1, 50))),
    "StudySettings": lambda rng: StudySettings(),
    "Study": lambda rng: Study.of(lambda **kw: _study_table(rng), "toy", "a toy", 10),
    "StudyTable": _study_table,
    "SuiteAudit": lambda rng: ts.suite_audit(
        ts.simulate_suite(models=3, benchmarks=1, parents=12, seed=int(rng.integers(9)), leaks=()),
        tests=("randomization",),
    ),
    "SuiteData": lambda rng: ts.simulate_suite(
        models=2, benchmarks=1, parents=6, seed=int(rng.integers(9)), leaks=()
    ),
}

# a valid call of every method (and constructor) that takes arguments
ARGUMENTS: dict[str, dict[str, Any]] = {
    "ConStatTests.test": {"index": 1},
    "ExchangeabilityTests.combine": {"method": "fisher"},
    "ExchangeabilityTests.shard": {"index": 1},
    "ExchangeabilityTests.summary": {"method": "stouffer"},
    "Interval.contains": {"value": 0.1},
    "Intervals.covers": {"value": 0.1},
    "SequentialAudit": {"population_size": 40, "target_half_width": 0.3},
    "SequentialAudit.update": {"public": [1.0, 0.0], "fresh": [[1.0, 0.0], [0.0, 0.0]]},
    "SequentialExchangeabilityTest": {"n_examples": 24, "n_shards": 3, "max_permutations": 9},
    "SequentialExchangeabilityTest.next_orders": {"count": 2},
    "SequentialExchangeabilityTest.shard_state": {"shard": 1},
    "SequentialExchangeabilityTest.update": {
        "shard": 1,
        "permuted_logliks": [0.5, -0.2],
        "canonical_loglik": None,  # the instance's shards have theirs
    },
    "ShardOrders.canonical": {"shard": 2},
    "TransformersScorer.encode": {"text": "abc"},
    "Study.of": {
        "function": lambda **kw: None,
        "name": "toy",
        "summary": "a toy",
        "replications": 5,
    },
    "StudyOptions": {"replications": 10},
    "StudyOptions.keywords": {"run": "coverage"},
    "StudyTable.summary": {"width": 60},
    "SuiteData.from_scores": {
        "forms": {("m", "b"): {"p1": {"public": 1.0, "fresh1": 0.0}}},
        "references": {("m", "b"): {"r1": 0.5}},
    },
    "SuiteData.pair": {"model": "model-01", "benchmark": "bench-1"},
}


def bound(name: str, rng: np.random.Generator) -> Callable[..., Any]:
    """The callable of ``name``: a constructor, or the method of a fresh instance."""
    cls, attr = public_methods()[name]
    if attr == "__init__":
        return cls
    static = inspect.getattr_static(cls, attr)
    if isinstance(static, (classmethod, staticmethod)):
        return getattr(cls, attr)
    return getattr(INSTANCES[cls.__name__](rng), attr)


def parameters(name: str) -> list[str]:
    """The arguments of ``name`` (self and cls left out)."""
    cls, attr = public_methods()[name]
    function = cls.__init__ if attr == "__init__" else getattr(cls, attr)
    skip = {"self", "cls"}
    return [p for p in inspect.signature(function).parameters if p not in skip]
