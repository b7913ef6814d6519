#include "truescore/signflip.hpp"
#include "truescore/errors.hpp"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/portable.hpp"
#include "truescore/random.hpp"
#include "truescore/summation.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace truescore {

namespace {

struct Tally {
    std::int64_t greater = 0, less = 0, two_sided = 0;
};

// A pattern with statistic t against the observed one, ties within tol.
inline void tally_statistic(double t, double observed, double tol, Tally& c) {
    c.greater += t >= observed - tol;
    c.less += t <= observed + tol;
    c.two_sided += std::fabs(t) >= std::fabs(observed) - tol;
}

// A pattern with flipped sum f (T(s) = total - 2 f), ties within tol of the flipped sum.
inline void tally_flipped(double f, double total, double tol, Tally& c) {
    c.greater += f <= tol;
    c.less += f >= -tol;
    c.two_sided += std::fabs(total - 2.0 * f) >= std::fabs(total) - 2.0 * tol;
}

double tolerance(std::int64_t nonzero, double abs_sum) {
    return 8.0 * static_cast<double>(nonzero) * DBL_EPSILON * abs_sum;
}

void require_exact_size(std::size_t n, std::size_t limit) {
    if (n == 0 || n > limit)
        throw std::invalid_argument("exact sign-flip enumeration needs 1 to " + std::to_string(limit) +
                                    " values; got " + std::to_string(n));
}

// Calls visit(p, gen, tally, scratch) for every pattern p in [0, n_patterns); gen is the
// Philox stream of block p / kSignFlipBlock, read by the block's patterns in order, and
// scratch a worker's own make_scratch() (buffers reused across its patterns). Each worker
// tallies its blocks; the integer tallies are summed (order-free).
template <class MakeScratch, class Visit>
SignFlipCounts visit_patterns_with(std::size_t n_patterns, std::uint64_t key0, std::uint64_t key1,
                                   int n_threads, std::size_t work_per_pattern,
                                   MakeScratch make_scratch, Visit visit) {
    std::atomic<std::int64_t> greater{0}, less{0}, two_sided{0};
    const StreamBlocks streams{key0, key1, n_patterns, kSignFlipBlock};
    for_each_stream_block(
        streams, n_threads, min_blocks_for_steps(kSignFlipBlock, work_per_pattern),
        [&] { return std::make_pair(Tally{}, make_scratch()); },
        [&](auto& state, Philox& gen, std::size_t, std::size_t p_begin, std::size_t p_end) {
            for (std::size_t p = p_begin; p < p_end; ++p) visit(p, gen, state.first, state.second);
        },
        [&](const auto& state) {
            greater += state.first.greater;
            less += state.first.less;
            two_sided += state.first.two_sided;
        });
    SignFlipCounts out;
    out.n_patterns = static_cast<std::int64_t>(n_patterns);
    out.greater = greater.load();
    out.less = less.load();
    out.two_sided = two_sided.load();
    return out;
}

// visit_patterns_with for kernels that need no scratch: visit(p, gen, tally).
template <class Visit>
SignFlipCounts visit_patterns(std::size_t n_patterns, std::uint64_t key0, std::uint64_t key1,
                              int n_threads, std::size_t work_per_pattern, Visit visit) {
    return visit_patterns_with(n_patterns, key0, key1, n_threads, work_per_pattern,
                               [] { return 0; },
                               [&](std::size_t p, Philox& gen, Tally& c, int&) { visit(p, gen, c); });
}

struct Flipped {
    double sum;     // f_S, four accumulators in a fixed order
    std::size_t k;  // |S|
};

// d (as raw bits) if bit is 1, else +0.0: branchless, since the bits are random.
inline double masked(std::uint64_t dbits, std::uint64_t bit) {
    const std::uint64_t v = dbits & (std::uint64_t{0} - bit);
    double out;
    std::memcpy(&out, &v, sizeof out);
    return out;
}

// The flipped sum of a pattern whose bit string arrives one 64-bit word at a time; dbits
// holds the differences' raw bits.
template <class NextWord>
Flipped flipped_sum(const std::uint64_t* dbits, std::size_t n, NextWord next_word) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    std::size_t k = 0;
    for (std::size_t base = 0; base < n; base += 64) {
        const std::uint64_t w = next_word();
        const std::size_t len = std::min<std::size_t>(64, n - base);
        k += static_cast<std::size_t>(popcount64(len == 64 ? w : w & ((std::uint64_t{1} << len) - 1)));
        const std::uint64_t* chunk = dbits + base;
        std::size_t j = 0;
        for (; j + 4 <= len; j += 4) {
            acc[0] += masked(chunk[j], (w >> j) & 1);
            acc[1] += masked(chunk[j + 1], (w >> (j + 1)) & 1);
            acc[2] += masked(chunk[j + 2], (w >> (j + 2)) & 1);
            acc[3] += masked(chunk[j + 3], (w >> (j + 3)) & 1);
        }
        for (; j < len; ++j) acc[j & 3] += masked(chunk[j], (w >> j) & 1);
    }
    return Flipped{(acc[0] + acc[1]) + (acc[2] + acc[3]), k};
}

