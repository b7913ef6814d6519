// The betting confidence sequence (truescore/sequence.hpp): one reading, the incremental
// sequence of SequentialAudit, and the sequential study's first crossings.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
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
using truescore::bindings::count_at_least;
using truescore::bindings::require_ndim;
using truescore::bindings::require_unit;
using truescore::bindings::run_interruptible;

namespace {

// None -> 0 (none); else an integer >= minimum.
std::int64_t optional_count(const py::object& v, const char* name, long long minimum) {
    if (v.is_none()) return 0;
    long long n = 0;
    try {
        n = v.cast<long long>();
    } catch (const py::cast_error&) {
        throw truescore::argument_error(name, " must be an integer or None; got " + std::string(py::repr(v)));
    }
    return static_cast<std::int64_t>(count_at_least(n, name, minimum));
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
            throw truescore::argument_error("x", ": " + std::to_string(core_.size() + k) +
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
    std::size_t size() {
        Guard guard(*this);
        return core_.size();
    }
    long long work() {
        Guard guard(*this);
        return core_.work();
    }
    py::array_t<double> x() {
        Guard guard(*this);
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

py::tuple reading_tuple(const truescore::AuditReading& r) {
    return py::make_tuple(r.t, r.public_sum, r.fresh_sum, r.gap_sum, r.ends[0].low, r.ends[0].high, r.ends[0].empty,
                          r.ends[1].low, r.ends[1].high, r.ends[1].empty);
}

// SequentialAudit's state: update() takes parents its caller has validated (their public
// scores and fresh-form means, and K); update_unchecked() takes the caller's arguments as
// given and returns None unless they are float64 scores it can take as they are (public a
// float or a 1-D C-contiguous float64 array; fresh a float for one parent with K = 1, or a
// C-contiguous float64 array: a row of K scores for one parent, one score per parent, or
// (n, K)), every score in [0, 1] and not -0.0, 1 <= K < 8 and K as before, within the
// population: the fast path, whose caller then validates, raises or takes update().
class Audit {
public:
    Audit(const py::object& population_size, double alpha, const py::object& horizon, const py::object& cap)
        : population_(optional_count(population_size, "population_size", 1)),
          core_(static_cast<double>(population_), alpha, optional_count(horizon, "horizon", 1),
                optional_count(cap, "cap", 1)) {}

    py::tuple update(const ArrayD& public_scores, const ArrayD& fresh_means, long long forms) {
        require_ndim(public_scores, 1, "public");
        require_ndim(fresh_means, 1, "fresh");
        const std::size_t n = static_cast<std::size_t>(public_scores.shape(0));
        if (n == 0) throw truescore::argument_error("public", " must hold at least one parent");
        if (static_cast<std::size_t>(fresh_means.shape(0)) != n)
            throw truescore::argument_error("fresh", " must hold one mean per parent (" + std::to_string(n) + ")");
        if (forms < 1) throw truescore::argument_error("forms", " must be at least 1");
        std::vector<double> pub(public_scores.data(), public_scores.data() + n);
        std::vector<double> fr(fresh_means.data(), fresh_means.data() + n);
        require_unit(pub.data(), n, "public");
        require_unit(fr.data(), n, "fresh");
        const Lock lock(*this);
        return run(pub.data(), fr.data(), n, forms);
    }

    py::object update_unchecked(const py::object& public_scores, const py::object& fresh) {
        const Lock lock(*this);
        using Contiguous = py::array_t<double, py::array::c_style>;
        auto aligned = [](const Contiguous& a) { return reinterpret_cast<std::uintptr_t>(a.data()) % alignof(double) == 0; };
        auto usable = [](double v) { return v >= 0.0 && v <= 1.0 && !std::signbit(v); };
        double one_public = 0.0, one_fresh = 0.0;
        const double* pub = nullptr;
        const double* fr = nullptr;
        std::size_t n = 0, k = 0;
        Contiguous pub_array, fresh_array;  // keep the arrays alive
        const bool scalar = PyFloat_Check(public_scores.ptr());
        if (scalar) {
            one_public = PyFloat_AS_DOUBLE(public_scores.ptr());
            pub = &one_public;
            n = 1;
        } else if (py::isinstance<Contiguous>(public_scores)) {
            pub_array = py::reinterpret_borrow<Contiguous>(public_scores);
            if (pub_array.ndim() != 1 || !aligned(pub_array)) return py::none();
            pub = pub_array.data();
            n = static_cast<std::size_t>(pub_array.shape(0));
        } else {
            return py::none();
        }
        if (PyFloat_Check(fresh.ptr())) {
            if (n != 1) return py::none();
            one_fresh = PyFloat_AS_DOUBLE(fresh.ptr());
            fr = &one_fresh;
            k = 1;
        } else if (py::isinstance<Contiguous>(fresh)) {
            fresh_array = py::reinterpret_borrow<Contiguous>(fresh);
            if (!aligned(fresh_array)) return py::none();
            fr = fresh_array.data();
            if (fresh_array.ndim() == 1) {
                const std::size_t len = static_cast<std::size_t>(fresh_array.shape(0));
                if (scalar) k = len;             // one parent's row
                else if (len == n) k = 1;        // one score per parent
                else return py::none();
            } else if (fresh_array.ndim() == 2 && !scalar && static_cast<std::size_t>(fresh_array.shape(0)) == n) {
                k = static_cast<std::size_t>(fresh_array.shape(1));
            } else {
                return py::none();
            }
        } else {
            return py::none();
        }
        if (n == 0 || k < 1 || k >= 8 || (forms_ != 0 && static_cast<long long>(k) != forms_)) return py::none();
        if (population_ > 0 && static_cast<std::int64_t>(core_.size() + n) > population_) return py::none();
        // the scores and the fresh means in NumPy's order (add.reduce from its identity, k < 8)
        std::vector<double> pubs(n), means(n);
        const double kd = static_cast<double>(k);
        for (std::size_t i = 0; i < n; ++i) {
            if (!usable(pub[i])) return py::none();
            double s = 0.0;
            for (std::size_t j = 0; j < k; ++j) {
                const double v = fr[i * k + j];
                if (!usable(v)) return py::none();
                s += v;
            }
            pubs[i] = pub[i];
            means[i] = s / kd;
        }
        return run(pubs.data(), means.data(), n, static_cast<long long>(k));
    }

    // read without the lock (a call may be running on another thread): kept by run()
    std::size_t size() const { return t_.load(); }
    long long work() const { return work_.load(); }
    long long forms() const { return forms_.load(); }

private:
    // One call at a time: the reading releases the GIL, and another Python thread's call
    // on the same audit is refused, not run beside it.
    struct Lock {
        explicit Lock(Audit& a) : lock(a.mutex_, std::try_to_lock) {
            if (!lock.owns_lock()) throw std::runtime_error("the audit is in use by another thread's call");
        }
        std::unique_lock<std::mutex> lock;
    };
    // with the lock held
    py::tuple run(const double* pub, const double* means, std::size_t n, long long forms) {
        if (forms_ != 0 && forms != forms_)
            throw truescore::argument_error("fresh", " must have " + std::to_string(forms_) +
                                        " fresh forms per parent, as in earlier updates; got " + std::to_string(forms));
        if (population_ > 0 && static_cast<std::int64_t>(core_.size() + n) > population_) {
            // names the constructor's population_size too: a template, for the command line
            const std::string text = ": " + std::to_string(core_.size() + n) + " parents scored exceeds ";
            const std::string limit = " (" + std::to_string(population_) + ")";
            throw truescore::ArgumentError("public", "public" + text + "population_size" + limit,
                                           "{public}" + text + "{population_size}" + limit);
        }
        forms_ = forms;
        // an exact reading is a few hundred passes over the parents; an incremental one a
        // few dozen at most
        const double work = reading_work(core_.size() + n) * (16 * n >= core_.size() + n ? 2.0 : 0.2);
        struct Publish {  // the counters, however the reading ends (Ctrl-C included)
            Audit& a;
            ~Publish() {
                a.t_.store(a.core_.size());
                a.work_.store(a.core_.work());
            }
        } publish{*this};
        return reading_tuple(run_interruptible(work, [&] { return core_.update(pub, means, n); }));
    }
    std::int64_t population_;
    truescore::AuditStream core_;
    std::atomic<long long> forms_{0}, work_{0};
    std::atomic<std::size_t> t_{0};
    std::mutex mutex_;
};

py::tuple sequence_bounds(const ArrayD& x, const py::object& population_size, double alpha,
                          const py::object& horizon) {
    require_ndim(x, 1, "x");
    check_alpha(alpha);
    const std::size_t n = static_cast<std::size_t>(x.shape(0));
    if (n == 0) throw truescore::argument_error("x", " must be non-empty");
    std::vector<double> copy(x.data(), x.data() + n);
    require_unit(copy.data(), n, "x");
    const std::int64_t pop = optional_count(population_size, "population_size", 1);
    if (pop > 0 && pop < static_cast<std::int64_t>(n))
        throw truescore::argument_error("population_size", " must be at least the number of observations (" +
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
        throw truescore::argument_error("m", " must hold one candidate per row of x (" + std::to_string(rows) + ")");
    std::vector<double> xs(x.data(), x.data() + rows * n), ms(m.data(), m.data() + rows);
    require_unit(xs.data(), xs.size(), "x");
    require_unit(ms.data(), ms.size(), "m");
    const std::int64_t pop = optional_count(population_size, "population_size", 1);
    if (pop > 0 && pop < static_cast<std::int64_t>(n))
        throw truescore::argument_error("population_size", " must be at least the number of observations (" +
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
    py::class_<Audit>(m, "AuditStream",
                      "SequentialAudit's running sums and its two sequences (alpha, alpha / 2), read after "
                      "every update: (t, public_sum, fresh_sum, gap_sum, low, high, empty at alpha, the same "
                      "at alpha / 2), each sequence on the [0, 1] scale, intersected with its earlier readings.")
        .def(py::init<const py::object&, double, const py::object&, const py::object&>(), py::arg("population_size"),
             py::arg("alpha"), py::arg("horizon"), py::arg("cap"))
        .def("update", &Audit::update, py::arg("public"), py::arg("fresh_means"), py::arg("forms"),
             "Add validated parents (public scores, fresh-form means, K) and read.")
        .def("update_unchecked", &Audit::update_unchecked, py::arg("public"), py::arg("fresh"),
             "update() from SequentialAudit.update's arguments as given, or None when they are not float64 "
             "scores it can take as they are (the caller then validates).")
        .def_property_readonly("t", &Audit::size, "Parents so far.")
        .def_property_readonly("work", &Audit::work, "Candidate-steps of capital computed so far (both sequences).")
        .def_property_readonly("forms", &Audit::forms, "Fresh forms per parent (0 before the first update).");
    m.def("sequence_bounds", &sequence_bounds, py::arg("x"), py::arg("population_size"), py::arg("alpha"),
          py::arg("horizon"),
          "The betting confidence sequence after all of x (values in [0, 1]): (low, high, empty), each end "
          "searched to 1e-14 and moved 1e-12 outward (audit/_betting.py's sequence_bounds).");
    m.def(
        "sequence_projection",
        [](std::int64_t t, double estimate, double width, double half_width, double shift, const py::object& target,
           const py::object& effect, const py::object& horizon, std::int64_t limit) -> py::object {
            const double nan = std::numeric_limits<double>::quiet_NaN();
            const std::int64_t more = truescore::sequence_projection(
                t, estimate, width, half_width, shift, target.is_none() ? nan : target.cast<double>(),
                effect.is_none() ? nan : effect.cast<double>(), optional_count(horizon, "horizon", 1), limit);
            return more < 0 ? py::none() : py::object(py::int_(more));
        },
        py::arg("t"), py::arg("estimate"), py::arg("width"), py::arg("half_width"), py::arg("shift"),
        py::arg("target"), py::arg("effect"), py::arg("horizon"), py::arg("limit"),
        "SequentialAudit's projection: parents more until the shrinking half-widths would decide (a finding, "
        "or bounded by target half-width or effect size), or None when none decides by limit.");
    m.def("sequence_first_hits", &sequence_first_hits, py::arg("x"), py::arg("m"), py::arg("population_size"),
          py::arg("alpha"), py::arg("horizon"), py::arg("up") = true, py::arg("down") = true,
          "For each row of x (R, n) and its candidate m[r]: the first step (1-based) at which the up-betting "
          "(down-betting) half reaches 2/alpha or m leaves the feasible range; n + 1 for never or a half not "
          "wanted. (hit_up, hit_down), int64.");
}
