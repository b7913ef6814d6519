#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "arrays.hpp"
#include "truescore/signflip.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::require_ndim;
using truescore::bindings::thread_count;

namespace {

py::dict sign_flip_test(const ArrayD& differences, bool exact, std::int64_t n_resamples,
                        std::uint64_t key0, std::uint64_t key1, double alpha_tail,
                        const py::object& n_threads) {
    require_ndim(differences, 1, "differences");
    const auto n = static_cast<std::size_t>(differences.shape(0));
    if (n == 0) throw std::invalid_argument("differences must be non-empty");
    const double* d = differences.data();
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(d[i])) throw std::invalid_argument("differences contains non-finite values");
    if (exact && n > truescore::kSignFlipMaxExact)
        throw std::invalid_argument("exact enumeration needs at most " +
                                    std::to_string(truescore::kSignFlipMaxExact) +
                                    " differences; got " + std::to_string(n));
    if (!exact && n_resamples < 1)
        throw std::invalid_argument("n_resamples must be at least 1; got " + std::to_string(n_resamples));
    if (!(alpha_tail > 0.0 && alpha_tail < 1.0))
        throw std::invalid_argument("alpha_tail must lie in (0, 1)");
    const int threads = thread_count(n_threads);
    truescore::SignFlipResult r{};
    {
        py::gil_scoped_release release;
        r = truescore::sign_flip_test(d, n, exact, n_resamples, key0, key1, alpha_tail, threads);
    }
    py::dict out;
    out["n_patterns"] = r.n_patterns;
    out["count_greater"] = r.count_greater;
    out["count_less"] = r.count_less;
    out["count_two_sided"] = r.count_two_sided;
    out["lower"] = r.lower;
    out["upper"] = r.upper;
    return out;
}

}  // namespace

void bind_signflip(py::module_& m) {
    m.def("sign_flip_test", &sign_flip_test, py::arg("differences"), py::kw_only(),
          py::arg("exact"), py::arg("n_resamples"), py::arg("key0"), py::arg("key1"),
          py::arg("alpha_tail"), py::arg("n_threads") = py::none(),
          "Paired sign-flip test: counts of flip patterns at least as extreme as the data "
          "(identity included) and the test-inverted confidence bounds at alpha_tail.");
}
