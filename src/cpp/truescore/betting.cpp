#include "truescore/betting.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "truescore/numeric.hpp"
#include "truescore/portable.hpp"
#include "truescore/random.hpp"

// The capital passes and the path's divisions run several lanes at once: SSE2 on every
// x86-64, AVX (chosen at run time) where the CPU has it; plain loops elsewhere. Every lane
// does the scalar definition's IEEE operations in its order (no FMA: -ffp-contract=off),
// so the three give the same bits.
#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define TRUESCORE_BETTING_SSE2 1
#else
#define TRUESCORE_BETTING_SSE2 0
#endif
#if TRUESCORE_BETTING_SSE2 && (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define TRUESCORE_BETTING_AVX 1
#define TRUESCORE_TARGET_AVX __attribute__((target("avx")))
#else
#define TRUESCORE_BETTING_AVX 0
#endif

namespace truescore {

namespace {

constexpr double kBetTruncation = 0.75;  // c in Waudby-Smith & Ramdas
// The first guesses of each edge, in hedged normal half-widths from the mean.
constexpr double kNear = 0.75, kFar = 1.0;


// The betting state that does not depend on the candidate mean: x_t on [0, 1], the
// predictable plug-in bet lambda_t (from x_1..x_{t-1}), and the without-replacement
// conditional mean m_t = (N m - S_{t-1}) / (N - t + 1) written as slope[t] m - offset[t]
// (slope = N / (N - t + 1), offset = S_{t-1} / (N - t + 1); 1 and 0 without a population),
// so the capital loops multiply instead of dividing. An interval runs about 4 to 5
// four-lane loops over the sample (4.0 to 5.0 on average, counted on varied data and on
// tests/test_betting_edges.py + test_audit.py) and two end checks (rejects() at 0 and 1,
// which stop at the first step that rejects).
struct BettingPath {
    const double* x;
    const double* lam;
    const double* slope;
    const double* offset;
    std::size_t n;
    double alpha;
    // ln(2/alpha) = ln 2 - ln alpha. For alpha below ~1.1e-308 the threshold 2/alpha
    // overflows to inf: the capital is then tracked as a mantissa and a power of two
    // (tracked_capital_reaches) and compared in logs, so a subnormal alpha still rejects
    // what its threshold rejects. The usual path is the plain passes below, kept apart
    // because the tracked one costs a frexp per step.
    double log_threshold;
    bool huge() const { return !std::isfinite(2.0 / alpha); }

    // Whether the product of factor(0), ..., factor(t) reaches 2/alpha at some t when 2/alpha
    // overflows (factor(i) < 0 stands for "m is infeasible at step i": rejects at once).
    template <class Factor>
    bool tracked_capital_reaches(Factor factor) const {
        constexpr double kLn2 = 0.69314718055994530942;
        // capital = mantissa * 2^exponent, mantissa in [0.5, 1): a finite factor never overflows it.
        double mantissa = 0.5;
        long long exponent = 1;
        const long long below = static_cast<long long>(std::floor(log_threshold / kLn2));
        for (std::size_t i = 0; i < n; ++i) {
            const double f = factor(i);
            if (f < 0.0) return true;
            if (f == 0.0) return false;  // the capital is gone for good
            int e = 0;
            mantissa = std::frexp(mantissa * f, &e);
            exponent += e;
            if (exponent >= below && std::log(mantissa) + static_cast<double>(exponent) * kLn2 >= log_threshold)
                return true;
        }
        return false;
    }

    // Step i's factor of the capitals (-1: m infeasible), for the tracked path.
    double factor_below(double m, std::size_t i) const {
        const double mt = slope[i] * m - offset[i];
        if (mt < 0.0) return -1.0;
        double l = lam[i];
        if (l * mt > kBetTruncation) l = kBetTruncation / mt;
        return 1.0 + l * (x[i] - mt);
    }
    double factor_above(double m, std::size_t i) const {
        const double mt = slope[i] * m - offset[i];
        if (mt > 1.0) return -1.0;
        double l = lam[i];
        if (l * (1.0 - mt) > kBetTruncation) l = kBetTruncation / (1.0 - mt);
        return 1.0 - l * (x[i] - mt);
    }
    bool huge_rejects_from_below(double m) const {
        return tracked_capital_reaches([&](std::size_t i) { return factor_below(m, i); });
    }
    bool huge_rejects_from_above(double m) const {
        return tracked_capital_reaches([&](std::size_t i) { return factor_above(m, i); });
    }

