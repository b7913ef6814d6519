"""truescore_fast: contamination tests and matched-form audits for benchmark scores.

A compiled (C++17) core behind a thin Python API. It is a drop-in for the pure-Python
truescore library's contamination module and its paired comparison of two systems
(``paired_bootstrap``, ``paired_permutation``, ``holm``, ``benjamini_hochberg``), and adds
Oren et al.'s sharded tests, the CleanScore matched-form audit, the calibration studies
that justify it, and PaCoST, disclosure records, family-clustered intervals and
Audit-Prune.
The package re-exports every public module's ``__all__``.

The re-exports are looked up on first use (PEP 562): ``import truescore_fast`` loads only
the compiled core, so ``truescore-fast --version`` and ``--help`` do not pay for SciPy.
The first name used imports the module that defines it (and what that module needs).
"""

# ruff: noqa: F401  (the TYPE_CHECKING imports are re-exports; __all__ is built from _EXPORTS)

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The version is pyproject.toml's, compiled into the core (see CMakeLists.txt): one source.
from truescore_fast._core import __version__

# Public name -> the module that defines it. The TYPE_CHECKING imports below say the same
# for type checkers and editors; tests/test_lazy_imports.py checks that the two agree.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "audit": (
        "AuditData",
        "ControlBank",
        "MatchedFormAudit",
        "matched_form_audit",
        "matched_form_audits",
        "read_audit_table",
    ),
    "calibration": (
        "REPLICATIONS_PER_TASK",
        "STRESS_SHAPES",
        "StressSetting",
        "budget_study",
        "coverage_study",
        "detection_study",
        "plan_audit_size",
        "stress_grid",
        "stress_population",
        "stress_settings",
    ),
    "compare": (
        "ComparisonResult",
        "benjamini_hochberg",
        "holm",
        "paired_bootstrap",
        "paired_permutation",
    ),
    "contamination": (
        "CombinedContamination",
        "ContaminationResult",
        "ExchangeabilityTests",
        "PooledContamination",
        "combine_shards",
        "exchangeability_test",
        "exchangeability_tests",
    ),
    "did": (
        "DID_COLUMNS",
        "DiDResult",
        "did_estimate",
    ),
    "disclosure": (
        "CONTAMINATION_TYPES",
        "DisclosureValidation",
        "KappaResult",
        "disclosure_schema",
        "disclosure_template",
        "linear_weighted_kappa",
        "validate_disclosure",
    ),
    "families": (
        "FamilyBootstrapResult",
        "HolmResult",
        "family_bootstrap_difference",
        "holm_correction",
    ),
    "finite_population": (
        "BootstrapResult",
        "finite_population_bootstrap",
    ),
    "harness": (
        "HARNESSES",
        "read_harness_runs",
    ),
    "intervals": (
        "INTERVAL_METHODS",
        "Interval",
        "Intervals",
        "bernstein_interval",
        "bernstein_intervals",
        "betting_interval",
        "betting_intervals",
        "hoeffding_interval",
        "hoeffding_intervals",
        "hoeffding_serfling_interval",
        "hoeffding_serfling_intervals",
        "matched_form_intervals",
        "wald_interval",
        "wald_intervals",
    ),
    "pacost": (
        "PairedConfidenceResult",
        "paired_confidence_test",
    ),
    "patch": (
        "is_patched",
        "patch_truescore",
        "unpatch_truescore",
    ),
    "patterns": (
        "PatternTest",
        "pattern_permutation_test",
    ),
    "prune": (
        "FEATURE_NAMES",
        "HEDGE_WORDS",
        "LeakageAudit",
        "MissingExtraError",
        "PruneResult",
        "PruneStep",
        "audit_prune",
        "feature_differences",
        "leakage_audit",
        "surface_features",
    ),
    "randomization": (
        "RandomizationTest",
        "randomization_test",
    ),
    "sequential": (
        "AuditState",
        "SequentialAudit",
        "SequentialExchangeabilityTest",
        "SequentialVerdict",
        "ShardState",
        "audit_order",
        "besag_clifford_p_value",
        "betting_confidence_sequence",
        "sequential_order_study",
        "sequential_order_verdict",
        "sequential_study",
    ),
    "sharded": (
        "ShardedLikelihoodResult",
        "ShardOrders",
        "shard_orders",
        "sharded_likelihood_test",
    ),
    "signflip": (
        "SeedContrast",
        "seed_contrast",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = ["__version__", *sorted(_MODULE_OF, key=str.lower)]

if TYPE_CHECKING:  # the names are re-exported through __all__, built from _EXPORTS
    from truescore_fast.audit import (
        AuditData,
        ControlBank,
        MatchedFormAudit,
        matched_form_audit,
        matched_form_audits,
        read_audit_table,
    )
    from truescore_fast.calibration import (
        REPLICATIONS_PER_TASK,
        STRESS_SHAPES,
        StressSetting,
        budget_study,
        coverage_study,
        detection_study,
        plan_audit_size,
        stress_grid,
        stress_population,
        stress_settings,
    )
    from truescore_fast.compare import (
        ComparisonResult,
        benjamini_hochberg,
        holm,
        paired_bootstrap,
        paired_permutation,
    )
    from truescore_fast.contamination import (
        CombinedContamination,
        ContaminationResult,
        ExchangeabilityTests,
        PooledContamination,
        combine_shards,
        exchangeability_test,
        exchangeability_tests,
    )
    from truescore_fast.did import (
        DID_COLUMNS,
        DiDResult,
        did_estimate,
    )
    from truescore_fast.disclosure import (
        CONTAMINATION_TYPES,
        DisclosureValidation,
        KappaResult,
        disclosure_schema,
        disclosure_template,
        linear_weighted_kappa,
        validate_disclosure,
    )
    from truescore_fast.families import (
        FamilyBootstrapResult,
        HolmResult,
        family_bootstrap_difference,
        holm_correction,
    )
    from truescore_fast.finite_population import (
        BootstrapResult,
        finite_population_bootstrap,
    )
    from truescore_fast.harness import HARNESSES, read_harness_runs
    from truescore_fast.intervals import (
        INTERVAL_METHODS,
        Interval,
        Intervals,
        bernstein_interval,
        bernstein_intervals,
        betting_interval,
        betting_intervals,
        hoeffding_interval,
        hoeffding_intervals,
        hoeffding_serfling_interval,
        hoeffding_serfling_intervals,
        matched_form_intervals,
        wald_interval,
        wald_intervals,
    )
    from truescore_fast.pacost import (
        PairedConfidenceResult,
        paired_confidence_test,
    )
    from truescore_fast.patch import (
        is_patched,
        patch_truescore,
        unpatch_truescore,
    )
    from truescore_fast.patterns import (
        PatternTest,
        pattern_permutation_test,
    )
    from truescore_fast.prune import (
        FEATURE_NAMES,
        HEDGE_WORDS,
        LeakageAudit,
        MissingExtraError,
        PruneResult,
        PruneStep,
        audit_prune,
        feature_differences,
        leakage_audit,
        surface_features,
    )
    from truescore_fast.randomization import (
        RandomizationTest,
        randomization_test,
    )
    from truescore_fast.sequential import (
        AuditState,
        SequentialAudit,
        SequentialExchangeabilityTest,
        SequentialVerdict,
        ShardState,
        audit_order,
        besag_clifford_p_value,
        betting_confidence_sequence,
        sequential_order_study,
        sequential_order_verdict,
        sequential_study,
    )
    from truescore_fast.sharded import (
        ShardedLikelihoodResult,
        ShardOrders,
        shard_orders,
        sharded_likelihood_test,
    )
    from truescore_fast.signflip import (
        SeedContrast,
        seed_contrast,
    )


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"truescore_fast.{module}"), name)
        globals()[name] = value  # the next lookup is an ordinary attribute
        return value
    if name in _EXPORTS:  # a public module not imported yet: truescore_fast.compare
        return importlib.import_module(f"truescore_fast.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
