// The betting confidence interval for the mean gap (Waudby-Smith & Ramdas 2024, JRSS-B,
// "Estimating means of bounded random variables by betting"): hedged capital processes
// with predictable plug-in bets, optionally without replacement from a finite population.
#pragma once

#include <cstddef>

#include "truescore/gap_interval.hpp"

namespace truescore {

// Betting CI (hedged capital, predictable plug-in bets for a fixed n, truncation 3/4,
// without-replacement conditional means when population_size > 0), endpoints those of a
// bisection to 1e-9 on the [0, 1] scale (searched on its grid, see betting.cpp). The result depends on the order of d. A census
// (population_size == n) gives the point mean(d); n = 0 gives [-1, 1] (no gaps, every mean
// kept). When every mean is rejected the set is
// empty: low > high (the crossed rejection edges) and half_width 0.
// `scratch` holds kBettingScratchPerParent * n doubles, or is nullptr (then allocated here).
constexpr std::size_t kBettingScratchPerParent = 4;
GapInterval betting_interval(const double* d, std::size_t n, double population_size, double alpha,
                             double* scratch = nullptr);

// The same interval by the plain bisection to 1e-9 (one pass per step, ~64 in all): the
// reference the search in betting_interval reproduces, for tests and benchmarks.
GapInterval betting_interval_bisection(const double* d, std::size_t n, double population_size,
                                       double alpha);

// The vector kernel betting_interval runs now (2 AVX, 1 SSE2, 0 plain loops; all give the
// same bits): the process-wide level (simd::level, random.hpp; simd::cap_level lowers it
// for tests), at most what the build compiled.
int betting_vector_level();

}  // namespace truescore
