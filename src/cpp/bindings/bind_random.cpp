#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"

namespace py = pybind11;

void bind_random(py::module_& m) {
    m.def("resolved_threads", &truescore::resolve_threads, py::arg("n_threads"),
          "Threads a kernel runs on for n_threads (0 or less: every core).");
    m.def(
        "philox_raw",
        [](std::uint64_t key0, std::uint64_t key1, std::uint64_t task, py::ssize_t n) {
            if (n < 0) throw std::invalid_argument("n must be non-negative");
            py::array_t<std::uint64_t> out(n);
            auto* p = out.mutable_data();
            truescore::Philox gen = truescore::Philox::for_task(key0, key1, task);
            for (py::ssize_t i = 0; i < n; ++i) p[i] = gen.next_u64();
            return out;
        },
        py::arg("key0"), py::arg("key1"), py::arg("task"), py::arg("n"),
        "First n raw 64-bit outputs of task `task`'s Philox4x64-10 stream: "
        "numpy.random.Philox(key=[key0, key1], counter=[0, 0, task, 0]).random_raw(n).");
}
