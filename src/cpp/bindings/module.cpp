#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_compare(py::module_& m);
void bind_contamination(py::module_& m);
void bind_testing(py::module_& m);
void bind_intervals(py::module_& m);
void bind_randomization(py::module_& m);
void bind_signflip(py::module_& m);
void bind_cluster_bootstrap(py::module_& m);
void bind_resampling(py::module_& m);
void bind_calibration(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "truescore_fast compiled core (internal; use the truescore_fast package)";
    m.attr("__version__") = TRUESCORE_VERSION;  // pyproject.toml's, from CMakeLists.txt
    bind_compare(m);
    bind_contamination(m);
    bind_intervals(m);
    bind_randomization(m);
    bind_signflip(m);
    bind_cluster_bootstrap(m);
    bind_resampling(m);
    bind_calibration(m);
    bind_testing(m);
}
