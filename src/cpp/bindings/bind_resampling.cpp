#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "checks.hpp"
#include "interrupt.hpp"
#include "truescore/resampling.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::ArrayI64;
using truescore::bindings::ArrayU8;
using truescore::bindings::check_group_offsets;
using truescore::bindings::count_at_least;
using truescore::bindings::require_finite;
using truescore::bindings::require_length;
using truescore::bindings::require_ndim;
using truescore::bindings::snapshot;
using truescore::bindings::run_interruptible;
using truescore::bindings::output_array;
using truescore::bindings::thread_count;

namespace {

// The Rao-Wu design shared by rao_wu_replicates and rao_wu_weights: strata of at least one
// unit over n values, and per stratum m_h >= 1 and finite lambda_h and weight_h. The
// checked snapshots of the integer arrays, which the kernels read (checks.hpp: snapshot).
struct RaoWuDesign {
    std::vector<std::int64_t> offsets;
    std::vector<std::int64_t> resample_size;
    std::vector<double> lam, weight;
    std::size_t strata() const { return offsets.size() - 1; }
    // Draws per replicate, sum_h m_h (as a double: only a work estimate).
    double draws() const {
        double total = 0.0;
        for (const std::int64_t m : resample_size) total += static_cast<double>(m);
        return total;
    }
};

RaoWuDesign check_rao_wu_design(const ArrayI64& offsets, std::size_t n, const ArrayI64& resample_size,
                                const ArrayD& lam, const ArrayD& weight) {
    RaoWuDesign d{check_group_offsets(offsets, n, "offsets", 1), {}, {}, {}};
    const std::size_t h = d.strata();
    require_length(resample_size, h, "resample_size");
    require_length(lam, h, "lam");
    require_length(weight, h, "weight");
    d.resample_size = snapshot(resample_size);
    for (const std::int64_t m : d.resample_size)
        if (m < 1) throw truescore::argument_error("resample_size", " must be at least 1 in every stratum");
    d.lam = snapshot(lam);
    d.weight = snapshot(weight);
    require_finite(d.lam.data(), h, "lam");
    require_finite(d.weight.data(), h, "weight");
    return d;
}

py::tuple pattern_test(const ArrayU8& indicator, long long min_models, long long draws, std::uint64_t key0,
                       std::uint64_t key1, const py::object& n_threads) {
    require_ndim(indicator, 2, "indicator");
    const std::size_t m = static_cast<std::size_t>(indicator.shape(0));
    const std::size_t n = static_cast<std::size_t>(indicator.shape(1));
    if (m < 1 || n < 1) throw truescore::argument_error("indicator", " must have at least one model and one parent");
    if (n >= (std::size_t{1} << 31)) throw truescore::argument_error("indicator", " has too many parents");
    const std::size_t k = count_at_least(min_models, "min_models");
    if (k > m) throw truescore::argument_error("min_models", " must not exceed the number of models");
    const std::size_t d = count_at_least(draws, "draws");
    const int threads = thread_count(n_threads);
    truescore::bindings::check_memory("indicator",
                                      static_cast<double>(truescore::pattern_test_bytes(n, d, threads)) +
                                          static_cast<double>(m) * static_cast<double>(n),
                                      "use fewer parents (columns of {indicator}) or a smaller {n_threads}");
    py::array_t<std::int64_t> hist(static_cast<py::ssize_t>(n + 1));
    std::int64_t observed;
    // The statistic and the null's row counts must come from one and the same matrix.
    const std::vector<std::uint8_t> x = snapshot(indicator);
    run_interruptible(static_cast<double>(d) * static_cast<double>(m) * static_cast<double>(n), [&] {
        observed = truescore::pattern_statistic(x.data(), m, n, k);
        truescore::pattern_null_histogram(x.data(), m, n, k, d, key0, key1, threads, hist.mutable_data());
    });
    return py::make_tuple(observed, hist);
}

py::array_t<double> rao_wu_replicates(const ArrayD& values, const ArrayI64& offsets, const ArrayI64& resample_size,
                                     const ArrayD& lam, const ArrayD& weight, long long replicates,
                                     std::uint64_t key0, std::uint64_t key1, const py::object& n_threads) {
    require_ndim(values, 1, "values");
    const std::size_t n = static_cast<std::size_t>(values.shape(0));
    require_finite(values.data(), n, "values");
    const RaoWuDesign design = check_rao_wu_design(offsets, n, resample_size, lam, weight);
    const std::size_t h = design.strata();
    const std::size_t b = count_at_least(replicates, "replicates");
    const int threads = thread_count(n_threads);
    py::array_t<double> out = output_array<double>({static_cast<py::ssize_t>(b)}, "replicates");
    double* po = out.mutable_data();
    run_interruptible(static_cast<double>(b) * (static_cast<double>(n) + design.draws()), [&] {
        truescore::rao_wu_replicates(values.data(), design.offsets.data(), h, design.resample_size.data(),
                                     design.lam.data(), design.weight.data(), b, key0, key1, threads, po);
    });
    return out;
}

py::array_t<double> rao_wu_weights(const ArrayI64& offsets, const ArrayI64& resample_size, const ArrayD& lam,
                                   const ArrayD& weight, long long first, long long count, std::uint64_t key0,
                                   std::uint64_t key1) {
    require_ndim(offsets, 1, "offsets");
    if (offsets.shape(0) < 2) throw truescore::argument_error("offsets", " needs at least 2 entries");
    const std::int64_t last = offsets.data()[offsets.shape(0) - 1];
    if (last < 0) throw truescore::argument_error("offsets", " must end at the number of values");
    const std::size_t n = static_cast<std::size_t>(last);
    // The design is checked on its own snapshot, which must still end at n.
    const RaoWuDesign design = check_rao_wu_design(offsets, n, resample_size, lam, weight);
    const std::size_t h = design.strata();
    const std::size_t f = count_at_least(first, "first", 0);
    const std::size_t c = count_at_least(count, "count", 0);
    py::array_t<double> out =
        output_array<double>({static_cast<py::ssize_t>(c), static_cast<py::ssize_t>(n)}, "count");
    double* po = out.mutable_data();
    run_interruptible(static_cast<double>(c) * (static_cast<double>(n) + design.draws()), [&] {
        truescore::rao_wu_weights(design.offsets.data(), h, design.resample_size.data(), design.lam.data(),
                                  design.weight.data(), f, c, key0, key1, po);
    });
    return out;
}

py::array_t<double> bbh_replicates(const ArrayD& values, const ArrayI64& offsets, const ArrayI64& population_size,
                                  const ArrayD& weight, long long replicates, std::uint64_t key0, std::uint64_t key1,
                                  const py::object& n_threads) {
    require_ndim(values, 1, "values");
    const std::size_t n = static_cast<std::size_t>(values.shape(0));
    require_finite(values.data(), n, "values");
    const std::vector<std::int64_t> off = check_group_offsets(offsets, n, "offsets", 1);
    const std::size_t h = off.size() - 1;
    require_length(population_size, h, "population_size");
    require_length(weight, h, "weight");
    const std::vector<double> w = snapshot(weight);
    require_finite(w.data(), h, "weight");
    const std::vector<std::int64_t> pop = snapshot(population_size);
    for (std::size_t s = 0; s < h; ++s)
        if (pop[s] < off[s + 1] - off[s])
            throw truescore::argument_error("population_size", " must be at least the sample size in every stratum");
    const std::size_t b = count_at_least(replicates, "replicates");
    const int threads = thread_count(n_threads);
    py::array_t<double> out = output_array<double>({static_cast<py::ssize_t>(b)}, "replicates");
    double* po = out.mutable_data();
    run_interruptible(static_cast<double>(b) * static_cast<double>(n), [&] {
        truescore::bbh_replicates(values.data(), off.data(), h, pop.data(), w.data(), b, key0, key1, threads,
                                  po);
    });
    return out;
}

py::array_t<double> did_replicates(const ArrayD& dp_e, const ArrayD& df_e, const ArrayI64& e_offsets,
                                  const ArrayD& dp_u, const ArrayD& df_u, const ArrayI64& u_offsets,
                                  bool shared_parents, long long replicates, std::uint64_t key0,
                                  std::uint64_t key1, const py::object& n_threads) {
    require_ndim(dp_e, 1, "dp_e");
    require_ndim(dp_u, 1, "dp_u");
    const std::size_t ne = static_cast<std::size_t>(dp_e.shape(0));
    const std::size_t nu = static_cast<std::size_t>(dp_u.shape(0));
    require_length(df_e, ne, "df_e");
    require_length(df_u, nu, "df_u");
    require_finite(dp_e.data(), ne, "dp_e");
    require_finite(df_e.data(), ne, "df_e");
    require_finite(dp_u.data(), nu, "dp_u");
    require_finite(df_u.data(), nu, "df_u");
    const std::vector<std::int64_t> e_off = check_group_offsets(e_offsets, ne, "e_offsets", 1);
    const std::vector<std::int64_t> u_off = check_group_offsets(u_offsets, nu, "u_offsets", 1);
    const std::size_t m = e_off.size() - 1;
    if (u_off.size() - 1 != m)
        throw truescore::argument_error("e_offsets", " and u_offsets must describe the same number of models");
    if (shared_parents) {
        const std::int64_t *eo = e_off.data(), *uo = u_off.data();
        for (std::size_t k = 0; k < m; ++k)
            if (eo[k + 1] - eo[k] != eo[1] || uo[k + 1] - uo[k] != uo[1])
                throw truescore::argument_error("shared_parents", " needs the same parent counts for every model");
    }
    const std::size_t b = count_at_least(replicates, "replicates");
    const int threads = thread_count(n_threads);
    py::array_t<double> out = output_array<double>(
        {static_cast<py::ssize_t>(b), static_cast<py::ssize_t>(m + 1), py::ssize_t{3}}, "replicates");
    double* po = out.mutable_data();
    run_interruptible(static_cast<double>(b) * static_cast<double>(ne + nu), [&] {
        truescore::did_replicates(dp_e.data(), df_e.data(), e_off.data(), dp_u.data(), df_u.data(), u_off.data(),
                                  m, shared_parents, b, key0, key1, threads, po);
    });
    return out;
}

}  // namespace

