// The Monte Carlo calibration engine: coverage, detection and budget studies.
//
// A study cell runs R replications split into tasks of `block` consecutive replications.
// Task t draws from its own Philox stream, Philox::for_task(key0, key1, task_offset + t),
// and writes its partial sums to row t of the output; the caller reduces rows in task
// order. Which thread or process runs a task, and how tasks are grouped into calls,
// therefore never changes a result, and memory does not grow with R.
#pragma once

#include <cstddef>
#include <cstdint>

#include "truescore/intervals.hpp"

namespace truescore {

struct TaskRange {
    std::uint64_t key0, key1;
    std::uint64_t task_offset;   // stream of task t: for_task(key0, key1, task_offset + t)
    std::size_t replications;    // of the whole cell
    std::size_t block;           // replications per task
    std::size_t task_begin, task_end;
};

// ---- Coverage ------------------------------------------------------------------------
// Population gaps grouped by stratum: stratum h holds values[offsets[h] .. offsets[h+1]).
// Each replication draws allocation[h] units from stratum h without replacement and
// computes every interval in `methods` on the pooled sample (in draw order), with the
// population size N = population_size.
// With `lattice_count` > 0 the sample is drawn as counts per value instead (exact
// multivariate hypergeometric, per stratum): lattice_values (V) and lattice_counts
// (n_strata, V); only order-free methods are allowed then.
struct CoverageSetting {
    const double* values;
    std::size_t population_size;
    const std::size_t* offsets;      // n_strata + 1
    const std::size_t* allocation;   // n_strata
    std::size_t n_strata;
    const double* lattice_values;
    const std::int64_t* lattice_counts;
    std::size_t lattice_count;
    const IntervalMethod* methods;
    std::size_t n_methods;
    double alpha;
    double truth;                  // the mean the intervals should cover
};
// The partial sums of a coverage task's row, per method (methods in order). These enums
// are the one definition of every row layout: the binding exports them and
// truescore_fast.studies._engine builds its IntEnums from them.
enum CoverageSum : std::size_t {
    kCovered,           // replications whose interval contains the truth
    kHalfWidth,         // sum of half-widths
    kHalfWidthSquares,  // sum of squared half-widths
    kCoverageWidth
};
// out: (task_end - task_begin) rows of n_methods * kCoverageWidth.
void coverage_tasks(const CoverageSetting& setting, const TaskRange& range, double* out, int n_threads);

// ---- Detection -----------------------------------------------------------------------
// A bank of N parents with binary labels: public (N), fresh (N, K) row-major. Per
// replication: draw n parents by Fisher-Yates; for each drawn parent in draw order
//   1. relabel: j = below(K + 1); swap the public label with label j (0 = itself);
//   2. plant (flip_public > 0): u = next_double(); an incorrect public label becomes
//      correct when u < flip_public;
//   3. harden (flip_fresh > 0): for each fresh label, u = next_double(); a correct one
//      becomes incorrect when u < flip_fresh;
// then the interval rule (primary interval: Wald with N when at least `guardrail` gaps
// are nonzero, else `fallback`, all in draw order; claim when low > 0) and the exact
// randomization test (reject when P(T >= t) <= alpha).
struct DetectionSetting {
    const double* public_labels;
    const double* fresh_labels;
    std::size_t population_size;
    std::size_t n_forms;
    std::size_t n;
    bool relabel;
    double flip_public;
    double flip_fresh;
    std::size_t guardrail;
    IntervalMethod fallback;
    double alpha;
};
enum DetectionSum : std::size_t {
    kClaims,      // the interval rule claims (primary interval above zero)
    kRejections,  // the exact randomization test rejects
    kDeltaHat,    // sum of Delta-hat
    kDetectionWidth
};
void detection_tasks(const DetectionSetting& setting, const TaskRange& range, double* out, int n_threads);

// ---- Budget --------------------------------------------------------------------------
// Gaps of M models on the same N parents, row-major (M, N). Per replication: draw n
// parents (one draw shared by all models), each model's mean gap and `method`
// half-width; pairs (pair_high[p], pair_low[p]) are the model pairs the full sample
// orders strictly (mean of pair_high > mean of pair_low). A pair is ordered correctly
// when the subsample's means are strictly in the same order.
struct BudgetSetting {
    const double* gaps;
    std::size_t n_models;
    std::size_t population_size;
    std::size_t n;
    const std::int64_t* pair_high;
    const std::int64_t* pair_low;
    std::size_t n_pairs;
    IntervalMethod method;
    double alpha;
};
enum BudgetSum : std::size_t {
    kBudgetHalfWidth,         // sum of the mean half-width over models
    kBudgetHalfWidthSquares,  // sum of its square
    kExactOrder,              // replications ordering every model as the full sample does
    kPairsCorrect,            // sum of the share of pairs ordered as in the full sample
    kPairsCorrectSquares,     // sum of its square
    kBudgetWidth
};
void budget_tasks(const BudgetSetting& setting, const TaskRange& range, double* out, int n_threads);

}  // namespace truescore
