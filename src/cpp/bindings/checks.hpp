// Argument checks of the bindings, in one place: each throws truescore::ArgumentError (a
// std::invalid_argument; bindings/errors.cpp raises it as truescore_fast.ArgumentError, a
// ValueError, with .argument set) with a message starting with the argument's name. Each check has
// one name and one meaning; the core checks only what it needs to avoid undefined
// behaviour (sampling.hpp's check_strata, audit's check_gaps).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "truescore/errors.hpp"
#include "truescore/intervals.hpp"
#include "truescore/memory.hpp"

namespace truescore::bindings {

namespace py = pybind11;

inline void require_ndim(const py::array& a, py::ssize_t ndim, const char* name) {
    if (a.ndim() != ndim)
        throw truescore::argument_error(name, " must be " + std::to_string(ndim) +
                                    "-D; got " + std::to_string(a.ndim()) + "-D");
}

// A private copy of a caller's integer array (offsets, counts, sizes, indices). Kernels run
// without the GIL, when another Python thread may write to the caller's buffer: an array
// whose entries are validated and then used as sizes or indices is copied first and the
// copy is both checked and handed to the kernel, so what was checked is what is read.
//
// The same holds for any array whose values a kernel checks and then relies on (labels
// that index a table, values it sorts or selects from, divisors it checked positive):
// those are copied too. Values a kernel only does arithmetic with are read in place (a
// concurrent write then changes the numbers, as it would for NumPy, and nothing else).
template <class T, int Flags>
std::vector<T> snapshot(const py::array_t<T, Flags>& a) {
    return std::vector<T>(a.data(), a.data() + a.size());
}

// MemoryError (truescore_fast.SizeError) naming the argument `name` that set the size of
// an allocation of `bytes` that failed (or cannot be had), with how to reduce it: `advice`,
// a template naming arguments in braces (default: "use a smaller {<name>}"). The message
// and the machine's limit are the core's (memory.hpp), as for Python's checks, which call
// them too: no call back into Python.
[[noreturn]] inline void raise_memory_error(const char* name, double bytes, const char* advice = nullptr) {
    throw truescore::size_error(name, bytes, advice ? advice : "", truescore::memory_limit());
}

// Before allocating about `bytes` set by the argument `name`: MemoryError (as above) when
// that is more than this machine (or its ulimit) can give, rather than a half-built
// result, an out-of-memory kill or a bare std::bad_alloc.
inline void check_memory(const char* name, double bytes, const char* advice = nullptr) {
    if (bytes < 67108864.0) return;  // 64 MB: not worth a look at the machine
    const std::int64_t limit = truescore::memory_limit();
    if (!(bytes < (limit > 0 ? static_cast<double>(limit) : 4611686018427387904.0)))  // 2**62: none known
        throw truescore::size_error(name, bytes, advice ? advice : "", limit);
}

// A new array of `shape` whose size the argument `name` sets: MemoryError naming it when
// the array cannot be allocated, never NumPy's shape dump or a size overflow.
template <class T>
py::array_t<T> output_array(const std::vector<py::ssize_t>& shape, const char* name) {
    double bytes = static_cast<double>(sizeof(T));
    for (const py::ssize_t d : shape) bytes *= static_cast<double>(d);
    check_memory(name, bytes);
    try {
        return py::array_t<T>(shape);
    } catch (py::error_already_set& e) {
        if (e.matches(PyExc_MemoryError)) raise_memory_error(name, bytes);
        throw;
    }
}

// f() when its working memory (about `bytes`, set by the argument `name`) can be
// allocated; a failed allocation inside is a MemoryError naming the argument.
template <class F>
auto with_memory_of(const char* name, double bytes, F f) -> decltype(f()) {
    check_memory(name, bytes);
    try {
        return f();
    } catch (const std::bad_alloc&) {
        raise_memory_error(name, bytes);
    } catch (const std::length_error&) {
        raise_memory_error(name, bytes);
    }
}

// A 1-D array of exactly n entries.
inline void require_length(const py::array& a, std::size_t n, const char* name) {
    require_ndim(a, 1, name);
    if (static_cast<std::size_t>(a.shape(0)) != n)
        throw truescore::argument_error(name, " must have length " + std::to_string(n));
}

inline void require_finite(const double* x, std::size_t n, const char* name) {
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i])) throw truescore::argument_error(name, " contains non-finite values");
}

// Values in [0, 1] (scores, observations): NaN and the infinities fail too.
inline void require_unit(const double* x, std::size_t n, const char* name) {
    for (std::size_t i = 0; i < n; ++i)
        if (!(x[i] >= 0.0 && x[i] <= 1.0))
            throw truescore::argument_error(name, " must hold finite values in [0, 1]");
}

// A 1-D, non-empty array of finite values.
inline void require_finite_nonempty(const ArrayD& x, const char* name) {
    require_ndim(x, 1, name);
    if (x.shape(0) < 1) throw truescore::argument_error(name, " must be non-empty");
    require_finite(x.data(), static_cast<std::size_t>(x.shape(0)), name);
}

