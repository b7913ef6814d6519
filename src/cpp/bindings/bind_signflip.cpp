#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "checks.hpp"
#include "interrupt.hpp"
#include "truescore/signflip.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::ArrayI64;
using truescore::bindings::check_alpha;
using truescore::bindings::check_value_counts;
using truescore::bindings::require_finite_nonempty;
using truescore::bindings::require_ndim;
using truescore::bindings::run_interruptible;
using truescore::bindings::count_at_least;
using truescore::bindings::thread_count;
using truescore::bindings::with_memory_of;

namespace {

py::dict counts_dict(const truescore::SignFlipCounts& c) {
    py::dict out;
    out["n_patterns"] = c.n_patterns;
    out["count_greater"] = c.greater;
    out["count_less"] = c.less;
    out["count_two_sided"] = c.two_sided;
    return out;
}

// Element steps of a sign-flip kernel over n values (run_interruptible's estimate).
double pattern_work(std::size_t n, bool exact, std::int64_t n_resamples) {
    const double patterns = exact ? std::ldexp(1.0, static_cast<int>(std::min<std::size_t>(n, 64)))
                                  : static_cast<double>(n_resamples);
    return patterns * static_cast<double>(n);
}

// Checks shared by sign_flip_counts and sign_flip_test; returns n.
std::size_t check_patterns(const ArrayD& differences, bool exact, std::int64_t n_resamples,
                           std::size_t exact_limit) {
    require_finite_nonempty(differences, "differences");
    const auto n = static_cast<std::size_t>(differences.shape(0));
    if (exact && n > exact_limit)
        throw std::invalid_argument("exact enumeration needs at most " + std::to_string(exact_limit) +
                                    " differences; got " + std::to_string(n));
    if (!exact) count_at_least(n_resamples, "n_resamples");
    return n;
}

py::dict sign_flip_counts(const ArrayD& differences, bool exact, std::int64_t n_resamples,
                          std::uint64_t key0, std::uint64_t key1, const py::object& n_threads) {
    const std::size_t n = check_patterns(differences, exact, n_resamples, truescore::kSignFlipMaxCount);
    const int threads = thread_count(n_threads);
    return counts_dict(run_interruptible(pattern_work(n, exact, n_resamples), [&] {
        return truescore::sign_flip_counts(differences.data(), n, exact, n_resamples, key0, key1, threads);
    }));
}

py::dict sign_flip_test(const ArrayD& differences, bool exact, std::int64_t n_resamples,
                        std::uint64_t key0, std::uint64_t key1, double alpha_tail,
                        const py::object& n_threads) {
    const std::size_t n = check_patterns(differences, exact, n_resamples, truescore::kSignFlipMaxInterval);
    check_alpha(alpha_tail, "alpha_tail");
    const int threads = thread_count(n_threads);
    // The test inverts the counts from every pattern's critical value: 8 bytes a pattern.
    const double patterns = pattern_work(n, exact, n_resamples) / static_cast<double>(n);
    // The bounds select from critical values computed from the differences checked finite
    // above (a NaN would break the selection): the kernel reads a copy.
    const std::vector<double> d = truescore::bindings::snapshot(differences);
    const truescore::SignFlipResult r = with_memory_of(exact ? "differences" : "n_resamples", 8.0 * patterns, [&] {
        return run_interruptible(pattern_work(n, exact, n_resamples), [&] {
            return truescore::sign_flip_test(d.data(), n, exact, n_resamples, key0, key1, alpha_tail,
                                             threads);
        });
    });
    py::dict out = counts_dict(r.counts);
    out["lower"] = r.lower;
    out["upper"] = r.upper;
    return out;
}

py::dict sign_flip_exact_pairs(const ArrayD& a, const ArrayD& b, const py::object& n_threads) {
    require_finite_nonempty(a, "a");
    require_finite_nonempty(b, "b");
    if (a.shape(0) != b.shape(0)) throw truescore::argument_error("a", " and b must have the same length");
    if (static_cast<std::size_t>(a.shape(0)) > truescore::kSignFlipMaxCount)
        throw std::invalid_argument("exact enumeration supports at most " +
                                    std::to_string(truescore::kSignFlipMaxCount) + " pairs");
    const int threads = thread_count(n_threads);
    const auto n = static_cast<std::size_t>(a.shape(0));
    return counts_dict(run_interruptible(2.0 * pattern_work(n, true, 0), [&] {
        return truescore::sign_flip_exact_pairs(a.data(), b.data(), n, threads);
    }));
}

py::dict sign_flip_monte_carlo_pairs(const ArrayD& a, const ArrayD& b, std::int64_t n_resamples,
                                     std::uint64_t key0, std::uint64_t key1,
                                     const py::object& n_threads, bool screen) {
    require_finite_nonempty(a, "a");
    require_finite_nonempty(b, "b");
    if (a.shape(0) != b.shape(0)) throw truescore::argument_error("a", " and b must have the same length");
    count_at_least(n_resamples, "n_resamples");
    const int threads = thread_count(n_threads);
    const auto n = static_cast<std::size_t>(a.shape(0));
    return counts_dict(run_interruptible(2.0 * pattern_work(n, false, n_resamples), [&] {
        return truescore::sign_flip_monte_carlo_pairs(a.data(), b.data(), n, n_resamples, key0, key1, threads,
                                                      screen);
    }));
}

double sign_flip_count_two_sided(const ArrayD& values) {
    require_finite_nonempty(values, "values");
    const std::size_t n = static_cast<std::size_t>(values.shape(0));
    if (n > truescore::kSignFlipMaxMeetInMiddle)
        throw truescore::argument_error("values", ": exact sign-flip enumeration needs at most " +
                                    std::to_string(truescore::kSignFlipMaxMeetInMiddle) +
                                    " values; got " + std::to_string(n));
    // Checked finite above and then sorted (a NaN would break the sort): the kernel reads a copy.
    const std::vector<double> x = truescore::bindings::snapshot(values);
    double count;
    {
        py::gil_scoped_release release;
        count = truescore::sign_flip_count_two_sided(x.data(), n);
    }
    return count;
}

}  // namespace

