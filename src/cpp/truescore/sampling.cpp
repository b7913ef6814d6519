#include "truescore/sampling.hpp"
#include "truescore/errors.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "truescore/portable.hpp"

namespace truescore {

FisherYatesSampler::FisherYatesSampler(std::size_t population_size) {
    if (population_size >= (std::size_t{1} << 32))
        throw argument_error("population_size", " must be below 2**32");
    perm_.resize(population_size);
    std::iota(perm_.begin(), perm_.end(), std::uint32_t{0});
}

void FisherYatesSampler::draw(Philox& rng, std::size_t begin, std::size_t size, std::size_t n,
                              std::uint32_t* out) {
    std::uint32_t* p = perm_.data() + begin;
    swaps_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t j = i + static_cast<std::size_t>(rng.below(size - i));
        std::swap(p[i], p[j]);
        swaps_[i] = static_cast<std::uint32_t>(j);
        out[i] = p[i];
    }
    // Undo in reverse: the permutation is the identity again, whatever was drawn.
    for (std::size_t i = n; i-- > 0;) std::swap(p[i], p[swaps_[i]]);
}

void draw_stratified(FisherYatesSampler& sampler, Philox& rng, const std::size_t* offsets,
                     std::size_t n_strata, const std::size_t* allocation, std::uint32_t* out) {
    for (std::size_t h = 0; h < n_strata; ++h) {
        sampler.draw(rng, offsets[h], offsets[h + 1] - offsets[h], allocation[h], out);
        out += allocation[h];
    }
}

std::size_t check_strata(const std::size_t* offsets, std::size_t n_strata, const std::size_t* allocation,
                         std::size_t population_size) {
    if (offsets[0] != 0 || offsets[n_strata] != population_size)
        throw argument_error("offsets", " must run from 0 to population_size with one entry per stratum + 1");
    std::size_t n = 0;
    for (std::size_t h = 0; h < n_strata; ++h) {
        if (offsets[h + 1] < offsets[h]) throw argument_error("offsets", " must be non-decreasing");
        if (allocation[h] > offsets[h + 1] - offsets[h])
            throw std::invalid_argument("allocation exceeds the size of stratum " + std::to_string(h));
        n += allocation[h];
    }
    return n;
}

std::vector<std::size_t> proportional_allocation(const std::size_t* stratum_sizes,
                                                 std::size_t n_strata, std::size_t n) {
    std::size_t total = 0;
    for (std::size_t h = 0; h < n_strata; ++h) total += stratum_sizes[h];
    if (n > total) throw argument_error("n", " must not exceed the population size");
    std::vector<std::size_t> alloc(n_strata), order(n_strata);
    if (total == 0) return alloc;  // n == 0: nothing to share (and no division by zero)
    std::vector<std::uint64_t> remainder(n_strata);
    std::size_t given = 0;
    for (std::size_t h = 0; h < n_strata; ++h) {
        // n * size_h / total, exactly: the product needs 128 bits, the quotient (<= n)
        // and the remainder (< total) fit in 64.
        std::uint64_t lo;
        const std::uint64_t hi = mul_wide_u64(n, stratum_sizes[h], &lo);
        alloc[h] = static_cast<std::size_t>(div_wide_u64(hi, lo, total, &remainder[h]));
        given += alloc[h];
    }
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
    for (std::size_t k = 0; given < n; ++k, ++given) ++alloc[order[k]];
    return alloc;
}

void draw_with_replacement(Philox& rng, std::size_t population_size, std::size_t n,
                           std::uint32_t* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint32_t>(rng.below(population_size));
}

std::size_t draw_bernoulli(Philox& rng, std::size_t population_size, double p, std::uint32_t* out) {
    std::size_t m = 0;
    for (std::size_t k = 0; k < population_size; ++k)
        if (rng.next_double() < p) out[m++] = static_cast<std::uint32_t>(k);
    return m;
}

HypergeometricSampler::HypergeometricSampler(std::size_t max_population)
    : log_factorial_(max_population + 1) {
    for (std::size_t k = 0; k <= max_population; ++k)
        log_factorial_[k] = std::lgamma(static_cast<double>(k) + 1.0);
}

double HypergeometricSampler::log_pmf(std::size_t N, std::size_t K, std::size_t m, std::size_t k) const {
    const double* lf = log_factorial_.data();
    return (lf[K] - lf[k] - lf[K - k]) + (lf[N - K] - lf[m - k] - lf[N - K - m + k]) -
           (lf[N] - lf[m] - lf[N - m]);
}

std::size_t HypergeometricSampler::draw(Philox& rng, std::size_t N, std::size_t K, std::size_t m) const {
    const std::size_t lo = m > N - K ? m - (N - K) : 0, hi = std::min(K, m);
    if (lo == hi) return lo;  // no randomness, and no draw from the stream
    const double nd = static_cast<double>(N), kd = static_cast<double>(K), md = static_cast<double>(m);
    std::size_t mode = static_cast<std::size_t>(std::floor((md + 1.0) * (kd + 1.0) / (nd + 2.0)));
    mode = std::min(std::max(mode, lo), hi);
    // Inversion over the support enumerated mode, mode+1, mode-1, mode+2, ...: any fixed
    // enumeration order gives the exact distribution; this one needs O(sd) steps.
    double u = rng.next_double();
    const double p_mode = std::exp(log_pmf(N, K, m, mode));
    u -= p_mode;
    if (u < 0.0) return mode;
    std::size_t up = mode, down = mode;
    double p_up = p_mode, p_down = p_mode;
    const double rest = nd - kd - md;  // N - K - m, possibly negative
    while (up < hi || down > lo) {
        if (up < hi) {
            const double k = static_cast<double>(up);
            p_up *= (kd - k) * (md - k) / ((k + 1.0) * (rest + k + 1.0));
            ++up;
            u -= p_up;
            if (u < 0.0) return up;
        }
        if (down > lo) {
            const double k = static_cast<double>(down);
            p_down *= k * (rest + k) / ((kd - k + 1.0) * (md - k + 1.0));
            --down;
            u -= p_down;
            if (u < 0.0) return down;
        }
    }
    return mode;  // u left over from rounding (probability ~1e-15): the most likely value
}

void HypergeometricSampler::draw_counts(Philox& rng, const std::int64_t* counts, std::size_t n_categories,
                                        std::size_t n, std::int64_t* out) const {
    std::size_t remaining = 0;
    for (std::size_t v = 0; v < n_categories; ++v) remaining += static_cast<std::size_t>(counts[v]);
    std::size_t left = n;
    for (std::size_t v = 0; v + 1 < n_categories; ++v) {
        const std::size_t c = static_cast<std::size_t>(counts[v]);
        const std::size_t x = left == 0 ? 0 : draw(rng, remaining, c, left);
        out[v] = static_cast<std::int64_t>(x);
        left -= x;
        remaining -= c;
    }
    if (n_categories > 0) out[n_categories - 1] = static_cast<std::int64_t>(left);
}

}  // namespace truescore
