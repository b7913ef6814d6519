// The betting confidence sequence (truescore/sequence.hpp): one reading, the incremental
// sequence of SequentialAudit, and the sequential study's first crossings.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "checks.hpp"
#include "interrupt.hpp"
#include "truescore/sequence.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayD;
using truescore::bindings::check_alpha;
using truescore::bindings::require_ndim;
using truescore::bindings::run_interruptible;

namespace {

// None -> 0 (none); else an integer >= minimum.
std::int64_t optional_count(const py::object& v, const char* name, long long minimum) {
    if (v.is_none()) return 0;
    long long n = 0;
    try {
        n = v.cast<long long>();
    } catch (const py::cast_error&) {
        throw std::invalid_argument(std::string(name) + " must be an integer or None; got " + std::string(py::repr(v)));
    }
    if (n < minimum)
        throw std::invalid_argument(std::string(name) + " must be at least " + std::to_string(minimum) + "; got " +
                                    std::to_string(n));
    return static_cast<std::int64_t>(n);
}

// Observations on [0, 1]: finite and within it (the capital's factors stay positive).
void require_unit(const double* x, std::size_t n, const char* name) {
    for (std::size_t i = 0; i < n; ++i)
        if (!(x[i] >= 0.0 && x[i] <= 1.0))
            throw std::invalid_argument(std::string(name) + " must hold finite values in [0, 1]");
}

py::tuple ends_tuple(const truescore::SequenceEnds& e) { return py::make_tuple(e.low, e.high, e.empty); }

// Candidate-steps of capital: the work a reading may take, for Ctrl-C.
double reading_work(std::size_t n) { return 7.0 * 400.0 * static_cast<double>(n); }

class Sequence {
public:
    Sequence(const py::object& population_size, double alpha, const py::object& horizon)
        : population_(optional_count(population_size, "population_size", 1)),
          core_(static_cast<double>(population_), alpha,
                optional_count(horizon, "horizon", 1)) {}