// Pattern p's flipped sum: its bits are p (exact) or the next words of gen.
inline Flipped pattern_flipped_sum(const std::uint64_t* dbits, std::size_t n, bool exact,
                                   std::size_t p, Philox& gen) {
    if (exact) return flipped_sum(dbits, n, [p] { return static_cast<std::uint64_t>(p); });
    return flipped_sum(dbits, n, [&gen] { return gen.next_u64(); });
}

// Everything sign_flip_counts and sign_flip_test need from the data; critical (may be
// null) receives each pattern's m_S (NaN when nothing is flipped).
SignFlipCounts count_patterns(const double* d, std::size_t n, bool exact, std::int64_t n_resamples,
                              std::uint64_t key0, std::uint64_t key1, int n_threads,
                              double* critical) {
    if (n == 0) throw std::invalid_argument("sign-flip test needs at least one difference");
    if (exact) require_exact_size(n, kSignFlipMaxCount);
    if (!exact && n_resamples < 1) throw argument_error("n_resamples", " must be at least 1");
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) total += d[i];
    const double tol = sign_flip_tolerance(d, n);
    std::vector<std::uint64_t> dbits(n);
    std::memcpy(dbits.data(), d, n * sizeof(double));
    const std::size_t n_patterns =
        exact ? (std::size_t{1} << n) : static_cast<std::size_t>(n_resamples);
    return visit_patterns(n_patterns, key0, key1, n_threads, n,
                          [&](std::size_t p, Philox& gen, Tally& c) {
        const Flipped f = pattern_flipped_sum(dbits.data(), n, exact, p, gen);
        tally_flipped(f.sum, total, tol, c);
        if (critical)
            critical[p] = f.k == 0 ? std::numeric_limits<double>::quiet_NaN()
                                   : f.sum / static_cast<double>(f.k);
    });
}

}  // namespace

double sign_flip_tolerance(const double* d, std::size_t n) {
    double abs_sum = 0.0;
    std::int64_t nonzero = 0;
    for (std::size_t i = 0; i < n; ++i) {
        abs_sum += std::fabs(d[i]);
        nonzero += d[i] != 0.0;
    }
    return tolerance(nonzero, abs_sum);
}

SignFlipCounts sign_flip_counts(const double* d, std::size_t n, bool exact,
                                std::int64_t n_resamples, std::uint64_t key0,
                                std::uint64_t key1, int n_threads) {
    return count_patterns(d, n, exact, n_resamples, key0, key1, n_threads, nullptr);
}

namespace {
// Entries between two cancellation checks in the test's serial passes over the patterns
// (a pass over 10^9 of them takes seconds): about 0.1 ms of work.
constexpr std::size_t kSelectCheck = std::size_t{1} << 16;

// The test's critical values, one double a pattern (8 GB at 10^9), not zero-filled: the
// kernel writes every entry, its workers touching the pages between their cancellation
// checks (filling first took seconds Ctrl-C could not stop). On Linux the buffer asks for
// transparent huge pages, as NumPy does for its large arrays: 8 GB of 4 KiB pages took
// about 1 s to give back after Ctrl-C (0.1 s in 2 MiB pages), and as long to fault in.
class CriticalValues {
public:
    explicit CriticalValues(std::size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        constexpr std::size_t kHuge = std::size_t{1} << 21;
        const std::size_t bytes = std::max<std::size_t>(1, n) * sizeof(double);
        if (bytes >= kHuge) {
            if (n > (std::numeric_limits<std::size_t>::max() - kHuge) / sizeof(double)) throw std::bad_alloc();
            const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
            data_ = static_cast<double*>(std::aligned_alloc(kHuge, rounded));
            if (data_ == nullptr) throw std::bad_alloc();
            aligned_ = true;
            (void)madvise(data_, rounded, MADV_HUGEPAGE);  // a hint: no huge pages is fine
            return;
        }
#endif
        data_ = new double[std::max<std::size_t>(1, n)];
    }
    ~CriticalValues() {
        if (aligned_)
            std::free(data_);
        else
            delete[] data_;
    }
    CriticalValues(const CriticalValues&) = delete;
    CriticalValues& operator=(const CriticalValues&) = delete;
    double* get() const { return data_; }

private:
    double* data_ = nullptr;
    bool aligned_ = false;
};
}  // namespace

