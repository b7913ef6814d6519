#include "truescore/sequence.hpp"
#include "truescore/errors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "truescore/parallel.hpp"

namespace truescore {

namespace {

constexpr double kLn2 = 0.69314718055994530942;
// audit/_betting.py's constants: the fixed-horizon truncation, the horizon-free mixture
// (weight, horizon, truncation at low variance, otherwise), the variance below which the
// low-variance truncation applies.
constexpr double kTruncation = 0.75;
constexpr double kLowVariance = 0.045;
struct Part {
    double weight, horizon, low, high;
};
constexpr Part kMixture[] = {
    {0.65 / 3, 10.0, 0.9, 0.7},   {0.65 / 3, 25.0, 0.9, 0.7},   {0.65 / 3, 50.0, 0.9, 0.7},
    {0.35 / 4, 100.0, 0.5, 0.5},  {0.35 / 4, 200.0, 0.5, 0.5},  {0.35 / 4, 500.0, 0.5, 0.5},
    {0.35 / 4, 1000.0, 0.5, 0.5},
};
constexpr int kSections = 16;      // each refining pass cuts an end's bracket 16-fold ...
constexpr double kTolerance = 1e-14;  // ... until it is this narrow
constexpr double kMargin = 1e-12;     // and the end is then moved this much further out
constexpr double kSlack = 1e-12;      // the feasible range's rounding allowance
// The incremental sequence: ends to within this share of the width, a ladder of this many
// candidates, at most this many kept per end.
constexpr double kResolution = 1.0 / 512.0;
constexpr std::size_t kLadder = 32;
constexpr std::size_t kKeep = 64;
// The capital's products are rescaled by a power of two every this many steps (a factor
// lies in [0.1, ~10], so 16 steps never leave the range of a double).
constexpr std::size_t kRescaleEvery = 16;

double clip01(double v) { return v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v); }

}  // namespace

SequencePath::SequencePath(double population_size, double alpha, std::int64_t horizon)
    : population_(population_size > 0.0 ? population_size : 0.0), alpha_(alpha),
      log_threshold_(kLn2 - std::log(alpha)) {
    if (!(alpha > 0.0 && alpha < 1.0)) throw argument_error("alpha", " must lie in (0, 1)");
    if (horizon > 0) {
        weight_ = {1.0};
        horizon_ = {static_cast<double>(horizon)};
        low_level_ = {kTruncation};
        high_level_ = {kTruncation};
    } else {
        for (const Part& p : kMixture) {
            weight_.push_back(p.weight);
            horizon_.push_back(p.horizon);
            low_level_.push_back(p.low);
            high_level_.push_back(p.high);
        }
    }
    for (const double w : weight_) log_two_over_.push_back(std::log(kLn2 - std::log(alpha * w)));
}

void SequencePath::extend(const double* x, std::size_t k) {
    const std::size_t kp = processes();
    const std::size_t start = size();
    x_.reserve(start + k);
    before_.reserve(start + k);
    bet_.reserve((start + k) * kp);
    level_.reserve((start + k) * kp);
    for (std::size_t j = 0; j < k; ++j) {
        const double t = static_cast<double>(start + j + 1);
        const double xi = x[j];
        // sigma-hat^2_{t-1} = (1/4 + sum_{i<t} (x_i - mu_i)^2) / t, mu_i = (1/2 + S_i) / (i + 1)
        const double var_prev = (0.25 + squares_) / t;
        const double log_var = std::log(var_prev);
        const bool low = var_prev < kLowVariance;
        for (std::size_t p = 0; p < kp; ++p) {
            const double log_scale = std::log(std::max(t, horizon_[p]));
            const double log_bet = 0.5 * (kLn2 + log_two_over_[p] - log_var - log_scale);
            bet_.push_back(std::exp(log_bet));
            level_.push_back(low ? low_level_[p] : high_level_[p]);
        }
        x_.push_back(xi);
        before_.push_back(sum_);
        sum_ += xi;
        const double mu = (0.5 + sum_) / (t + 1.0);
        const double dev = xi - mu;
        squares_ += dev * dev;
        // Neumaier: the compensated S_t for the feasible range
        const double next = total_ + xi;
        if (std::fabs(total_) >= std::fabs(xi))
            carry_ += (total_ - next) + xi;
        else
            carry_ += (xi - next) + total_;
        total_ = next;
    }
}

