// The _core.testing submodule: hooks that expose internal samplers, the pool and the
// vector switch so tests can check them against NumPy references. Not used by the
// package; compiled into every build (why: CMakeLists.txt, docs/developer.md).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "arrays.hpp"
#include "checks.hpp"
#include "interrupt.hpp"
#include "truescore/betting.hpp"
#include "truescore/compare.hpp"
#include "truescore/contamination.hpp"
#include "truescore/cpu_budget.hpp"
#include "truescore/numeric.hpp"
#include "truescore/parallel.hpp"
#include "truescore/random.hpp"
#include "truescore/sampling.hpp"
#include "truescore/signflip.hpp"

namespace py = pybind11;
using truescore::bindings::ArrayI64;
using truescore::bindings::nonnegative_sizes;

void bind_constat_testing(py::module_& t);

namespace {

// design: 0 simple random, 1 stratified, 2 with replacement, 3 Bernoulli. `draws` samples
// in sequence from the stream of `task`. Fixed-size designs return (draws, n) positions;
// Bernoulli returns a (draws, N) 0/1 inclusion mask.
py::array sample_indices(long design, long population_size, long n, const ArrayI64& offsets,
                         const ArrayI64& allocation, double probability, std::uint64_t key0,
                         std::uint64_t key1, std::uint64_t task, long draws) {
    if (population_size < 1) throw std::invalid_argument("population_size must be at least 1");
    if (draws < 0) throw std::invalid_argument("draws must be non-negative");
    const std::size_t N = static_cast<std::size_t>(population_size), R = static_cast<std::size_t>(draws);
    truescore::Philox rng = truescore::Philox::for_task(key0, key1, task);
    if (design == 3) {
        if (!(probability >= 0.0 && probability <= 1.0)) throw std::invalid_argument("probability must lie in [0, 1]");
        py::array_t<std::uint8_t> mask({R, N});
        std::uint8_t* pm = mask.mutable_data();
        std::vector<std::uint32_t> buf(N);
        {
            py::gil_scoped_release release;
            std::fill(pm, pm + R * N, 0);
            for (std::size_t r = 0; r < R; ++r) {
                const std::size_t m = truescore::draw_bernoulli(rng, N, probability, buf.data());
                for (std::size_t i = 0; i < m; ++i) pm[r * N + buf[i]] = 1;
            }
        }
        return std::move(mask);
    }
    if (n < 0 || (design != 2 && n > population_size)) throw std::invalid_argument("n must lie in [0, population_size]");
    const std::size_t m = static_cast<std::size_t>(n);
    std::vector<std::size_t> off, alloc;
    if (design == 1) {
        off = nonnegative_sizes(offsets, "offsets");
        alloc = nonnegative_sizes(allocation, "allocation");
        if (off.size() != alloc.size() + 1)
            throw std::invalid_argument("offsets must hold one entry per stratum + 1");
        if (truescore::check_strata(off.data(), alloc.size(), alloc.data(), N) != m)
            throw std::invalid_argument("allocation must sum to n");
    } else if (design != 0 && design != 2) {
        throw std::invalid_argument("design code must be 0..3");
    }
    py::array_t<std::int64_t> out({R, m});
    std::int64_t* po = out.mutable_data();
    {
        py::gil_scoped_release release;
        truescore::FisherYatesSampler fy(design == 2 ? 0 : N);
        std::vector<std::uint32_t> buf(m);
        for (std::size_t r = 0; r < R; ++r) {
            if (design == 0) fy.draw(rng, m, buf.data());
            else if (design == 1) truescore::draw_stratified(fy, rng, off.data(), alloc.size(), alloc.data(), buf.data());
            else truescore::draw_with_replacement(rng, N, m, buf.data());
            for (std::size_t i = 0; i < m; ++i) po[r * m + i] = buf[i];
        }
    }
    return std::move(out);
}

py::array_t<std::int64_t> hypergeometric_counts(const ArrayI64& counts, long n, std::uint64_t key0,
                                                std::uint64_t key1, std::uint64_t task, long draws) {
    const auto c = nonnegative_sizes(counts, "counts");
    const std::vector<std::int64_t> snap(c.begin(), c.end());  // the checked copy, not the caller's buffer
    std::size_t total = 0;
    for (auto x : c) total += x;
    if (n < 0 || static_cast<std::size_t>(n) > total) throw std::invalid_argument("n must lie in [0, sum(counts)]");
    if (draws < 0) throw std::invalid_argument("draws must be non-negative");
    const std::size_t R = static_cast<std::size_t>(draws), V = c.size();
    py::array_t<std::int64_t> out({R, V});
    std::int64_t* po = out.mutable_data();
    {
        py::gil_scoped_release release;
        truescore::Philox rng = truescore::Philox::for_task(key0, key1, task);
        truescore::HypergeometricSampler hg(total);
        for (std::size_t r = 0; r < R; ++r)
            hg.draw_counts(rng, snap.data(), V, static_cast<std::size_t>(n), po + r * V);
    }
    return out;
}

py::array_t<std::int64_t> binomial_sample(std::int64_t n, double p, std::int64_t size,
                                          std::uint64_t key0, std::uint64_t key1) {
    if (size < 0) throw std::invalid_argument("size must be non-negative");
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(size));
    std::int64_t* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        truescore::binomial_sample(n, p, static_cast<std::size_t>(size), key0, key1, o);
    }
    return out;
}