namespace detail {

// Moves the non-NaN entries of x[0 .. n) to its front, in order; returns their count.
std::size_t drop_nans(double* x, std::size_t n) {
    std::size_t m = 0;
    for (std::size_t start = 0; start < n; start += kSelectCheck) {
        throw_if_cancelled();
        const std::size_t end = std::min(n, start + kSelectCheck);
        for (std::size_t i = start; i < end; ++i)
            if (!std::isnan(x[i])) x[m++] = x[i];
    }
    return m;
}

// The value of rank k (0-based) among x[0 .. n) (no NaN), x reordered: what
// std::nth_element leaves at x[k] (the value of a rank is unique, so the same value,
// bit for bit), found by quickselect with a cancellation check every kSelectCheck steps
// of each partition (std::nth_element, which has none, took seconds at 10^9 patterns).
// Ranges below kSelectCheck, or left after 2 log2(n) + 8 partitions (a pivot sequence
// that keeps splitting badly), go to std::nth_element.
double select_nth(double* x, std::size_t k, std::size_t n) {
    std::size_t lo = 0, hi = n;  // x[k] lies in [lo, hi)
    int depth = 8;
    for (std::size_t size = n; size > 1; size >>= 1) depth += 2;
    std::size_t steps = 0;
    auto step = [&steps] {
        if (++steps == kSelectCheck) {
            steps = 0;
            throw_if_cancelled();
        }
    };
    while (hi - lo > kSelectCheck && depth-- > 0) {
        // Hoare's partition around the median of the first, middle and last entries,
        // placed in the middle (the lower one): both parts are non-empty.
        const std::size_t last = hi - 1, mid = lo + (last - lo) / 2;
        if (x[mid] < x[lo]) std::swap(x[mid], x[lo]);
        if (x[last] < x[lo]) std::swap(x[last], x[lo]);
        if (x[last] < x[mid]) std::swap(x[last], x[mid]);
        const double pivot = x[mid];
        std::size_t i = lo - 1, j = hi;  // i wraps below lo for one step; used after ++
        while (true) {
            do {
                ++i;
                step();
            } while (x[i] < pivot);
            do {
                --j;
                step();
            } while (x[j] > pivot);
            if (i >= j) break;
            std::swap(x[i], x[j]);
        }
        // x[lo .. j] <= pivot <= x[j + 1 .. hi)
        if (k <= j)
            hi = j + 1;
        else
            lo = j + 1;
    }
    throw_if_cancelled();
    std::nth_element(x + lo, x + k, x + hi);
    return x[k];
}

}  // namespace detail