// Thread count from Python: None -> 0 (all cores); below 1 is an error.
// Counts above INT_MAX ask for more threads than any machine has: they are capped like any
// count above 4 per core (parallel.hpp).
inline int thread_count(const py::object& n_threads) {
    if (n_threads.is_none()) return 0;
    long long v = 0;
    try {
        v = n_threads.cast<long long>();
    } catch (const py::cast_error&) {
        throw truescore::argument_error("n_threads", " must be a positive integer or None; got " +
                                    std::string(py::repr(n_threads)));
    }
    if (v < 1) throw truescore::argument_error("n_threads", " must be a positive integer or None; got " + std::to_string(v));
    return static_cast<int>(std::min<long long>(v, std::numeric_limits<int>::max()));
}

// A count (resamples, replicates, draws) of at least `minimum`.
inline std::size_t count_at_least(long long v, const char* name, long long minimum = 1) {
    if (v < minimum)
        throw truescore::argument_error(name, " must be at least " + std::to_string(minimum) +
                                    "; got " + std::to_string(v));
    return static_cast<std::size_t>(v);
}

// A probability level strictly inside (0, 1): alpha, alpha_tail.
inline void check_alpha(double alpha, const char* name = "alpha") {
    if (!(alpha > 0.0 && alpha < 1.0))
        throw truescore::argument_error(name, " must lie in (0, 1); got " + std::to_string(alpha));
}

// Per-value multiplicities: 1-D, one positive entry per value (k values). Returns the
// checked snapshot.
inline std::vector<std::int64_t> check_value_counts(const ArrayI64& counts, py::ssize_t k, const char* name) {
    require_ndim(counts, 1, name);
    if (counts.shape(0) != k)
        throw truescore::argument_error(name, " must have one entry per value");
    std::vector<std::int64_t> c = snapshot(counts);
    for (const std::int64_t v : c)
        if (v < 1) throw truescore::argument_error(name, " must be positive");
    return c;
}

// A 1-D array of non-negative sizes, as std::size_t.
inline std::vector<std::size_t> nonnegative_sizes(const ArrayI64& a, const char* name) {
    require_ndim(a, 1, name);
    std::vector<std::size_t> out(static_cast<std::size_t>(a.shape(0)));
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::int64_t v = a.data()[i];  // read once: the copy is what was checked
        if (v < 0) throw truescore::argument_error(name, " must be non-negative");
        out[i] = static_cast<std::size_t>(v);
    }
    return out;
}

// An interval method from its integer code.
inline IntervalMethod interval_method(long code, const char* name = "method") {
    if (code < 0 || code >= kIntervalMethodCount)
        throw truescore::argument_error(name, " must be an interval code in 0.." +
                                    std::to_string(kIntervalMethodCount - 1) + "; got " + std::to_string(code));
    return static_cast<IntervalMethod>(code);
}

// Group offsets (strata, models): 1-D, at least 2 entries, from 0 to `total`, every group
// holding at least `min_size` values. Returns the checked snapshot (groups: size() - 1).
inline std::vector<std::int64_t> check_group_offsets(const ArrayI64& offsets, std::size_t total,
                                                     const char* name, long long min_size) {
    require_ndim(offsets, 1, name);
    if (offsets.shape(0) < 2) throw truescore::argument_error(name, " needs at least 2 entries");
    std::vector<std::int64_t> o = snapshot(offsets);
    const std::size_t groups = o.size() - 1;
    if (o[0] != 0) throw truescore::argument_error(name, " must start at 0");
    for (std::size_t h = 0; h < groups; ++h)
        if (o[h + 1] < o[h] || o[h + 1] - o[h] < min_size)
            throw truescore::argument_error(name, ": every group needs at least " +
                                        std::to_string(min_size) + " values");
    if (static_cast<std::size_t>(o[groups]) != total)
        throw truescore::argument_error(name, " must end at the number of values");
    return o;
}

// Ragged-row offsets of the rank tests: exactly n_shards + 1 entries, from 0, strictly
// increasing (every shard holds a value), ending at n_values. Returns the checked snapshot.
inline std::vector<std::int64_t> check_shard_offsets(const ArrayI64& offsets, py::ssize_t n_shards,
                                                     py::ssize_t n_values) {
    require_ndim(offsets, 1, "offsets");
    if (offsets.shape(0) != n_shards + 1)
        throw truescore::argument_error("offsets", " must have length n_shards + 1 = " + std::to_string(n_shards + 1) +
                                    "; got " + std::to_string(offsets.shape(0)));
    std::vector<std::int64_t> o = snapshot(offsets);
    if (o[0] != 0) throw truescore::argument_error("offsets", " must start at 0");
    for (py::ssize_t i = 0; i < n_shards; ++i) {
        if (o[i + 1] <= o[i])
            throw truescore::argument_error("offsets", " must be strictly increasing: shard " + std::to_string(i) +
                                        " has no permutations");
    }
    if (o[n_shards] != n_values)
        throw truescore::argument_error("offsets", " must end at len(values) = " + std::to_string(n_values) + "; got " +
                                    std::to_string(o[n_shards]));
    return o;
}

}  // namespace truescore::bindings
