#include "truescore/compare.hpp"
#include "truescore/errors.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"
#include "truescore/sampling.hpp"

namespace truescore {
namespace {

// log k! - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2]: Stirling's correction.
double stirling_correction(std::int64_t k) {
    static const std::array<double, 10> small = [] {
        std::array<double, 10> t{};
        double log_factorial = 0.0;
        for (int i = 0; i < 10; ++i) {
            if (i > 0) log_factorial += std::log(static_cast<double>(i));
            const double x = static_cast<double>(i);
            t[i] = log_factorial - ((x + 0.5) * std::log(x + 1.0) - (x + 1.0) +
                                    0.91893853320467274178);
        }
        return t;
    }();
    if (k < 10) return small[k];
    const double kp = static_cast<double>(k) + 1.0, k2 = kp * kp;
    return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / k2) / k2) / kp;
}

// One Binomial(n, p) variate, p <= 1/2.
std::int64_t binomial_small_p(Philox& gen, std::int64_t n, double p) {
    const double q = 1.0 - p;
    const double dn = static_cast<double>(n);
    if (dn * p < 10.0) {
        // Inversion: walk the pmf upwards from 0 (expected n p + 1 steps).
        const double s = p / q, a = (dn + 1.0) * s, r0 = std::pow(q, dn);
        for (;;) {
            double u = gen.next_double(), r = r0;
            std::int64_t x = 0;
            while (u > r) {
                u -= r;
                ++x;
                if (x > n) break;  // rounding exhausted the pmf: draw again
                r *= a / static_cast<double>(x) - s;
            }
            if (x <= n) return x;
        }
    }
    // BTRD (Hormann 1993, "The generation of binomial random variates").
    const double npq = dn * p * q, spq = std::sqrt(npq);
    const double b = 1.15 + 2.53 * spq;
    const double a = -0.0873 + 0.0248 * b + 0.01 * p;
    const double c = dn * p + 0.5;
    const double alpha = (2.83 + 5.1 / b) * spq;
    const double vr = 0.92 - 4.2 / b, urvr = 0.86 * vr;
    const std::int64_t m = static_cast<std::int64_t>(std::floor((dn + 1.0) * p));
    const double r = p / q, nr = (dn + 1.0) * r;
    for (;;) {
        double v = gen.next_double(), u;
        if (v <= urvr) {
            u = v / vr - 0.43;
            return static_cast<std::int64_t>(std::floor((2.0 * a / (0.5 - std::fabs(u)) + b) * u + c));
        }
        if (v >= vr) {
            u = gen.next_double() - 0.5;
        } else {
            u = v / vr - 0.93;
            u = std::copysign(0.5, u) - u;
            v = gen.next_double() * vr;
        }
        const double us = 0.5 - std::fabs(u);
        const double kd = std::floor((2.0 * a / us + b) * u + c);
        if (kd < 0.0 || kd > dn) continue;
        const std::int64_t k = static_cast<std::int64_t>(kd);
        v = v * alpha / (a / (us * us) + b);
        const std::int64_t km = k > m ? k - m : m - k;
        if (km <= 15) {
            double f = 1.0;
            if (m < k) {
                for (std::int64_t i = m + 1; i <= k; ++i) f *= nr / static_cast<double>(i) - r;
            } else if (m > k) {
                for (std::int64_t i = k + 1; i <= m; ++i) v *= nr / static_cast<double>(i) - r;
            }
            if (v <= f) return k;
            continue;
        }
        v = std::log(v);
        const double dkm = static_cast<double>(km);
        const double rho = (dkm / npq) * (((dkm / 3.0 + 0.625) * dkm + 1.0 / 6.0) / npq + 0.5);
        const double t = -dkm * dkm / (2.0 * npq);
        if (v < t - rho) return k;
        if (v > t + rho) continue;
        const double nm = dn - static_cast<double>(m) + 1.0;
        const double h = (static_cast<double>(m) + 0.5) * std::log((static_cast<double>(m) + 1.0) / (r * nm)) +
                         stirling_correction(m) + stirling_correction(n - m);
        const double nk = dn - kd + 1.0;
        if (v <= h + (dn + 1.0) * std::log(nm / nk) + (kd + 0.5) * std::log(nk * r / (kd + 1.0)) -
                     stirling_correction(k) - stirling_correction(n - k))
            return k;
    }
}

std::int64_t binomial(Philox& gen, std::int64_t n, double p) {
    if (n <= 0 || p <= 0.0) return 0;
    if (p >= 1.0) return n;
    if (p > 0.5) return n - binomial_small_p(gen, n, 1.0 - p);
    return binomial_small_p(gen, n, p);
}

}  // namespace

void bootstrap_means(const double* d, std::size_t n, std::size_t n_boot, std::uint64_t key0,
                     std::uint64_t key1, double* out, int n_threads) {
    if (n == 0) throw std::invalid_argument("bootstrap needs at least one value");
    const double dn = static_cast<double>(n);
    const StreamBlocks streams{key0, key1, n_boot, kBootstrapBlock};
    // Free workers claim the next block of resamples (a block is ~2 ms at n = 10^4), so a
    // worker on a core shared with another process does fewer; each block is the same
    // for every thread count.
    for_each_stream_block_claimed(streams, n_threads, min_blocks_for_steps(kBootstrapBlock, n), 1,
                                  [] { return std::vector<std::uint64_t>(kIndexChunk); },
                                  [&](std::vector<std::uint64_t>& idx, Philox& gen, std::size_t, std::size_t r_begin,
                                      std::size_t r_end) {
        PackedIndexSampler pick(gen, n);
        double* o = out + r_begin;
        gathered_sums(pick, d, nullptr, n, r_end - r_begin, idx.data(),
                      [o, dn](std::size_t r, double sum, double) { o[r] = sum / dn; });
    });
}

void bootstrap_means_discrete(const double* values, const std::int64_t* counts, std::size_t k,
                              std::size_t n_boot, std::uint64_t key0, std::uint64_t key1,
                              double* out, int n_threads) {
    std::int64_t n = 0;
    for (std::size_t j = 0; j < k; ++j) {
        if (counts[j] < 1) throw argument_error("counts", " must be positive");
        n += counts[j];
    }
    if (k == 0) throw std::invalid_argument("bootstrap needs at least one value");
    const double dn = static_cast<double>(n);
    const StreamBlocks streams{key0, key1, n_boot, kBootstrapBlock};
    for_each_stream_block(streams, n_threads, min_blocks_for_steps(kBootstrapBlock, 8 * k), no_state,
                          [&](NoState&, Philox& gen, std::size_t, std::size_t r_begin, std::size_t r_end) {
        for (std::size_t r = r_begin; r < r_end; ++r) {
            std::int64_t left = n, pool = n;
            double total = 0.0;
            for (std::size_t j = 0; j + 1 < k && left > 0; ++j) {
                const std::int64_t drawn =
                    binomial(gen, left, static_cast<double>(counts[j]) / static_cast<double>(pool));
                total += static_cast<double>(drawn) * values[j];
                left -= drawn;
                pool -= counts[j];
            }
            if (left > 0) total += static_cast<double>(left) * values[k - 1];
            out[r] = total / dn;
        }
    });
}

void binomial_sample(std::int64_t n, double p, std::size_t size, std::uint64_t key0,
                     std::uint64_t key1, std::int64_t* out) {
    if (n < 0 || !(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("need n >= 0 and p in [0, 1]");
    Philox gen = Philox::for_task(key0, key1, 0);
    for (std::size_t i = 0; i < size; ++i) out[i] = binomial(gen, n, p);
}

}  // namespace truescore