SignFlipResult sign_flip_test(const double* d, std::size_t n, bool exact,
                              std::int64_t n_resamples, std::uint64_t key0, std::uint64_t key1,
                              double alpha_tail, int n_threads) {
    if (exact) require_exact_size(n, kSignFlipMaxInterval);
    const std::size_t n_patterns =
        exact ? (std::size_t{1} << n) : static_cast<std::size_t>(std::max<std::int64_t>(n_resamples, 0));
    const CriticalValues critical(n_patterns);
    const SignFlipCounts counts =
        count_patterns(d, n, exact, n_resamples, key0, key1, n_threads, critical.get());

    // p(mu) = (base + k0 + #{m_S <= mu}) / N for "greater", k0 the patterns flipping
    // nothing (they count for every mu); the confidence set {mu : p(mu) > alpha_tail} is
    // [r-th smallest m_S, inf) with r below. The patterns' m_S: the NaNs dropped and two
    // selections, each checking for Ctrl-C as it goes.
    const std::size_t m = detail::drop_nans(critical.get(), n_patterns);
    const auto k0 = static_cast<std::int64_t>(n_patterns - m);
    const std::int64_t base = exact ? 0 : 1;
    const double big_n = static_cast<double>(n_patterns) + static_cast<double>(base);
    const std::int64_t r = static_cast<std::int64_t>(std::floor(alpha_tail * big_n)) + 1 - base - k0;
    const double inf = std::numeric_limits<double>::infinity();
    double lower = -inf, upper = inf;
    const auto mm = static_cast<std::int64_t>(m);
    if (r > 0 && r <= mm) {
        double* first = critical.get();
        lower = detail::select_nth(first, static_cast<std::size_t>(r - 1), m);
        upper = detail::select_nth(first, static_cast<std::size_t>(mm - r), m);
    }
    return SignFlipResult{counts, lower, upper};
}

namespace {

// The two samples of one swap pattern -- x_i = b_i and y_i = a_i where the pattern swaps
// pair i, else x_i = a_i and y_i = b_i -- and scipy.stats.permutation_test's statistic on
// them, mean(x) - mean(y), each mean summed in NumPy's pairwise order. Both pair kernels
// evaluate patterns with it, so the Monte Carlo mode computes exactly what the
// enumeration computes. One per worker: the buffers are reused across its patterns.
class SwappedPairs {
public:
    SwappedPairs(const double* a, const double* b, std::size_t n) : a_(a), b_(b), x_(n), y_(n) {}

    // swapped(i) -> whether pair i is swapped, called once per i in increasing order.
    template <class Swapped>
    double mean_difference(Swapped swapped) {
        const std::size_t n = x_.size();
        for (std::size_t i = 0; i < n; ++i) {
            const bool s = swapped(i);
            x_[i] = s ? b_[i] : a_[i];
            y_[i] = s ? a_[i] : b_[i];
        }
        const double* x = x_.data();
        const double* y = y_.data();
        const double dn = static_cast<double>(n);
        return (0.0 + pairwise_sum(n, [x](std::size_t i) { return x[i]; })) / dn -
               (0.0 + pairwise_sum(n, [y](std::size_t i) { return y[i]; })) / dn;
    }

private:
    const double* a_;
    const double* b_;
    std::vector<double> x_, y_;
};

// scipy's tie rule: within 100 machine epsilons of the observed statistic (relative).
double pair_tolerance(double observed) {
    return std::fabs(100.0 * std::numeric_limits<double>::epsilon() * observed);
}

}  // namespace

SignFlipCounts sign_flip_exact_pairs(const double* a, const double* b, std::size_t n,
                                     int n_threads) {
    require_exact_size(n, kSignFlipMaxCount);
    const double observed = SwappedPairs(a, b, n).mean_difference([](std::size_t) { return false; });
    const double tol = pair_tolerance(observed);
    return visit_patterns_with(std::size_t{1} << n, 0, 0, n_threads, 2 * n,
                               [&] { return SwappedPairs(a, b, n); },
                               [&](std::size_t p, Philox&, Tally& c, SwappedPairs& pairs) {
        const double t = pairs.mean_difference([p](std::size_t i) { return (p >> i) & 1; });
        tally_statistic(t, observed, tol, c);
    });
}