// sum(sizes) words, written by take(out, count) for each run count = sizes[i] in turn.
template <class Take>
py::array_t<std::uint64_t> in_runs(const ArrayI64& sizes, Take take) {
    const auto parts = nonnegative_sizes(sizes, "sizes");
    std::size_t total = 0;
    for (auto c : parts) total += c;
    py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(total));
    std::uint64_t* p = out.mutable_data();
    for (auto c : parts) {
        take(p, c);
        p += c;
    }
    return out;
}

// Per-block sums of `values` over a loop of `blocks` tasks on n_threads threads (task t
// sums values[t * per .. (t + 1) * per)): through parallel_for_blocks (the pool), or, with
// pool false, through the loop parallel_for_blocks ran before issue 24 -- a std::thread
// started and joined per block on every call, the caller running the last -- kept here
// only as the benchmark's baseline for the pool. Same partition, so the same sums.
py::array_t<double> parallel_block_sums(const truescore::bindings::ArrayD& values, std::size_t blocks,
                                        int n_threads, bool pool, long calls) {
    if (blocks == 0 || values.ndim() != 1 || static_cast<std::size_t>(values.size()) % blocks != 0)
        throw std::invalid_argument("values must be 1-D with a multiple of blocks elements");
    if (calls < 1) throw std::invalid_argument("calls must be at least 1");
    const double* v = values.data();
    const std::size_t per = static_cast<std::size_t>(values.size()) / blocks;
    py::array_t<double> out(static_cast<py::ssize_t>(blocks));
    double* o = out.mutable_data();
    auto body = [&](std::size_t begin, std::size_t end) {
        for (std::size_t t = begin; t < end; ++t) {
            double s = 0.0;
            for (std::size_t i = t * per; i < (t + 1) * per; ++i) s += v[i];
            o[t] = s;
        }
    };
    py::gil_scoped_release release;
    for (long c = 0; c < calls; ++c) {
        if (pool) {
            truescore::parallel_for_blocks(blocks, n_threads, 1, body);
            continue;
        }
        const std::size_t workers = std::min<std::size_t>(
            static_cast<std::size_t>(truescore::resolve_threads(n_threads)), blocks);
        const std::size_t chunk = blocks / workers, extra = blocks % workers;
        std::vector<std::thread> threads;
        std::size_t begin = 0;
        for (std::size_t w = 0; w < workers; ++w) {
            const std::size_t end = begin + chunk + (w < extra ? 1 : 0);
            if (w + 1 < workers)
                threads.emplace_back(body, begin, end);
            else
                body(begin, end);
            begin = end;
        }
        for (auto& t : threads) t.join();
    }
    return out;
}

