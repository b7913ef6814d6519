#include "truescore/randomization.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"
#include "truescore/summation.hpp"

namespace truescore {

namespace {

// Bin(n, p) pmf over 0..n: ratios outward from the mode, then normalised, so every
// entry has relative error O(n eps) until it underflows.
std::vector<double> binomial_pmf(std::int64_t n, double p) {
    std::vector<double> f(static_cast<std::size_t>(n) + 1, 0.0);
    if (p <= 0.0) { f[0] = 1.0; return f; }
    if (p >= 1.0) { f[static_cast<std::size_t>(n)] = 1.0; return f; }
    const double odds = p / (1.0 - p);
    std::int64_t mode = static_cast<std::int64_t>(std::floor((static_cast<double>(n) + 1.0) * p));
    mode = std::min(mode, n);
    f[static_cast<std::size_t>(mode)] = 1.0;
    for (std::int64_t k = mode; k < n; ++k)
        f[static_cast<std::size_t>(k + 1)] =
            f[static_cast<std::size_t>(k)] * (static_cast<double>(n - k) / static_cast<double>(k + 1)) * odds;
    for (std::int64_t k = mode; k > 0; --k)
        f[static_cast<std::size_t>(k - 1)] =
            f[static_cast<std::size_t>(k)] * (static_cast<double>(k) / static_cast<double>(n - k + 1)) / odds;
    double total = 0.0;
    {
        // The pmf is unimodal: add both tails inward, towards the mode.
        std::size_t lo = 0, hi = f.size() - 1;
        while (lo < hi) {
            if (f[lo] <= f[hi]) total += f[lo++]; else total += f[hi--];
        }
        total += f[lo];
    }
    for (double& v : f) v /= total;
    return f;
}

std::vector<double> convolve(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> out(a.size() + b.size() - 1, 0.0);
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (i % 1024 == 0) throw_if_cancelled();  // a lattice convolution can run for minutes
        const double ai = a[i];
        if (ai == 0.0) continue;
        double* o = out.data() + i;
        for (std::size_t j = 0; j < b.size(); ++j) o[j] += ai * b[j];
    }
    return out;
}

// Upper and lower tail sums of a pmf on 0..W, each accumulated from its extreme end so
// tiny tails keep their relative precision. ge[k] = P(X >= k), le[k] = P(X <= k).
void tails(const std::vector<double>& f, std::vector<double>& ge, std::vector<double>& le) {
    const std::size_t w = f.size();
    ge.assign(w, 0.0);
    le.assign(w, 0.0);
    double s = 0.0;
    for (std::size_t k = w; k-- > 0;) { s += f[k]; ge[k] = s; }
    s = 0.0;
    for (std::size_t k = 0; k < w; ++k) { s += f[k]; le[k] = s; }
}

// P(A + B >= u) and P(A + B <= u) for independent A (pmf a on 0..) and B (tails of b).
struct SumTails {
    const std::vector<double>& a;
    const std::vector<double>& b_ge;
    const std::vector<double>& b_le;

    double at_least(std::int64_t u) const {
        const std::int64_t wb = static_cast<std::int64_t>(b_ge.size()) - 1;
        double s = 0.0;
        for (std::int64_t k = static_cast<std::int64_t>(a.size()) - 1; k >= 0; --k) {
            const std::int64_t j = u - k;
            if (j > wb) break;  // B cannot reach; larger j for smaller k
            s += a[static_cast<std::size_t>(k)] * (j <= 0 ? 1.0 : b_ge[static_cast<std::size_t>(j)]);
        }
        return std::min(1.0, s);
    }
    double at_most(std::int64_t u) const {
        const std::int64_t wb = static_cast<std::int64_t>(b_le.size()) - 1;
        double s = 0.0;
        for (std::int64_t k = 0; k < static_cast<std::int64_t>(a.size()); ++k) {
            const std::int64_t j = u - k;
            if (j < 0) break;
            s += a[static_cast<std::size_t>(k)] * (j >= wb ? 1.0 : b_le[static_cast<std::size_t>(j)]);
        }
        return std::min(1.0, s);
    }
};

// Integer division rounding towards -inf / +inf.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

// p-values for U = A + B + shift, where (K + 1) U - total is the (scaled) statistic.
RandomizationPValues p_values_from(const SumTails& st, std::int64_t shift, std::int64_t kp1,
                                   std::int64_t total, std::int64_t u_obs) {
    RandomizationPValues r{};
    r.p_greater = st.at_least(u_obs - shift);
    r.p_less = st.at_most(u_obs - shift);
    const std::int64_t dev = kp1 * u_obs - total;
    const std::int64_t a = dev < 0 ? -dev : dev;
    if (a == 0) {
        r.p_two_sided = 1.0;
    } else {
        // |(K+1) U - total| >= a  <=>  U >= ceil((total + a)/(K+1)) or U <= floor((total - a)/(K+1))
        const std::int64_t hi = ceil_div(total + a, kp1), lo = floor_div(total - a, kp1);
        r.p_two_sided = std::min(1.0, st.at_least(hi - shift) + st.at_most(lo - shift));
    }
    return r;
}

}  // namespace