    // One capital-process pass at the candidate mean m, stopped at the first t it decides:
    // whether the capital betting on "mean > m" (from below) or "mean < m" (from above)
    // reaches 2/alpha (hedged with weight 1/2) at some t, or m is infeasible given the
    // draws. The edges' ends and the bisection use it; the edge search runs the lanes below.
    template <bool kFromBelow>
    bool rejects(double m) const {
        const double threshold = 2.0 / alpha;  // 0.5 * capital >= 1/alpha, exactly
        double capital = 1.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double mt = slope[i] * m - offset[i];
            double l = lam[i];
            if (kFromBelow) {
                if (mt < 0.0) return true;
                // min(lam, c / mt) without the division unless the truncation binds
                if (l * mt > kBetTruncation) l = kBetTruncation / mt;
                capital *= 1.0 + l * (x[i] - mt);
            } else {
                if (mt > 1.0) return true;
                if (l * (1.0 - mt) > kBetTruncation) l = kBetTruncation / (1.0 - mt);
                capital *= 1.0 - l * (x[i] - mt);
            }
            if (capital >= threshold) return true;
        }
        return false;
    }
};

// Four passes in one loop: lanes 0 and 1 from below at m[0], m[1], lanes 2 and 3 from above
// at m[2], m[3]. Each lane computes the capital rejects() computes, operation for operation,
// over every t (lanes_scalar is the definition): the capital's peak over t and the least m_t
// (from below) or 1 - m_t (from above), < 0 exactly when m is infeasible (a nonzero
// difference never rounds to 0). In the vector kernels a
// lane from above is written as one from below with signs: u = a + g m_t and the factor
// 1 + l (g (x_t - m_t)), (a, g) = (0, 1) below and (1, -1) above -- the same roundings,
// since 0 + m_t = m_t, 1 + (-m_t) = 1 - m_t and l (-v) = -(l v) exactly.
struct Lanes {
    double m[4];
    double peak[4], least[4];
};

// A lane read as a pass at its m (run_lanes). rejected: as rejects(m). margin: +inf when m
// is infeasible, else log of the largest capital over 2/alpha (>= 0 when rejected):
// a smooth measure of how far m is from the edge, used only to choose the next m to try.
struct Pass {
    bool rejected;
    double margin;
};

template <bool kLo, bool kHi>
void lanes_scalar(const BettingPath& p, Lanes& r) {
    for (int k = 0; k < 4; ++k) {
        const bool below = k < 2;
        if ((below && !kLo) || (!below && !kHi)) continue;
        double capital = 1.0, peak = 0.0, least = std::numeric_limits<double>::infinity();
        const double m = r.m[k];
        for (std::size_t i = 0; i < p.n; ++i) {
            const double mt = p.slope[i] * m - p.offset[i];
            double l = p.lam[i];
            if (below) {
                least = mt < least ? mt : least;
                if (l * mt > kBetTruncation) l = kBetTruncation / mt;
                capital *= 1.0 + l * (p.x[i] - mt);
            } else {
                const double u = 1.0 - mt;
                least = u < least ? u : least;
                if (l * u > kBetTruncation) l = kBetTruncation / u;
                capital *= 1.0 - l * (p.x[i] - mt);
            }
            peak = capital > peak ? capital : peak;
        }
        r.peak[k] = peak;
        r.least[k] = least;
    }
}

#if TRUESCORE_BETTING_SSE2
template <bool kLo, bool kHi>
void lanes_sse2(const BettingPath& p, Lanes& r) {
    const __m128d one = _mm_set1_pd(1.0), c = _mm_set1_pd(kBetTruncation);
    const __m128d mlo = _mm_loadu_pd(r.m), mhi = _mm_loadu_pd(r.m + 2);
    __m128d cap_l = one, top_l = _mm_setzero_pd(), low_l = _mm_set1_pd(std::numeric_limits<double>::infinity());
    __m128d cap_h = one, top_h = top_l, low_h = low_l;
    for (std::size_t i = 0; i < p.n; ++i) {
        const __m128d s = _mm_set1_pd(p.slope[i]), o = _mm_set1_pd(p.offset[i]);
        const __m128d l = _mm_set1_pd(p.lam[i]), xi = _mm_set1_pd(p.x[i]);
        __m128d mt_l = one, mt_h = one, u_h = one, over_l = _mm_setzero_pd(), over_h = over_l;
        if (kLo) {
            mt_l = _mm_sub_pd(_mm_mul_pd(s, mlo), o);
            low_l = _mm_min_pd(mt_l, low_l);  // mt < least ? mt : least, as in lanes_scalar (NaN too)
            over_l = _mm_cmpgt_pd(_mm_mul_pd(l, mt_l), c);
        }
        if (kHi) {
            mt_h = _mm_sub_pd(_mm_mul_pd(s, mhi), o);
            u_h = _mm_sub_pd(one, mt_h);
            low_h = _mm_min_pd(u_h, low_h);
            over_h = _mm_cmpgt_pd(_mm_mul_pd(l, u_h), c);
        }
        __m128d l_l = l, l_h = l;
        if (_mm_movemask_pd(_mm_or_pd(over_l, over_h))) {  // the truncation binds: rare
            l_l = _mm_or_pd(_mm_and_pd(over_l, _mm_div_pd(c, mt_l)), _mm_andnot_pd(over_l, l));
            l_h = _mm_or_pd(_mm_and_pd(over_h, _mm_div_pd(c, u_h)), _mm_andnot_pd(over_h, l));
        }
        if (kLo) {
            cap_l = _mm_mul_pd(cap_l, _mm_add_pd(one, _mm_mul_pd(l_l, _mm_sub_pd(xi, mt_l))));
            top_l = _mm_max_pd(cap_l, top_l);  // cap > top ? cap : top, as in lanes_scalar
        }
        if (kHi) {
            cap_h = _mm_mul_pd(cap_h, _mm_sub_pd(one, _mm_mul_pd(l_h, _mm_sub_pd(xi, mt_h))));
            top_h = _mm_max_pd(cap_h, top_h);
        }
    }
    _mm_storeu_pd(r.peak, top_l);
    _mm_storeu_pd(r.least, low_l);
    _mm_storeu_pd(r.peak + 2, top_h);
    _mm_storeu_pd(r.least + 2, low_h);
}
#endif

#if TRUESCORE_BETTING_AVX
TRUESCORE_TARGET_AVX void lanes_avx(const BettingPath& p, Lanes& r) {
    const __m256d one = _mm256_set1_pd(1.0), c = _mm256_set1_pd(kBetTruncation);
    const __m256d a = _mm256_set_pd(1.0, 1.0, 0.0, 0.0), g = _mm256_set_pd(-1.0, -1.0, 1.0, 1.0);
    const __m256d m = _mm256_loadu_pd(r.m);
    __m256d cap = one, top = _mm256_setzero_pd(), low = _mm256_set1_pd(std::numeric_limits<double>::infinity());
    for (std::size_t i = 0; i < p.n; ++i) {
        const __m256d l = _mm256_broadcast_sd(p.lam + i);
        const __m256d mt = _mm256_sub_pd(_mm256_mul_pd(_mm256_broadcast_sd(p.slope + i), m),
                                         _mm256_broadcast_sd(p.offset + i));
        const __m256d u = _mm256_add_pd(a, _mm256_mul_pd(g, mt));
        low = _mm256_min_pd(u, low);  // u < least ? u : least, as in lanes_scalar
        const __m256d over = _mm256_cmp_pd(_mm256_mul_pd(l, u), c, _CMP_GT_OQ);
        __m256d lt = l;
        if (_mm256_movemask_pd(over)) lt = _mm256_blendv_pd(l, _mm256_div_pd(c, u), over);  // rare
        const __m256d w = _mm256_mul_pd(g, _mm256_sub_pd(_mm256_broadcast_sd(p.x + i), mt));
        cap = _mm256_mul_pd(cap, _mm256_add_pd(one, _mm256_mul_pd(lt, w)));
        top = _mm256_max_pd(cap, top);
    }
    _mm256_storeu_pd(r.peak, top);
    _mm256_storeu_pd(r.least, low);
}

#endif

#if TRUESCORE_BETTING_AVX
// Four lanes from four scalars (lane k = v_k).
TRUESCORE_TARGET_AVX inline __m256d lanes_of(double v0, double v1, double v2, double v3) {
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_unpacklo_pd(_mm_set_sd(v0), _mm_set_sd(v1))),
                                _mm_unpacklo_pd(_mm_set_sd(v2), _mm_set_sd(v3)), 1);
}

