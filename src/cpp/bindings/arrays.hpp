// Array policy for every binding, in one place (argument checks: checks.hpp).
//
// Every array argument arrives as an array_t with kInput flags: C-contiguous, aligned
// float64 (or int64, uint8) arrives without a copy; anything else is converted exactly
// once by NumPy (PyArray_FromAny) before the kernel sees it: other dtypes, lists,
// non-contiguous, offset or negative-stride views, and views whose data is not aligned
// for the element type (np.frombuffer(bytearray(8 * n + 1), offset=1)): a kernel never
// reads a misaligned double* (undefined behaviour, a fault on strict-alignment CPUs).
// pybind11's own check_ tests contiguity but not alignment; the conversion does both,
// because NPY_ARRAY_ALIGNED is among the flags handed to it. Read-only arrays are fine:
// inputs are only read (outputs are new arrays).
//
// ArrayStrided (ranks of a dense permuted matrix) keeps any strides, so a zero-stride
// np.broadcast_to view is read in place; it is aligned all the same.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>

namespace truescore::bindings {

namespace py = pybind11;

inline constexpr int kAligned = py::detail::npy_api::NPY_ARRAY_ALIGNED_;
inline constexpr int kInput = py::array::c_style | py::array::forcecast | kAligned;

using ArrayD = py::array_t<double, kInput>;
using ArrayI64 = py::array_t<std::int64_t, kInput>;
using ArrayU8 = py::array_t<std::uint8_t, kInput>;
using ArrayStrided = py::array_t<double, py::array::forcecast | kAligned>;

}  // namespace truescore::bindings
