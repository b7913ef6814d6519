// The betting confidence sequence for a mean in [0, 1] (Waudby-Smith & Ramdas 2024, JRSS-B,
// hedged capital, predictable plug-in bets, optionally without replacement), read once
// after a whole sample (sequence_bounds), carried forward by new observations alone
// (BettingSequence, for SequentialAudit.update), and its first crossings for the
// sequential study (sequence_first_hits). The definitions are audit/_betting.py's
// (log_bets, the mixture of capital processes, sequence_bounds, IncrementalSequence);
// those NumPy functions stay as the reference the tests hold this code to.
//
// The capital of a candidate is kept as products, not sums of log1p: each process's
// capital is a double with a power of two shared by the candidate's processes, and a
// process that falls more than ~2^-1000 below the leading one is dropped (its share of
// the wealth could only lower it: the capital is never overstated, so every end is the
// one of a capital no larger than the definition's, and the guarantee holds). The ends
// agree with the NumPy definitions' to within the rounding of the capital (a candidate
// within ~1e-13 of a crossing may be judged the other way; the ends are moved 1e-12
// outward, as there).
#pragma once

#include <cstddef>
#include <cmath>
#include <cstdint>
#include <vector>

namespace truescore {

struct SequenceEnds {
    double low;
    double high;
    bool empty;
};

// At most this many capital processes (the horizon-free mixture has 7).
constexpr std::size_t kMaxProcesses = 8;

// The bets of a sequence: its processes' log weights, horizons and truncation levels,
// and, for each step, the observation, S_{t-1}, and each process's bet and truncation.
class SequencePath {
public:
    // population_size <= 0: none; horizon <= 0: horizon-free (the mixture).
    SequencePath(double population_size, double alpha, std::int64_t horizon);

    void extend(const double* x, std::size_t k);
    std::size_t size() const { return x_.size(); }
    std::size_t processes() const { return weight_.size(); }
    double population() const { return population_; }
    double alpha() const { return alpha_; }
    // log(2 / alpha): half the wealth reaching 1/alpha
    double log_threshold() const { return log_threshold_; }
    const std::vector<double>& x() const { return x_; }
    double sum() const { return sum_; }            // S_t, by sequential additions
    double compensated_sum() const { return total_ + carry_; }  // S_t, Neumaier

    // The up-betting (up) or down-betting half's capital at candidate m (on [0, 1]),
    // carried from step `from` to `to` (exclusive). Returns true when the half's
    // wealth reaches 2/alpha at one of those steps (the state then stops mattering).
    struct Capital {
        double c[kMaxProcesses];
        int exponent = 0;
        double threshold = 0.0;  // 2/alpha scaled by 2^-exponent
        std::size_t done = 0;    // steps carried
        bool reached = false;
    };
    void start(Capital& cap) const;
    bool carry(Capital& cap, double m, bool up, std::size_t to, bool stop_when_reached) const;

    // The first step (1-based) at which the half's wealth reaches 2/alpha, or the
    // candidate leaves the feasible range (population only); size() + 1 for never.
    std::size_t first_hit(double m, bool up) const;

private:
    void rescale(Capital& cap) const;

    double population_;
    double alpha_;
    double log_threshold_;
    std::vector<double> weight_, horizon_, low_level_, high_level_, log_two_over_;
    std::vector<double> x_, before_;
    std::vector<double> bet_, level_;  // step-major: [t * K + k]
    double sum_ = 0.0, squares_ = 0.0, total_ = 0.0, carry_ = 0.0;
};

// The sequence after all of x (n values in [0, 1]): audit/_betting.py's sequence_bounds.
SequenceEnds sequence_bounds(const double* x, std::size_t n, double population_size, double alpha,
                             std::int64_t horizon);

// The incremental sequence: audit/_betting.py's IncrementalSequence.
class BettingSequence {
public:
    BettingSequence(double population_size, double alpha, std::int64_t horizon);
    void extend(const double* x, std::size_t k);
    SequenceEnds bounds();
    SequenceEnds exact_bounds();
    std::size_t size() const { return path_.size(); }
    const std::vector<double>& x() const { return path_.x(); }
    long long work() const { return work_; }

private:
    struct Candidate {
        double key;
        SequencePath::Capital cap;
    };
    struct End {
        bool up;
        double sign;
        std::vector<Candidate> candidates;  // key ascending
        double rejected;
    };
    struct Range {
        double first, last;
    };
    Range feasible() const;
    void add(End& end, std::vector<double> keys);
    void settle(End& end, double first, double last);
    SequenceEnds census() const;

    SequencePath path_;
    End ends_[2];
    double width_ = 1.0;
    bool empty_ = false;
    long long work_ = 0;
};

// SequentialAudit's running state (audit/sequential.py): the compensated sums of the
// public scores, the fresh-form means and the gaps (Neumaier, as its RunningSum), and the
// sequences at alpha and alpha / 2 of x = (d + 1) / 2, each read after every update (the
// exact search for the last parent allowed, cap, and for a batch of at least 1/16 of the
// parents so far; the incremental ends otherwise) and intersected with its earlier
// readings.
struct AuditReading {
    std::size_t t;
    double public_sum, fresh_sum, gap_sum;
    SequenceEnds ends[2];  // alpha, alpha / 2 (running intersections; empty when crossed)
};

class AuditStream {
public:
    // cap <= 0: none (no population and no max_parents)
    AuditStream(double population_size, double alpha, std::int64_t horizon, std::int64_t cap);
    // n parents: their public scores and fresh-form means (each in [0, 1])
    AuditReading update(const double* public_scores, const double* fresh_means, std::size_t n);
    std::size_t size() const { return sequences_[0].size(); }
    long long work() const { return sequences_[0].work() + sequences_[1].work(); }

private:
    struct Sum {
        double total = 0.0, carry = 0.0;
        void add(double v) {
            const double next = total + v;
            if (std::fabs(total) >= std::fabs(v))
                carry += (total - next) + v;
            else
                carry += (v - next) + total;
            total = next;
        }
        double value() const { return total + carry; }
    };
    BettingSequence sequences_[2];
    Sum public_, fresh_, gaps_;
    double low_[2] = {0.0, 0.0}, high_[2] = {1.0, 1.0};
    std::int64_t cap_;
    std::vector<double> x_;
};

// For each row r of x (rows x n, values in [0, 1]) and its candidate m[r]: the first step
// (1-based) at which the up-betting half reaches 2/alpha or m falls below the feasible
// range (hit_up), and the same for the down-betting half (hit_down); n + 1 for never or a
// half not wanted (nullptr output). audit's sequential study's _first_hits.
void sequence_first_hits(const double* x, std::size_t rows, std::size_t n, const double* m,
                         double population_size, double alpha, std::int64_t horizon,
                         std::int64_t* hit_up, std::int64_t* hit_down);

// SequentialAudit's projection (audit/sequential.py's _projection, the same operations in
// the same order): the first s in (t, limit] at which the half-widths, shrunk from t as
// the bets' width shape says (horizon <= 0: sqrt(log(1 + s) / s); else sqrt(h) / s +
// 1 / sqrt(h) up to h, then (2 + log(s / h)) / (2 sqrt(s) - sqrt(h))), would decide: a
// finding (estimate - w > 0 and estimate - w_half - shift > 0) or bounded (half-width at
// most target, or estimate + w below effect; NaN target or effect: none), found by
// bisection; returns s - t, or -1 when none decides by limit.
std::int64_t sequence_projection(std::int64_t t, double estimate, double width, double half_width, double shift,
                                 double target, double effect, std::int64_t horizon, std::int64_t limit);

}  // namespace truescore
