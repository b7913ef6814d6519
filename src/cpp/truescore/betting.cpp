#include "truescore/betting.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "truescore/numeric.hpp"

namespace truescore {

namespace {

constexpr double kBetTruncation = 0.75;  // c in Waudby-Smith & Ramdas


// The betting state that does not depend on the candidate mean: x_t on [0, 1], the
// predictable plug-in bet lambda_t (from x_1..x_{t-1}), and the without-replacement
// conditional mean m_t = (N m - S_{t-1}) / (N - t + 1) written as slope[t] m - offset[t]
// (slope = N / (N - t + 1), offset = S_{t-1} / (N - t + 1); 1 and 0 without a population),
// so the inner loop, run ~60 times per interval, multiplies instead of dividing.
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

    // One capital-process pass at the candidate mean m. rejected: the capital betting on
    // "mean > m" (from below) or "mean < m" (from above) reaches 2/alpha (hedged with
    // weight 1/2) at some t, or m is infeasible given the draws -- the same arithmetic, in
    // the same order, as a pass that only answers yes or no. margin: log(capital / (2 /
    // alpha)) at the stop (>= 0 when rejected, +inf when infeasible), else log of the
    // largest capital over 2/alpha (< 0): a smooth measure of how far m is from the edge,
    // used only to choose the next m to try.
    struct Pass {
        bool rejected;
        double margin;
    };

    // The passes from below at m_lo and from above at m_hi in one loop: two independent
    // product chains, so each hides the other's latency. Same arithmetic as pass().
    void pass_both(double m_lo, double m_hi, Pass& lo, Pass& hi) const {
        const double threshold = 2.0 / alpha;
        const double inf = std::numeric_limits<double>::infinity();
        double cap_lo = 1.0, peak_lo = 0.0, cap_hi = 1.0, peak_hi = 0.0;
        bool bad_lo = false, bad_hi = false;
        for (std::size_t i = 0; i < n; ++i) {
            const double mlo = slope[i] * m_lo - offset[i];
            const double mhi = slope[i] * m_hi - offset[i];
            bad_lo = bad_lo || mlo < 0.0;
            bad_hi = bad_hi || mhi > 1.0;
            double llo = lam[i], lhi = lam[i];
            if (llo * mlo > kBetTruncation) llo = kBetTruncation / mlo;
            if (lhi * (1.0 - mhi) > kBetTruncation) lhi = kBetTruncation / (1.0 - mhi);
            cap_lo *= 1.0 + llo * (x[i] - mlo);
            cap_hi *= 1.0 - lhi * (x[i] - mhi);
            peak_lo = cap_lo > peak_lo ? cap_lo : peak_lo;
            peak_hi = cap_hi > peak_hi ? cap_hi : peak_hi;
        }
        lo = bad_lo ? Pass{true, inf} : Pass{peak_lo >= threshold, std::log(peak_lo / threshold)};
        hi = bad_hi ? Pass{true, inf} : Pass{peak_hi >= threshold, std::log(peak_hi / threshold)};
    }