void SequencePath::start(Capital& cap) const {
    for (std::size_t p = 0; p < kMaxProcesses; ++p) cap.c[p] = 1.0;
    cap.exponent = 0;
    cap.threshold = std::exp(log_threshold_);
    cap.done = 0;
    cap.reached = false;
}

void SequencePath::rescale(Capital& cap) const {
    const std::size_t kp = processes();
    double top = 0.0;
    for (std::size_t p = 0; p < kp; ++p) top = std::max(top, cap.c[p]);
    if (!(top > 0.0) || !std::isfinite(top)) return;
    int e = 0;
    std::frexp(top, &e);
    if (e == 0) return;
    for (std::size_t p = 0; p < kp; ++p) cap.c[p] = std::ldexp(cap.c[p], -e);  // tiny ones may flush to 0
    cap.exponent += e;
    cap.threshold = std::exp(log_threshold_ - static_cast<double>(cap.exponent) * kLn2);
}

bool SequencePath::carry(Capital& cap, double m, bool up, std::size_t to, bool stop_when_reached) const {
    const std::size_t kp = processes();
    const double* w = weight_.data();
    const double big_n = population_;
    const double nm = big_n * m;
    bool hit = false;
    for (std::size_t i = cap.done; i < to; ++i) {
        const double mt = big_n > 0.0 ? clip01((nm - before_[i]) / (big_n - static_cast<double>(i))) : m;
        const double xi = x_[i];
        const double* bet = &bet_[i * kp];
        const double* level = &level_[i * kp];
        double wealth = 0.0;
        if (up) {
            for (std::size_t p = 0; p < kp; ++p) {
                double l = bet[p];
                if (l * mt > level[p]) l = level[p] / mt;  // min(lambda, c / m_t)
                cap.c[p] *= 1.0 + l * (xi - mt);
                wealth += w[p] * cap.c[p];
            }
        } else {
            const double u = 1.0 - mt;
            for (std::size_t p = 0; p < kp; ++p) {
                double l = bet[p];
                if (l * u > level[p]) l = level[p] / u;  // min(lambda, c / (1 - m_t))
                cap.c[p] *= 1.0 - l * (xi - mt);
                wealth += w[p] * cap.c[p];
            }
        }
        if (wealth >= cap.threshold) {
            hit = true;
            if (stop_when_reached) {
                cap.done = i + 1;
                cap.reached = true;
                return true;
            }
        }
        if ((i + 1) % kRescaleEvery == 0) rescale(cap);
    }
    cap.done = std::max(cap.done, to);
    cap.reached = cap.reached || hit;
    return hit;
}

std::size_t SequencePath::first_hit(double m, bool up) const {
    const std::size_t n = size();
    Capital cap;
    start(cap);
    const double big_n = population_;
    double through = 0.0;  // S_t, as np.cumsum adds
    for (std::size_t i = 0; i < n; ++i) {
        if (carry(cap, m, up, i + 1, true)) return i + 1;
        if (big_n > 0.0) {
            through += x_[i];
            const double total = big_n * m;
            const double t = static_cast<double>(i + 1);
            if (up ? total < through - big_n * kSlack : total > through + (big_n - t) + big_n * kSlack)
                return i + 1;
        }
    }
    return n + 1;
}

// ---------------------------------------------------------------------- one reading