// The whole path (see betting_interval_impl) on AVX, four elements per step: each running
// sum's serial additions in registers, the divisions and roots of the same four elements
// in one instruction each while the next additions run. Leaves slope / offset / lam final,
// and returns s, sq and S_{n-1} (the sum before the last element).
TRUESCORE_TARGET_AVX void path_avx(const double* d, std::size_t n, double population_size, bool finite, double two_log,
                                   double nd, double* x, double* lam, double* slope, double* offset, double& s_out,
                                   double& sq_out, double& s_before_last) {
    const __m256d one = _mm256_set1_pd(1.0), half = _mm256_set1_pd(0.5), quarter = _mm256_set1_pd(0.25);
    const __m256d four = _mm256_set1_pd(4.0);
    double s = 0.0;
    __m256d t2 = _mm256_set_pd(5.0, 4.0, 3.0, 2.0);  // i + 2
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256d xv = _mm256_mul_pd(_mm256_add_pd(_mm256_loadu_pd(d + i), one), half);
        _mm256_storeu_pd(x + i, xv);
        const double s0 = s, s1 = s0 + (d[i] + 1.0) * 0.5, s2 = s1 + (d[i + 1] + 1.0) * 0.5,
                     s3 = s2 + (d[i + 2] + 1.0) * 0.5, s4 = s3 + (d[i + 3] + 1.0) * 0.5;
        s = s4;
        _mm256_storeu_pd(offset + i, lanes_of(s0, s1, s2, s3));  // S_{i-1} for now
        const __m256d mu = _mm256_div_pd(_mm256_add_pd(half, lanes_of(s1, s2, s3, s4)), t2);
        const __m256d dev = _mm256_sub_pd(xv, mu);
        _mm256_storeu_pd(lam + i, _mm256_mul_pd(dev, dev));  // (x_i - mu_i)^2 for now
        t2 = _mm256_add_pd(t2, four);
    }
    for (; i < n; ++i) {
        x[i] = (d[i] + 1.0) * 0.5;
        offset[i] = s;
        s += x[i];
        const double dev = x[i] - (0.5 + s) / (static_cast<double>(i + 1) + 1.0);
        lam[i] = dev * dev;
    }
    s_before_last = offset[n - 1];
    double sq = 0.0;
    __m256d j = _mm256_set_pd(3.0, 2.0, 1.0, 0.0);
    const __m256d c = _mm256_set1_pd(two_log), nv = _mm256_set1_pd(nd), pop = _mm256_set1_pd(population_size);
    for (i = 0; i + 4 <= n; i += 4) {
        const double q0 = sq, q1 = q0 + lam[i], q2 = q1 + lam[i + 1], q3 = q2 + lam[i + 2];
        sq = q3 + lam[i + 3];
        const __m256d var = _mm256_div_pd(_mm256_add_pd(quarter, lanes_of(q0, q1, q2, q3)), _mm256_add_pd(j, one));
        _mm256_storeu_pd(lam + i, _mm256_sqrt_pd(_mm256_div_pd(c, _mm256_mul_pd(nv, var))));
        if (finite) {
            const __m256d remaining = _mm256_sub_pd(pop, j);
            _mm256_storeu_pd(slope + i, _mm256_div_pd(pop, remaining));
            _mm256_storeu_pd(offset + i, _mm256_div_pd(_mm256_loadu_pd(offset + i), remaining));
        }
        j = _mm256_add_pd(j, four);
    }
    for (; i < n; ++i) {
        const double var = (0.25 + sq) / (static_cast<double>(i) + 1.0);
        sq += lam[i];
        lam[i] = std::sqrt(two_log / (nd * var));
        if (finite) {
            const double remaining = population_size - static_cast<double>(i);
            slope[i] = population_size / remaining;
            offset[i] = offset[i] / remaining;
        }
    }
    s_out = s;
    sq_out = sq;
}
#endif

