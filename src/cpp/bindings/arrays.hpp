// Array policy for every binding, in one place.
//
// Inputs are c_style | forcecast: C-contiguous float64 arrives without a copy, anything
// else (float32, ints, lists, strided views) is converted exactly once by pybind11.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace truescore::bindings {

namespace py = pybind11;

using ArrayD = py::array_t<double, py::array::c_style | py::array::forcecast>;
using ArrayI64 = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

inline void require_ndim(const py::array& a, py::ssize_t ndim, const char* name) {
    if (a.ndim() != ndim)
        throw std::invalid_argument(std::string(name) + " must be " + std::to_string(ndim) +
                                    "-D; got " + std::to_string(a.ndim()) + "-D");
}

// Thread count from Python: None -> 0 (all cores); negative is an error.
inline int thread_count(const py::object& n_threads) {
    if (n_threads.is_none()) return 0;
    const long v = n_threads.cast<long>();
    if (v < 1) throw std::invalid_argument("n_threads must be a positive integer or None; got " + std::to_string(v));
    return static_cast<int>(v);
}

// A 1-D, non-empty array of finite values.
inline void require_finite_nonempty(const ArrayD& x, const char* name) {
    require_ndim(x, 1, name);
    if (x.shape(0) < 1) throw std::invalid_argument(std::string(name) + " must be non-empty");
    const double* p = x.data();
    for (py::ssize_t i = 0; i < x.shape(0); ++i)
        if (!std::isfinite(p[i]))
            throw std::invalid_argument(std::string(name) + " contains non-finite values");
}

inline std::size_t resample_count(std::int64_t n, const char* name) {
    if (n < 1) throw std::invalid_argument(std::string(name) + " must be at least 1; got " + std::to_string(n));
    return static_cast<std::size_t>(n);
}

inline void check_counts(const ArrayI64& counts, py::ssize_t k, const char* name) {
    require_ndim(counts, 1, name);
    if (counts.shape(0) != k)
        throw std::invalid_argument(std::string(name) + " must have one entry per value");
    for (py::ssize_t j = 0; j < k; ++j)
        if (counts.data()[j] < 1) throw std::invalid_argument(std::string(name) + " must be positive");
}

}  // namespace truescore::bindings