    // kDecideOnly: stop at the first t the capital reaches 2/alpha (margin +inf then).
    template <bool kFromBelow, bool kDecideOnly = false>
    Pass pass(double m) const {
        const double threshold = 2.0 / alpha;  // 0.5 * capital >= 1/alpha, exactly
        double capital = 1.0, peak = 0.0;  // the largest capital over t >= 1
        for (std::size_t i = 0; i < n; ++i) {
            const double mt = slope[i] * m - offset[i];
            double l = lam[i];
            if (kFromBelow) {
                if (mt < 0.0) return {true, std::numeric_limits<double>::infinity()};
                // min(lam, c / mt) without the division unless the truncation binds
                if (l * mt > kBetTruncation) l = kBetTruncation / mt;
                capital *= 1.0 + l * (x[i] - mt);
            } else {
                if (mt > 1.0) return {true, std::numeric_limits<double>::infinity()};
                if (l * (1.0 - mt) > kBetTruncation) l = kBetTruncation / (1.0 - mt);
                capital *= 1.0 - l * (x[i] - mt);
            }
            if (kDecideOnly && capital >= threshold) return {true, std::numeric_limits<double>::infinity()};
            peak = capital > peak ? capital : peak;
        }
        return {peak >= threshold, std::log(peak / threshold)};
    }
};

// The edge of the candidate means m in [0, 1] that a pass rejects, when the rejected ones
// form one end of [0, 1] (the end `rejected_end`, 0 or 1). Every m tried lies on the grid
// j / 2^30 that a bisection from [0, 1] to 1e-9 visits, and the answer is the rejected
// grid point next to a kept one -- so, the rejections being monotone in m, exactly the
// bisection's answer (the outer, last rejected, point: the interval it bounds is never
// narrower than the exact set). The grid points are chosen by a safeguarded Illinois
// (regula falsi) step on the passes' margins, starting from `guesses` (tried in turn,
// near where the edge is expected): ~8 passes per edge instead of the bisection's 32.
// A state machine (next / feed), so that the two edges' passes can share one loop.
class EdgeSearch {
public:
    using Pass = BettingPath::Pass;
    static constexpr std::int64_t kGrid = std::int64_t{1} << 30;

    // `end_check`: the pass at rejected_end (only whether it rejects matters).
    EdgeSearch(double rejected_end, bool end_rejected, double g0, double g1, double g2)
        : jr_(rejected_end == 0.0 ? 0 : kGrid), jk_(kGrid - jr_), guesses_{g0, g1, g2} {
        if (!end_rejected) { result_ = rejected_end; stage_ = Stage::done; }
        checkpoint_ = kGrid;
        advance();
    }

    bool done() const { return stage_ == Stage::done; }
    double next() const { return at(j_next_); }
    double result() const { return result_; }

    void feed(const Pass& r) {
        const std::int64_t j = j_next_;
        if (stage_ == Stage::kept_end) {
            if (r.rejected) { result_ = at(j); stage_ = Stage::done; return; }
            gk_ = r.margin;
            kept_known_ = true;
            stage_ = Stage::chord;
        } else if (r.rejected) {
            jr_ = j;
            gr_ = r.margin;
            if (stage_ == Stage::chord && ++same_side_ > 1) gk_ *= 0.5;  // Illinois
            if (same_side_ < 0) same_side_ = 1;
        } else {
            jk_ = j;
            gk_ = r.margin;
            kept_known_ = true;
            if (stage_ == Stage::chord && --same_side_ < -1) gr_ *= 0.5;
            if (same_side_ > 0) same_side_ = -1;
        }
        advance();
    }

private:
    enum class Stage { guess, kept_end, chord, done };

    static double at(std::int64_t j) { return std::ldexp(static_cast<double>(j), -30); }
    bool inside(std::int64_t j) const { return jr_ < jk_ ? (j > jr_ && j < jk_) : (j < jr_ && j > jk_); }

    // Picks j_next_ for the current stage, moving on when a stage has nothing to try.
    void advance() {
        while (stage_ == Stage::guess) {
            if (guess_ == 3) {
                stage_ = kept_known_ ? Stage::chord : Stage::kept_end;
                if (stage_ == Stage::kept_end) { j_next_ = jk_; return; }
                break;
            }
            const double m = std::min(1.0, std::max(0.0, guesses_[guess_++]));
            const std::int64_t j = static_cast<std::int64_t>(std::llround(m * static_cast<double>(kGrid)));
            if (inside(j)) { j_next_ = j; return; }
        }
        if (stage_ != Stage::chord) return;
        const std::int64_t width = std::llabs(jk_ - jr_);
        if (width <= 1) { result_ = at(jr_); stage_ = Stage::done; return; }
        if (2 * width <= checkpoint_) { checkpoint_ = width; chord_steps_ = 0; }
        std::int64_t j;
        if (std::isfinite(gr_) && gr_ > gk_ && chord_steps_ < 3) {
            const double t = gr_ / (gr_ - gk_);  // the margin's zero on the chord, in [0, 1]
            j = jr_ + static_cast<std::int64_t>(std::llround(t * static_cast<double>(jk_ - jr_)));
            ++chord_steps_;
        } else {
            // bisection when the chord cannot be trusted or has stopped halving the bracket
            j = jr_ + (jk_ - jr_) / 2;
            checkpoint_ = width;
            chord_steps_ = 0;
        }
        if (!inside(j)) {
            const std::int64_t step = jr_ < jk_ ? 1 : -1;
            j = std::llabs(j - jr_) <= std::llabs(j - jk_) ? jr_ + step : jk_ - step;
        }
        j_next_ = j;
    }