// The kernel in use (2 AVX, 1 SSE2, 0 plain loops): the process-wide vector level
// (simd::level, random.hpp; tests lower it), at most what this build compiled.
int simd_level() {
#if TRUESCORE_BETTING_AVX
    return std::min(simd::level(), 2);
#elif TRUESCORE_BETTING_SSE2
    return std::min(simd::level(), 1);
#else
    return 0;
#endif
}

// Runs the passes of the lanes asked for (lo: lanes 0-1, hi: lanes 2-3) at `level`, and
// reads each lane as a Pass: rejected, with the margin log(peak / (2 / alpha)).
void run_lanes(const BettingPath& p, Lanes& r, bool lo, bool hi, int level, Pass out[4]) {
    if (level >= 2) {
#if TRUESCORE_BETTING_AVX
        lanes_avx(p, r);
#endif
    } else if (level == 1) {
#if TRUESCORE_BETTING_SSE2
        if (lo && hi) lanes_sse2<true, true>(p, r);
        else if (lo) lanes_sse2<true, false>(p, r);
        else lanes_sse2<false, true>(p, r);
#endif
    } else {
        if (lo && hi) lanes_scalar<true, true>(p, r);
        else if (lo) lanes_scalar<true, false>(p, r);
        else lanes_scalar<false, true>(p, r);
    }
    const double threshold = 2.0 / p.alpha, inf = std::numeric_limits<double>::infinity();
    for (int k = 0; k < 4; ++k) {
        if (!(k < 2 ? lo : hi)) continue;
        out[k] = r.least[k] < 0.0 ? Pass{true, inf} : Pass{r.peak[k] >= threshold, std::log(r.peak[k] / threshold)};
    }
}

// The edge of the candidate means m in [0, 1] that a pass rejects, when the rejected ones
// form one end of [0, 1] (the lower edge: the rejected end is 0; the upper: 1). Every m
// tried lies on the grid j / 2^30 that a bisection from [0, 1] to 1e-9 visits, and the
// answer is the rejected grid point next to a kept one -- so, the rejections being monotone
// in m, exactly the bisection's answer (the outer, last rejected, point: the interval it
// bounds is never narrower than the exact set). Each pass tries two grid points (two lanes
// of one capital loop): first two guesses that should straddle the edge; then, from the
// margins (log capital over 2/alpha) of the points tried, the two grid points either side
// of the zero of the inverse quadratic through three of them, or a chord's zero and a
// point short of it, or -- with the points on one side only -- an extrapolation; and
// where infeasible (rejected outright) means were met, the boundary of the infeasible ones
// first, which often is the edge. Safeguards: two passes in a row that leave more than a
// third of the bracket make the next split it in thirds, and a kept point is always
// verified. ~4 passes per interval instead of the bisection's ~64. A state machine (next /
// feed), so the two edges' passes share one loop. Positions are counted from the
// rejected end (q = j for the lower edge, 2^30 - j for the upper).
class EdgeSearch {
public:
    static constexpr std::int64_t kGrid = std::int64_t{1} << 30;

