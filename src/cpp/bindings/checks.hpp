// Argument checks of the bindings, in one place: each throws std::invalid_argument
// (pybind11 turns it into ValueError) with a message naming the argument. Each check has
// one name and one meaning; the core checks only what it needs to avoid undefined
// behaviour (sampling.hpp's check_strata, audit's check_gaps).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "truescore/intervals.hpp"

namespace truescore::bindings {

namespace py = pybind11;

inline void require_ndim(const py::array& a, py::ssize_t ndim, const char* name) {
    if (a.ndim() != ndim)
        throw std::invalid_argument(std::string(name) + " must be " + std::to_string(ndim) +
                                    "-D; got " + std::to_string(a.ndim()) + "-D");
}

// A 1-D array of exactly n entries.
inline void require_length(const py::array& a, std::size_t n, const char* name) {
    require_ndim(a, 1, name);
    if (static_cast<std::size_t>(a.shape(0)) != n)
        throw std::invalid_argument(std::string(name) + " must have length " + std::to_string(n));
}

inline void require_finite(const double* x, std::size_t n, const char* name) {
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i])) throw std::invalid_argument(std::string(name) + " contains non-finite values");
}

// A 1-D, non-empty array of finite values.
inline void require_finite_nonempty(const ArrayD& x, const char* name) {
    require_ndim(x, 1, name);
    if (x.shape(0) < 1) throw std::invalid_argument(std::string(name) + " must be non-empty");
    require_finite(x.data(), static_cast<std::size_t>(x.shape(0)), name);
}

// Thread count from Python: None -> 0 (all cores); below 1 is an error.
inline int thread_count(const py::object& n_threads) {
    if (n_threads.is_none()) return 0;
    const long v = n_threads.cast<long>();
    if (v < 1) throw std::invalid_argument("n_threads must be a positive integer or None; got " + std::to_string(v));
    return static_cast<int>(v);
}

// A count (resamples, replicates, draws) of at least `minimum`.
inline std::size_t count_at_least(long long v, const char* name, long long minimum = 1) {
    if (v < minimum)
        throw std::invalid_argument(std::string(name) + " must be at least " + std::to_string(minimum) +
                                    "; got " + std::to_string(v));
    return static_cast<std::size_t>(v);
}

// A probability level strictly inside (0, 1): alpha, alpha_tail.
inline void check_alpha(double alpha, const char* name = "alpha") {
    if (!(alpha > 0.0 && alpha < 1.0))
        throw std::invalid_argument(std::string(name) + " must lie in (0, 1); got " + std::to_string(alpha));
}

// Per-value multiplicities: 1-D, one positive entry per value (k values).
inline void check_value_counts(const ArrayI64& counts, py::ssize_t k, const char* name) {
    require_ndim(counts, 1, name);
    if (counts.shape(0) != k)
        throw std::invalid_argument(std::string(name) + " must have one entry per value");
    for (py::ssize_t j = 0; j < k; ++j)
        if (counts.data()[j] < 1) throw std::invalid_argument(std::string(name) + " must be positive");
}

// A 1-D array of non-negative sizes, as std::size_t.
inline std::vector<std::size_t> nonnegative_sizes(const ArrayI64& a, const char* name) {
    require_ndim(a, 1, name);
    std::vector<std::size_t> out(static_cast<std::size_t>(a.shape(0)));
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (a.data()[i] < 0) throw std::invalid_argument(std::string(name) + " must be non-negative");
        out[i] = static_cast<std::size_t>(a.data()[i]);
    }
    return out;
}

// An interval method from its integer code.
inline IntervalMethod interval_method(long code, const char* name = "method") {
    if (code < 0 || code >= kIntervalMethodCount)
        throw std::invalid_argument(std::string(name) + " must be an interval code in 0.." +
                                    std::to_string(kIntervalMethodCount - 1) + "; got " + std::to_string(code));
    return static_cast<IntervalMethod>(code);
}

// Group offsets (strata, models): 1-D, at least 2 entries, from 0 to `total`, every group
// holding at least `min_size` values. Returns the number of groups.
inline std::size_t check_group_offsets(const ArrayI64& offsets, std::size_t total, const char* name,
                                       long long min_size) {
    require_ndim(offsets, 1, name);
    if (offsets.shape(0) < 2) throw std::invalid_argument(std::string(name) + " needs at least 2 entries");
    const std::int64_t* o = offsets.data();
    const std::size_t groups = static_cast<std::size_t>(offsets.shape(0) - 1);
    if (o[0] != 0) throw std::invalid_argument(std::string(name) + " must start at 0");
    for (std::size_t h = 0; h < groups; ++h)
        if (o[h + 1] - o[h] < min_size)
            throw std::invalid_argument(std::string(name) + ": every group needs at least " +
                                        std::to_string(min_size) + " values");
    if (static_cast<std::size_t>(o[groups]) != total)
        throw std::invalid_argument(std::string(name) + " must end at the number of values");
    return groups;
}

// Ragged-row offsets of the rank tests: exactly n_shards + 1 entries, from 0, strictly
// increasing (every shard holds a value), ending at n_values.
inline void check_shard_offsets(const ArrayI64& offsets, py::ssize_t n_shards, py::ssize_t n_values) {
    require_ndim(offsets, 1, "offsets");
    if (offsets.shape(0) != n_shards + 1)
        throw std::invalid_argument("offsets must have length n_shards + 1 = " + std::to_string(n_shards + 1) +
                                    "; got " + std::to_string(offsets.shape(0)));
    const std::int64_t* o = offsets.data();
    if (o[0] != 0) throw std::invalid_argument("offsets must start at 0");
    for (py::ssize_t i = 0; i < n_shards; ++i) {
        if (o[i + 1] <= o[i])
            throw std::invalid_argument("offsets must be strictly increasing: shard " + std::to_string(i) +
                                        " has no permutations");
    }
    if (o[n_shards] != n_values)
        throw std::invalid_argument("offsets must end at len(values) = " + std::to_string(n_values) + "; got " +
                                    std::to_string(o[n_shards]));
}

}  // namespace truescore::bindings
