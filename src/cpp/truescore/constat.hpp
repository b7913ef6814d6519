// ConStat's performance-based contamination test (Dekoninck, Mueller & Vechev, NeurIPS
// 2024): the bootstrap of "actual minus predicted benchmark score", the prediction being a
// cubic smoothing spline through the reference models' (reference score, benchmark score).
//
// The spline is the natural cubic smoothing spline minimising
//   sum_i w_i (y_i - f(x_i))^2 + lambda * integral f''(u)^2 du
// (scipy.interpolate.make_smoothing_spline's lam), computed by Reinsch's algorithm (a
// banded LDL^T solve of order n - 2). Its lambda is given, or chosen by generalized
// cross-validation, GCV(lambda) = (1/n) sum_i (y_i - f(x_i))^2 / (1 - tr A / n)^2 with the
// trace from the central bands of the inverse (Hutchinson & de Hoog 1985), minimised over
// (0, n) by the bounded Brent search SciPy's minimize_scalar(method="bounded") runs, step
// for step (xatol 1e-5), so the lambda is SciPy's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

// Weight of the anchor points (0, 0) and (1, 1) (ConStat's: negligible, they only let the
// fit span [0, 1]) and the least number of distinct points (and reference models) a
// resample keeps.
inline constexpr double kConStatAnchorWeight = 1e-8;
inline constexpr std::size_t kConStatMinDistinct = 5;

// The fitted smoothing spline's value at x0 for points (x, y, w), x strictly increasing,
// at least 3 of them, weights positive; lambda < 0: chosen by GCV. Not clipped.
double smoothing_spline_predict(const double* x, const double* y, const double* w, std::size_t n,
                                double lambda, double x0);

// The GCV criterion at lambda for the same points, and the lambda GCV chooses (SciPy's
// bounded Brent search over (0, n)): for the tests.
double smoothing_spline_gcv(const double* x, const double* y, const double* w, std::size_t n,
                            double lambda);
double smoothing_spline_gcv_lambda(const double* x, const double* y, const double* w, std::size_t n);

// How often one resample may be drawn again (ConStat redraws a resample whose points have
// fewer than kConStatMinDistinct distinct abscissas, without a limit) before the row is
// reported as not testable; and the per-row statuses.
inline constexpr std::uint64_t kConStatMaxAttempts = 1000;
// From this many references per tested model on, GCV's lambda is chosen once per resample
// (on the points of the models the resample's draws pick from `references`) and shared
// by every tested row, instead of once per row: leaving one model of 30 or more out moves
// it by little, and the per-row GCV was most of the cost of a large suite.
inline constexpr std::size_t kConStatShareLambda = 30;
// A leaderboard's resample draws at most this many candidate draws of the references
// (a row none of them suits goes to the next attempt: with 30 or more references each
// candidate suits a row with probability about 1/e, so 256 leave a row with 1e-51).
inline constexpr std::size_t kConStatMaxCandidates = 256;
inline constexpr std::int8_t kConStatTestable = 0;
inline constexpr std::int8_t kConStatTooFewDistinct = 1;    // the full data has < 5 distinct x
inline constexpr std::int8_t kConStatRedrawsExhausted = 2;  // a resample failed every attempt

struct ConStatOptions {
    bool sort = true;              // ConStat's sort=True: x and y sorted each on its own
    bool random_guess = true;      // the random-guess point (ConStat's add_extended_models)
    double guess_benchmark = 0.0;  // its accuracy on the benchmark (ConStat's random_performance[0])
    double guess_reference = 0.0;  // and on the reference benchmark (random_performance[1])
    double lambda = -1.0;          // the spline's lambda; < 0: GCV
};

// The ConStat bootstrap, as eth-sri/ConStat's ConStat.return_functions_test computes it
// (the same law; Philox draws). scores (m, n_items) and reference (m, n_reference)
// row-major, in [0, 1]. references: the rows used as reference models (increasing);
// tested: the rows to test; a tested row's references are `references` less itself, in
// order (at least kConStatMinDistinct). Resample b, attempt a draws from Philox counter
// (0, 0, b, a) under (key0, key1): the benchmark's n_items indices (PackedIndexSampler),
// the reference benchmark's n_reference indices (a new PackedIndexSampler on the same
// stream), with the random-guess point two normals (benchmark, then reference; one word
// each, by inversion), then per count k of references, from a copy of the stream as it
// stands then, k draws below(k), drawn again until at least kConStatMinDistinct are
// distinct (none when k is kConStatMinDistinct: every model once). With GCV and
// kConStatShareLambda or more references per row (a leaderboard) the copy instead draws
// candidates, each the largest count of draws below(n_references), as many as the rows
// need (at most kConStatMaxCandidates), and each row takes the first candidate whose
// first k draws (its count) hold at least kConStatMinDistinct distinct references and
// not the row itself: ConStat's law for every row, by rejection, and one set of points
// and one fit for all the rows that take one candidate. A row's points are the
// random-guess point and the drawn models' (reference score, benchmark score), sorted
// (each coordinate on its own with `sort`, else the pairs by x) with every point whose x
// equals the next one's dropped; fewer than kConStatMinDistinct left: attempt a + 1 for
// that row (up to kConStatMaxAttempts). The fit: lambda given or by GCV on those points
// with unit weights (with candidates: once per attempt, on the first candidate's), then
// anchors (0, 0) and (1, 1) of weight kConStatAnchorWeight where the points do not reach
// 0 or 1, refitted at that lambda; its value at the row's
// reference score, clipped to [0, 1], subtracted from its benchmark score: delta*_b.
// replicates (n_tested, n_bootstrap) row-major; actual, predicted (n_tested): the
// full-data benchmark score and prediction; status (n_tested): kConStatTestable, or why
// not (then predicted and the replicates are NaN, or the failed resamples' are).
void constat_bootstrap(const double* scores, const double* reference, std::size_t m, std::size_t n_items,
                       std::size_t n_reference, const std::int64_t* references, std::size_t n_references,
                       const std::int64_t* tested, std::size_t n_tested, std::size_t n_bootstrap,
                       const ConStatOptions& options, std::uint64_t key0, std::uint64_t key1, int n_threads,
                       double* replicates, double* actual, double* predicted, std::int8_t* status);

}  // namespace truescore
