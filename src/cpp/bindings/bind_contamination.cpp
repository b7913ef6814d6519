#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "checks.hpp"
#include "interrupt.hpp"
#include "truescore/contamination.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::ArrayI64;
using truescore::bindings::ArrayStrided;
using truescore::bindings::check_memory;
using truescore::bindings::check_shard_offsets;
using truescore::bindings::require_ndim;
using truescore::bindings::run_interruptible;
using truescore::bindings::thread_count;

namespace {

py::dict make_outputs(py::ssize_t n, truescore::RankOutputs& out) {
    py::array_t<std::int64_t> count(n);
    py::array_t<double> p(n), mean(n), sd(n), z(n);
    out = {count.mutable_data(), p.mutable_data(), mean.mutable_data(), sd.mutable_data(),
           z.mutable_data()};
    py::dict d;
    d["count"] = count;
    d["p_value"] = p;
    d["mean"] = mean;
    d["sd"] = sd;
    d["z_score"] = z;
    return d;
}

void raise_non_finite(std::int64_t bad, const char* name) {
    if (bad >= 0)
        throw truescore::argument_error(name, " contains non-finite values (shard " +
                                    std::to_string(bad) + ")");
}

// Any aligned float64 layout, not copied: the dense rank tests read rows in place when they
// can (arrays.hpp).

py::dict rank_tests_dense(const ArrayD& canonical, const ArrayStrided& permuted, const py::object& n_threads) {
    require_ndim(canonical, 1, "canonical");
    require_ndim(permuted, 2, "permuted");
    const py::ssize_t s = canonical.shape(0);
    if (permuted.shape(0) != s)
        throw truescore::argument_error("permuted", " must have one row per shard: " + std::to_string(s) +
                                    " canonical values but " + std::to_string(permuted.shape(0)) + " rows");
    if (permuted.shape(1) < 1 && s > 0)
        throw truescore::argument_error("permuted", " must hold at least one permutation per shard");
    const int threads = thread_count(n_threads);
    const auto m = static_cast<std::size_t>(permuted.shape(1));
    // Rows whose values are adjacent (a C array, a slice of rows, a zero-stride
    // np.broadcast_to of one row) are read in place at their row stride; any other layout
    // is copied once, after a check that the copy fits in memory.
    constexpr auto item = static_cast<py::ssize_t>(sizeof(double));
    const bool rows_in_place = (m <= 1 || permuted.strides(1) == item) &&
                               (s <= 1 || (permuted.strides(0) >= 0 && permuted.strides(0) % item == 0));
    std::optional<ArrayD> copy;
    const double* base = permuted.data();
    std::size_t row_stride = s <= 1 ? 0 : static_cast<std::size_t>(permuted.strides(0) / item);
    if (!rows_in_place) {
        check_memory("permuted", static_cast<double>(s) * static_cast<double>(m) * 8.0,
                     "pass a smaller {permuted}, or one whose rows are contiguous (read in place)");
        copy.emplace(ArrayD::ensure(permuted));
        if (!copy->ptr()) throw py::error_already_set();
        base = copy->data();
        row_stride = m;
    }
    truescore::RankOutputs out{};
    py::dict d = make_outputs(s, out);
    const std::int64_t bad = run_interruptible(static_cast<double>(s) * static_cast<double>(m), [&] {
        return truescore::rank_tests_dense(canonical.data(), base, static_cast<std::size_t>(s), m, row_stride, out,
                                           threads);
    });
    raise_non_finite(bad, "permuted");
    return d;
}

py::dict rank_tests_ragged(const ArrayD& canonical, const ArrayD& values, const ArrayI64& offsets,
                           const py::object& n_threads) {
    require_ndim(canonical, 1, "canonical");
    require_ndim(values, 1, "values");
    const py::ssize_t s = canonical.shape(0);
    const std::vector<std::int64_t> o = check_shard_offsets(offsets, s, values.shape(0));
    const int threads = thread_count(n_threads);
    truescore::RankOutputs out{};
    py::dict d = make_outputs(s, out);
    const std::int64_t bad = run_interruptible(static_cast<double>(values.shape(0)), [&] {
        return truescore::rank_tests_ragged(canonical.data(), values.data(), o.data(), static_cast<std::size_t>(s),
                                            out, threads);
    });
    raise_non_finite(bad, "permuted");
    return d;
}

py::array_t<double> row_means_ragged(const ArrayD& values, const ArrayI64& offsets, const py::object& n_threads) {
    require_ndim(values, 1, "values");
    const py::ssize_t s = offsets.ndim() == 1 ? offsets.shape(0) - 1 : -1;
    if (s < 0) throw truescore::argument_error("offsets", " must be 1-D with at least one entry");
    const std::vector<std::int64_t> o = check_shard_offsets(offsets, s, values.shape(0));
    const int threads = thread_count(n_threads);
    py::array_t<double> means(s);
    double* out = means.mutable_data();
    const std::int64_t bad = run_interruptible(static_cast<double>(values.shape(0)), [&] {
        return truescore::row_means_ragged(values.data(), o.data(), static_cast<std::size_t>(s), out, threads);
    });
    raise_non_finite(bad, "shuffled");
    return means;
}

py::tuple rank_test(double canonical, const ArrayD& permuted) {
    require_ndim(permuted, 1, "permuted_logliks");
    if (permuted.shape(0) < 1) throw truescore::argument_error("permuted_logliks", " must be non-empty");
    std::int64_t count = 0;
    double p = 0.0, mean = 0.0, sd = 0.0, z = 0.0;
    bool finite;
    {
        // Small inputs are cheaper without the GIL dance; release only when it pays.
        std::optional<py::gil_scoped_release> release;
        if (permuted.shape(0) > 4096) release.emplace();
        finite = truescore::rank_test(canonical, permuted.data(),
                                          static_cast<std::size_t>(permuted.shape(0)), &count, &p,
                                          &mean, &sd, &z);
    }
    if (!finite) throw truescore::argument_error("permuted_logliks", " contains non-finite values");
    return py::make_tuple(p, mean, sd, z);
}

}  // namespace

void bind_contamination(py::module_& m) {
    m.def("rank_test", &rank_test, py::arg("canonical"), py::arg("permuted"),
          "One exact rank test: (p_value, mean, sd, z_score).");
    m.def("rank_tests_dense", &rank_tests_dense, py::arg("canonical"), py::arg("permuted"),
          py::kw_only(), py::arg("n_threads") = py::none(),
          "Exact rank test for each row of a dense (S, m) array of permuted log-likelihoods.");
    m.def("rank_tests_ragged", &rank_tests_ragged, py::arg("canonical"), py::arg("values"),
          py::arg("offsets"), py::kw_only(), py::arg("n_threads") = py::none(),
          "Exact rank test per shard; shard i's permutations are values[offsets[i]:offsets[i+1]].");
    m.def("row_means_ragged", &row_means_ragged, py::arg("values"), py::arg("offsets"), py::kw_only(),
          py::arg("n_threads") = py::none(),
          "Mean of each ragged row, in NumPy's summation order.");
    m.def("fisher_log_sf", [](double statistic, std::int64_t n_shards) {
        if (!(statistic >= 0.0) || !std::isfinite(statistic))
            throw truescore::argument_error("statistic", " must be finite and non-negative");
        if (n_shards < 1) throw truescore::argument_error("n_shards", " must be at least 1");
        return truescore::fisher_log_sf(statistic, n_shards);
    }, py::arg("statistic"), py::arg("n_shards"),
          "log P(chi2(2k) > statistic), exact for even degrees of freedom, never underflowing.");
}
