#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "checks.hpp"
#include "interrupt.hpp"
#include "truescore/constat.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::ArrayI64;
using truescore::bindings::check_memory;
using truescore::bindings::count_at_least;
using truescore::bindings::require_ndim;
using truescore::bindings::require_unit;
using truescore::bindings::run_interruptible;
using truescore::bindings::thread_count;

namespace {

// Row indices into the m models (increasing ones when `increasing`).
std::vector<std::int64_t> rows_of(const ArrayI64& rows, std::size_t m, const char* name, bool increasing) {
    require_ndim(rows, 1, name);
    std::vector<std::int64_t> out(rows.data(), rows.data() + rows.shape(0));
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (out[i] < 0 || static_cast<std::size_t>(out[i]) >= m)
            throw truescore::argument_error(name, " holds a row outside the scores");
        if (increasing && i > 0 && out[i] <= out[i - 1])
            throw truescore::argument_error(name, " must be increasing");
    }
    return out;
}

py::tuple constat_bootstrap(const ArrayD& scores, const ArrayD& reference, const ArrayI64& references,
                            const ArrayI64& tested, long long n_bootstrap, double guess_benchmark,
                            double guess_reference, double lambda, bool sort, std::uint64_t key0,
                            std::uint64_t key1, const py::object& n_threads) {
    require_ndim(scores, 2, "scores");
    require_ndim(reference, 2, "reference_scores");
    const std::size_t m = static_cast<std::size_t>(scores.shape(0));
    const std::size_t n = static_cast<std::size_t>(scores.shape(1));
    const std::size_t nr = static_cast<std::size_t>(reference.shape(1));
    if (static_cast<std::size_t>(reference.shape(0)) != m)
        throw truescore::argument_error("reference_scores", " must have one row per model");
    if (n < 2 || nr < 2) throw truescore::argument_error("scores", " and reference_scores must hold at least 2 items");
    require_unit(scores.data(), static_cast<std::size_t>(scores.size()), "scores");
    require_unit(reference.data(), static_cast<std::size_t>(reference.size()), "reference_scores");
    const std::size_t b = count_at_least(n_bootstrap, "n_bootstrap", 2);
    if (!std::isfinite(lambda)) throw truescore::argument_error("smoothing", " must be finite");
    // Both negative: no random-guess point; else both in [0, 1].
    const bool guess = !(guess_benchmark < 0.0 && guess_reference < 0.0);
    if (guess && !(guess_benchmark >= 0.0 && guess_benchmark <= 1.0 && guess_reference >= 0.0 &&
                   guess_reference <= 1.0))
        throw truescore::argument_error("random_guess", " must lie in [0, 1]");
    const int threads = thread_count(n_threads);
    // The kernel reads the caller's arrays again after the checks: copies, so another
    // thread writing to them cannot change a score between its check and its use.
    const std::vector<double> s(scores.data(), scores.data() + m * n);
    const std::vector<double> r(reference.data(), reference.data() + m * nr);
    const std::vector<std::int64_t> refs = rows_of(references, m, "references", true);
    const std::vector<std::int64_t> test = rows_of(tested, m, "tested", false);
    const std::size_t t = test.size();
    check_memory("n_bootstrap", 8.0 * static_cast<double>(t) * static_cast<double>(b));
    py::array_t<double> replicates({static_cast<py::ssize_t>(t), static_cast<py::ssize_t>(b)});
    py::array_t<double> actual(static_cast<py::ssize_t>(t)), predicted(static_cast<py::ssize_t>(t));
    py::array_t<std::int8_t> status(static_cast<py::ssize_t>(t));
    double* rep = replicates.mutable_data();
    double* act = actual.mutable_data();
    double* pred = predicted.mutable_data();
    std::int8_t* st = status.mutable_data();
    truescore::ConStatOptions options;
    options.sort = sort;
    options.random_guess = guess;
    options.guess_benchmark = guess ? guess_benchmark : 0.0;
    options.guess_reference = guess ? guess_reference : 0.0;
    options.lambda = lambda;
    // Per resample: the means (m (n + nr)) and one fit of ~30 GCV steps per tested model.
    const double work = static_cast<double>(b) *
                        (static_cast<double>(m) * static_cast<double>(n + nr) + 3000.0 * static_cast<double>(t) *
                                                                                     static_cast<double>(refs.size()));
    run_interruptible(work, [&] {
        truescore::constat_bootstrap(s.data(), r.data(), m, n, nr, refs.data(), refs.size(), test.data(), t, b,
                                     options, key0, key1, threads, rep, act, pred, st);
    });
    return py::make_tuple(replicates, actual, predicted, status);
}