namespace {

// Whether one half rejects m given every step of the path (audit/_betting.py's _half_peaks
// >= threshold).
bool half_rejects(const SequencePath& path, double m, bool up) {
    SequencePath::Capital cap;
    path.start(cap);
    throw_if_cancelled();
    return path.carry(cap, m, up, path.size(), true);
}

SequenceEnds ends_of(const SequencePath& path) {
    const std::size_t t = path.size();
    const double big_n = path.population();
    double first = 0.0, last = 1.0;
    if (big_n > 0.0) {
        const double total = path.compensated_sum();
        first = std::max(0.0, total / big_n - kSlack);
        last = std::min(1.0, (total + big_n - static_cast<double>(t)) / big_n + kSlack);
    }
    const bool below_first = half_rejects(path, first, true), below_last = half_rejects(path, last, true);
    const bool above_first = half_rejects(path, first, false), above_last = half_rejects(path, last, false);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (below_last || above_first) return {nan, nan, true};
    // each end's bracket: [rejected, kept]
    double b[2][2] = {{first, last}, {last, first}};
    bool live[2] = {below_first, above_last};
    const bool open[2] = {below_first, above_last};
    for (;;) {
        bool any = false;
        for (int k = 0; k < 2; ++k) {
            if (!live[k] || !(std::fabs(b[k][1] - b[k][0]) > kTolerance)) {
                live[k] = false;
                continue;
            }
            any = true;
            // The first point kept, walking from the rejected end to the kept one (the
            // points past it are not needed: the bracket keeps only that one).
            const double lo = b[k][0], span = b[k][1] - b[k][0];
            int j = kSections - 1;
            double points[kSections - 1];
            for (int i = 0; i < kSections - 1; ++i)
                points[i] = lo + (static_cast<double>(i + 1) / kSections) * span;
            for (int i = 0; i < kSections - 1; ++i) {
                if (!half_rejects(path, points[i], k == 0)) {
                    j = i;
                    break;
                }
            }
            const double new_rejected = j > 0 ? points[j - 1] : b[k][0];
            const double new_kept = j < kSections - 1 ? points[j] : b[k][1];
            if (new_rejected == b[k][0] && new_kept == b[k][1]) {
                b[k][1] = b[k][0];  // no float between them: done
            } else {
                b[k][0] = new_rejected;
                b[k][1] = new_kept;
            }
        }
        if (!any) break;
    }
    const double low = open[0] ? std::max(b[0][0] - kMargin, 0.0) : first;
    const double high = open[1] ? std::min(b[1][0] + kMargin, 1.0) : last;
    if (low > high) return {nan, nan, true};
    return {low, high, false};
}

double plain_mean(const std::vector<double>& x) {
    double s = 0.0;
    for (const double v : x) s += v;
    return s / static_cast<double>(x.size());
}

}  // namespace

SequenceEnds sequence_bounds(const double* x, std::size_t n, double population_size, double alpha,
                             std::int64_t horizon) {
    SequencePath path(population_size, alpha, horizon);
    path.extend(x, n);
    if (population_size > 0.0 && static_cast<double>(n) == population_size) {
        const double mean = plain_mean(path.x());
        return {mean, mean, false};
    }
    return ends_of(path);
}

// ---------------------------------------------------------------------- incremental

BettingSequence::BettingSequence(double population_size, double alpha, std::int64_t horizon)
    : path_(population_size, alpha, horizon) {
    ends_[0] = End{true, 1.0, {}, -std::numeric_limits<double>::infinity()};
    ends_[1] = End{false, -1.0, {}, -std::numeric_limits<double>::infinity()};
}

void BettingSequence::extend(const double* x, std::size_t k) { path_.extend(x, k); }

BettingSequence::Range BettingSequence::feasible() const {
    const double big_n = path_.population();
    if (!(big_n > 0.0)) return {0.0, 1.0};
    const double total = path_.compensated_sum();
    return {std::max(0.0, total / big_n - kSlack),
            std::min(1.0, (total + big_n - static_cast<double>(path_.size())) / big_n + kSlack)};
}

void BettingSequence::add(End& end, std::vector<double> keys) {
    const std::size_t t = path_.size();
    std::vector<Candidate> fresh;
    fresh.reserve(keys.size());
    for (const double key : keys) {
        throw_if_cancelled();
        Candidate c{key, {}};
        path_.start(c.cap);
        work_ += static_cast<long long>(t * path_.processes());
        path_.carry(c.cap, end.sign * key, end.up, t, true);
        c.cap.done = t;
        fresh.push_back(c);
    }
    // merged and stably sorted by key (those kept before first among equals)
    std::vector<Candidate> merged = end.candidates;
    merged.insert(merged.end(), fresh.begin(), fresh.end());
    std::stable_sort(merged.begin(), merged.end(),
                     [](const Candidate& a, const Candidate& b) { return a.key < b.key; });
    end.candidates = std::move(merged);
}

