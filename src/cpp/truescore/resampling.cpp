#include "truescore/resampling.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"
#include "truescore/sampling.hpp"
#include "truescore/summation.hpp"

namespace truescore {

namespace {

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

// Replicates a worker claims at a time in stratified_replicates (about 0.05 ms of work for
// Rao-Wu at n = 10^4: one replicate took 0.012 ms with the AVX-512 kernels and 0.028 ms
// without, on one core of the Intel Xeon development machine). Decides only who computes
// what.
constexpr std::size_t kReplicatesPerClaim = 4;

// The frame shared by the stratified-mean bootstraps: replicate b draws from task stream
// b and is sum_h weight[h] * (ybar_h + shift(gen, h, y_h, n_h, ybar_h)), strata in order,
// a sequential sum, written to out[b]. make_shift() is called once per worker and returns
// that worker's shift (holding its scratch space). Free workers claim the next
// replicates (for_each_stream_block_claimed): the replicates never depend on the thread
// count or on which worker computed them.
template <class MakeShift>
void stratified_replicates(const double* y, const std::int64_t* offsets, std::size_t n_strata,
                           const double* weight, const std::vector<double>& ysum,
                           std::size_t replicates, std::uint64_t key0, std::uint64_t key1,
                           int n_threads, double* out, MakeShift make_shift) {
    std::vector<double> ybar(n_strata);
    for (std::size_t h = 0; h < n_strata; ++h)
        ybar[h] = ysum[h] / static_cast<double>(offsets[h + 1] - offsets[h]);
    const StreamBlocks streams{key0, key1, replicates, kReplicateBlock};
    for_each_stream_block_claimed(streams, n_threads, kMinReplicatesPerThread, kReplicatesPerClaim, make_shift,
                                  [&](auto& shift, Philox& gen, std::size_t b, std::size_t, std::size_t) {
        double total = 0.0;
        for (std::size_t h = 0; h < n_strata; ++h) {
            const std::uint64_t nh = static_cast<std::uint64_t>(offsets[h + 1] - offsets[h]);
            total += weight[h] * (ybar[h] + shift(gen, h, y + offsets[h], nh, ybar[h]));
        }
        out[b] = total;
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
    // Each worker tallies its own draws' statistics into its own histogram (n + 1 counts,
    // never one entry per draw: memory does not grow with draws); the integer histograms
    // are added up, in any order, to the same total for every thread count.
    struct Scratch {
        FisherYatesSampler fy;
        std::vector<std::uint32_t> subset, count;
        std::vector<std::int64_t> hist;
    };
    std::fill(hist, hist + n + 1, 0);
    std::mutex merge;
    const StreamBlocks streams{key0, key1, draws, kReplicateBlock};
    for_each_stream_block(
        streams, n_threads, kMinReplicatesPerThread,
        [n] {
            return Scratch{FisherYatesSampler(n), std::vector<std::uint32_t>(n), std::vector<std::uint32_t>(n),
                           std::vector<std::int64_t>(n + 1)};
        },
        [&](Scratch& st, Philox& gen, std::size_t, std::size_t, std::size_t) {
            std::fill(st.count.begin(), st.count.end(), 0);
            for (std::size_t m = 0; m < n_models; ++m) {
                const std::size_t c = ones[m];
                const bool complement = c > n - c;
                const std::size_t s = complement ? n - c : c;
                st.fy.draw(gen, s, st.subset.data());
                if (complement) {
                    for (std::size_t j = 0; j < n; ++j) ++st.count[j];
                    for (std::size_t i = 0; i < s; ++i) --st.count[st.subset[i]];
                } else {
                    for (std::size_t i = 0; i < s; ++i) ++st.count[st.subset[i]];
                }
            }
            std::size_t t = 0;
            for (std::size_t j = 0; j < n; ++j) t += st.count[j] >= min_models;
            ++st.hist[t];
        },
        [&](const Scratch& st) {
            std::lock_guard<std::mutex> lock(merge);
            for (std::size_t t = 0; t <= n; ++t) hist[t] += st.hist[t];
        });
}

std::size_t pattern_test_bytes(std::size_t n_parents, std::size_t draws, int n_threads) {
    const std::size_t workers = std::min<std::size_t>(
        static_cast<std::size_t>(resolve_threads(n_threads)), std::max<std::size_t>(1, draws / kMinReplicatesPerThread));
    // Per worker: the sampler's permutation and swap log, subset and count (4 bytes per
    // parent each) and the histogram (8 bytes per parent).
    return workers * (n_parents + 1) * 24;
}

// ---------------------------------------------------------------------------------------
// Finite-population bootstraps
// ---------------------------------------------------------------------------------------

void rao_wu_replicates(const double* y, const std::int64_t* offsets, std::size_t n_strata,
                       const std::int64_t* resample_size, const double* lambda,
                       const double* weight, std::size_t replicates, std::uint64_t key0,
                       std::uint64_t key1, int n_threads, double* out) {
    const std::vector<double> ysum = stratum_sums(y, offsets, n_strata);
    // Only the resampled mean is needed: the draws are summed as they come (no weights,
    // no gathered copy), O(1) memory per thread whatever m_h.
    stratified_replicates(y, offsets, n_strata, weight, ysum, replicates, key0, key1, n_threads, out, [&] {
        return [&, idx = std::vector<std::uint64_t>(kIndexChunk)](Philox& gen, std::size_t h, const double* yh,
                                                                  std::uint64_t nh, double ybar) mutable {
            const std::size_t mh = static_cast<std::size_t>(resample_size[h]);
            PackedIndexSampler pick(gen, nh);
            const double mean = gathered_sum(pick, yh, mh, idx.data()) / static_cast<double>(mh);
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
    std::vector<std::uint64_t> idx(kIndexChunk);
    // Replicate first + r reads stream first + r; one thread (the caller chunks the work).
    const StreamBlocks streams{key0, key1, count, kReplicateBlock, first};
    for_each_stream_block(streams, 1, 1, no_state, [&](NoState&, Philox& gen, std::size_t r, std::size_t, std::size_t) {
        std::fill(draws.begin(), draws.end(), 0);
        for (std::size_t h = 0; h < n_strata; ++h) {
            const std::uint64_t nh = static_cast<std::uint64_t>(offsets[h + 1] - offsets[h]);
            const std::size_t mh = static_cast<std::size_t>(resample_size[h]);
            std::int64_t* dh = draws.data() + offsets[h];
            PackedIndexSampler pick(gen, nh);
            for (std::size_t done = 0; done < mh; done += kIndexChunk) {
                // a replicate of 10^9 draws takes seconds: check for Ctrl-C every 2^20
                if ((done & kCancelDraws) == 0 && done != 0) throw_if_cancelled();
                const std::size_t c = std::min(kIndexChunk, mh - done);
                pick.fill(idx.data(), c);
                for (std::size_t i = 0; i < c; ++i) ++dh[idx[i]];
            }
        }
        double* row = out + r * n;
        for (std::size_t h = 0; h < n_strata; ++h) {
            const double nh = static_cast<double>(offsets[h + 1] - offsets[h]);
            const double scale = lambda[h] * nh / static_cast<double>(resample_size[h]);
            for (std::int64_t i = offsets[h]; i < offsets[h + 1]; ++i)
                row[i] = weight[h] / nh * (1.0 - lambda[h] + scale * static_cast<double>(draws[static_cast<std::size_t>(i)]));
        }
    });
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
            floyd.draw(gen, nh, r, completion);
            for (std::size_t j = 0; j < r; ++j) buf[j] = yh[completion[j]];
            const double completion_sum = numpy_sum(buf.data(), r);
            const double pseudo_mean =
                (static_cast<double>(k) * ysum[h] + completion_sum) / static_cast<double>(big_n);
            floyd.draw(gen, big_n, nh, chosen);
            // Position p < k n of the pseudo-population is unit p mod n: the quotient from
            // a double product (exact to within one below 2^52) and one correction, not a
            // 64-bit division per draw.
            const bool small = kn < (std::uint64_t{1} << 52);
            const double inverse = 1.0 / static_cast<double>(nh);
            for (std::size_t i = 0; i < nh; ++i) {
                const std::uint64_t p = chosen[i];
                std::uint64_t unit;
                if (p >= kn) {
                    unit = completion[p - kn];
                } else if (small) {
                    const auto q = static_cast<std::uint64_t>(static_cast<double>(p) * inverse);
                    auto rem = static_cast<std::int64_t>(p) - static_cast<std::int64_t>(q * nh);
                    rem += rem < 0 ? static_cast<std::int64_t>(nh) : 0;
                    rem -= rem >= static_cast<std::int64_t>(nh) ? static_cast<std::int64_t>(nh) : 0;
                    unit = static_cast<std::uint64_t>(rem);
                } else {
                    unit = p % nh;
                }
                buf[i] = yh[unit];
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
    struct Scratch {
        std::vector<std::uint64_t> idx_e, idx_u;
        std::vector<double> bp, bf;
    };
    // Means of gathered dp and df over `count` indices into (p, f).
    auto means = [](Scratch& st, const double* p, const double* f, const std::uint64_t* idx, std::size_t count,
                    double* mp, double* mf) {
        for (std::size_t i = 0; i < count; ++i) {
            st.bp[i] = p[idx[i]];
            st.bf[i] = f[idx[i]];
        }
        *mp = numpy_sum(st.bp.data(), count) / static_cast<double>(count);
        *mf = numpy_sum(st.bf.data(), count) / static_cast<double>(count);
    };
    const StreamBlocks streams{key0, key1, replicates, kReplicateBlock};
    for_each_stream_block(
        streams, n_threads, kMinReplicatesPerThread,
        [biggest] {
            return Scratch{std::vector<std::uint64_t>(biggest), std::vector<std::uint64_t>(biggest),
                           std::vector<double>(biggest), std::vector<double>(biggest)};
        },
        [&](Scratch& st, Philox& gen, std::size_t b, std::size_t, std::size_t) {
            std::vector<std::uint64_t>& idx_e = st.idx_e;
            std::vector<std::uint64_t>& idx_u = st.idx_u;
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
                means(st, dp_e + e_off[m], df_e + e_off[m], idx_e.data(), ne, &ep, &ef);
                means(st, dp_u + u_off[m], df_u + u_off[m], idx_u.data(), nu, &up, &uf);
                const double did_p = ep - up, did_f = ef - uf;
                o[m * 3 + 0] = did_p;
                o[m * 3 + 1] = did_f;
                o[m * 3 + 2] = did_p - did_f;
                pooled[0] += did_p;
                pooled[1] += did_f;
                pooled[2] += did_p - did_f;
            }
            for (int q = 0; q < 3; ++q) o[n_models * 3 + q] = pooled[q] / static_cast<double>(n_models);
        });
}

}  // namespace truescore
