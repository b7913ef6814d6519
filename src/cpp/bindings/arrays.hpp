// Array policy for every binding, in one place (argument checks: checks.hpp).
//
// Inputs are c_style | forcecast: C-contiguous float64 arrives without a copy, anything
// else (float32, ints, lists, strided views) is converted exactly once by pybind11.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>

namespace truescore::bindings {

namespace py = pybind11;

using ArrayD = py::array_t<double, py::array::c_style | py::array::forcecast>;
using ArrayI64 = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using ArrayU8 = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;

}  // namespace truescore::bindings
