#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "checks.hpp"
#include "interrupt.hpp"
#include "truescore/calibration.hpp"
#include "truescore/parallel.hpp"
#include "truescore/sampling.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::ArrayI64;
using truescore::bindings::check_alpha;
using truescore::bindings::interval_method;
using truescore::bindings::nonnegative_sizes;
using truescore::bindings::require_ndim;
using truescore::bindings::snapshot;
using truescore::bindings::thread_count;

namespace {

truescore::TaskRange task_range(std::uint64_t key0, std::uint64_t key1, std::uint64_t task_offset,
                                long replications, long block, long task_begin, long task_end) {
    if (replications < 1) throw truescore::argument_error("replications", " must be at least 1");
    if (block < 1) throw truescore::argument_error("block", " must be at least 1");
    if (task_begin < 0 || task_end < task_begin) throw std::invalid_argument("bad task range");
    return {key0, key1, task_offset, static_cast<std::size_t>(replications), static_cast<std::size_t>(block),
            static_cast<std::size_t>(task_begin), static_cast<std::size_t>(task_end)};
}

// Per-task partial sums of one study kernel: an array of shape (tasks, row_shape...),
// filled by kernel(setting, range, out, threads) with the GIL released, stopped by Ctrl-C
// like every long kernel (interrupt.hpp): the engine's chunks size the progress bar and
// the checkpoints, not the wait for a Ctrl-C. Every call polls (a chunk is ~0.1 s of work).
template <class Setting>
py::array_t<double> run_tasks(void (*kernel)(const Setting&, const truescore::TaskRange&, double*, int),
                              const Setting& setting, const truescore::TaskRange& range, int threads,
                              std::vector<py::ssize_t> row_shape) {
    row_shape.insert(row_shape.begin(), static_cast<py::ssize_t>(range.task_end - range.task_begin));
    py::array_t<double> out(row_shape);
    double* po = out.mutable_data();
    truescore::bindings::run_interruptible(truescore::bindings::kInterruptibleWork,
                                           [&] { kernel(setting, range, po, threads); });
    return out;
}

py::array_t<std::int64_t> proportional_allocation(const ArrayI64& stratum_sizes, long n) {
    const auto s = nonnegative_sizes(stratum_sizes, "stratum_sizes");
    if (n < 0) throw truescore::argument_error("n", " must be non-negative");
    const auto a = truescore::proportional_allocation(s.data(), s.size(), static_cast<std::size_t>(n));
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i) out.mutable_data()[i] = static_cast<std::int64_t>(a[i]);
    return out;
}

py::array_t<double> coverage_tasks(const ArrayD& values, const ArrayI64& offsets, const ArrayI64& allocation,
                                   const ArrayD& lattice_values, const ArrayI64& lattice_counts,
                                   const ArrayI64& methods, double alpha, double truth,
                                   std::uint64_t key0, std::uint64_t key1,
                                   std::uint64_t task_offset, long replications, long block, long task_begin,
                                   long task_end, const py::object& n_threads) {
    require_ndim(values, 1, "values");
    require_ndim(lattice_values, 1, "lattice_values");
    require_ndim(lattice_counts, 2, "lattice_counts");
    require_ndim(methods, 1, "methods");
    check_alpha(alpha);
    const auto off = nonnegative_sizes(offsets, "offsets");
    const auto alloc = nonnegative_sizes(allocation, "allocation");
    const std::size_t N = static_cast<std::size_t>(values.shape(0));
    if (off.size() != alloc.size() + 1 || alloc.empty())
        throw truescore::argument_error("offsets", " must hold one entry per stratum + 1 (at least one stratum)");
    const std::size_t V = static_cast<std::size_t>(lattice_values.shape(0));
    if (V > 0 && (static_cast<std::size_t>(lattice_counts.shape(0)) != alloc.size() ||
                  static_cast<std::size_t>(lattice_counts.shape(1)) != V))
        throw truescore::argument_error("lattice_counts", " must have shape (n_strata, len(lattice_values))");
    std::vector<truescore::IntervalMethod> codes;
    for (py::ssize_t k = 0; k < methods.shape(0); ++k) codes.push_back(interval_method(static_cast<long>(methods.data()[k])));
    const auto range = task_range(key0, key1, task_offset, replications, block, task_begin, task_end);
    const int threads = thread_count(n_threads);
    // The core checks the counts and then draws from them: it must read our copy.
    const std::vector<std::int64_t> counts = snapshot(lattice_counts);
    const truescore::CoverageSetting setting{values.data(), N, off.data(), alloc.data(), alloc.size(),
                                             lattice_values.data(), counts.data(), V,
                                             codes.data(), codes.size(), alpha, truth};
    return run_tasks(truescore::coverage_tasks, setting, range, threads,
                     {static_cast<py::ssize_t>(codes.size()), truescore::kCoverageWidth});
}

