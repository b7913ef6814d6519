#include "truescore/calibration.hpp"
#include "truescore/errors.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "truescore/betting.hpp"
#include "truescore/numeric.hpp"
#include "truescore/parallel.hpp"
#include "truescore/randomization.hpp"
#include "truescore/random.hpp"
#include "truescore/sampling.hpp"

namespace truescore {

namespace {

void check_range(const TaskRange& r) {
    if (r.block == 0) throw argument_error("block", " must be at least 1");
    const std::size_t n_tasks = (r.replications + r.block - 1) / r.block;
    if (r.task_begin > r.task_end || r.task_end > n_tasks)
        throw std::invalid_argument("task range [" + std::to_string(r.task_begin) + ", " +
                                    std::to_string(r.task_end) + ") is outside the " +
                                    std::to_string(n_tasks) + " tasks of the study");
}

// Runs body(state, rng, row) once per replication of every task of the range: task t is
// block t of the cell's stream-block loop (range.block replications, stream
// task_offset + t) and adds its partial sums to row t - task_begin, zeroed first.
// `make_state` builds one per-worker state (samplers, buffers).
template <class MakeState, class Body>
void for_each_task(const TaskRange& range, std::size_t width, double* out, int n_threads,
                   MakeState make_state, Body body) {
    check_range(range);
    const StreamBlocks streams{range.key0, range.key1, range.replications, range.block, range.task_offset};
    for_each_stream_block(streams, range.task_begin, range.task_end, n_threads, kMinTasksPerThread, make_state,
                          [&](auto& state, Philox& rng, std::size_t task, std::size_t first, std::size_t last) {
        double* row = out + (task - range.task_begin) * width;
        std::fill(row, row + width, 0.0);
        for (std::size_t r = first; r < last; ++r) body(state, rng, row);
    });
}

struct CoverageState {
    FisherYatesSampler fy;
    HypergeometricSampler hyper;
    std::vector<std::uint32_t> idx;
    std::vector<double> d, scratch;
    std::vector<std::int64_t> counts, stratum_counts;
};

}  // namespace

void coverage_tasks(const CoverageSetting& s, const TaskRange& range, double* out, int n_threads) {
    const std::size_t n = check_strata(s.offsets, s.n_strata, s.allocation, s.population_size);
    if (n < 2) throw argument_error("n", " must be at least 2");
    const bool counts_path = s.lattice_count > 0;
    const std::size_t V = s.lattice_count;
    for (std::size_t h = 0; counts_path && h < s.n_strata; ++h) {
        std::int64_t total = 0;
        for (std::size_t v = 0; v < V; ++v) {
            if (s.lattice_counts[h * V + v] < 0) throw argument_error("lattice_counts", " must be non-negative");
            total += s.lattice_counts[h * V + v];
        }
        if (static_cast<std::size_t>(total) != s.offsets[h + 1] - s.offsets[h])
            throw argument_error("lattice_counts", " must sum to each stratum's size");
    }
    bool reads_moments = false;  // some method reads only the sample's moments
    for (std::size_t k = 0; k < s.n_methods; ++k) {
        const IntervalTraits& t = interval_traits(s.methods[k]);
        if (counts_path && t.order_dependent)
            throw std::invalid_argument(std::string("the ") + t.name +
                                        " interval needs the sample's order: it cannot use lattice counts");
        reads_moments |= !t.order_dependent;
    }
    const IntervalConstants c(s.alpha);
    const double pop = static_cast<double>(s.population_size);
    const std::size_t width = s.n_methods * kCoverageWidth;
    auto make_state = [&] {
        return CoverageState{FisherYatesSampler(counts_path ? 0 : s.population_size),
                             HypergeometricSampler(counts_path ? s.population_size : 0),
                             std::vector<std::uint32_t>(n),
                             std::vector<double>(n),
                             std::vector<double>(kBettingScratchPerParent * n),
                             std::vector<std::int64_t>(V),
                             std::vector<std::int64_t>(V)};
    };
    for_each_task(range, width, out, n_threads, make_state, [&](CoverageState& st, Philox& rng, double* row) {
        double mean, variance;
        if (counts_path) {
            std::fill(st.counts.begin(), st.counts.end(), 0);
            for (std::size_t h = 0; h < s.n_strata; ++h) {
                st.hyper.draw_counts(rng, s.lattice_counts + h * V, V, s.allocation[h], st.stratum_counts.data());
                for (std::size_t v = 0; v < V; ++v) st.counts[v] += st.stratum_counts[v];
            }
            const double nd = static_cast<double>(n);
            double sum = 0.0;
            for (std::size_t v = 0; v < V; ++v) sum += static_cast<double>(st.counts[v]) * s.lattice_values[v];
            mean = sum / nd;
            double ss = 0.0;
            for (std::size_t v = 0; v < V; ++v) {
                const double e = s.lattice_values[v] - mean;
                ss += static_cast<double>(st.counts[v]) * e * e;
            }
            variance = ss / (nd - 1.0);
        } else {
            draw_stratified(st.fy, rng, s.offsets, s.n_strata, s.allocation, st.idx.data());
            for (std::size_t i = 0; i < n; ++i) st.d[i] = s.values[st.idx[i]];
            mean = variance = 0.0;
            if (reads_moments) {  // two passes over the sample the order-dependent intervals skip
                mean = numpy_mean(st.d.data(), n);
                variance = numpy_variance(st.d.data(), n, mean);
            }
        }
        for (std::size_t k = 0; k < s.n_methods; ++k) {
            const GapInterval iv =
                interval_traits(s.methods[k]).order_dependent
                    ? gap_interval(s.methods[k], st.d.data(), n, pop, s.alpha, st.scratch.data())
                    : moment_interval(s.methods[k], mean, variance, n, pop, c);
            double* cell = row + k * kCoverageWidth;
            cell[kCovered] += (iv.low <= s.truth && s.truth <= iv.high) ? 1.0 : 0.0;
            cell[kHalfWidth] += iv.half_width;
            cell[kHalfWidthSquares] += iv.half_width * iv.half_width;
        }
    });
}

namespace {

struct DetectionState {
    FisherYatesSampler fy;
    std::vector<std::uint32_t> idx;
    std::vector<double> pub, fresh, d, scratch;
    std::vector<std::int64_t> n_by_sum;
};

}  // namespace

void detection_tasks(const DetectionSetting& s, const TaskRange& range, double* out, int n_threads) {
    const std::size_t n = s.n, K = s.n_forms, N = s.population_size;
    if (n < 2 || n > N) throw argument_error("n", " must lie in [2, population_size]");
    if (K < 1) throw std::invalid_argument("the bank needs at least one fresh form");
    if (!interval_traits(s.fallback).may_be_fallback)
        throw std::invalid_argument(std::string("fallback must not be ") + interval_traits(s.fallback).name);
    // The labels index the randomization test's table of label sums: only 0 and 1 are safe.
    for (std::size_t i = 0; i < N; ++i)
        if (s.public_labels[i] != 0.0 && s.public_labels[i] != 1.0)
            throw argument_error("public", " must hold binary (0/1) labels");
    for (std::size_t i = 0; i < N * K; ++i)
        if (s.fresh_labels[i] != 0.0 && s.fresh_labels[i] != 1.0)
            throw argument_error("fresh", " must hold binary (0/1) labels");
    const IntervalConstants c(s.alpha);
    const double pop = static_cast<double>(N), kd = static_cast<double>(K);
    auto make_state = [&] {
        return DetectionState{FisherYatesSampler(N),        std::vector<std::uint32_t>(n),
                              std::vector<double>(n),       std::vector<double>(n * K),
                              std::vector<double>(n),       std::vector<double>(kBettingScratchPerParent * n),
                              std::vector<std::int64_t>(K + 2)};
    };
    for_each_task(range, kDetectionWidth, out, n_threads, make_state, [&](DetectionState& st, Philox& rng, double* row) {
        st.fy.draw(rng, n, st.idx.data());
        std::fill(st.n_by_sum.begin(), st.n_by_sum.end(), 0);
        std::int64_t u_obs = 0;
        std::size_t nonzero = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t p = st.idx[i];
            double pub = s.public_labels[p];
            double* fr = st.fresh.data() + i * K;
            for (std::size_t k = 0; k < K; ++k) fr[k] = s.fresh_labels[p * K + k];
            if (s.relabel) {
                const std::size_t j = static_cast<std::size_t>(rng.below(K + 1));
                if (j > 0) std::swap(pub, fr[j - 1]);
            }
            if (s.flip_public > 0.0) {
                const double u = rng.next_double();
                if (pub == 0.0 && u < s.flip_public) pub = 1.0;
            }
            if (s.flip_fresh > 0.0) {
                for (std::size_t k = 0; k < K; ++k) {
                    const double u = rng.next_double();
                    if (fr[k] == 1.0 && u < s.flip_fresh) fr[k] = 0.0;
                }
            }
            double sum = 0.0;
            for (std::size_t k = 0; k < K; ++k) sum += fr[k];
            st.d[i] = pub - sum / kd;
            nonzero += st.d[i] != 0.0;
            ++st.n_by_sum[static_cast<std::size_t>(pub + sum)];
            u_obs += pub != 0.0;
        }
        const double mean = numpy_mean(st.d.data(), n);
        GapInterval iv;
        if (nonzero >= s.guardrail) {
            iv = moment_interval(IntervalMethod::wald, mean, numpy_variance(st.d.data(), n, mean), n, pop, c);
        } else if (interval_traits(s.fallback).order_dependent) {
            iv = gap_interval(s.fallback, st.d.data(), n, pop, s.alpha, st.scratch.data());
        } else {
            // The variance costs a pass over the sample: computed only for methods that read it.
            const double var =
                interval_traits(s.fallback).uses_variance ? numpy_variance(st.d.data(), n, mean) : 0.0;
            iv = moment_interval(s.fallback, mean, var, n, pop, c);
        }
        const RandomizationPValues p = randomization_test_binary(st.n_by_sum.data(), static_cast<int>(K), u_obs);
        row[kClaims] += iv.low > 0.0 && iv.low <= iv.high ? 1.0 : 0.0;  // an empty set claims nothing
        row[kRejections] += p.p_greater <= s.alpha ? 1.0 : 0.0;
        row[kDeltaHat] += mean;
    });
}