// What the pool did with one loop of `tasks` tasks on n_threads threads, written to marks
// (int64, C order, shape (tasks, 4), writable: read it after an interrupt too). Task t adds
// 1 to marks[t, 0] when it starts (after a stop check) and 1 to marks[t, 1] when it runs on
// a pool worker. Then, by mode:
//   "busy":   waits block_ms, in 1 ms steps with a stop check each, or until stop[0] is
//             non-zero (another thread holds the loop's workers for exactly as long as it
//             likes);
//   "throw":  odd tasks throw ValueError("pool probe: task t");
//   "nested": waits as "busy" does, then runs a loop of `tasks` inner tasks on n_threads
//             threads, each waiting so too; inner tasks on the outer task's thread count
//             in marks[t, 2], elsewhere in marks[t, 3].
// Runs as the kernels do: GIL released, interruptible by Ctrl-C (always polled).
void pool_probe(const std::string& mode, const py::object& marks, std::int64_t tasks, int n_threads,
                double block_ms, const py::object& stop) {
    using Marks = py::array_t<std::int64_t, py::array::c_style>;
    enum class Mode { busy, fail, nested };
    Mode kind{};
    if (mode == "busy")
        kind = Mode::busy;
    else if (mode == "throw")
        kind = Mode::fail;
    else if (mode == "nested")
        kind = Mode::nested;
    else
        throw std::invalid_argument("mode must be 'busy', 'throw' or 'nested'");
    if (tasks < 1 || tasks > 4096) throw std::invalid_argument("tasks must be in [1, 4096]");
    if (!(block_ms >= 0.0 && block_ms <= 600000.0))
        throw std::invalid_argument("block_ms must be in [0, 600000]");
    // The array itself, never a converted copy (the kernel writes and reads it in place).
    const auto check_cells = [](py::handle h, const char* name, py::ssize_t rows, py::ssize_t cols) {
        const bool ok = py::isinstance<Marks>(h) && [&] {
            const auto a = py::reinterpret_borrow<py::array>(h);
            return a.writeable() && a.ndim() == (cols ? 2 : 1) && a.shape(0) == rows && (!cols || a.shape(1) == cols);
        }();
        if (!ok)
            throw std::invalid_argument(std::string(name) + " must be a writable C-ordered int64 array of the "
                                        "shape the docstring gives");
        return static_cast<std::int64_t*>(py::reinterpret_borrow<py::array>(h).mutable_data());
    };
    std::int64_t* m = check_cells(marks, "marks", tasks, 4);
    const std::int64_t never = 0;
    const std::int64_t* halt = stop.is_none() ? &never : check_cells(stop, "stop", 1, 0);
    const auto n = static_cast<std::size_t>(tasks);
    const auto add = [](std::int64_t* cell) { __atomic_fetch_add(cell, 1, __ATOMIC_RELAXED); };
    const auto hold = [&] {
        const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(block_ms);
        while (std::chrono::steady_clock::now() < until && __atomic_load_n(halt, __ATOMIC_RELAXED) == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            truescore::throw_if_cancelled();
        }
    };
    auto body = [&](std::size_t begin, std::size_t end) {
        for (std::size_t t = begin; t < end; ++t) {
            truescore::throw_if_cancelled();
            std::int64_t* row = m + 4 * t;
            add(row);
            if (truescore::detail::ThreadPool::on_worker()) add(row + 1);
            if (kind == Mode::fail) {
                if (t % 2 == 1) throw std::invalid_argument("pool probe: task " + std::to_string(t));
                continue;
            }
            hold();
            if (kind == Mode::nested) {
                const std::thread::id outer = std::this_thread::get_id();
                truescore::parallel_for_blocks(n, n_threads, 1, [&](std::size_t b, std::size_t e) {
                    for (std::size_t u = b; u < e; ++u) {
                        add(row + (std::this_thread::get_id() == outer ? 2 : 3));
                        hold();
                    }
                });
            }
        }
    };
    truescore::bindings::run_interruptible(
        truescore::bindings::kInterruptibleWork, [&] { truescore::parallel_for_blocks(n, n_threads, 1, body); });
}

}  // namespace

void bind_portable_testing(py::module_& t);  // bind_portable.cpp

