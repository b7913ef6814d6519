#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "checks.hpp"
#include "interrupt.hpp"
#include "truescore/intervals.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::ArrayI64;
using truescore::bindings::check_alpha;
using truescore::bindings::interval_method;
using truescore::bindings::require_ndim;
using truescore::bindings::run_interruptible;
using truescore::bindings::thread_count;

namespace {

// Work estimate of a betting interval, in passes over the sample (see gap_intervals).
constexpr double kBettingPasses = 120.0;

// Many audits: gaps (A, n); methods a 1-D int array of codes; population_size None or
// (A,) (<= 0 entries mean none). Returns a dict of (n_methods, A) arrays.
py::dict gap_intervals(const ArrayD& gaps, const ArrayI64& methods, const py::object& population_size,
                       double alpha, const py::object& n_threads) {
    require_ndim(gaps, 2, "gaps");
    require_ndim(methods, 1, "methods");
    check_alpha(alpha);
    const std::size_t a = static_cast<std::size_t>(gaps.shape(0));
    const std::size_t n = static_cast<std::size_t>(gaps.shape(1));
    std::vector<truescore::IntervalMethod> codes;
    for (py::ssize_t k = 0; k < methods.shape(0); ++k) codes.push_back(interval_method(static_cast<long>(methods.data()[k])));
    std::optional<ArrayD> pop;
    if (!population_size.is_none()) {
        pop.emplace(population_size.cast<ArrayD>());
        require_ndim(*pop, 1, "population_size");
        if (static_cast<std::size_t>(pop->shape(0)) != a)
            throw truescore::argument_error("population_size", " must hold one value per audit (" + std::to_string(a) + ")");
    }
    const int threads = thread_count(n_threads);
    const std::size_t k = codes.size();
    py::array_t<double> low({k, a}), high({k, a}), est({k, a}), half({k, a});
    double *pl = low.mutable_data(), *ph = high.mutable_data(), *pe = est.mutable_data(), *pw = half.mutable_data();
    // The core checks each audit's population size against n and then divides by it: our copy.
    const std::vector<double> pop_copy = pop ? truescore::bindings::snapshot(*pop) : std::vector<double>();
    const double* pp = pop ? pop_copy.data() : nullptr;
    // Work in passes over the sample: 120 per betting interval (more than the bisection of
    // both ends takes, 2 x (2 + 30) = 64 one-lane passes; the search takes 4 to 5 four-lane
    // passes and two end checks, so this errs towards polling), one or two for the moment
    // methods.
    double passes = 0.0;
    for (const auto code : codes) passes += code == truescore::IntervalMethod::betting ? kBettingPasses : 2.0;
    run_interruptible(passes * static_cast<double>(a) * static_cast<double>(n), [&] {
        truescore::gap_intervals(codes.data(), k, gaps.data(), a, n, pp, alpha, pl, ph, pe, pw, threads);
    });
    py::dict d;
    d["low"] = low;
    d["high"] = high;
    d["estimate"] = est;
    d["half_width"] = half;
    return d;
}

// One audit's intervals without Python-side validation: [(low, high, estimate,
// half_width)] for each method code of `methods`, when d is a 1-D C-contiguous float64
// array that passes check_gaps (and every method's population requirement) and
// 0 < alpha / 2 < alpha < 1; otherwise None, and the caller takes the validating path,
// which raises the right error. The gaps are checked once for all the methods (the
// audit's six and the claim's one cost one check and one call from Python). The same
// gap_interval call as gap_intervals makes for a row, so the same bits. The betting
// interval (a few passes over the sample, where a moment method makes one) runs with the
// GIL released, interruptible by Ctrl-C at the sizes gap_intervals would poll at; its
// scratch is its own.
py::object gap_intervals_unchecked(const py::object& d, const std::vector<long>& methods, double population_size,
                                   const std::vector<double>& alphas) {
    using Contiguous = py::array_t<double, py::array::c_style>;
    std::vector<truescore::IntervalMethod> codes;
    codes.reserve(methods.size());
    for (const long method : methods) codes.push_back(interval_method(method));
    if (alphas.size() != 1 && alphas.size() != codes.size()) throw py::value_error("alphas: one, or one per method");
    for (const double alpha : alphas)
        if (!(alpha > 0.0 && alpha < 1.0 && alpha / 2.0 > 0.0)) return py::none();
    if (!py::isinstance<Contiguous>(d)) return py::none();
    const auto gaps = py::reinterpret_borrow<Contiguous>(d);
    // pybind11's type check looks at contiguity, not alignment: a misaligned view (offset
    // 1 into a buffer) takes the validating path, whose array policy copies it aligned.
    if (gaps.ndim() != 1 || reinterpret_cast<std::uintptr_t>(gaps.data()) % alignof(double) != 0)
        return py::none();
    const std::size_t n = static_cast<std::size_t>(gaps.shape(0));
    for (const auto code : codes)
        if (truescore::interval_traits(code).needs_population && !(population_size > 0.0)) return py::none();
    if (!truescore::check_gaps(gaps.data(), n, population_size, "d").empty()) return py::none();
    py::list out;
    for (std::size_t q = 0; q < codes.size(); ++q) {
        const truescore::IntervalMethod code = codes[q];
        const double alpha = alphas[alphas.size() == 1 ? 0 : q];
        const truescore::GapInterval iv =
            code == truescore::IntervalMethod::betting
                ? run_interruptible(kBettingPasses * static_cast<double>(n),
                                    [&] { return truescore::gap_interval(code, gaps.data(), n, population_size, alpha); })
                : truescore::gap_interval(code, gaps.data(), n, population_size, alpha);
        out.append(py::make_tuple(iv.low, iv.high, iv.estimate, iv.half_width));
    }
    return std::move(out);
}

// One method's interval: gap_intervals_unchecked's one tuple, or None.
py::object gap_interval_unchecked(const py::object& d, long method, double population_size, double alpha) {
    py::object got = gap_intervals_unchecked(d, {method}, population_size, {alpha});
    if (got.is_none()) return got;
    return py::reinterpret_borrow<py::list>(got)[0];
}

// The matched-form audit's gaps and sums (matched_form_gaps), or None when the scores are
// not C-contiguous float64 arrays (public (n,), n >= 2; fresh (n, K) with 1 <= K < 8, or
// (n,) for K = 1) of numbers in [0, 1]: the caller then validates and raises, or computes
// with NumPy. Returns (d, nonzero, public_sum, fresh_sum, gap_sum).
py::object matched_form_gaps(const py::object& public_scores, const py::object& fresh) {
    using Contiguous = py::array_t<double, py::array::c_style>;
    if (!py::isinstance<Contiguous>(public_scores) || !py::isinstance<Contiguous>(fresh)) return py::none();
    const auto pub = py::reinterpret_borrow<Contiguous>(public_scores);
    const auto fr = py::reinterpret_borrow<Contiguous>(fresh);
    auto aligned = [](const Contiguous& a) {
        return reinterpret_cast<std::uintptr_t>(a.data()) % alignof(double) == 0;
    };
    if (pub.ndim() != 1 || pub.shape(0) < 2 || !aligned(pub) || !aligned(fr)) return py::none();
    const py::ssize_t n = pub.shape(0);
    const py::ssize_t k = fr.ndim() == 1 ? 1 : fr.ndim() == 2 ? fr.shape(1) : 0;
    if (fr.shape(0) != n || k < 1) return py::none();
    py::array_t<double> d(n);
    truescore::MatchedFormSums sums{};
    if (!truescore::matched_form_gaps(pub.data(), fr.data(), static_cast<std::size_t>(n), static_cast<std::size_t>(k),
                                      d.mutable_data(), &sums))
        return py::none();
    return py::make_tuple(d, sums.nonzero, sums.public_sum, sums.fresh_sum, sums.gap_sum);
}

}  // namespace