    std::int64_t jr_, jk_;  // rejected and kept grid points (jk_ unverified until kept_known_)
    double gr_ = std::numeric_limits<double>::infinity(), gk_ = -std::numeric_limits<double>::infinity();
    bool kept_known_ = false;
    double guesses_[3];
    int guess_ = 0;
    Stage stage_ = Stage::guess;
    std::int64_t j_next_ = 0, checkpoint_ = 0;
    int chord_steps_ = 0, same_side_ = 0;
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
    double s = 0.0, sq = 0.0, var_prev = 0.25;
    for (std::size_t i = 0; i < n; ++i) {
        const double t = static_cast<double>(i + 1);
        x[i] = (d[i] + 1.0) * 0.5;
        lam[i] = std::sqrt(2.0 * log_term / (nd * var_prev));
        if (finite) {
            const double remaining = population_size - static_cast<double>(i);
            slope[i] = population_size / remaining;
            offset[i] = s / remaining;
        } else {
            slope[i] = 1.0;
            offset[i] = 0.0;
        }
        s += x[i];
        const double mu = (0.5 + s) / (t + 1.0);
        const double dev = x[i] - mu;
        sq += dev * dev;
        var_prev = (0.25 + sq) / (t + 1.0);
    }
    const BettingPath path{x, lam, slope, offset, n, alpha, log_term};
    if (path.huge()) {  // 2/alpha overflows: bisect with the tracked capital
        const double lower = bisection_edge([&](double m) { return path.huge_rejects_from_below(m); }, 0.0);
        const double upper = bisection_edge([&](double m) { return path.huge_rejects_from_above(m); }, 1.0);
        const double low = 2.0 * lower - 1.0, high = 2.0 * upper - 1.0;
        return {low, high, numpy_mean(d, n), lower > upper ? 0.0 : 0.5 * (high - low)};
    }
    if (bisection) {
        const double lower = bisection_edge([&](double m) { return path.pass<true, true>(m).rejected; }, 0.0);
        const double upper = bisection_edge([&](double m) { return path.pass<false, true>(m).rejected; }, 1.0);
        const double low = 2.0 * lower - 1.0, high = 2.0 * upper - 1.0;
        return {low, high, numpy_mean(d, n), lower > upper ? 0.0 : 0.5 * (high - low)};
    }
    // Where the edges are expected: about a hedged normal half-width from the mean.
    const double mean_x = s / nd;
    const double spread = std::sqrt(2.0 * log_term * std::max(sq / nd, 1e-4) / nd);
    EdgeSearch lo(0.0, path.pass<true, true>(0.0).rejected, mean_x, mean_x - spread, mean_x - 2.0 * spread);
    EdgeSearch hi(1.0, path.pass<false, true>(1.0).rejected, mean_x, mean_x + spread, mean_x + 2.0 * spread);
    while (!lo.done() || !hi.done()) {
        if (lo.done()) {
            hi.feed(path.pass<false>(hi.next()));
        } else if (hi.done()) {
            lo.feed(path.pass<true>(lo.next()));
        } else {
            BettingPath::Pass a{}, b{};
            path.pass_both(lo.next(), hi.next(), a, b);
            lo.feed(a);
            hi.feed(b);
        }
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

}  // namespace truescore