void bind_resampling(py::module_& m) {
    m.def("pattern_test", &pattern_test, py::arg("indicator"), py::arg("min_models"), py::arg("draws"),
          py::arg("key0"), py::arg("key1"), py::kw_only(), py::arg("n_threads") = py::none(),
          "(observed, histogram): the number of parents (columns of the 0/1 matrix) where at least "
          "min_models rows are 1, and the null histogram over draws permuting each row independently.");
    m.def("rao_wu_replicates", &rao_wu_replicates, py::arg("values"), py::arg("offsets"), py::arg("resample_size"),
          py::arg("lam"), py::arg("weight"), py::arg("replicates"), py::arg("key0"), py::arg("key1"), py::kw_only(),
          py::arg("n_threads") = py::none(), "Rao-Wu rescaling bootstrap replicates of a stratified mean.");
    m.def("rao_wu_weights", &rao_wu_weights, py::arg("offsets"), py::arg("resample_size"), py::arg("lam"),
          py::arg("weight"), py::arg("first"), py::arg("count"), py::arg("key0"), py::arg("key1"),
          "Rao-Wu replicates [first, first + count) as a count x n matrix of unit weights.");
    m.def("bbh_replicates", &bbh_replicates, py::arg("values"), py::arg("offsets"), py::arg("population_size"),
          py::arg("weight"), py::arg("replicates"), py::arg("key0"), py::arg("key1"), py::kw_only(),
          py::arg("n_threads") = py::none(),
          "Booth-Butler-Hall pseudo-population bootstrap replicates (recentred) of a stratified mean.");
    m.def("did_replicates", &did_replicates, py::arg("dp_e"), py::arg("df_e"), py::arg("e_offsets"), py::arg("dp_u"),
          py::arg("df_u"), py::arg("u_offsets"), py::arg("shared_parents"), py::arg("replicates"), py::arg("key0"),
          py::arg("key1"), py::kw_only(), py::arg("n_threads") = py::none(),
          "(replicates, models + 1, 3) bootstrap replicates of the public DiD, fresh DiD and visible gap.");
}