    void extend(const ArrayD& x) {
        require_ndim(x, 1, "x");
        const std::size_t k = static_cast<std::size_t>(x.shape(0));
        std::vector<double> copy(x.data(), x.data() + k);  // checked, then read
        require_unit(copy.data(), k, "x");
        Guard guard(*this);
        if (population_ > 0 && static_cast<std::int64_t>(core_.size() + k) > population_)
            throw std::invalid_argument("x: " + std::to_string(core_.size() + k) +
                                        " observations exceed population_size (" + std::to_string(population_) + ")");
        core_.extend(copy.data(), k);
    }
    py::tuple bounds() {
        Guard guard(*this);
        // the ladders' replays: at most a few dozen passes over the sample
        return ends_tuple(run_interruptible(7.0 * 64.0 * static_cast<double>(core_.size()), [&] { return core_.bounds(); }));
    }
    py::tuple exact_bounds() {
        Guard guard(*this);
        return ends_tuple(run_interruptible(reading_work(core_.size()), [&] { return core_.exact_bounds(); }));
    }
    std::size_t size() const { return core_.size(); }
    long long work() const { return core_.work(); }
    py::array_t<double> x() const {
        const auto& v = core_.x();
        py::array_t<double> out(static_cast<py::ssize_t>(v.size()));
        std::copy(v.begin(), v.end(), out.mutable_data());
        return out;
    }

private:
    // One call at a time: the calls release the GIL, and another Python thread's call on
    // the same sequence is refused, not run beside it.
    struct Guard {
        explicit Guard(Sequence& s) : lock(s.mutex_, std::try_to_lock) {
            if (!lock.owns_lock())
                throw std::runtime_error("the sequence is in use by another thread's call");
        }
        std::unique_lock<std::mutex> lock;
    };
    std::int64_t population_;
    truescore::BettingSequence core_;
    std::mutex mutex_;
};

py::tuple sequence_bounds(const ArrayD& x, const py::object& population_size, double alpha,
                          const py::object& horizon) {
    require_ndim(x, 1, "x");
    check_alpha(alpha);
    const std::size_t n = static_cast<std::size_t>(x.shape(0));
    if (n == 0) throw std::invalid_argument("x must be non-empty");
    std::vector<double> copy(x.data(), x.data() + n);
    require_unit(copy.data(), n, "x");
    const std::int64_t pop = optional_count(population_size, "population_size", 1);
    if (pop > 0 && pop < static_cast<std::int64_t>(n))
        throw std::invalid_argument("population_size must be at least the number of observations (" +
                                    std::to_string(n) + "); got " + std::to_string(pop));
    const std::int64_t tuned = optional_count(horizon, "horizon", 1);
    return ends_tuple(run_interruptible(reading_work(n), [&] {
        return truescore::sequence_bounds(copy.data(), n, static_cast<double>(pop), alpha, tuned);
    }));
}

py::tuple sequence_first_hits(const ArrayD& x, const ArrayD& m, const py::object& population_size, double alpha,
                              const py::object& horizon, bool up, bool down) {
    require_ndim(x, 2, "x");
    require_ndim(m, 1, "m");
    check_alpha(alpha);
    const std::size_t rows = static_cast<std::size_t>(x.shape(0)), n = static_cast<std::size_t>(x.shape(1));
    if (static_cast<std::size_t>(m.shape(0)) != rows)
        throw std::invalid_argument("m must hold one candidate per row of x (" + std::to_string(rows) + ")");
    std::vector<double> xs(x.data(), x.data() + rows * n), ms(m.data(), m.data() + rows);
    require_unit(xs.data(), xs.size(), "x");
    require_unit(ms.data(), ms.size(), "m");
    const std::int64_t pop = optional_count(population_size, "population_size", 1);
    if (pop > 0 && pop < static_cast<std::int64_t>(n))
        throw std::invalid_argument("population_size must be at least the number of observations (" +
                                    std::to_string(n) + "); got " + std::to_string(pop));
    const std::int64_t tuned = optional_count(horizon, "horizon", 1);
    py::array_t<std::int64_t> hit_up(static_cast<py::ssize_t>(rows)), hit_down(static_cast<py::ssize_t>(rows));
    std::int64_t* pu = hit_up.mutable_data();
    std::int64_t* pd = hit_down.mutable_data();
    for (std::size_t r = 0; r < rows; ++r) pu[r] = pd[r] = static_cast<std::int64_t>(n + 1);
    run_interruptible(14.0 * static_cast<double>(rows * n), [&] {
        truescore::sequence_first_hits(xs.data(), rows, n, ms.data(), static_cast<double>(pop), alpha, tuned,
                                       up ? pu : nullptr, down ? pd : nullptr);
    });
    return py::make_tuple(hit_up, hit_down);
}

}  // namespace

void bind_sequence(py::module_& m) {
    py::class_<Sequence>(m, "ConfidenceSequence",
                         "The betting confidence sequence of a growing sample on [0, 1], carried forward by "
                         "new observations alone (audit/_betting.py's IncrementalSequence, compiled).")
        .def(py::init<const py::object&, double, const py::object&>(), py::arg("population_size"),
             py::arg("alpha"), py::arg("horizon"))
        .def("extend", &Sequence::extend, py::arg("x"), "Add observations in [0, 1], in order.")
        .def("bounds", &Sequence::bounds,
             "(low, high, empty) now, the ends outward of the exact ones by at most 1/200 of the width.")
        .def("exact_bounds", &Sequence::exact_bounds,
             "(low, high, empty) by the full search over every observation (sequence_bounds).")
        .def_property_readonly("t", &Sequence::size, "Observations so far.")
        .def_property_readonly("work", &Sequence::work, "Candidate-steps of capital computed so far.")
        .def_property_readonly("x", &Sequence::x, "The observations so far (a copy).");
    m.def("sequence_bounds", &sequence_bounds, py::arg("x"), py::arg("population_size"), py::arg("alpha"),
          py::arg("horizon"),
          "The betting confidence sequence after all of x (values in [0, 1]): (low, high, empty), each end "
          "searched to 1e-14 and moved 1e-12 outward (audit/_betting.py's sequence_bounds).");
    m.def("sequence_first_hits", &sequence_first_hits, py::arg("x"), py::arg("m"), py::arg("population_size"),
          py::arg("alpha"), py::arg("horizon"), py::arg("up") = true, py::arg("down") = true,
          "For each row of x (R, n) and its candidate m[r]: the first step (1-based) at which the up-betting "
          "(down-betting) half reaches 2/alpha or m leaves the feasible range; n + 1 for never or a half not "
          "wanted. (hit_up, hit_down), int64.");
}