void bind_testing(py::module_& m) {
    py::module_ t = m.def_submodule("testing", "Test-only hooks into the compiled core's samplers (internal).");
    bind_constat_testing(t);
    t.def("sample_indices", &sample_indices, py::arg("design"), py::arg("population_size"), py::arg("n"),
          py::arg("offsets"), py::arg("allocation"), py::arg("probability"), py::arg("key0"), py::arg("key1"),
          py::arg("task"), py::arg("draws"),
          "Survey samples from one task's stream (design 0 srs, 1 stratified, 2 with replacement, 3 Bernoulli).");
    t.def("hypergeometric_counts", &hypergeometric_counts, py::arg("counts"), py::arg("n"), py::arg("key0"),
          py::arg("key1"), py::arg("task"), py::arg("draws"),
          "Multivariate hypergeometric counts per category, draws in sequence from one task's stream.");
    t.def("binomial_sample", &binomial_sample, py::arg("n"), py::arg("p"), py::arg("size"),
          py::arg("key0"), py::arg("key1"),
          "size Binomial(n, p) variates from Philox task 0 (the bootstrap's sampler; for tests).");
    t.def(
        "betting_interval_bisection",
        [](const truescore::bindings::ArrayD& d, double population_size, double alpha, bool bisection) {
            if (d.ndim() != 1 || d.size() < 2) throw std::invalid_argument("d must be 1-D with at least 2 gaps");
            const double* p = d.data();
            const std::size_t n = static_cast<std::size_t>(d.size());
            truescore::GapInterval iv{};
            {
                py::gil_scoped_release release;
                iv = bisection ? truescore::betting_interval_bisection(p, n, population_size, alpha)
                               : truescore::betting_interval(p, n, population_size, alpha);
            }
            return py::make_tuple(iv.low, iv.high);
        },
        py::arg("d"), py::arg("population_size"), py::arg("alpha"), py::arg("bisection") = true,
        "(low, high) of the betting interval by the plain bisection to 1e-9 (population_size 0: "
        "none), the reference betting_interval's faster search reproduces; bisection=False runs "
        "that search through this same thin call (no validation), for kernel-to-kernel timing.");
    t.def("simd_level", &truescore::simd::cap_level, py::arg("request") = -1,
          "The one switch of the vector kernels: the widest level that runs (3 AVX-512, 2 AVX, 1 "
          "SSE2, 0 plain loops; every level gives the same bits). request >= 0 caps it at that "
          "level process-wide, for tests, never while a kernel runs; returns the level in use.");
    t.def("betting_vector_level", &truescore::betting_vector_level,
          "The vector kernel the betting interval runs now: 2 AVX, 1 SSE2, 0 plain loops (simd_level "
          "chooses, up to what the build has).");
    t.def("rank_vector_path", &truescore::rank_tests_vector_path,
          "The kernel the rank tests run now: 'avx512', 'avx', 'sse2' or 'plain' (simd_level "
          "chooses; every one gives the same bits).");
    t.def("normal_quantile", &truescore::normal_quantile, py::arg("p"),
          "The core's standard normal quantile Phi^{-1}(p) (NaN outside (0, 1)).");
    t.def("cgroup_cpu_quota", &truescore::cpu_budget_detail::cgroup_quota, py::arg("proc_cgroup"),
          py::arg("sys_root"),
          "The CPU quota (rounded up; 0: none) the default thread count reads, from a file in "
          "/proc/self/cgroup's format and a cgroup file-system root (fake ones, for tests).");
    t.def(
        "input_alignment",
        [](const truescore::bindings::ArrayD& d, const truescore::bindings::ArrayStrided& s,
           const truescore::bindings::ArrayI64& i) {
            const auto misalignment = [](const void* p, std::size_t align) {
                return static_cast<int>(reinterpret_cast<std::uintptr_t>(p) % align);
            };
            return py::make_tuple(misalignment(d.data(), alignof(double)), misalignment(s.data(), alignof(double)),
                                  misalignment(i.data(), alignof(std::int64_t)));
        },
        py::arg("d"), py::arg("strided"), py::arg("i"),
        "How far the data a kernel receives for an ArrayD, an ArrayStrided and an ArrayI64 argument "
        "is from its type's alignment (the array policy makes all three 0).");
    t.def("cpu_budget", &truescore::cpu_budget,
          "The usable CPUs now (affinity and quota), read afresh (default_threads is read once).");
    t.def(
        "sign_flip_select",
        [](const truescore::bindings::ArrayD& values, const ArrayI64& ranks) {
            std::vector<double> x = truescore::bindings::snapshot(values);
            const std::vector<std::int64_t> k = truescore::bindings::snapshot(ranks);
            std::vector<double> out(k.size());
            truescore::bindings::run_interruptible(truescore::bindings::kInterruptibleWork, [&] {
                const std::size_t m = truescore::detail::drop_nans(x.data(), x.size());
                for (std::size_t i = 0; i < k.size(); ++i) {
                    if (k[i] < 0 || static_cast<std::size_t>(k[i]) >= m)
                        throw std::invalid_argument("ranks must be in [0, the count of non-NaN values)");
                    out[i] = truescore::detail::select_nth(x.data(), static_cast<std::size_t>(k[i]), m);
                }
            });
            return py::array_t<double>(static_cast<py::ssize_t>(out.size()), out.data());
        },
        py::arg("values"), py::arg("ranks"),
        "sign_flip_test's passes after its kernel, on a copy of values: the NaNs dropped, then the "
        "value of each rank in turn (0-based, among the rest; the array reordered by each "
        "selection, as the test's two are), each pass checking for Ctrl-C every 2^16 entries and "
        "nothing else between them. Interruptible by Ctrl-C.");
    t.def("pool_workers", &truescore::pool_workers,
          "Worker threads the process-wide pool holds (0 before the first parallel loop).");
    t.def("pool_probe", &pool_probe, py::arg("mode"), py::arg("marks"), py::arg("tasks"), py::arg("n_threads"),
          py::arg("block_ms") = 0.0, py::arg("stop") = py::none(),
          "One parallel loop of `tasks` probe tasks (mode 'busy', 'throw' or 'nested'), recording in "
          "marks (int64, shape (tasks, 4)) per task: starts, starts on a pool worker, and for 'nested' "
          "the inner tasks run on the outer task's thread and elsewhere. 'busy' and 'nested' tasks (and "
          "the inner ones) wait block_ms or until stop[0] (a writable int64 array of shape (1,), if "
          "given) is non-zero; odd 'throw' tasks raise ValueError. Interruptible by Ctrl-C.");
    t.def("parallel_block_sums", &parallel_block_sums, py::arg("values"), py::arg("blocks"),
          py::arg("n_threads"), py::arg("pool") = true, py::arg("calls") = 1,
          "Per-block sums of values over `blocks` tasks, `calls` times: through the pool, or with "
          "pool=False by starting a std::thread per block per call (the loop before issue 24).");
    t.def(
        "philox_raw",
        [](std::uint64_t key0, std::uint64_t key1, std::uint64_t task, py::ssize_t n) {
            if (n < 0) throw std::invalid_argument("n must be non-negative");
            py::array_t<std::uint64_t> out(n);
            auto* p = out.mutable_data();
            truescore::Philox gen = truescore::Philox::for_task(key0, key1, task);
            for (py::ssize_t i = 0; i < n; ++i) p[i] = gen.next_u64();
            return out;
        },
        py::arg("key0"), py::arg("key1"), py::arg("task"), py::arg("n"),
        "First n raw 64-bit outputs of task `task`'s Philox4x64-10 stream: "
        "numpy.random.Philox(key=[key0, key1], counter=[0, 0, task, 0]).random_raw(n).");
    t.def(
        "philox_words",
        [](std::uint64_t key0, std::uint64_t key1, std::uint64_t task, const ArrayI64& sizes) {
            truescore::Philox gen = truescore::Philox::for_task(key0, key1, task);
            return in_runs(sizes, [&](std::uint64_t* p, std::size_t c) { gen.next_words(p, c); });
        },
        py::arg("key0"), py::arg("key1"), py::arg("task"), py::arg("sizes"),
        "Raw words of task `task`'s stream taken by Philox::next_words in runs of sizes[i].");
    t.def(
        "packed_draws",
        [](std::uint64_t n, std::uint64_t key0, std::uint64_t key1, std::uint64_t task, const ArrayI64& sizes) {
            if (n < 1) throw std::invalid_argument("n must be at least 1");
            truescore::Philox gen = truescore::Philox::for_task(key0, key1, task);
            truescore::PackedIndexSampler pick(gen, n);
            return in_runs(sizes, [&](std::uint64_t* p, std::size_t c) { pick.fill(p, c); });
        },
        py::arg("n"), py::arg("key0"), py::arg("key1"), py::arg("task"), py::arg("sizes"),
        "Uniform integers on [0, n) from one PackedIndexSampler on task `task`'s stream, "
        "taken by fill() in runs of sizes[i].");
    bind_portable_testing(t);
}
