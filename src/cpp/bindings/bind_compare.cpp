#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "arrays.hpp"
#include "truescore/compare.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::ArrayI64;
using truescore::bindings::require_ndim;
using truescore::bindings::thread_count;

namespace {

void require_finite_nonempty(const ArrayD& x, const char* name) {
    require_ndim(x, 1, name);
    if (x.shape(0) < 1) throw std::invalid_argument(std::string(name) + " must be non-empty");
    const double* p = x.data();
    for (py::ssize_t i = 0; i < x.shape(0); ++i)
        if (!std::isfinite(p[i]))
            throw std::invalid_argument(std::string(name) + " contains non-finite values");
}

std::size_t resample_count(std::int64_t n, const char* name) {
    if (n < 1) throw std::invalid_argument(std::string(name) + " must be at least 1; got " + std::to_string(n));
    return static_cast<std::size_t>(n);
}

py::dict counts_dict(const truescore::SignFlipCounts& c) {
    py::dict d;
    d["at_most"] = c.at_most;
    d["at_least"] = c.at_least;
    d["total"] = c.total;
    d["observed"] = c.observed;
    return d;
}

py::array_t<double> bootstrap_means(const ArrayD& d, std::int64_t n_boot, std::uint64_t key0,
                                    std::uint64_t key1, const py::object& n_threads) {
    require_finite_nonempty(d, "diffs");
    const std::size_t b = resample_count(n_boot, "n_bootstrap");
    const int threads = thread_count(n_threads);
    py::array_t<double> out(static_cast<py::ssize_t>(b));
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        truescore::bootstrap_means(d.data(), static_cast<std::size_t>(d.shape(0)), b, key0, key1, o, threads);
    }
    return out;
}

py::array_t<double> cluster_bootstrap_means(const ArrayD& sums, const ArrayI64& sizes,
                                            std::int64_t n_boot, std::uint64_t key0,
                                            std::uint64_t key1, const py::object& n_threads) {
    require_finite_nonempty(sums, "sums");
    require_ndim(sizes, 1, "sizes");
    if (sizes.shape(0) != sums.shape(0))
        throw std::invalid_argument("sizes must have one entry per cluster");
    const std::int64_t* s = sizes.data();
    for (py::ssize_t g = 0; g < sizes.shape(0); ++g)
        if (s[g] < 1) throw std::invalid_argument("sizes must be positive");
    const std::size_t b = resample_count(n_boot, "n_bootstrap");
    const int threads = thread_count(n_threads);
    py::array_t<double> out(static_cast<py::ssize_t>(b));
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        truescore::cluster_bootstrap_means(sums.data(), s, static_cast<std::size_t>(sums.shape(0)), b,
                                           key0, key1, o, threads);
    }
    return out;
}

py::dict sign_flip_exact(const ArrayD& a, const ArrayD& b, const py::object& n_threads) {
    require_finite_nonempty(a, "a");
    require_finite_nonempty(b, "b");
    if (a.shape(0) != b.shape(0)) throw std::invalid_argument("a and b must have the same length");
    if (static_cast<std::size_t>(a.shape(0)) > truescore::kMaxExactPairs)
        throw std::invalid_argument("exact enumeration supports at most " +
                                    std::to_string(truescore::kMaxExactPairs) + " pairs");
    const int threads = thread_count(n_threads);
    truescore::SignFlipCounts c;
    {
        py::gil_scoped_release release;
        c = truescore::sign_flip_exact(a.data(), b.data(), static_cast<std::size_t>(a.shape(0)), threads);
    }
    return counts_dict(c);
}

py::dict sign_flip_monte_carlo(const ArrayD& d, std::int64_t n_resamples, std::uint64_t key0,
                               std::uint64_t key1, const py::object& n_threads) {
    require_finite_nonempty(d, "diffs");
    const std::size_t b = resample_count(n_resamples, "n_resamples");
    const int threads = thread_count(n_threads);
    truescore::SignFlipCounts c;
    {
        py::gil_scoped_release release;
        c = truescore::sign_flip_monte_carlo(d.data(), static_cast<std::size_t>(d.shape(0)), b, key0,
                                             key1, threads);
    }
    return counts_dict(c);
}

}  // namespace

void bind_compare(py::module_& m) {
    m.attr("RESAMPLE_BLOCK") = truescore::kResampleBlock;
    m.attr("MAX_EXACT_PAIRS") = truescore::kMaxExactPairs;
    m.def("bootstrap_means", &bootstrap_means, py::arg("diffs"), py::arg("n_bootstrap"),
          py::arg("key0"), py::arg("key1"), py::kw_only(), py::arg("n_threads") = py::none(),
          "Means of n_bootstrap resamples (with replacement) of diffs; block k of 256 "
          "resamples draws from Philox task k.");
    m.def("cluster_bootstrap_means", &cluster_bootstrap_means, py::arg("sums"), py::arg("sizes"),
          py::arg("n_bootstrap"), py::arg("key0"), py::arg("key1"), py::kw_only(),
          py::arg("n_threads") = py::none(),
          "Ratio means of n_bootstrap cluster resamples: sum of drawn sums / sum of drawn sizes.");
    m.def("sign_flip_exact", &sign_flip_exact, py::arg("a"), py::arg("b"), py::kw_only(),
          py::arg("n_threads") = py::none(),
          "Exact sign-flip counts over all 2^n swap patterns (scipy's statistic and tie rule).");
    m.def("sign_flip_monte_carlo", &sign_flip_monte_carlo, py::arg("diffs"), py::arg("n_resamples"),
          py::arg("key0"), py::arg("key1"), py::kw_only(), py::arg("n_threads") = py::none(),
          "Sign-flip counts over n_resamples random sign patterns of diffs.");
}
