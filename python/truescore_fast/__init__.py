"""truescore_fast: contamination tests for language-model benchmark scores, compiled.

A drop-in for truescore's contamination module on a C++ core, plus the batched and
sharded tests of Oren et al. (2023).
"""

from truescore_fast.contamination import (
    CombinedContamination,
    ContaminationResult,
    ExchangeabilityTests,
    combine_shards,
    exchangeability_test,
    exchangeability_tests,
)

__version__ = "0.1.0"

__all__ = [
    "CombinedContamination",
    "ContaminationResult",
    "ExchangeabilityTests",
    "__version__",
    "combine_shards",
    "exchangeability_test",
    "exchangeability_tests",
]
