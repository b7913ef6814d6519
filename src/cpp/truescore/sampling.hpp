// Survey samplers for the calibration engine, driven by a Philox stream.
//
// Every sampler takes the stream as an argument and keeps no state that survives a draw
// (the partial Fisher-Yates permutation is restored after each draw), so a sample
// depends only on the stream it was given -- (key, task) and the position in that
// task's sequence -- never on what the thread did before. The draws are simple enough
// that a NumPy reference can reproduce them from Philox.random_raw() value for value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "truescore/random.hpp"

namespace truescore {

// Without replacement from positions [0, N): partial Fisher-Yates,
//     for i in 0..n-1: j = i + below(N - i); swap(perm[i], perm[j]); out[i] = perm[i]
// over the identity permutation, then the swaps are undone in reverse so the next draw
// starts from the identity again. O(n) per draw; 4 N bytes of state.
class FisherYatesSampler {
public:
    explicit FisherYatesSampler(std::size_t population_size);
    std::size_t population_size() const { return perm_.size(); }
    // n distinct positions of [begin, begin + size) (a stratum), in draw order; n <= size.
    void draw(Philox& rng, std::size_t begin, std::size_t size, std::size_t n, std::uint32_t* out);
    void draw(Philox& rng, std::size_t n, std::uint32_t* out) { draw(rng, 0, perm_.size(), n, out); }

private:
    std::vector<std::uint32_t> perm_;
    std::vector<std::uint32_t> swaps_;
};

// Stratified simple random sampling: stratum h holds positions [offsets[h], offsets[h+1])
// and contributes allocation[h] units drawn by Fisher-Yates within it, strata in order.
// The strata must pass check_strata for a sampler of the population's size.
void draw_stratified(FisherYatesSampler& sampler, Philox& rng, const std::size_t* offsets,
                     std::size_t n_strata, const std::size_t* allocation, std::uint32_t* out);

// Throws std::invalid_argument unless the n_strata + 1 offsets run non-decreasing from 0
// to population_size and allocation[h] <= offsets[h+1] - offsets[h]. Returns the sample
// size, the sum of the allocation.
std::size_t check_strata(const std::size_t* offsets, std::size_t n_strata, const std::size_t* allocation,
                         std::size_t population_size);

// Proportional allocation by largest remainder: n_h = floor(n N_h / N), then the units
// left over go to the largest remainders (n N_h mod N), ties to the lower stratum.
// Exact integer arithmetic; sums to n, and n_h <= N_h.
std::vector<std::size_t> proportional_allocation(const std::size_t* stratum_sizes,
                                                 std::size_t n_strata, std::size_t n);

// With replacement: out[i] = below(N).
void draw_with_replacement(Philox& rng, std::size_t population_size, std::size_t n,
                           std::uint32_t* out);

// Bernoulli (Poisson with equal probabilities): unit k is in the sample when the k-th
// next_double() < p. Writes the included positions in order; returns how many.
std::size_t draw_bernoulli(Philox& rng, std::size_t population_size, double p, std::uint32_t* out);

// Counts per category of a without-replacement sample of n from a population holding
// counts[v] units of category v (the multivariate hypergeometric distribution), by
// sequential conditional hypergeometric draws. Each draw is exact inversion of the
// hypergeometric pmf (log-factorials from a table) enumerated outward from the mode,
// one next_double() per category but the last: O(sd) work, not O(n).
class HypergeometricSampler {
public:
    explicit HypergeometricSampler(std::size_t max_population);
    // X ~ Hypergeometric(population N, successes K, draws m); K, m <= N <= max_population.
    std::size_t draw(Philox& rng, std::size_t population, std::size_t successes, std::size_t draws) const;
    // out[v] for v < n_categories; sum(counts) <= max_population, n <= sum(counts).
    void draw_counts(Philox& rng, const std::int64_t* counts, std::size_t n_categories, std::size_t n,
                     std::int64_t* out) const;

private:
    double log_pmf(std::size_t population, std::size_t successes, std::size_t draws, std::size_t k) const;
    std::vector<double> log_factorial_;
};

}  // namespace truescore
