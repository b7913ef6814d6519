"""truescore_fast: contamination tests and matched-form audits for benchmark scores.

A compiled (C++17) core behind a thin Python API. It is a drop-in for the pure-Python
truescore library's contamination module, and adds Oren et al.'s sharded tests, the
CleanScore matched-form audit, and the calibration studies that justify them.
The package re-exports every public module's ``__all__``.
"""

from truescore_fast.audit import (
    INTERVAL_METHODS,
    AuditData,
    ControlBank,
    Interval,
    Intervals,
    MatchedFormAudit,
    RandomizationTest,
    bernstein_interval,
    bernstein_intervals,
    betting_interval,
    betting_intervals,
    hoeffding_interval,
    hoeffding_intervals,
    hoeffding_serfling_interval,
    hoeffding_serfling_intervals,
    matched_form_audit,
    matched_form_audits,
    matched_form_intervals,
    randomization_test,
    read_audit_table,
    wald_interval,
    wald_intervals,
)
from truescore_fast.contamination import (
    CombinedContamination,
    ContaminationResult,
    ExchangeabilityTests,
    combine_shards,
    exchangeability_test,
    exchangeability_tests,
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
from truescore_fast.pacost import (
    PairedConfidenceResult,
    paired_confidence_test,
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
from truescore_fast.sharded import (
    ShardedLikelihoodResult,
    ShardOrders,
    shard_orders,
    sharded_likelihood_test,
)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "audit_prune",
    "AuditData",
    "bernstein_interval",
    "bernstein_intervals",
    "betting_interval",
    "betting_intervals",
    "combine_shards",
    "CombinedContamination",
    "CONTAMINATION_TYPES",
    "ContaminationResult",
    "ControlBank",
    "disclosure_schema",
    "DisclosureValidation",
    "exchangeability_test",
    "exchangeability_tests",
    "ExchangeabilityTests",
    "family_bootstrap_difference",
    "FamilyBootstrapResult",
    "feature_differences",
    "FEATURE_NAMES",
    "HEDGE_WORDS",
    "hoeffding_interval",
    "hoeffding_intervals",
    "hoeffding_serfling_interval",
    "hoeffding_serfling_intervals",
    "holm_correction",
    "HolmResult",
    "Interval",
    "INTERVAL_METHODS",
    "Intervals",
    "KappaResult",
    "leakage_audit",
    "LeakageAudit",
    "linear_weighted_kappa",
    "matched_form_audit",
    "matched_form_audits",
    "matched_form_intervals",
    "MatchedFormAudit",
    "MissingExtraError",
    "paired_confidence_test",
    "PairedConfidenceResult",
    "PruneResult",
    "PruneStep",
    "randomization_test",
    "RandomizationTest",
    "read_audit_table",
    "shard_orders",
    "sharded_likelihood_test",
    "ShardedLikelihoodResult",
    "ShardOrders",
    "surface_features",
    "validate_disclosure",
    "wald_interval",
    "wald_intervals",
]