    // `end_rejected`: whether the pass at the rejected end rejects; g0, g1: two guesses of
    // the edge; `step`: a scale of the distance between them (for the outward search).
    // `boundary`: about where the means turn infeasible given the draws (NaN: nowhere inside).
    EdgeSearch(bool lower, bool end_rejected, double g0, double g1, double step, double boundary)
        : lower_(lower),
          step_(std::max<std::int64_t>(1, std::llround(std::min(1.0, std::max(0.0, step)) * static_cast<double>(kGrid)))) {
        if (boundary > 0.0 && boundary < 1.0) {
            const double j = boundary * static_cast<double>(kGrid);
            boundary_q_ = lower_ ? j : static_cast<double>(kGrid) - j;
        }
        if (!end_rejected) {
            result_ = lower_ ? 0.0 : 1.0;
            done_ = true;
            return;
        }
        std::int64_t a = to_q(g0), b = to_q(g1);
        if (a > b) std::swap(a, b);
        plan_ = {a, b};
        guessing_ = true;
        clamp_plan();
    }

    bool done() const { return done_; }
    // The two means to try next (equal when only one is left to try).
    void next(double m[2]) const {
        m[0] = at(plan_[0]);
        m[1] = at(plan_[1]);
    }
    double result() const { return result_; }

    void feed(const Pass r[2]) {
        const std::int64_t width_before = qk_ - qr_;
        for (int k = 0; k < 2; ++k) {
            const std::int64_t q = plan_[k];
            if (k == 1 && q == plan_[0]) break;
            if (r[k].rejected) {
                if (q > qr_ && q < qk_ + (kept_known_ ? 0 : 1)) {
                    qr_ = q;
                    gr_ = r[k].margin;
                }
            } else if (q < qk_ || (q == qk_ && !kept_known_)) {
                if (q > qr_) {
                    qk_ = q;
                    gk_ = r[k].margin;
                    kept_known_ = true;
                }
            }
            if (std::isfinite(r[k].margin)) remember(q, r[k].margin);
        }
        if (qr_ == qk_) {  // every point up to the kept end rejects: the kept end is the edge
            finish(qr_);
            return;
        }
        if (kept_known_ && qk_ - qr_ <= 1) {
            finish(qr_);
            return;
        }
        slow_count_ = !guessing_ && 3 * (qk_ - qr_) > width_before ? slow_count_ + 1 : 0;
        guessing_ = false;
        plan();
    }

private:
    static double at_j(std::int64_t j) { return std::ldexp(static_cast<double>(j), -30); }
    double at(std::int64_t q) const { return at_j(lower_ ? q : kGrid - q); }
    std::int64_t to_q(double m) const {
        const double c = std::min(1.0, std::max(0.0, m));
        const std::int64_t j = static_cast<std::int64_t>(std::llround(c * static_cast<double>(kGrid)));
        return lower_ ? j : kGrid - j;
    }
    void finish(std::int64_t q) {
        result_ = at(q);
        done_ = true;
    }
    void remember(std::int64_t q, double g) {
        for (int k = 0; k < n_seen_; ++k)
            if (seen_q_[k] == q) return;
        if (n_seen_ < kSeen) ++n_seen_;
        for (int k = n_seen_ - 1; k > 0; --k) {
            seen_q_[k] = seen_q_[k - 1];
            seen_g_[k] = seen_g_[k - 1];
        }
        seen_q_[0] = q;
        seen_g_[0] = g;
    }

    // Keeps the planned points strictly inside (qr, qk) -- or at qk while no kept point is
    // known -- and distinct when there is room for two.
    void clamp_plan() {
        const std::int64_t lo = qr_ + 1, hi = kept_known_ ? qk_ - 1 : qk_;
        for (auto& q : plan_) q = std::min(hi, std::max(lo, q));
        if (plan_[0] == plan_[1] && hi > lo) {
            if (plan_[1] < hi) ++plan_[1];
            else --plan_[0];
        }
    }