// Test hooks: the spline on given points (x increasing, at least 3).
void spline_points(const ArrayD& x, const ArrayD& y, const ArrayD& w) {
    require_ndim(x, 1, "x");
    if (y.size() != x.size() || w.size() != x.size() || x.size() < 3)
        throw truescore::argument_error("x", ", y and w must have the same length, at least 3");
    for (py::ssize_t i = 1; i < x.size(); ++i)
        if (!(x.data()[i] > x.data()[i - 1])) throw truescore::argument_error("x", " must be increasing");
}

}  // namespace

void bind_constat(py::module_& m) {
    // The one value, for Python too (suite/constat.py's MIN_REFERENCE_MODELS).
    m.attr("CONSTAT_MIN_REFERENCE_MODELS") = truescore::kConStatMinDistinct;
    m.attr("CONSTAT_MAX_ATTEMPTS") = truescore::kConStatMaxAttempts;
    m.def("constat_bootstrap", &constat_bootstrap, py::arg("scores"), py::arg("reference_scores"),
          py::arg("references"), py::arg("tested"), py::arg("n_bootstrap"), py::arg("guess_benchmark"),
          py::arg("guess_reference"), py::arg("smoothing"), py::arg("sort"), py::arg("key0"), py::arg("key1"),
          py::kw_only(), py::arg("n_threads") = py::none(),
          "ConStat's bootstrap (guesses both < 0: no random-guess point; smoothing < 0: GCV): "
          "(replicates (tested, n_bootstrap), actual, predicted, status (0 testable, 1 fewer than 5 "
          "distinct reference points, 2 a resample's redraws exhausted)).");
}

void bind_constat_testing(py::module_& t) {
    t.def(
        "smoothing_spline_predict",
        [](const ArrayD& x, const ArrayD& y, const ArrayD& w, double lambda, double x0) {
            spline_points(x, y, w);
            return truescore::smoothing_spline_predict(x.data(), y.data(), w.data(),
                                                       static_cast<std::size_t>(x.size()), lambda, x0);
        },
        py::arg("x"), py::arg("y"), py::arg("w"), py::arg("smoothing"), py::arg("x0"),
        "The smoothing spline's value at x0 (smoothing < 0: GCV).");
    t.def(
        "smoothing_spline_gcv_lambda",
        [](const ArrayD& x, const ArrayD& y, const ArrayD& w) {
            spline_points(x, y, w);
            return truescore::smoothing_spline_gcv_lambda(x.data(), y.data(), w.data(),
                                                          static_cast<std::size_t>(x.size()));
        },
        py::arg("x"), py::arg("y"), py::arg("w"), "The lambda generalized cross-validation chooses.");
    t.def(
        "smoothing_spline_gcv",
        [](const ArrayD& x, const ArrayD& y, const ArrayD& w, double lambda) {
            spline_points(x, y, w);
            return truescore::smoothing_spline_gcv(x.data(), y.data(), w.data(), static_cast<std::size_t>(x.size()),
                                                   lambda);
        },
        py::arg("x"), py::arg("y"), py::arg("w"), py::arg("smoothing"), "The GCV criterion at smoothing.");
}