void BettingSequence::settle(End& end, double first, double last) {
    const double edge = end.up ? first : -last;
    const double far = end.up ? last : -first;
    const double resolution = std::max(kResolution * width_, kTolerance);
    const std::size_t t = path_.size();
    // carry every candidate to now (a candidate already rejected needs no more steps)
    for (Candidate& c : end.candidates) {
        if (c.cap.reached || c.cap.done >= t) continue;
        throw_if_cancelled();
        work_ += static_cast<long long>((t - c.cap.done) * path_.processes());
        path_.carry(c.cap, end.sign * c.key, end.up, t, true);
        c.cap.done = t;
    }
    for (;;) {
        double dead_max = -std::numeric_limits<double>::infinity();
        bool any_dead = false;
        for (const Candidate& c : end.candidates) {
            if (c.cap.reached || c.key < edge) {
                any_dead = true;
                dead_max = std::max(dead_max, c.key);
            }
        }
        if (any_dead) end.rejected = std::max(end.rejected, dead_max);
        std::vector<Candidate> alive;
        alive.reserve(end.candidates.size());
        for (const Candidate& c : end.candidates)
            if (!(c.cap.reached || c.key < edge) && c.key > end.rejected) alive.push_back(c);
        end.candidates = std::move(alive);
        const double inner = std::max(end.rejected, edge);
        if (inner >= far) return;  // every feasible candidate rejected
        const bool some = !end.candidates.empty();
        const double kept = some ? end.candidates.front().key : far;
        if (some && kept - inner <= 2.0 * resolution) break;
        // up to 15 points, about `resolution` apart where the bracket allows
        const double ratio = std::ceil((kept - inner) / resolution);
        const int count = static_cast<int>(std::min<double>(kSections, std::max(2.0, ratio)));
        std::vector<double> points;
        for (int i = 1; i < count; ++i)
            points.push_back(inner + (static_cast<double>(i) / count) * (kept - inner));
        if (!some) points.push_back(far);
        std::vector<double> keep;
        for (const double p : points)
            if (p > inner) keep.push_back(p);
        std::sort(keep.begin(), keep.end());
        keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
        if (keep.empty()) break;
        add(end, std::move(keep));
    }
    if (end.candidates.size() < kLadder / 2) {
        const double top = end.candidates.back().key;
        std::vector<double> ladder;
        for (std::size_t i = 1; i <= kLadder; ++i) {
            const double key = top + resolution * static_cast<double>(i);
            if (key < far) ladder.push_back(key);
        }
        if (!ladder.empty()) add(end, std::move(ladder));
    }
    if (end.candidates.size() > kKeep) end.candidates.resize(kKeep);
}

SequenceEnds BettingSequence::census() const {
    const double mean = plain_mean(path_.x());
    return {mean, mean, false};
}

SequenceEnds BettingSequence::bounds() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double big_n = path_.population();
    if (big_n > 0.0 && static_cast<double>(path_.size()) == big_n) return census();
    if (empty_) return {nan, nan, true};
    const auto [first, last] = feasible();
    End& lower = ends_[0];
    End& upper = ends_[1];
    for (;;) {
        for (End& end : ends_) settle(end, first, last);
        const double low = std::max(lower.rejected - kMargin, first);
        const double high = std::min(-upper.rejected + kMargin, last);
        if (std::max(lower.rejected, first) >= last || std::max(upper.rejected, -last) >= -first || low > high) {
            empty_ = true;
            return {nan, nan, true};
        }
        // the resolution follows the width: settle again if it shrank by a fifth
        const bool shrunk = 1.25 * (high - low) < width_;
        width_ = high - low;
        if (!shrunk) return {low, high, false};
    }
}

SequenceEnds BettingSequence::exact_bounds() {
    const double big_n = path_.population();
    if (big_n > 0.0 && static_cast<double>(path_.size()) == big_n) return bounds();
    const SequenceEnds ends = ends_of(path_);
    if (ends.empty) {
        empty_ = true;
        return ends;
    }
    const auto [first, last] = feasible();
    // Each end is a rejected candidate moved kMargin outward: half of that inward is still
    // rejected (monotone halves), and reads back as the same end to 5e-13.
    if (ends.low > first) ends_[0].rejected = std::max(ends_[0].rejected, ends.low + 0.5 * kMargin);
    if (ends.high < last) ends_[1].rejected = std::max(ends_[1].rejected, -(ends.high - 0.5 * kMargin));
    width_ = ends.high - ends.low;
    return ends;
}