RandomizationPValues randomization_test_binary(const std::int64_t* n_by_sum, int n_forms,
                                               std::int64_t u_obs) {
    if (n_forms < 1) throw std::invalid_argument("the number of fresh forms must be at least 1");
    const std::int64_t kp1 = n_forms + 1;
    // Parents summing to K + 1 always contribute 1; to 0, nothing. The informative ones
    // contribute Bin(n_s, s / (K + 1)); the largest group goes last (tails, O(n) sum).
    std::int64_t shift = n_by_sum[kp1], total = kp1 * n_by_sum[kp1];
    int last = -1;
    for (int s = 1; s <= n_forms; ++s) {
        if (n_by_sum[s] < 0) throw std::invalid_argument("negative parent count");
        total += s * n_by_sum[s];
        if (n_by_sum[s] > 0 && (last < 0 || n_by_sum[s] > n_by_sum[last])) last = s;
    }
    std::vector<double> a{1.0};
    for (int s = 1; s <= n_forms; ++s) {
        if (s == last || n_by_sum[s] == 0) continue;
        a = convolve(a, binomial_pmf(n_by_sum[s], static_cast<double>(s) / static_cast<double>(kp1)));
    }
    std::vector<double> b{1.0};
    if (last > 0) b = binomial_pmf(n_by_sum[last], static_cast<double>(last) / static_cast<double>(kp1));
    std::vector<double> ge, le;
    tails(b, ge, le);
    const SumTails st{a, ge, le};
    return p_values_from(st, shift, kp1, total, u_obs);
}

RandomizationPValues randomization_test_lattice(const std::int64_t* values, std::size_t n,
                                                int n_forms) {
    if (n_forms < 1) throw std::invalid_argument("the number of fresh forms must be at least 1");
    const std::size_t kp1 = static_cast<std::size_t>(n_forms) + 1;
    std::int64_t shift = 0, total = 0, u_obs = 0;
    std::vector<double> a{1.0};
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t* v = values + i * kp1;
        std::int64_t lo = v[0], hi = v[0];
        for (std::size_t j = 0; j < kp1; ++j) {
            if (v[j] < 0) throw std::invalid_argument("lattice values must be non-negative");
            lo = std::min(lo, v[j]);
            hi = std::max(hi, v[j]);
            total += v[j];
        }
        u_obs += v[0];
        shift += lo;
        if (hi == lo) continue;
        std::vector<double> f(static_cast<std::size_t>(hi - lo) + 1, 0.0);
        for (std::size_t j = 0; j < kp1; ++j) f[static_cast<std::size_t>(v[j] - lo)] += 1.0;
        for (double& x : f) x /= static_cast<double>(kp1);
        a = convolve(a, f);
    }
    std::vector<double> ge{1.0}, le{1.0};
    const SumTails st{a, ge, le};
    return p_values_from(st, shift, static_cast<std::int64_t>(kp1), total, u_obs);
}

RandomizationPValues randomization_test_monte_carlo(const double* values, std::size_t n,
                                                    int n_forms, std::size_t n_draws,
                                                    std::uint64_t key0, std::uint64_t key1,
                                                    int n_threads) {
    if (n_forms < 1) throw std::invalid_argument("the number of fresh forms must be at least 1");
    if (n_draws < 1) throw std::invalid_argument("n_resamples must be at least 1");
    const std::size_t kp1 = static_cast<std::size_t>(n_forms) + 1;
    const double kd = static_cast<double>(n_forms);
    // gap[i * kp1 + j]: the parent's gap if label j were the public one.
    std::vector<double> gap(n * kp1);
    for (std::size_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (std::size_t j = 0; j < kp1; ++j) s += values[i * kp1 + j];
        for (std::size_t j = 0; j < kp1; ++j) {
            const double v = values[i * kp1 + j];
            gap[i * kp1 + j] = v - (s - v) / kd;
        }
    }
    double t_obs = 0.0;
    for (std::size_t i = 0; i < n; ++i) t_obs += gap[i * kp1];
    // Ties within rounding count as at least as extreme (conservative).
    const double tol = 1e-9 * std::max(1.0, static_cast<double>(n) * 1e-3);
    struct Counts {
        std::uint64_t ge = 0, le = 0, two = 0;
    };
    std::atomic<std::uint64_t> cge{0}, cle{0}, ctwo{0};
    const StreamBlocks streams{key0, key1, n_draws, kReplicateBlock};
    for_each_stream_block(
        streams, n_threads, kMinDrawsPerThread, [] { return Counts{}; },
        [&](Counts& c, Philox& gen, std::size_t, std::size_t, std::size_t) {
            double t = 0.0;
            for (std::size_t i = 0; i < n; ++i) t += gap[i * kp1 + gen.below(kp1)];
            c.ge += t >= t_obs - tol;
            c.le += t <= t_obs + tol;
            c.two += std::fabs(t) >= std::fabs(t_obs) - tol;
        },
        [&](const Counts& c) {
            cge += c.ge;
            cle += c.le;
            ctwo += c.two;
        });
    const double denom = static_cast<double>(n_draws) + 1.0;
    return {(1.0 + static_cast<double>(cge)) / denom, (1.0 + static_cast<double>(cle)) / denom,
            (1.0 + static_cast<double>(ctwo)) / denom};
}

