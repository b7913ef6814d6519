#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_contamination(py::module_& m);
void bind_random(py::module_& m);
void bind_audit(py::module_& m);
void bind_calibration(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "truescore_fast compiled core (internal; use the truescore_fast package)";
    bind_contamination(m);
    bind_random(m);
    bind_audit(m);
    bind_calibration(m);
}