namespace {

// ---- The screen of sign_flip_monte_carlo_pairs ------------------------------------------
//
// SciPy's statistic t = mean(x) - mean(y) of a swap pattern is, in exact arithmetic,
// tau = (D - 2 F) / n with D = sum_i (a_i - b_i) and F the sum of a_i - b_i over the
// swapped pairs. The screen computes t' = (D' - 2 F') / n from the rounded differences
// d_i = fl(a_i - b_i), summed in any order, and bounds |t' - t| <= E below; a pattern
// whose t' lies farther than E from every threshold of the tally is counted from t'
// (the same answer t gives), and only the others -- near-ties, in practice the
// patterns whose exact statistic equals the observed one -- are evaluated with SciPy's
// float statistic. So the counts are those of evaluating every pattern, bit for bit,
// whatever order F' was summed in (AVX-512 or not).
//
// The bound: with u = eps / 2 and A = sum_i |a_i| + |b_i|, any-order summation of n terms
// errs by at most gamma_n = n u / (1 - n u) times the sum of their magnitudes, so
// |fl(sum x) - sum x| and |fl(sum y) - sum y| are within gamma_n A each (x and y hold the
// same 2n numbers as a and b); the divisions by n and the subtraction add 3 u (|t| + A/n);
// d_i errs by u |a_i - b_i|, which reaches D' once and F' twice (3 u A), and D', F' and
// the last subtraction and division add 3 gamma_n A + 2 u (3 A). In all |t' - t| <=
// (5 gamma_n + 16 u) A / n (1 + gamma_n); E = 16 (n + 8) u A / n is three times that for
// every n below 2^40. Below DBL_MIN a multiplication or division errs by up to half the
// smallest subnormal whatever its operands' size (additions stay exact there), so an
// absolute term, generous for the few such operations per pattern, is added: without it
// subnormal scores were misclassified (tests/compare/test_paired.py, "subnormal").
double screen_bound(const double* a, const double* b, std::size_t n) {
    double magnitude = 0.0;
    for (std::size_t i = 0; i < n; ++i) magnitude += std::fabs(a[i]) + std::fabs(b[i]);
    const double u = std::numeric_limits<double>::epsilon() / 2.0;
    const double dn = static_cast<double>(n);
    // The sum of magnitudes itself is rounded: (1 + gamma_n) more covers that.
    return 16.0 * (dn + 8.0) * u * magnitude * 1.01 / dn +
           64.0 * (dn + 8.0) * std::numeric_limits<double>::denorm_min();
}

// F' = the sum of d[i] over the set bits i of words[0 .. ceil(n / 64)); d is padded with
// zeros to whole words, so the bits past n add nothing.
inline double swapped_sum_portable(const std::uint64_t* dbits, const std::uint64_t* words, std::size_t n_words) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    for (std::size_t k = 0; k < n_words; ++k) {
        const std::uint64_t w = words[k];
        const std::uint64_t* chunk = dbits + 64 * k;
        for (std::size_t j = 0; j < 64; j += 4) {
            acc[0] += masked(chunk[j], (w >> j) & 1);
            acc[1] += masked(chunk[j + 1], (w >> (j + 1)) & 1);
            acc[2] += masked(chunk[j + 2], (w >> (j + 2)) & 1);
            acc[3] += masked(chunk[j + 3], (w >> (j + 3)) & 1);
        }
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

#ifdef TRUESCORE_AVX512
TRUESCORE_AVX512_BEGIN
// swapped_sum_portable with masked vector additions: eight pairs per bit byte.
TRUESCORE_TARGET_AVX512 double swapped_sum_avx512(const double* d, const std::uint64_t* words, std::size_t n_words) {
    __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
    for (std::size_t k = 0; k < n_words; ++k) {
        const std::uint64_t w = words[k];
        const double* chunk = d + 64 * k;
        for (int j = 0; j < 8; ++j)
            acc[j & 3] = _mm512_mask_add_pd(acc[j & 3], static_cast<__mmask8>(w >> (8 * j)), acc[j & 3],
                                            _mm512_loadu_pd(chunk + 8 * j));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(acc[0], acc[1]), _mm512_add_pd(acc[2], acc[3])));
}
TRUESCORE_AVX512_END
#endif

}  // namespace