namespace {

// Smallest L <= max_den with every score within rounding of a multiple of 1/L, or 0.
std::int64_t lattice_denominator(const double* v, std::size_t count, std::int64_t max_den) {
    for (std::int64_t den = 1; den <= max_den; ++den) {
        const double l = static_cast<double>(den);
        bool ok = true;
        for (std::size_t i = 0; i < count && ok; ++i) {
            const double x = v[i] * l;
            ok = std::fabs(x - std::floor(x + 0.5)) <= 1e-9 * l;
        }
        if (ok) return den;
    }
    return 0;
}

}  // namespace

RandomizationOutcome randomization_test(const double* public_scores, const double* fresh,
                                        std::size_t n, int n_forms, int method,
                                        std::int64_t max_denominator, std::size_t n_draws,
                                        std::uint64_t key0, std::uint64_t key1, int n_threads) {
    if (n_forms < 1) throw std::invalid_argument("fresh must hold at least one fresh form per parent");
    if (n < 2) throw std::invalid_argument("public needs at least 2 parents; got " + std::to_string(n));
    if (method < 0 || method > 2) throw std::invalid_argument("unknown randomization method");
    const std::size_t k = static_cast<std::size_t>(n_forms), kp1 = k + 1;
    RandomizationOutcome out{};
    // One pass: validate, detect binary labels, count label sums and informative parents.
    bool binary = true;
    std::vector<std::int64_t> n_by_sum(kp1 + 1, 0);
    std::int64_t u_obs = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double p0 = public_scores[i];
        if (!(p0 >= 0.0 && p0 <= 1.0))  // also catches NaN; inf is outside [0, 1]
            throw std::invalid_argument("public must hold finite scores in [0, 1]; parent " +
                                        std::to_string(i) + " holds " + std::to_string(p0));
        bool b = (p0 == 0.0 || p0 == 1.0), same = true;
        std::int64_t ones = p0 != 0.0;
        const double* f = fresh + i * k;
        for (std::size_t j = 0; j < k; ++j) {
            const double x = f[j];
            if (!(x >= 0.0 && x <= 1.0))
                throw std::invalid_argument("fresh must hold finite scores in [0, 1]; parent " +
                                            std::to_string(i) + " holds " + std::to_string(x));
            b = b && (x == 0.0 || x == 1.0);
            same = same && x == p0;
            ones += x != 0.0;
        }
        out.informative += same ? 0 : 1;
        if (binary && b) {
            ++n_by_sum[static_cast<std::size_t>(ones)];
            u_obs += p0 != 0.0;
        }
        binary = binary && b;
    }
    const double kd = static_cast<double>(k);
    out.statistic = 0.0 + pairwise_sum(n, [&](std::size_t i) {
                        double s = 0.0;
                        for (std::size_t j = 0; j < k; ++j) s += fresh[i * k + j];
                        return public_scores[i] - s / kd;
                    });
    std::vector<double> values;
    if (!binary || method == 2) {
        values.resize(n * kp1);
        for (std::size_t i = 0; i < n; ++i) {
            values[i * kp1] = public_scores[i];
            for (std::size_t j = 0; j < k; ++j) values[i * kp1 + 1 + j] = fresh[i * k + j];
        }
    }
    const std::int64_t den = method == 2 ? 0
                             : binary    ? 1
                                         : lattice_denominator(values.data(), values.size(), max_denominator);
    if (method == 1 && den == 0)
        throw std::invalid_argument(
            "method='exact' needs scores on a lattice {0, 1/L, ..., 1} with L <= " +
            std::to_string(max_denominator) + "; these are not: use method='auto' or 'monte_carlo'");
    out.denominator = den;
    if (den == 1) {
        out.p = randomization_test_binary(n_by_sum.data(), n_forms, u_obs);
        out.method = 0;
    } else if (den > 1) {
        std::vector<std::int64_t> ints(values.size());
        const double l = static_cast<double>(den);
        for (std::size_t i = 0; i < values.size(); ++i)
            ints[i] = static_cast<std::int64_t>(std::floor(values[i] * l + 0.5));
        out.p = randomization_test_lattice(ints.data(), n, n_forms);
        out.method = 1;
    } else {
        out.p = randomization_test_monte_carlo(values.data(), n, n_forms, n_draws, key0, key1,
                                               n_threads);
        out.method = 2;
    }
    return out;
}

}  // namespace truescore