void bind_intervals(py::module_& m) {
    // The registry of interval methods (intervals.hpp): the enum, and its traits table as
    // {name: {"code": int, "needs_population": bool, ...}} in code order.
    py::enum_<truescore::IntervalMethod> method(m, "IntervalMethod", "Interval methods of the matched-form audit.");
    for (const auto& t : truescore::kIntervalTraits) method.value(t.name, t.method);
    m.def(
        "interval_method_traits",
        [] {
            py::dict table;
            for (const auto& t : truescore::kIntervalTraits) {
                py::dict row;
                row["code"] = static_cast<int>(t.method);
                row["needs_population"] = t.needs_population;
                row["order_dependent"] = t.order_dependent;
                row["uses_variance"] = t.uses_variance;
                row["may_be_fallback"] = t.may_be_fallback;
                table[t.name] = row;
            }
            return table;
        },
        "Per-method traits of the interval registry: {name: {code, needs_population, "
        "order_dependent, uses_variance, may_be_fallback}} in code order.");
    m.attr("FEASIBLE_SLACK") = truescore::kFeasibleSlack;  // the one value, for Python too
    m.def("gap_interval_unchecked", &gap_interval_unchecked, py::arg("d"), py::arg("method"),
          py::arg("population_size"), py::arg("alpha"),
          "One audit's (low, high, estimate, half_width) for any method, or None when d is "
          "not a 1-D contiguous float64 array of valid gaps (or alpha or population_size do not "
          "fit): the single-interval fast path, whose caller then validates and raises.");
    m.def("gap_intervals_unchecked", &gap_intervals_unchecked, py::arg("d"), py::arg("methods"),
          py::arg("population_size"), py::arg("alphas"),
          "gap_interval_unchecked for several methods at once: a list of (low, high, estimate, "
          "half_width) in the order of `methods`, each at its alpha of `alphas` (one for all, "
          "or one per method; the gaps checked once), or None.");
    m.def("matched_form_gaps", &matched_form_gaps, py::arg("public"), py::arg("fresh"),
          "The matched-form audit's (d, nonzero, public_sum, fresh_sum, gap_sum) with NumPy's "
          "numbers (d = public - fresh.mean(axis=1); each sum NumPy's), or None when the scores "
          "are not C-contiguous float64 arrays of numbers in [0, 1] (n >= 2, 1 <= K < 8): the "
          "audit's fast path, whose caller then validates.");
    m.def("gap_intervals", &gap_intervals, py::arg("gaps"), py::arg("methods"), py::kw_only(),
          py::arg("population_size") = py::none(), py::arg("alpha") = 0.05,
          py::arg("n_threads") = py::none(),
          "Intervals for every row of a dense (A, n) array of gaps, for each method code: a dict "
          "of (n_methods, A) arrays low, high, estimate, half_width. With population_size, each "
          "interval lies within the values the row's gaps allow the population's mean gap.");
}
