"""Issue 10, items 3-11: inputs that used to give a wrong or non-finite answer now give a
correct result or one clear error naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
import truescore_fast as ts

# --- item 3: population sizes beyond 64-bit integer arithmetic ------------------------


def test_stratum_sizes_whose_sum_overflows_int64_are_refused() -> None:
    values = np.arange(10.0)
    strata = np.repeat([0, 1], 5)
    with pytest.raises(ValueError, match="population_size sums to"):
        ts.finite_population_bootstrap(
            values, strata=strata, population_size=[2**62, 2**62], replicates=10
        )
    fine = ts.finite_population_bootstrap(
        values, strata=strata, population_size=[2**62, 2**61], replicates=10
    )
    assert fine.estimate == pytest.approx((2 * 2.0 + 7.0) / 3)


@pytest.mark.parametrize("size", [2**63, 1e300, np.uint64(2**63)])
def test_a_population_size_beyond_int64_is_refused(size: object) -> None:
    with pytest.raises(ValueError, match="population_size must be below 2\\*\\*63"):
        ts.finite_population_bootstrap(np.arange(10.0), population_size=size, replicates=10)