    void plan() {
        const std::int64_t w = qk_ - qr_;
        const bool gr_ok = std::isfinite(gr_), gk_ok = kept_known_ && std::isfinite(gk_);
        const int beyond_r = beyond(true), beyond_k = beyond(false);
        if (!kept_known_) {
            if (gr_ok && beyond_r >= 0 && seen_g_[beyond_r] > gr_ && gr_ >= 0.0 && slow_count_ < 2) {
                // two rejected points: the chord through them, extended, falls short of
                // the edge (the margin bends up towards it); try a little beyond it. After
                // two slow passes, step out instead (geometric). The step is capped at the
                // grid, so the conversion to int64 below stays defined however flat the
                // chord (clamp_plan then keeps the points inside the bracket).
                const double q2 = static_cast<double>(seen_q_[beyond_r]), q0 = static_cast<double>(qr_);
                const double grid = static_cast<double>(kGrid);
                const double d = std::max(-grid, std::min(grid, gr_ * (q0 - q2) / (seen_g_[beyond_r] - gr_)));
                plan_ = {static_cast<std::int64_t>(std::floor(q0 + kPastLo * d)),
                         static_cast<std::int64_t>(std::ceil(q0 + kPastHi * d))};
            } else {
                // step out from the rejected point, the kept end in reach
                plan_ = {qr_ + step_, qr_ + 3 * step_};
                step_ = std::min(kGrid, 4 * step_);
            }
        } else if (!gr_ok && boundary_q_ > static_cast<double>(qr_) && boundary_q_ < static_cast<double>(qk_)) {
            // infeasible means rejected, and the boundary of the infeasible ones is inside
            // the bracket: the edge is often that boundary -- try the grid points either
            // side of it (a miss only narrows the bracket)
            const std::int64_t f = static_cast<std::int64_t>(std::floor(boundary_q_));
            plan_ = {f, f + 1};
            boundary_q_ = -1.0;  // once
        } else if (!gr_ok && gk_ok && beyond_k >= 0 && seen_g_[beyond_k] < gk_ && gk_ < 0.0 && slow_count_ < 2 &&
                   gk_ * (seen_q_[beyond_k] - qk_) / (seen_g_[beyond_k] - gk_) < 0.75 * static_cast<double>(w)) {
            // two kept points and no margin on the rejected side: the chord through them,
            // extended, overshoots the edge; try it and a point between it and the kept one
            const double q2 = static_cast<double>(seen_q_[beyond_k]), q1 = static_cast<double>(qk_);
            const double d = gk_ * (q2 - q1) / (seen_g_[beyond_k] - gk_);
            plan_ = {static_cast<std::int64_t>(std::floor(q1 - d)),
                     static_cast<std::int64_t>(std::ceil(q1 - kBackShare * d))};
        } else if (slow_count_ >= 2 || !gr_ok || !gk_ok || !(gr_ >= 0.0 && gk_ < 0.0) || w < 3) {
            if (!gr_ok && gk_ok && slow_count_ < 2 && w > 3 * step_) {
                // no margin at the rejected end (infeasible, or only the end tried): step
                // in from the kept point
                plan_ = {qk_ - 3 * step_, qk_ - step_};
                step_ = std::min(kGrid, 4 * step_);
            } else {
                plan_ = {qr_ + w / 3, qr_ + w - w / 3};
            }
        } else {
            // the chord's zero, and the inverse quadratic through the nearest third point
            const double q0 = static_cast<double>(qr_), q1 = static_cast<double>(qk_);
            const double chord = q0 + (q1 - q0) * (gr_ / (gr_ - gk_));
            const int third = nearest_third();
            double iqi = -1.0;
            if (third >= 0) {
                const double q2 = static_cast<double>(seen_q_[third]);
                const double f0 = gr_, f1 = gk_, f2 = seen_g_[third];
                if (f0 != f2 && f1 != f2)
                    iqi = q0 * f1 * f2 / ((f0 - f1) * (f0 - f2)) + q1 * f0 * f2 / ((f1 - f0) * (f1 - f2)) +
                          q2 * f0 * f1 / ((f2 - f0) * (f2 - f1));
            }
            if (iqi > q0 && iqi < q1) {
                // the margin is smooth on the grid's scale: the quadratic's zero is
                // usually within a grid step, so try the two grid points around it
                const std::int64_t f = static_cast<std::int64_t>(std::floor(iqi));
                plan_ = {f, f + 1};
            } else {
                // a chord alone: the margin flattens towards the kept side, so the edge
                // lies short of the chord's zero -- try a point well short of it too
                plan_ = {static_cast<std::int64_t>(std::floor(q0 + kShort * (chord - q0))),
                         static_cast<std::int64_t>(std::ceil(chord))};
            }
        }
        clamp_plan();
    }

    // The remembered point beyond the rejected (`rejected_side`) or the kept end of the
    // bracket nearest to it, or -1.
    int beyond(bool rejected_side) const {
        int best = -1;
        for (int k = 0; k < n_seen_; ++k) {
            const std::int64_t q = seen_q_[k];
            if (rejected_side ? q < qr_ && (best < 0 || q > seen_q_[best])
                              : q > qk_ && (best < 0 || q < seen_q_[best]))
                best = k;
        }
        return best;
    }

    // The remembered point outside the bracket nearest to it (for the quadratic), or -1.
    int nearest_third() const {
        int best = -1;
        std::int64_t dist = 0;
        for (int k = 0; k < n_seen_; ++k) {
            const std::int64_t q = seen_q_[k];
            if (q == qr_ || q == qk_) continue;
            const std::int64_t d = q < qr_ ? qr_ - q : q - qk_;
            if (best < 0 || d < dist) {
                best = k;
                dist = d;
            }
        }
        return best;
    }