py::array_t<double> detection_tasks(const ArrayD& public_labels, const ArrayD& fresh_labels, long n, bool relabel,
                                    double flip_public, double flip_fresh, long guardrail, long fallback,
                                    double alpha, std::uint64_t key0, std::uint64_t key1, std::uint64_t task_offset,
                                    long replications, long block, long task_begin, long task_end,
                                    const py::object& n_threads) {
    require_ndim(public_labels, 1, "public");
    require_ndim(fresh_labels, 2, "fresh");
    check_alpha(alpha);
    const std::size_t N = static_cast<std::size_t>(public_labels.shape(0));
    if (static_cast<std::size_t>(fresh_labels.shape(0)) != N) throw truescore::argument_error("fresh", " must have one row per parent");
    if (!(flip_public >= 0.0 && flip_public <= 1.0) || !(flip_fresh >= 0.0 && flip_fresh <= 1.0))
        throw std::invalid_argument("flip probabilities must lie in [0, 1]");
    if (guardrail < 0) throw truescore::argument_error("guardrail", " must be non-negative");
    if (n < 0) throw truescore::argument_error("n", " must be non-negative");
    const auto range = task_range(key0, key1, task_offset, replications, block, task_begin, task_end);
    const int threads = thread_count(n_threads);
    // The core checks the labels are 0/1 and then indexes a table with them: it must read
    // our copies, or another thread writing a 7 between the check and the read would send
    // it out of bounds.
    const std::vector<double> pub = snapshot(public_labels), fresh = snapshot(fresh_labels);
    const truescore::DetectionSetting setting{pub.data(), fresh.data(), N,
                                              static_cast<std::size_t>(fresh_labels.shape(1)),
                                              static_cast<std::size_t>(n), relabel, flip_public, flip_fresh,
                                              static_cast<std::size_t>(guardrail), interval_method(fallback, "fallback"), alpha};
    return run_tasks(truescore::detection_tasks, setting, range, threads, {truescore::kDetectionWidth});
}

py::array_t<double> budget_tasks(const ArrayD& gaps, long n, const ArrayI64& pair_high, const ArrayI64& pair_low,
                                 long method, double alpha, std::uint64_t key0, std::uint64_t key1,
                                 std::uint64_t task_offset, long replications, long block, long task_begin,
                                 long task_end, const py::object& n_threads) {
    require_ndim(gaps, 2, "gaps");
    require_ndim(pair_high, 1, "pair_high");
    require_ndim(pair_low, 1, "pair_low");
    check_alpha(alpha);
    if (pair_high.shape(0) != pair_low.shape(0)) throw std::invalid_argument("pair_high and pair_low must match");
    if (n < 0) throw truescore::argument_error("n", " must be non-negative");
    const auto range = task_range(key0, key1, task_offset, replications, block, task_begin, task_end);
    const int threads = thread_count(n_threads);
    // Indices the core checks and then reads: it must read our copies.
    const std::vector<std::int64_t> high = snapshot(pair_high), low = snapshot(pair_low);
    const truescore::BudgetSetting setting{gaps.data(), static_cast<std::size_t>(gaps.shape(0)),
                                           static_cast<std::size_t>(gaps.shape(1)), static_cast<std::size_t>(n),
                                           high.data(), low.data(),
                                           static_cast<std::size_t>(pair_high.shape(0)), interval_method(method), alpha};
    return run_tasks(truescore::budget_tasks, setting, range, threads, {truescore::kBudgetWidth});
}

}  // namespace

