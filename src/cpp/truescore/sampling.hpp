// Samplers driven by a Philox stream: the survey designs of the calibration engine and the
// index draws of the bootstraps (one sampler of each kind; every kernel uses these).
//
// Every sampler takes the stream as an argument and keeps no state that survives a draw
// (the partial Fisher-Yates permutation is restored after each draw), so a sample
// depends only on the stream it was given -- (key, task) and the position in that
// task's sequence -- never on what the thread did before. The draws are simple enough
// that a NumPy reference can reproduce them from Philox.random_raw() value for value.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "truescore/random.hpp"

namespace truescore {

// ---- With replacement ------------------------------------------------------------------

// Uniform integers on [0, n), one Philox::below(n) (one raw word, Lemire) per draw.
class BelowSampler {
public:
    BelowSampler(Philox& gen, std::uint64_t n) : gen_(gen), n_(n) {}
    std::uint64_t draw() { return gen_.below(n_); }

private:
    Philox& gen_;
    std::uint64_t n_;
};

// Uniform integers on [0, n), several per 64-bit word: each word is cut into `per_word`
// chunks of k bits (lowest bits first); a chunk x maps to (x * n) >> k and is rejected
// when (x * n) mod 2^k < 2^k mod n (Lemire's method on k-bit words), so every draw is
// exactly uniform. k = 21 for n <= 2^16 (3 draws a word), k = 32 for n <= 2^26 (2 a
// word), otherwise one Philox::below(n) per draw.
class PackedIndexSampler {
public:
    PackedIndexSampler(Philox& gen, std::uint64_t n) : gen_(gen), n_(n) {
        if (n <= (std::uint64_t{1} << 16)) {
            bits_ = 21;
            per_word_ = 3;
        } else if (n <= (std::uint64_t{1} << 26)) {
            bits_ = 32;
            per_word_ = 2;
        } else {
            bits_ = 64;
            per_word_ = 1;
        }
        if (bits_ < 64) {
            mask_ = (std::uint64_t{1} << bits_) - 1;
            threshold_ = (std::uint64_t{1} << bits_) % n;
        }
    }

    std::uint64_t draw() {
        if (bits_ == 64) return gen_.below(n_);
        for (;;) {
            if (left_ == 0) {
                word_ = gen_.next_u64();
                left_ = per_word_;
            }
            const std::uint64_t x = word_ & mask_;
            word_ >>= bits_;
            --left_;
            const std::uint64_t m = x * n_;
            if ((m & mask_) >= threshold_) return m >> bits_;
        }
    }

private:
    Philox& gen_;
    std::uint64_t n_;
    int bits_ = 64;
    int per_word_ = 1;
    std::uint64_t mask_ = 0;
    std::uint64_t threshold_ = 0;
    std::uint64_t word_ = 0;
    int left_ = 0;
};

// With replacement: out[i] = below(N).
void draw_with_replacement(Philox& rng, std::size_t population_size, std::size_t n,
                           std::uint32_t* out);

// ---- Without replacement ---------------------------------------------------------------

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

// Floyd's algorithm for s distinct values of [0, m) (O(s) work and memory, whatever m):
// for j = m - s .. m - 1, t = below(j + 1); append j if t was already chosen, else append
// t. The chosen values are appended to `out` in that order. The set is an open-addressing
// table of capacity a power of two >= 2s, kept between draws (0 = empty slot, value v
// stored as v + 1) and cleared at each draw.
class FloydSampler {
public:
    void draw(Philox& rng, std::uint64_t m, std::uint64_t s, std::vector<std::uint64_t>& out) {
        out.clear();
        if (s == 0) return;
        std::size_t cap = 16;
        while (cap < 2 * s) cap <<= 1;
        if (table_.size() < cap) table_.resize(cap);
        std::fill(table_.begin(), table_.begin() + static_cast<std::ptrdiff_t>(cap), 0);
        mask_ = cap - 1;
        for (std::uint64_t j = m - s; j < m; ++j) {
            const std::uint64_t t = rng.below(j + 1);
            const std::uint64_t v = insert(t) ? t : (insert(j), j);
            out.push_back(v);
        }
    }

private:
    // True if v was absent (and is now present).
    bool insert(std::uint64_t v) {
        std::size_t slot = static_cast<std::size_t>((v * 0x9E3779B97F4A7C15ULL) >> 20) & mask_;
        while (table_[slot] != 0) {
            if (table_[slot] == v + 1) return false;
            slot = (slot + 1) & mask_;
        }
        table_[slot] = v + 1;
        return true;
    }

    std::vector<std::uint64_t> table_;
    std::size_t mask_ = 0;
};

// ---- Other designs ---------------------------------------------------------------------

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