namespace {

struct BudgetState {
    FisherYatesSampler fy;
    std::vector<std::uint32_t> idx;
    std::vector<double> d, means, scratch;
};

}  // namespace

void budget_tasks(const BudgetSetting& s, const TaskRange& range, double* out, int n_threads) {
    const std::size_t n = s.n, M = s.n_models, N = s.population_size;
    if (n < 2 || n > N) throw argument_error("n", " must lie in [2, population_size]");
    if (M < 2) throw std::invalid_argument("a budget study needs at least 2 models");
    if (s.n_pairs == 0) throw std::invalid_argument("the full sample orders no pair of models strictly");
    for (std::size_t p = 0; p < s.n_pairs; ++p)
        if (s.pair_high[p] < 0 || s.pair_low[p] < 0 || static_cast<std::size_t>(s.pair_high[p]) >= M ||
            static_cast<std::size_t>(s.pair_low[p]) >= M)
            throw std::invalid_argument("model pair index out of range");
    const IntervalConstants c(s.alpha);
    const double pop = static_cast<double>(N);
    auto make_state = [&] {
        return BudgetState{FisherYatesSampler(N), std::vector<std::uint32_t>(n), std::vector<double>(n),
                           std::vector<double>(M), std::vector<double>(kBettingScratchPerParent * n)};
    };
    for_each_task(range, kBudgetWidth, out, n_threads, make_state, [&](BudgetState& st, Philox& rng, double* row) {
        st.fy.draw(rng, n, st.idx.data());
        double half_sum = 0.0;
        for (std::size_t m = 0; m < M; ++m) {
            const double* g = s.gaps + m * N;
            for (std::size_t i = 0; i < n; ++i) st.d[i] = g[st.idx[i]];
            const double mean = numpy_mean(st.d.data(), n);
            st.means[m] = mean;
            const GapInterval iv =
                interval_traits(s.method).order_dependent
                    ? gap_interval(s.method, st.d.data(), n, pop, s.alpha, st.scratch.data())
                    : moment_interval(s.method, mean, numpy_variance(st.d.data(), n, mean), n, pop, c);
            half_sum += iv.half_width;
        }
        std::size_t correct = 0;
        for (std::size_t p = 0; p < s.n_pairs; ++p)
            correct += st.means[static_cast<std::size_t>(s.pair_high[p])] > st.means[static_cast<std::size_t>(s.pair_low[p])];
        const double half = half_sum / static_cast<double>(M);
        const double share = static_cast<double>(correct) / static_cast<double>(s.n_pairs);
        row[kBudgetHalfWidth] += half;
        row[kBudgetHalfWidthSquares] += half * half;
        row[kExactOrder] += correct == s.n_pairs ? 1.0 : 0.0;
        row[kPairsCorrect] += share;
        row[kPairsCorrectSquares] += share * share;
    });
}

}  // namespace truescore