void bind_calibration(py::module_& m) {
    // Each task row's layout, by name (truescore_fast.studies._engine builds its IntEnums from these).
    py::dict coverage, detection, budget;
    coverage["COVERED"] = static_cast<std::size_t>(truescore::kCovered);
    coverage["HALF_WIDTH"] = static_cast<std::size_t>(truescore::kHalfWidth);
    coverage["HALF_WIDTH_SQUARES"] = static_cast<std::size_t>(truescore::kHalfWidthSquares);
    detection["CLAIMS"] = static_cast<std::size_t>(truescore::kClaims);
    detection["REJECTIONS"] = static_cast<std::size_t>(truescore::kRejections);
    detection["DELTA_HAT"] = static_cast<std::size_t>(truescore::kDeltaHat);
    budget["HALF_WIDTH"] = static_cast<std::size_t>(truescore::kBudgetHalfWidth);
    budget["HALF_WIDTH_SQUARES"] = static_cast<std::size_t>(truescore::kBudgetHalfWidthSquares);
    budget["EXACT_ORDER"] = static_cast<std::size_t>(truescore::kExactOrder);
    budget["PAIRS_CORRECT"] = static_cast<std::size_t>(truescore::kPairsCorrect);
    budget["PAIRS_CORRECT_SQUARES"] = static_cast<std::size_t>(truescore::kPairsCorrectSquares);
    m.attr("COVERAGE_SUMS") = coverage;
    m.attr("DETECTION_SUMS") = detection;
    m.attr("BUDGET_SUMS") = budget;
    m.attr("CALIBRATION_BLOCK") = truescore::kCalibrationBlock;
    m.def("proportional_allocation", &proportional_allocation, py::arg("stratum_sizes"), py::arg("n"),
          "Largest-remainder proportional allocation of n over strata.");
    m.def("coverage_tasks", &coverage_tasks, py::arg("values"), py::arg("offsets"), py::arg("allocation"),
          py::arg("lattice_values"), py::arg("lattice_counts"), py::arg("methods"), py::arg("alpha"),
          py::arg("truth"), py::arg("key0"), py::arg("key1"),
          py::arg("task_offset"), py::arg("replications"), py::arg("block"), py::arg("task_begin"),
          py::arg("task_end"), py::kw_only(), py::arg("n_threads") = py::none(),
          "Per-task partial sums (covered, sum half-width, sum squares) of a coverage study.");
    m.def("detection_tasks", &detection_tasks, py::arg("public"), py::arg("fresh"), py::arg("n"),
          py::arg("relabel"), py::arg("flip_public"), py::arg("flip_fresh"), py::arg("guardrail"),
          py::arg("fallback"), py::arg("alpha"), py::arg("key0"), py::arg("key1"), py::arg("task_offset"),
          py::arg("replications"), py::arg("block"), py::arg("task_begin"), py::arg("task_end"), py::kw_only(),
          py::arg("n_threads") = py::none(),
          "Per-task partial sums (interval claims, test rejections, sum of Delta-hat) of a detection study.");
    m.def("budget_tasks", &budget_tasks, py::arg("gaps"), py::arg("n"), py::arg("pair_high"), py::arg("pair_low"),
          py::arg("method"), py::arg("alpha"), py::arg("key0"), py::arg("key1"), py::arg("task_offset"),
          py::arg("replications"), py::arg("block"), py::arg("task_begin"), py::arg("task_end"), py::kw_only(),
          py::arg("n_threads") = py::none(),
          "Per-task partial sums of a budgeted-audit study.");
}
