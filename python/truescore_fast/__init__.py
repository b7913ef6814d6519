"""truescore_fast: contamination tests for language-model benchmark scores, compiled.

A drop-in for truescore's contamination module on a C++ core, plus the batched and
sharded tests of Oren et al. (2023), the matched-form audit (CleanScore), and the Monte
Carlo calibration studies behind it.
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
from truescore_fast.calibration import (
    StressSetting,
    budget_study,
    coverage_study,
    detection_study,
    plan_audit_size,
    stress_grid,
    stress_population,
    stress_settings,
)
from truescore_fast.contamination import (
    CombinedContamination,
    ContaminationResult,
    ExchangeabilityTests,
    combine_shards,
    exchangeability_test,
    exchangeability_tests,
)
from truescore_fast.sharded import (
    ShardedLikelihoodResult,
    ShardOrders,
    shard_orders,
    sharded_likelihood_test,
)

__version__ = "0.1.0"

__all__ = [
    "INTERVAL_METHODS",
    "AuditData",
    "CombinedContamination",
    "ControlBank",
    "Interval",
    "Intervals",
    "MatchedFormAudit",
    "RandomizationTest",
    "bernstein_interval",
    "bernstein_intervals",
    "betting_interval",
    "betting_intervals",
    "hoeffding_interval",
    "hoeffding_intervals",
    "hoeffding_serfling_interval",
    "hoeffding_serfling_intervals",
    "matched_form_audit",
    "matched_form_audits",
    "matched_form_intervals",
    "randomization_test",
    "read_audit_table",
    "wald_interval",
    "wald_intervals",
    "StressSetting",
    "budget_study",
    "coverage_study",
    "detection_study",
    "plan_audit_size",
    "stress_grid",
    "stress_population",
    "stress_settings",
    "ContaminationResult",
    "ExchangeabilityTests",
    "ShardOrders",
    "ShardedLikelihoodResult",
    "__version__",
    "combine_shards",
    "exchangeability_test",
    "exchangeability_tests",
    "shard_orders",
    "sharded_likelihood_test",
]
