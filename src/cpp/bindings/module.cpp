#include <pybind11/pybind11.h>

#include "errors.hpp"
#include "truescore/parallel.hpp"

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
void bind_constat(py::module_& m);
void bind_sequence(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "truescore_fast compiled core (internal; use the truescore_fast package)";
    m.attr("__version__") = TRUESCORE_VERSION;  // pyproject.toml's, from CMakeLists.txt
    m.def("default_threads", &truescore::core_count,
          "Threads a call starts when n_threads is None: the CPUs this process may use (its "
          "affinity mask and cgroup CPU quota), read once.");
    truescore::bindings::register_argument_errors(m);  // first: every binding raises them
    m.def("resolve_threads", &truescore::resolve_threads, py::arg("n_threads"),
          "Threads a call runs on for n_threads (0 or less: every usable CPU; a count is capped "
          "at kMaxThreadsPerCore = 4 per usable CPU): the one thread policy, which Python-side work "
          "split by thread sizes itself by.");
    bind_compare(m);
    bind_contamination(m);
    bind_intervals(m);
    bind_randomization(m);
    bind_signflip(m);
    bind_cluster_bootstrap(m);
    bind_resampling(m);
    bind_calibration(m);
    bind_constat(m);
    bind_sequence(m);
    bind_testing(m);
}
