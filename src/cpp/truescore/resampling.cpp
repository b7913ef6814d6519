#include "truescore/resampling.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"
#include "truescore/summation.hpp"

namespace truescore {

namespace {

// Replicates below this many per thread run inline (a thread costs ~20 us).
constexpr std::size_t kMinPerThread = 16;

// Floyd's algorithm: `s` distinct values of [0, m) appended to `out` in draw order.
// `table` is an open-addressing set of capacity a power of two >= 2s (0 = empty slot,
// value v stored as v + 1); it is cleared here.
class FloydSampler {
public:
    void sample(std::uint64_t m, std::uint64_t s, Philox& gen, std::vector<std::uint64_t>& out) {
        out.clear();
        if (s == 0) return;
        std::size_t cap = 16;
        while (cap < 2 * s) cap <<= 1;
        if (table_.size() < cap) table_.resize(cap);
        std::fill(table_.begin(), table_.begin() + static_cast<std::ptrdiff_t>(cap), 0);
        mask_ = cap - 1;
        for (std::uint64_t j = m - s; j < m; ++j) {
            const std::uint64_t t = gen.below(j + 1);
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

std::size_t max_stratum(const std::int64_t* offsets, std::size_t n_strata) {
    std::size_t big = 0;
    for (std::size_t h = 0; h < n_strata; ++h)
        big = std::max(big, static_cast<std::size_t>(offsets[h + 1] - offsets[h]));
    return big;
}

// numpy_sum of each stratum's values.
std::vector<double> stratum_sums(const double* y, const std::int64_t* offsets, std::size_t n_strata) {
    std::vector<double> sums(n_strata);
    for (std::size_t h = 0; h < n_strata; ++h)
        sums[h] = numpy_sum(y + offsets[h], static_cast<std::size_t>(offsets[h + 1] - offsets[h]));
    return sums;
}

// The frame shared by the stratified-mean bootstraps: replicate b draws from task stream
// b and is sum_h weight[h] * (ybar_h + shift(gen, h, y_h, n_h, ybar_h)), strata in order,
// a sequential sum. make_shift() is called once per thread and returns that thread's
// shift (holding its scratch space), so the replicates never depend on the thread count.
template <class MakeShift>
void stratified_replicates(const double* y, const std::int64_t* offsets, std::size_t n_strata,
                           const double* weight, const std::vector<double>& ysum,
                           std::size_t replicates, std::uint64_t key0, std::uint64_t key1,
                           int n_threads, double* out, MakeShift make_shift) {
    std::vector<double> ybar(n_strata);
    for (std::size_t h = 0; h < n_strata; ++h)
        ybar[h] = ysum[h] / static_cast<double>(offsets[h + 1] - offsets[h]);
    parallel_for_blocks(replicates, n_threads, kMinPerThread, [&](std::size_t begin, std::size_t end) {
        auto shift = make_shift();
        for (std::size_t b = begin; b < end; ++b) {
            Philox gen = Philox::for_task(key0, key1, b);
            double total = 0.0;
            for (std::size_t h = 0; h < n_strata; ++h) {
                const std::uint64_t nh = static_cast<std::uint64_t>(offsets[h + 1] - offsets[h]);
                total += weight[h] * (ybar[h] + shift(gen, h, y + offsets[h], nh, ybar[h]));
            }
            out[b] = total;
        }
    });
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Pattern permutation test
// ---------------------------------------------------------------------------------------

std::int64_t pattern_statistic(const std::uint8_t* indicator, std::size_t n_models,
                               std::size_t n_parents, std::size_t min_models) {
    std::int64_t t = 0;
    for (std::size_t j = 0; j < n_parents; ++j) {
        std::size_t c = 0;
        for (std::size_t m = 0; m < n_models; ++m) c += indicator[m * n_parents + j] != 0;
        t += c >= min_models;
    }
    return t;
}

void pattern_null_histogram(const std::uint8_t* indicator, std::size_t n_models,
                            std::size_t n_parents, std::size_t min_models, std::size_t draws,
                            std::uint64_t key0, std::uint64_t key1, int n_threads,
                            std::int64_t* hist) {
    const std::size_t n = n_parents;
    std::vector<std::size_t> ones(n_models);
    for (std::size_t m = 0; m < n_models; ++m) {
        std::size_t c = 0;
        for (std::size_t j = 0; j < n; ++j) c += indicator[m * n + j] != 0;
        ones[m] = c;
    }
    std::vector<std::int32_t> stat(draws);
    parallel_for_blocks(draws, n_threads, kMinPerThread, [&](std::size_t begin, std::size_t end) {
        std::vector<std::uint32_t> perm(n), swaps(n);
        std::vector<std::uint32_t> count(n);
        for (std::size_t j = 0; j < n; ++j) perm[j] = static_cast<std::uint32_t>(j);
        for (std::size_t b = begin; b < end; ++b) {
            Philox gen = Philox::for_task(key0, key1, b);
            std::fill(count.begin(), count.end(), 0);
            for (std::size_t m = 0; m < n_models; ++m) {
                const std::size_t c = ones[m];
                const bool complement = c > n - c;
                const std::size_t s = complement ? n - c : c;
                for (std::size_t i = 0; i < s; ++i) {
                    const std::size_t j = i + static_cast<std::size_t>(gen.below(n - i));
                    std::swap(perm[i], perm[j]);
                    swaps[i] = static_cast<std::uint32_t>(j);
                }
                if (complement) {
                    for (std::size_t j = 0; j < n; ++j) ++count[j];
                    for (std::size_t i = 0; i < s; ++i) --count[perm[i]];
                } else {
                    for (std::size_t i = 0; i < s; ++i) ++count[perm[i]];
                }
                // Undo the swaps in reverse: perm is the identity again, in O(s).
                for (std::size_t i = s; i-- > 0;) std::swap(perm[i], perm[swaps[i]]);
            }
            std::int64_t t = 0;
            for (std::size_t j = 0; j < n; ++j) t += count[j] >= min_models;
            stat[b] = static_cast<std::int32_t>(t);
        }
    });
    std::fill(hist, hist + n + 1, 0);
    for (const auto t : stat) ++hist[t];
}

// ---------------------------------------------------------------------------------------
// Finite-population bootstraps
// ---------------------------------------------------------------------------------------

void rao_wu_replicates(const double* y, const std::int64_t* offsets, std::size_t n_strata,
                       const std::int64_t* resample_size, const double* lambda,
                       const double* weight, std::size_t replicates, std::uint64_t key0,
                       std::uint64_t key1, int n_threads, double* out) {
    const std::vector<double> ysum = stratum_sums(y, offsets, n_strata);
    std::size_t biggest_m = 0;
    for (std::size_t h = 0; h < n_strata; ++h)
        biggest_m = std::max(biggest_m, static_cast<std::size_t>(resample_size[h]));
    stratified_replicates(y, offsets, n_strata, weight, ysum, replicates, key0, key1, n_threads, out, [&] {
        return [&, buf = std::vector<double>(biggest_m)](Philox& gen, std::size_t h, const double* yh,
                                                         std::uint64_t nh, double ybar) mutable {
            const std::size_t mh = static_cast<std::size_t>(resample_size[h]);
            for (std::size_t i = 0; i < mh; ++i) buf[i] = yh[gen.below(nh)];
            const double mean = numpy_sum(buf.data(), mh) / static_cast<double>(mh);
            return lambda[h] * (mean - ybar);
        };
    });
}

void rao_wu_weights(const std::int64_t* offsets, std::size_t n_strata,
                    const std::int64_t* resample_size, const double* lambda,
                    const double* weight, std::size_t first, std::size_t count,
                    std::uint64_t key0, std::uint64_t key1, double* out) {
    const std::size_t n = static_cast<std::size_t>(offsets[n_strata]);
    std::vector<std::int64_t> draws(n);
    for (std::size_t r = 0; r < count; ++r) {
        Philox gen = Philox::for_task(key0, key1, first + r);
        std::fill(draws.begin(), draws.end(), 0);
        for (std::size_t h = 0; h < n_strata; ++h) {
            const std::uint64_t nh = static_cast<std::uint64_t>(offsets[h + 1] - offsets[h]);
            const std::int64_t mh = resample_size[h];
            for (std::int64_t i = 0; i < mh; ++i) ++draws[static_cast<std::size_t>(offsets[h]) + gen.below(nh)];
        }
        double* row = out + r * n;
        for (std::size_t h = 0; h < n_strata; ++h) {
            const double nh = static_cast<double>(offsets[h + 1] - offsets[h]);
            const double scale = lambda[h] * nh / static_cast<double>(resample_size[h]);
            for (std::int64_t i = offsets[h]; i < offsets[h + 1]; ++i)
                row[i] = weight[h] / nh * (1.0 - lambda[h] + scale * static_cast<double>(draws[static_cast<std::size_t>(i)]));
        }
    }
}

void bbh_replicates(const double* y, const std::int64_t* offsets, std::size_t n_strata,
                    const std::int64_t* population_size, const double* weight,
                    std::size_t replicates, std::uint64_t key0, std::uint64_t key1,
                    int n_threads, double* out) {
    const std::vector<double> ysum = stratum_sums(y, offsets, n_strata);
    const std::size_t biggest = max_stratum(offsets, n_strata);
    stratified_replicates(y, offsets, n_strata, weight, ysum, replicates, key0, key1, n_threads, out, [&] {
        std::vector<std::uint64_t> completion, chosen;
        completion.reserve(biggest);
        chosen.reserve(biggest);
        return [&, buf = std::vector<double>(biggest), completion = std::move(completion),
                chosen = std::move(chosen), floyd = FloydSampler()](
                   Philox& gen, std::size_t h, const double* yh, std::uint64_t nh, double) mutable {
            const std::uint64_t big_n = static_cast<std::uint64_t>(population_size[h]);
            const std::uint64_t k = big_n / nh, r = big_n % nh, kn = k * nh;
            floyd.sample(nh, r, gen, completion);
            for (std::size_t j = 0; j < r; ++j) buf[j] = yh[completion[j]];
            const double completion_sum = numpy_sum(buf.data(), r);
            const double pseudo_mean =
                (static_cast<double>(k) * ysum[h] + completion_sum) / static_cast<double>(big_n);
            floyd.sample(big_n, nh, gen, chosen);
            for (std::size_t i = 0; i < nh; ++i) {
                const std::uint64_t p = chosen[i];
                buf[i] = yh[p < kn ? p % nh : completion[p - kn]];
            }
            const double mean = numpy_sum(buf.data(), nh) / static_cast<double>(nh);
            return mean - pseudo_mean;
        };
    });
}

// ---------------------------------------------------------------------------------------
// Difference in differences
// ---------------------------------------------------------------------------------------

void did_replicates(const double* dp_e, const double* df_e, const std::int64_t* e_off,
                    const double* dp_u, const double* df_u, const std::int64_t* u_off,
                    std::size_t n_models, bool shared_parents, std::size_t replicates,
                    std::uint64_t key0, std::uint64_t key1, int n_threads, double* out) {
    std::size_t biggest = 0;
    for (std::size_t m = 0; m < n_models; ++m) {
        biggest = std::max(biggest, static_cast<std::size_t>(e_off[m + 1] - e_off[m]));
        biggest = std::max(biggest, static_cast<std::size_t>(u_off[m + 1] - u_off[m]));
    }
    const std::size_t row = (n_models + 1) * 3;
    parallel_for_blocks(replicates, n_threads, kMinPerThread, [&](std::size_t begin, std::size_t end) {
        std::vector<std::uint64_t> idx_e(biggest), idx_u(biggest);
        std::vector<double> bp(biggest), bf(biggest);
        // Means of gathered dp and df over `count` indices into (p, f).
        auto means = [&](const double* p, const double* f, const std::uint64_t* idx,
                         std::size_t count, double* mp, double* mf) {
            for (std::size_t i = 0; i < count; ++i) {
                bp[i] = p[idx[i]];
                bf[i] = f[idx[i]];
            }
            *mp = numpy_sum(bp.data(), count) / static_cast<double>(count);
            *mf = numpy_sum(bf.data(), count) / static_cast<double>(count);
        };
        for (std::size_t b = begin; b < end; ++b) {
            Philox gen = Philox::for_task(key0, key1, b);
            double* o = out + b * row;
            if (shared_parents) {
                const std::size_t ne = static_cast<std::size_t>(e_off[1] - e_off[0]);
                const std::size_t nu = static_cast<std::size_t>(u_off[1] - u_off[0]);
                for (std::size_t i = 0; i < ne; ++i) idx_e[i] = gen.below(ne);
                for (std::size_t i = 0; i < nu; ++i) idx_u[i] = gen.below(nu);
            }
            double pooled[3] = {0.0, 0.0, 0.0};
            for (std::size_t m = 0; m < n_models; ++m) {
                const std::size_t ne = static_cast<std::size_t>(e_off[m + 1] - e_off[m]);
                const std::size_t nu = static_cast<std::size_t>(u_off[m + 1] - u_off[m]);
                if (!shared_parents) {
                    for (std::size_t i = 0; i < ne; ++i) idx_e[i] = gen.below(ne);
                    for (std::size_t i = 0; i < nu; ++i) idx_u[i] = gen.below(nu);
                }
                double ep, ef, up, uf;
                means(dp_e + e_off[m], df_e + e_off[m], idx_e.data(), ne, &ep, &ef);
                means(dp_u + u_off[m], df_u + u_off[m], idx_u.data(), nu, &up, &uf);
                const double did_p = ep - up, did_f = ef - uf;
                o[m * 3 + 0] = did_p;
                o[m * 3 + 1] = did_f;
                o[m * 3 + 2] = did_p - did_f;
                pooled[0] += did_p;
                pooled[1] += did_f;
                pooled[2] += did_p - did_f;
            }
            for (int q = 0; q < 3; ++q) o[n_models * 3 + q] = pooled[q] / static_cast<double>(n_models);
        }
    });
}

}  // namespace truescore
