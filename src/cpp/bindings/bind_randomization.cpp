#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "checks.hpp"
#include "interrupt.hpp"
#include "truescore/randomization.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::require_ndim;
using truescore::bindings::run_interruptible;
using truescore::bindings::thread_count;

namespace {

py::tuple randomization_test(const ArrayD& public_scores, const ArrayD& fresh, long method,
                               long max_denominator, long n_draws, std::uint64_t key0,
                               std::uint64_t key1,
                               const py::object& n_threads) {
    require_ndim(public_scores, 1, "public");
    require_ndim(fresh, 2, "fresh");
    if (fresh.shape(0) != public_scores.shape(0))
        throw truescore::argument_error("fresh", " must have one row per parent: public has " +
                                    std::to_string(public_scores.shape(0)) + ", fresh has " +
                                    std::to_string(fresh.shape(0)));
    if (n_draws < 1) throw truescore::argument_error("n_resamples", " must be at least 1");
    const int threads = thread_count(n_threads);
    const std::size_t n = static_cast<std::size_t>(public_scores.shape(0));
    const std::size_t k = static_cast<std::size_t>(fresh.shape(1));
    // The kernel validates the scores and then reads them again (lattice detection, the
    // draws): it gets copies, so another thread writing to the caller's arrays cannot
    // change a score between its check and its use.
    const std::vector<double> pub(public_scores.data(), public_scores.data() + n);
    const std::vector<double> fr(fresh.data(), fresh.data() + n * k);
    // Monte Carlo costs n_draws n (K + 1) steps; an exact lattice convolution n^2 (K + 1)
    // times a lattice factor not known before the scores are read (8 is a low guess).
    const double size = static_cast<double>(n) * static_cast<double>(k + 1);
    const double work = size * (static_cast<double>(n_draws) + 8.0 * static_cast<double>(n));
    const truescore::RandomizationOutcome r = run_interruptible(work, [&] {
        return truescore::randomization_test(pub.data(), fr.data(), n, static_cast<int>(k), static_cast<int>(method),
                                             max_denominator, static_cast<std::size_t>(n_draws), key0, key1, threads);
    });
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
