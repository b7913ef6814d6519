"""truescore_fast: contamination tests for language-model benchmark scores, compiled.

A drop-in for truescore's contamination module on a C++ core, plus the batched and
sharded tests of Oren et al. (2023).
"""

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
    combine_shards,
    exchangeability_test,
    exchangeability_tests,
)
from truescore_fast.patch import patch_truescore, unpatch_truescore
from truescore_fast.sharded import (
    ShardedLikelihoodResult,
    ShardOrders,
    shard_orders,
    sharded_likelihood_test,
)

__version__ = "0.1.0"

__all__ = [
    "CombinedContamination",
    "ComparisonResult",
    "ContaminationResult",
    "ExchangeabilityTests",
    "ShardOrders",
    "ShardedLikelihoodResult",
    "__version__",
    "benjamini_hochberg",
    "combine_shards",
    "exchangeability_test",
    "exchangeability_tests",
    "holm",
    "paired_bootstrap",
    "paired_permutation",
    "patch_truescore",
    "shard_orders",
    "sharded_likelihood_test",
    "unpatch_truescore",
]
