"""truescore_fast: contamination tests and matched-form audits for benchmark scores.

A compiled (C++17) core behind a thin Python API. It is a drop-in for the pure-Python
truescore library's contamination module and its paired comparison of two systems
(``paired_bootstrap``, ``paired_permutation``, ``holm``, ``benjamini_hochberg``), and adds
Oren et al.'s sharded tests, the CleanScore matched-form audit, the calibration studies
that justify it, and PaCoST, disclosure records, family-clustered intervals and
Audit-Prune.
The package re-exports every public module's ``__all__``.
"""

# The version is pyproject.toml's, compiled into the core (see CMakeLists.txt): one source.
from truescore_fast._core import __version__
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

__all__ = [
    "__version__",
    "HARNESSES",
    "audit_prune",
    "AuditData",
    "benjamini_hochberg",
    "bernstein_interval",
    "bernstein_intervals",
    "betting_interval",
    "betting_intervals",
    "BootstrapResult",
    "budget_study",
    "combine_shards",
    "CombinedContamination",
    "ComparisonResult",
    "CONTAMINATION_TYPES",
    "ContaminationResult",
    "ControlBank",
    "coverage_study",
    "detection_study",
    "DID_COLUMNS",
    "did_estimate",
    "DiDResult",
    "disclosure_schema",
    "DisclosureValidation",
    "exchangeability_test",
    "exchangeability_tests",
    "ExchangeabilityTests",
    "family_bootstrap_difference",
    "FamilyBootstrapResult",
    "feature_differences",
    "FEATURE_NAMES",
    "finite_population_bootstrap",
    "HEDGE_WORDS",
    "hoeffding_interval",
    "hoeffding_intervals",
    "hoeffding_serfling_interval",
    "hoeffding_serfling_intervals",
    "holm",
    "holm_correction",
    "HolmResult",
    "Interval",
    "INTERVAL_METHODS",
    "Intervals",
    "is_patched",
    "KappaResult",
    "leakage_audit",
    "LeakageAudit",
    "linear_weighted_kappa",
    "matched_form_audit",
    "matched_form_audits",
    "matched_form_intervals",
    "MatchedFormAudit",
    "MissingExtraError",
    "paired_bootstrap",
    "paired_confidence_test",
    "paired_permutation",
    "PairedConfidenceResult",
    "patch_truescore",
    "pattern_permutation_test",
    "PatternTest",
    "plan_audit_size",
    "PruneResult",
    "PruneStep",
    "randomization_test",
    "RandomizationTest",
    "read_audit_table",
    "read_harness_runs",
    "REPLICATIONS_PER_TASK",
    "seed_contrast",
    "SeedContrast",
    "shard_orders",
    "sharded_likelihood_test",
    "ShardedLikelihoodResult",
    "ShardOrders",
    "stress_grid",
    "stress_population",
    "stress_settings",
    "STRESS_SHAPES",
    "StressSetting",
    "surface_features",
    "unpatch_truescore",
    "validate_disclosure",
    "wald_interval",
    "wald_intervals",
    "PooledContamination",
]
