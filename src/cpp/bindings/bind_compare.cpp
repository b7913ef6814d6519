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

void check_counts(const ArrayI64& counts, py::ssize_t k, const char* name) {
    require_ndim(counts, 1, name);
    if (counts.shape(0) != k)
        throw std::invalid_argument(std::string(name) + " must have one entry per value");
    for (py::ssize_t j = 0; j < k; ++j)
        if (counts.data()[j] < 1) throw std::invalid_argument(std::string(name) + " must be positive");
}

py::array_t<double> bootstrap_means_discrete(const ArrayD& values, const ArrayI64& counts,
                                             std::int64_t n_boot, std::uint64_t key0,
                                             std::uint64_t key1, const py::object& n_threads) {
    require_finite_nonempty(values, "values");
    check_counts(counts, values.shape(0), "counts");
    const std::size_t b = resample_count(n_boot, "n_bootstrap");
    const int threads = thread_count(n_threads);
    py::array_t<double> out(static_cast<py::ssize_t>(b));
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        truescore::bootstrap_means_discrete(values.data(), counts.data(),
                                            static_cast<std::size_t>(values.shape(0)), b, key0, key1,
                                            o, threads);
    }
    return out;
}

py::dict sign_flip_monte_carlo_grouped(const ArrayD& magnitudes, const ArrayI64& counts,
                                       const ArrayI64& net, std::int64_t n_resamples,
                                       std::uint64_t key0, std::uint64_t key1,
                                       const py::object& n_threads) {
    require_ndim(magnitudes, 1, "magnitudes");
    const py::ssize_t k = magnitudes.shape(0);
    for (py::ssize_t j = 0; j < k; ++j)
        if (!(std::isfinite(magnitudes.data()[j]) && magnitudes.data()[j] > 0.0))
            throw std::invalid_argument("magnitudes must be finite and positive");
    check_counts(counts, k, "counts");
    require_ndim(net, 1, "net");
    if (net.shape(0) != k) throw std::invalid_argument("net must have one entry per magnitude");
    for (py::ssize_t j = 0; j < k; ++j)
        if (net.data()[j] > counts.data()[j] || net.data()[j] < -counts.data()[j])
            throw std::invalid_argument("|net| cannot exceed counts");
    const std::size_t b = resample_count(n_resamples, "n_resamples");
    const int threads = thread_count(n_threads);
    truescore::SignFlipCounts c;
    {
        py::gil_scoped_release release;
        c = truescore::sign_flip_monte_carlo_grouped(magnitudes.data(), counts.data(), net.data(),
                                                     static_cast<std::size_t>(k), b, key0, key1,
                                                     threads);
    }
    return counts_dict(c);
}

py::array_t<std::int64_t> binomial_sample(std::int64_t n, double p, std::int64_t size,
                                          std::uint64_t key0, std::uint64_t key1) {
    if (size < 0) throw std::invalid_argument("size must be non-negative");
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(size));
    std::int64_t* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        truescore::binomial_sample(n, p, static_cast<std::size_t>(size), key0, key1, o);
    }
    return out;
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
    m.def("bootstrap_means_discrete", &bootstrap_means_discrete, py::arg("values"),
          py::arg("counts"), py::arg("n_bootstrap"), py::arg("key0"), py::arg("key1"),
          py::kw_only(), py::arg("n_threads") = py::none(),
          "Bootstrap means of data holding counts[k] copies of values[k], one multinomial "
          "(K - 1 conditional binomials) per resample.");
    m.def("sign_flip_monte_carlo_grouped", &sign_flip_monte_carlo_grouped, py::arg("magnitudes"),
          py::arg("counts"), py::arg("net"), py::arg("n_resamples"), py::arg("key0"), py::arg("key1"),
          py::kw_only(), py::arg("n_threads") = py::none(),
          "Sign-flip counts from grouped |differences| (popcount of random bits per group).");
    m.def("binomial_sample", &binomial_sample, py::arg("n"), py::arg("p"), py::arg("size"),
          py::arg("key0"), py::arg("key1"),
          "size Binomial(n, p) variates from Philox task 0 (the bootstrap's sampler; for tests).");
    m.def("sign_flip_exact", &sign_flip_exact, py::arg("a"), py::arg("b"), py::kw_only(),
          py::arg("n_threads") = py::none(),
          "Exact sign-flip counts over all 2^n swap patterns (scipy's statistic and tie rule).");
    m.def("sign_flip_monte_carlo", &sign_flip_monte_carlo, py::arg("diffs"), py::arg("n_resamples"),
          py::arg("key0"), py::arg("key1"), py::kw_only(), py::arg("n_threads") = py::none(),
          "Sign-flip counts over n_resamples random sign patterns of diffs.");
}