    static constexpr int kSeen = 6;
    static constexpr double kPastLo = 0.98, kPastHi = 1.1, kBackShare = 0.5;
    static constexpr double kShort = 0.75;
    bool lower_;
    std::int64_t step_;
    std::int64_t qr_ = 0, qk_ = kGrid;  // rejected and kept positions (qk_ unverified until kept_known_)
    double gr_ = std::numeric_limits<double>::infinity(), gk_ = -std::numeric_limits<double>::infinity();
    bool kept_known_ = false, guessing_ = false, done_ = false;
    int slow_count_ = 0;  // passes in a row that left more than a third of the bracket
    double boundary_q_ = -1.0;  // the feasibility boundary's position, or -1
    std::array<std::int64_t, 2> plan_{0, 0};
    std::int64_t seen_q_[kSeen] = {};
    double seen_g_[kSeen] = {};
    int n_seen_ = 0;
    double result_ = 0.0;
};

}  // namespace

namespace {

// The plain bisection to 1e-9 from [0, 1] (the search before issue 13), kept as the
// reference the grid search must reproduce: the outer, last rejected, point.
template <class Rejects>
double bisection_edge(const Rejects& rejects, double rejected_end) {
    const double kept_end = 1.0 - rejected_end;
    if (!rejects(rejected_end)) return rejected_end;
    if (rejects(kept_end)) return kept_end;
    double rejected = rejected_end, kept = kept_end;
    while (std::abs(kept - rejected) > 1e-9) {
        const double mid = 0.5 * (rejected + kept);
        if (rejects(mid)) rejected = mid; else kept = mid;
    }
    return rejected;
}

GapInterval betting_interval_impl(const double* d, std::size_t n, double population_size, double alpha,
                                  double* scratch, bool bisection) {
    if (n == 0) return {-1.0, 1.0, 0.0, 1.0};  // no gaps: every mean is kept (callers pass n >= 2)
    std::vector<double> own;
    if (scratch == nullptr) {
        own.resize(kBettingScratchPerParent * n);
        scratch = own.data();
    }
    double* x = scratch;
    double* lam = scratch + n;
    double* slope = scratch + 2 * n;
    double* offset = scratch + 3 * n;
    const double nd = static_cast<double>(n);
    if (population_size == nd) {
        // A census: the mean is known exactly, and the interval is that point.
        const double mean = numpy_mean(d, n);
        return {mean, mean, mean, 0.0};
    }
    const double log_term = log_ratio(2.0, alpha);
    const bool finite = population_size > 0.0;
    // The running sums are serial; the divisions and square roots are not: the loops below
    // give the numbers the one serial loop of the definition gives (the same operations on
    // the same operands), with the divisions and roots four (AVX, path_avx) or two (SSE2)
    // at a time.
    //   lam_i = sqrt(2 ln(2/alpha) / (n var_{i-1})), var_{i-1} = (1/4 + sq_{i-1}) / (i + 1),
    //   sq_i = sum_{k<=i} (x_k - (1/2 + S_k) / (k + 2))^2, S_i = x_1 + ... + x_i.
    double s = 0.0, sq = 0.0, s_before_last = 0.0;
    const double two_log = 2.0 * log_term;
    const int level = simd_level();
#if TRUESCORE_BETTING_AVX
    if (level >= 2) {
        path_avx(d, n, population_size, finite, two_log, nd, x, lam, slope, offset, s, sq, s_before_last);
    } else
#endif
    {
        for (std::size_t i = 0; i < n; ++i) {
            x[i] = (d[i] + 1.0) * 0.5;
            offset[i] = s;  // S_{i-1} for now
            s += x[i];
        }
        s_before_last = offset[n - 1];
        // lam holds the squared deviations (x_i - mu_i)^2 for now, mu_i = (0.5 + S_i) / (i + 2)
        std::size_t i = 0;
#if TRUESCORE_BETTING_SSE2
        if (level >= 1) {
            __m128d t2 = _mm_set_pd(3.0, 2.0);
            const __m128d half = _mm_set1_pd(0.5), two = _mm_set1_pd(2.0);
            for (; i + 2 < n; i += 2) {
                const __m128d mu = _mm_div_pd(_mm_add_pd(half, _mm_loadu_pd(offset + i + 1)), t2);
                const __m128d dev = _mm_sub_pd(_mm_loadu_pd(x + i), mu);
                _mm_storeu_pd(lam + i, _mm_mul_pd(dev, dev));
                t2 = _mm_add_pd(t2, two);
            }
        }
#endif
        for (; i < n; ++i) {
            const double si = i + 1 < n ? offset[i + 1] : s;
            const double dev = x[i] - (0.5 + si) / (static_cast<double>(i + 1) + 1.0);
            lam[i] = dev * dev;
        }
        for (i = 0; i < n; ++i) {  // lam: 1/4 + sq_{i-1} for now
            const double dev2 = lam[i];
            lam[i] = 0.25 + sq;
            sq += dev2;
        }
        i = 0;
#if TRUESCORE_BETTING_SSE2
        if (level >= 1) {
            __m128d j = _mm_set_pd(1.0, 0.0);
            const __m128d one = _mm_set1_pd(1.0), two = _mm_set1_pd(2.0), c = _mm_set1_pd(two_log);
            const __m128d nv = _mm_set1_pd(nd), pop = _mm_set1_pd(population_size);
            for (; i + 2 <= n; i += 2) {
                const __m128d var = _mm_div_pd(_mm_loadu_pd(lam + i), _mm_add_pd(j, one));
                _mm_storeu_pd(lam + i, _mm_sqrt_pd(_mm_div_pd(c, _mm_mul_pd(nv, var))));
                if (finite) {
                    const __m128d remaining = _mm_sub_pd(pop, j);
                    _mm_storeu_pd(slope + i, _mm_div_pd(pop, remaining));
                    _mm_storeu_pd(offset + i, _mm_div_pd(_mm_loadu_pd(offset + i), remaining));
                }
                j = _mm_add_pd(j, two);
            }
        }
#endif
        for (; i < n; ++i) {
            const double var = lam[i] / (static_cast<double>(i) + 1.0);
            lam[i] = std::sqrt(two_log / (nd * var));
            if (finite) {
                const double remaining = population_size - static_cast<double>(i);
                slope[i] = population_size / remaining;
                offset[i] = offset[i] / remaining;
            }
        }
    }
    if (!finite) {
        std::fill(slope, slope + n, 1.0);
        std::fill(offset, offset + n, 0.0);
    }
    const BettingPath path{x, lam, slope, offset, n, alpha, log_term};
    if (path.huge()) {  // 2/alpha overflows: bisect with the tracked capital
        const double lower = bisection_edge([&](double m) { return path.huge_rejects_from_below(m); }, 0.0);
        const double upper = bisection_edge([&](double m) { return path.huge_rejects_from_above(m); }, 1.0);
        const double low = 2.0 * lower - 1.0, high = 2.0 * upper - 1.0;
        return {low, high, numpy_mean(d, n), lower > upper ? 0.0 : 0.5 * (high - low)};
    }
    if (bisection) {
        const double lower = bisection_edge([&](double m) { return path.rejects<true>(m); }, 0.0);
        const double upper = bisection_edge([&](double m) { return path.rejects<false>(m); }, 1.0);
        const double low = 2.0 * lower - 1.0, high = 2.0 * upper - 1.0;
        return {low, high, numpy_mean(d, n), lower > upper ? 0.0 : 0.5 * (high - low)};
    }
    // Where the edges are expected: about 0.75 to 1 hedged normal half-widths from the mean
    // (the middle half of the edges measured on varied data lie 0.8 to 0.96 of one away).
    const double mean_x = s / nd;
    const double spread = std::sqrt(2.0 * log_term * std::max(sq / nd, 1e-4) / nd);
    // Without replacement a mean m is infeasible from below when N m < S_{t-1} and from
    // above when N m - S_{t-1} > N - t + 1 for some t: both bind hardest at t = n.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double lo_boundary = finite ? s_before_last / population_size : nan;
    const double hi_boundary = finite ? (population_size - (nd - 1.0) + s_before_last) / population_size : nan;
    EdgeSearch lo(true, path.rejects<true>(0.0), mean_x - kNear * spread, mean_x - kFar * spread,
                  0.25 * spread, lo_boundary);
    EdgeSearch hi(false, path.rejects<false>(1.0), mean_x + kNear * spread, mean_x + kFar * spread,
                  0.25 * spread, hi_boundary);
    Lanes lanes{{0.5, 0.5, 0.5, 0.5}, {}, {}};
    Pass r[4];
    while (!lo.done() || !hi.done()) {
        if (!lo.done()) lo.next(lanes.m);
        if (!hi.done()) hi.next(lanes.m + 2);
        run_lanes(path, lanes, !lo.done(), !hi.done(), level, r);
        if (!lo.done()) lo.feed(r);
        if (!hi.done()) hi.feed(r + 2);
    }
    const double lower = lo.result(), upper = hi.result();
    const double low = 2.0 * lower - 1.0, high = 2.0 * upper - 1.0;
    // Both capitals large at once: no mean survives, and the confidence set is empty
    // (reported as such, low > high and width 0; it supports no claim about the mean).
    if (lower > upper) return {low, high, numpy_mean(d, n), 0.0};
    return {low, high, numpy_mean(d, n), 0.5 * (high - low)};
}

}  // namespace

GapInterval betting_interval(const double* d, std::size_t n, double population_size, double alpha,
                             double* scratch) {
    return betting_interval_impl(d, n, population_size, alpha, scratch, false);
}

GapInterval betting_interval_bisection(const double* d, std::size_t n, double population_size,
                                       double alpha) {
    return betting_interval_impl(d, n, population_size, alpha, nullptr, true);
}

int betting_vector_level() { return simd_level(); }

}  // namespace truescore