// ---------------------------------------------------------------------- the audit

AuditStream::AuditStream(double population_size, double alpha, std::int64_t horizon, std::int64_t cap)
    : sequences_{BettingSequence(population_size, alpha, horizon), BettingSequence(population_size, alpha / 2.0, horizon)},
      cap_(cap) {}

AuditReading AuditStream::update(const double* public_scores, const double* fresh_means, std::size_t n) {
    x_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const double d = public_scores[i] - fresh_means[i];
        public_.add(public_scores[i]);
        fresh_.add(fresh_means[i]);
        gaps_.add(d);
        x_[i] = (d + 1.0) / 2.0;
    }
    AuditReading out{};
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int a = 0; a < 2; ++a) {
        BettingSequence& sequence = sequences_[a];
        sequence.extend(x_.data(), n);
        const std::size_t t = sequence.size();
        // The ends exactly, at the cost of passes over every parent: for the last parent
        // allowed and for a batch of at least 1/16 of the parents so far.
        const bool exact = (cap_ > 0 && static_cast<std::int64_t>(t) == cap_) || 16 * n >= t;
        const SequenceEnds e = exact ? sequence.exact_bounds() : sequence.bounds();
        if (e.empty) {
            out.ends[a] = {nan, nan, true};
            continue;
        }
        // Every reading holds at once, so the running intersection holds too.
        low_[a] = std::max(e.low, low_[a]);
        high_[a] = std::min(e.high, high_[a]);
        out.ends[a] = {low_[a], high_[a], low_[a] > high_[a]};
    }
    out.t = size();
    out.public_sum = public_.value();
    out.fresh_sum = fresh_.value();
    out.gap_sum = gaps_.value();
    return out;
}

// ---------------------------------------------------------------------- the projection

namespace {

double width_shape(double t, std::int64_t horizon) {
    if (horizon <= 0) return std::sqrt(std::log1p(t) / t);
    const double h = static_cast<double>(horizon);
    if (t <= h) return std::sqrt(h) / t + 1.0 / std::sqrt(h);
    return (2.0 + std::log(t / h)) / (2.0 * std::sqrt(t) - std::sqrt(h));
}

}  // namespace

std::int64_t sequence_projection(std::int64_t t, double estimate, double width, double half_width, double shift,
                                 double target, double effect, std::int64_t horizon, std::int64_t limit) {
    const double now = width_shape(static_cast<double>(t), horizon);
    auto bounded = [&](double low, double high) {
        const bool narrow = !std::isnan(target) && (high - low) / 2.0 <= target;
        const bool below = !std::isnan(effect) && high < effect;
        return narrow || below;
    };
    auto decided = [&](std::int64_t s) {
        const double shape = width_shape(static_cast<double>(s), horizon);
        const double w = width * shape / now;
        const double wh = half_width * shape / now;
        const bool finding = estimate - w > 0.0 && estimate - wh - shift > 0.0;
        return finding || bounded(estimate - w, estimate + w);
    };
    if (limit <= t || !decided(limit)) return -1;
    std::int64_t lo = t, hi = limit;  // decided(hi) holds; find the first s that decides
    while (hi - lo > 1) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (decided(mid))
            hi = mid;
        else
            lo = mid;
    }
    return hi - t;
}

// ---------------------------------------------------------------------- the study

void sequence_first_hits(const double* x, std::size_t rows, std::size_t n, const double* m,
                         double population_size, double alpha, std::int64_t horizon,
                         std::int64_t* hit_up, std::int64_t* hit_down) {
    for (std::size_t r = 0; r < rows; ++r) {
        throw_if_cancelled();
        SequencePath path(population_size, alpha, horizon);
        path.extend(x + r * n, n);
        if (hit_up != nullptr) hit_up[r] = static_cast<std::int64_t>(path.first_hit(m[r], true));
        if (hit_down != nullptr) hit_down[r] = static_cast<std::int64_t>(path.first_hit(m[r], false));
    }
}

}  // namespace truescore