void bind_signflip(py::module_& m) {
    m.attr("MAX_EXACT_PAIRS") = truescore::kSignFlipMaxCount;
    m.def("sign_flip_counts", &sign_flip_counts, py::arg("differences"), py::kw_only(),
          py::arg("exact"), py::arg("n_resamples"), py::arg("key0"), py::arg("key1"),
          py::arg("n_threads") = py::none(),
          "Sign-flip counts (n_patterns, count_greater, count_less, count_two_sided) over all "
          "2^n patterns or n_resamples random ones (block k of 256 from Philox task k).");
    m.def("sign_flip_test", &sign_flip_test, py::arg("differences"), py::kw_only(),
          py::arg("exact"), py::arg("n_resamples"), py::arg("key0"), py::arg("key1"),
          py::arg("alpha_tail"), py::arg("n_threads") = py::none(),
          "sign_flip_counts plus the test-inverted confidence bounds (lower, upper) at alpha_tail.");
    m.def("sign_flip_exact_pairs", &sign_flip_exact_pairs, py::arg("a"), py::arg("b"), py::kw_only(),
          py::arg("n_threads") = py::none(),
          "Exact sign-flip counts over all 2^n swap patterns (scipy's statistic and tie rule).");
    m.def("sign_flip_monte_carlo_pairs", &sign_flip_monte_carlo_pairs, py::arg("a"), py::arg("b"),
          py::kw_only(), py::arg("n_resamples"), py::arg("key0"), py::arg("key1"),
          py::arg("n_threads") = py::none(), py::arg("screen") = true,
          "Monte Carlo sign-flip counts over n_resamples random swap patterns with "
          "sign_flip_exact_pairs' statistic and tie rule; screen=False evaluates that statistic "
          "on every pattern instead of only near-ties (the same counts; for tests and benchmarks).");
    m.def("sign_flip_count_two_sided", &sign_flip_count_two_sided, py::arg("values"),
          "Exact number of the 2^n sign vectors with |sum s_i x_i| >= |sum x_i| (ties within "
          "the rounding tolerance), n <= 40.");
}
