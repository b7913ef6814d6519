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
#include "truescore/compare.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::ArrayI64;
using truescore::bindings::check_value_counts;
using truescore::bindings::require_finite_nonempty;
using truescore::bindings::count_at_least;
using truescore::bindings::run_interruptible;
using truescore::bindings::output_array;
using truescore::bindings::thread_count;

namespace {

py::array_t<double> bootstrap_means(const ArrayD& d, std::int64_t n_boot, std::uint64_t key0,
                                    std::uint64_t key1, const py::object& n_threads) {
    require_finite_nonempty(d, "diffs");
    const std::size_t b = count_at_least(n_boot, "n_bootstrap");
    const int threads = thread_count(n_threads);
    py::array_t<double> out = output_array<double>({static_cast<py::ssize_t>(b)}, "n_bootstrap");
    double* o = out.mutable_data();
    const auto n = static_cast<std::size_t>(d.shape(0));
    run_interruptible(static_cast<double>(b) * static_cast<double>(n),
                      [&] { truescore::bootstrap_means(d.data(), n, b, key0, key1, o, threads); });
    return out;
}

py::array_t<double> bootstrap_means_discrete(const ArrayD& values, const ArrayI64& counts,
                                             std::int64_t n_boot, std::uint64_t key0,
                                             std::uint64_t key1, const py::object& n_threads) {
    require_finite_nonempty(values, "values");
    const std::vector<std::int64_t> c = check_value_counts(counts, values.shape(0), "counts");
    const std::size_t b = count_at_least(n_boot, "n_bootstrap");
    const int threads = thread_count(n_threads);
    py::array_t<double> out = output_array<double>({static_cast<py::ssize_t>(b)}, "n_bootstrap");
    double* o = out.mutable_data();
    const auto k = static_cast<std::size_t>(values.shape(0));
    run_interruptible(8.0 * static_cast<double>(b) * static_cast<double>(k), [&] {
        truescore::bootstrap_means_discrete(values.data(), c.data(), k, b, key0, key1, o, threads);
    });
    return out;
}

}  // namespace

void bind_compare(py::module_& m) {
    m.def("bootstrap_means", &bootstrap_means, py::arg("diffs"), py::arg("n_bootstrap"),
          py::arg("key0"), py::arg("key1"), py::kw_only(), py::arg("n_threads") = py::none(),
          "Means of n_bootstrap resamples (with replacement) of diffs; block k of 256 "
          "resamples draws from Philox task k.");
    m.def("bootstrap_means_discrete", &bootstrap_means_discrete, py::arg("values"),
          py::arg("counts"), py::arg("n_bootstrap"), py::arg("key0"), py::arg("key1"),
          py::kw_only(), py::arg("n_threads") = py::none(),
          "Bootstrap means of data holding counts[k] copies of values[k], one multinomial "
          "(K - 1 conditional binomials) per resample.");
}