SignFlipCounts sign_flip_monte_carlo_pairs(const double* a, const double* b, std::size_t n,
                                           std::int64_t n_resamples, std::uint64_t key0,
                                           std::uint64_t key1, int n_threads, bool screen) {
    if (n == 0) throw std::invalid_argument("a and b must be non-empty");
    if (n_resamples < 1) throw argument_error("n_resamples", " must be at least 1");
    const double observed = SwappedPairs(a, b, n).mean_difference([](std::size_t) { return false; });
    const double tol = pair_tolerance(observed);
    const std::size_t n_words = (n + 63) / 64;
    // Pattern p swaps pair i when bit i % 64 of its word i / 64 is set (the stream layout
    // of the header: the pattern's ceil(n / 64) raw words in order).
    auto exact_statistic = [](SwappedPairs& pairs, const std::uint64_t* words) {
        return pairs.mean_difference([words](std::size_t i) { return (words[i / 64] >> (i % 64)) & 1; });
    };
    struct Scratch {
        SwappedPairs pairs;
        std::vector<std::uint64_t> words;
    };
    auto make_scratch = [&] { return Scratch{SwappedPairs(a, b, n), std::vector<std::uint64_t>(n_words)}; };
    if (!screen)
        return visit_patterns_with(static_cast<std::size_t>(n_resamples), key0, key1, n_threads, 2 * n, make_scratch,
                                   [&](std::size_t, Philox& gen, Tally& c, Scratch& st) {
            gen.next_words(st.words.data(), n_words);
            tally_statistic(exact_statistic(st.pairs, st.words.data()), observed, tol, c);
        });
    std::vector<double> d(64 * n_words, 0.0);
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        d[i] = a[i] - b[i];
        total += d[i];
    }
    std::vector<std::uint64_t> dbits(d.size());
    std::memcpy(dbits.data(), d.data(), d.size() * sizeof(double));
    const double bound = screen_bound(a, b, n);
    const double dn = static_cast<double>(n);
    // The tally's three thresholds, computed as tally_statistic computes them.
    const double greater_at = observed - tol, less_at = observed + tol, two_sided_at = std::fabs(observed) - tol;
    const bool wide = simd::avx512();
    return visit_patterns_with(static_cast<std::size_t>(n_resamples), key0, key1, n_threads, n / 8 + 1, make_scratch,
                               [&](std::size_t, Philox& gen, Tally& c, Scratch& st) {
        gen.next_words(st.words.data(), n_words);
#ifdef TRUESCORE_AVX512
        const double f = wide ? swapped_sum_avx512(d.data(), st.words.data(), n_words)
                              : swapped_sum_portable(dbits.data(), st.words.data(), n_words);
#else
        (void)wide;
        const double f = swapped_sum_portable(dbits.data(), st.words.data(), n_words);
#endif
        const double t = (total - 2.0 * f) / dn, lo = t - bound, hi = t + bound;
        const double abs_lo = std::max(0.0, std::fabs(t) - bound), abs_hi = std::fabs(t) + bound;
        const bool sure = (lo >= greater_at || hi < greater_at) && (hi <= less_at || lo > less_at) &&
                          (abs_lo >= two_sided_at || abs_hi < two_sided_at);
        if (sure) {
            c.greater += lo >= greater_at;
            c.less += hi <= less_at;
            c.two_sided += abs_lo >= two_sided_at;
        } else {
            tally_statistic(exact_statistic(st.pairs, st.words.data()), observed, tol, c);
        }
    });
}

namespace {

// All 2^count signed sums of x[0..count): entry `mask` has +x_i where bit i is set.
std::vector<double> signed_sums(const double* x, std::size_t count) {
    const std::size_t total = std::size_t{1} << count;
    std::vector<double> sums(total);
    for (std::size_t mask = 0; mask < total; ++mask) {
        double acc = 0.0;
        for (std::size_t i = 0; i < count; ++i) acc += ((mask >> i) & 1U) ? x[i] : -x[i];
        sums[mask] = acc;
    }
    return sums;
}

}  // namespace

double sign_flip_count_two_sided(const double* x, std::size_t n) {
    if (n > kSignFlipMaxMeetInMiddle)
        throw std::invalid_argument("exact sign-flip counting needs n <= " +
                                    std::to_string(kSignFlipMaxMeetInMiddle));
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) total += x[i];
    const double threshold = std::fabs(total) - 2.0 * sign_flip_tolerance(x, n);
    const double all = std::ldexp(1.0, static_cast<int>(n));
    if (!(threshold > 0.0)) return all;
    const std::size_t h = n / 2;
    const std::vector<double> left = signed_sums(x, h);
    std::vector<double> right = signed_sums(x + h, n - h);
    std::sort(right.begin(), right.end());
    double count = 0.0;
    for (const double a : left) {
        // |a + r| >= t  <=>  r >= t - a  or  r <= -t - a (disjoint for t > 0).
        const auto hi = std::lower_bound(right.begin(), right.end(), threshold - a);
        const auto lo = std::upper_bound(right.begin(), right.end(), -threshold - a);
        count += static_cast<double>(right.end() - hi) + static_cast<double>(lo - right.begin());
    }
    return count;
}

}  // namespace truescore
