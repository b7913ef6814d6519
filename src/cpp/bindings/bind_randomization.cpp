#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "arrays.hpp"
#include "checks.hpp"
#include "truescore/randomization.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::require_ndim;
using truescore::bindings::thread_count;

namespace {

py::tuple randomization_test(const ArrayD& public_scores, const ArrayD& fresh, long method,
                               long max_denominator, long n_draws, std::uint64_t key0,
                               std::uint64_t key1,
                               const py::object& n_threads) {
    require_ndim(public_scores, 1, "public");
    require_ndim(fresh, 2, "fresh");
    if (fresh.shape(0) != public_scores.shape(0))
        throw std::invalid_argument("fresh must have one row per parent: public has " +
                                    std::to_string(public_scores.shape(0)) + ", fresh has " +
                                    std::to_string(fresh.shape(0)));
    if (n_draws < 1) throw std::invalid_argument("n_resamples must be at least 1");
    const int threads = thread_count(n_threads);
    truescore::RandomizationOutcome r;
    {
        std::optional<py::gil_scoped_release> release;
        if (public_scores.shape(0) > 2000 || method == 2) release.emplace();
        r = truescore::randomization_test(public_scores.data(), fresh.data(),
                                          static_cast<std::size_t>(public_scores.shape(0)),
                                          static_cast<int>(fresh.shape(1)), static_cast<int>(method),
                                          max_denominator, static_cast<std::size_t>(n_draws), key0, key1, threads);
    }
    return py::make_tuple(r.p.p_greater, r.p.p_less, r.p.p_two_sided, r.method, r.denominator,
                          r.statistic, r.informative);
}

}  // namespace

void bind_randomization(py::module_& m) {
    m.def("randomization_test", &randomization_test, py::arg("public"), py::arg("fresh"),
          py::arg("method"), py::arg("max_denominator"), py::arg("n_draws"), py::arg("key0"),
          py::arg("key1"),
          py::kw_only(), py::arg("n_threads") = py::none(),
          "The randomization test from raw scores (method 0 auto, 1 exact, 2 Monte Carlo): "
          "(p_greater, p_less, p_two_sided, method, denominator, statistic, informative).");
}
