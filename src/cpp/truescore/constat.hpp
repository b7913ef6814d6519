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

// Weight of the anchor points (0, 0) and (1, 1) (negligible: they only let the fit span
// [0, 1]) and the least number of distinct reference models a resample keeps.
inline constexpr double kConStatAnchorWeight = 1e-3;
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

// The ConStat bootstrap. scores (m, n_items) and reference (m, n_reference) row-major, in
// [0, 1]. references: the rows used as reference models (increasing); tested: the rows to
// test; a tested row's references are `references` less itself, in order (at least
// kConStatMinDistinct). Resample b draws from Philox stream b under (key0, key1): the
// benchmark's n_items indices (PackedIndexSampler), then the reference benchmark's
// n_reference indices (a new PackedIndexSampler on the same stream), then per count k of
// references, from a copy of the stream as it stands after the items, k draws below(k),
// drawn again until at least kConStatMinDistinct are distinct. random_guess < 0: no
// random-guess point (else the point (g, g) of weight 1); lambda < 0: GCV.
// replicates (n_tested, n_bootstrap) row-major: delta*_b; actual, predicted (n_tested):
// the full-data benchmark score and the full-data fit's prediction (clipped to [0, 1]).
void constat_bootstrap(const double* scores, const double* reference, std::size_t m, std::size_t n_items,
                       std::size_t n_reference, const std::int64_t* references, std::size_t n_references,
                       const std::int64_t* tested, std::size_t n_tested, std::size_t n_bootstrap,
                       double random_guess, double lambda, std::uint64_t key0, std::uint64_t key1,
                       int n_threads, double* replicates, double* actual, double* predicted);

}  // namespace truescore
