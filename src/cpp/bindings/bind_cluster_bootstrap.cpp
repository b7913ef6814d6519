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
#include "truescore/cluster_bootstrap.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::ArrayI64;
using truescore::bindings::require_finite_nonempty;
using truescore::bindings::count_at_least;
using truescore::bindings::require_ndim;
using truescore::bindings::snapshot;
using truescore::bindings::run_interruptible;
using truescore::bindings::output_array;
using truescore::bindings::thread_count;

namespace {

py::array_t<double> cluster_bootstrap_means(const ArrayD& sums, const ArrayI64& sizes,
                                            std::int64_t n_boot, std::uint64_t key0,
                                            std::uint64_t key1, const py::object& n_threads) {
    require_finite_nonempty(sums, "sums");
    require_ndim(sizes, 1, "sizes");
    if (sizes.shape(0) != sums.shape(0))
        throw truescore::argument_error("sizes", " must have one entry per cluster");
    const std::vector<std::int64_t> snap = snapshot(sizes);
    const std::int64_t* s = snap.data();
    for (const std::int64_t v : snap)
        if (v < 1) throw truescore::argument_error("sizes", " must be positive");
    const std::size_t b = count_at_least(n_boot, "n_bootstrap");
    const int threads = thread_count(n_threads);
    py::array_t<double> out = output_array<double>({static_cast<py::ssize_t>(b)}, "n_bootstrap");
    double* o = out.mutable_data();
    const auto g = static_cast<std::size_t>(sums.shape(0));
    run_interruptible(static_cast<double>(b) * static_cast<double>(g),
                      [&] { truescore::cluster_bootstrap_means(sums.data(), s, g, b, key0, key1, o, threads); });
    return out;
}

py::array_t<double> cluster_bootstrap_difference(const ArrayD& treated_sum,
                                                 const ArrayD& treated_count,
                                                 const ArrayD& control_sum,
                                                 const ArrayD& control_count,
                                                 std::int64_t n_resamples, std::uint64_t key0,
                                                 std::uint64_t key1, const py::object& n_threads) {
    const char* names[4] = {"treated_sum", "treated_count", "control_sum", "control_count"};
    const ArrayD* arrays[4] = {&treated_sum, &treated_count, &control_sum, &control_count};
    for (int a = 0; a < 4; ++a) require_ndim(*arrays[a], 1, names[a]);
    const py::ssize_t f = treated_sum.shape(0);
    if (f < 1) throw truescore::argument_error("treated_sum", " must be non-empty (one entry per family)");
    // The counts are checked to be at least 1 and then divided by: the kernel reads the
    // checked copies (one entry per family, small).
    std::vector<double> copies[4];
    for (int a = 0; a < 4; ++a) {
        if (arrays[a]->shape(0) != f)
            throw truescore::argument_error(names[a], " must have one entry per family (" +
                                        std::to_string(f) + ")");
        copies[a] = snapshot(*arrays[a]);
        const double* p = copies[a].data();
        for (py::ssize_t i = 0; i < f; ++i) {
            if (!std::isfinite(p[i]))
                throw truescore::argument_error(names[a], " contains non-finite values");
            if (a % 2 == 1 && !(p[i] >= 1.0))
                throw std::invalid_argument(std::string(names[a]) +
                                            " must be at least 1 for every family");
        }
    }
    if (n_resamples < 1)
        throw truescore::argument_error("n_resamples", " must be at least 1; got " + std::to_string(n_resamples));
    const int threads = thread_count(n_threads);
    py::array_t<double> out = output_array<double>({static_cast<py::ssize_t>(n_resamples)}, "n_resamples");
    double* o = out.mutable_data();
    run_interruptible(static_cast<double>(n_resamples) * static_cast<double>(f), [&] {
        truescore::cluster_bootstrap_difference(copies[0].data(), copies[1].data(), copies[2].data(),
                                                copies[3].data(),
                                                static_cast<std::size_t>(f), static_cast<std::size_t>(n_resamples), key0,
                                                key1, o, threads);
    });
    return out;
}

}  // namespace

void bind_cluster_bootstrap(py::module_& m) {
    m.def("cluster_bootstrap_means", &cluster_bootstrap_means, py::arg("sums"), py::arg("sizes"),
          py::arg("n_bootstrap"), py::arg("key0"), py::arg("key1"), py::kw_only(),
          py::arg("n_threads") = py::none(),
          "Ratio means of n_bootstrap cluster resamples: sum of drawn sums / sum of drawn sizes.");
    m.def("cluster_bootstrap_difference", &cluster_bootstrap_difference, py::arg("treated_sum"),
          py::arg("treated_count"), py::arg("control_sum"), py::arg("control_count"),
          py::kw_only(), py::arg("n_resamples"), py::arg("key0"), py::arg("key1"),
          py::arg("n_threads") = py::none(),
          "Family-clustered bootstrap replicates of a treated-minus-control difference in "
          "means, from per-family sums and counts.");
}
