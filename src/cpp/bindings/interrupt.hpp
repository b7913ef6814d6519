// Ctrl-C for long kernels, in one place. run_interruptible runs a kernel with the GIL
// released on the calling thread itself, under a CancelPoll (parallel.hpp) whose poll
// takes the GIL for a moment about every kSignalPoll and runs Python's signal handlers.
// When one raises (Ctrl-C gives KeyboardInterrupt) the kernel's threads stop at their next
// block boundary and that Python exception is raised. The kernel keeps the calling thread
// as one of its workers, so interruptibility costs no thread and no parallel speed.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <optional>
#include <type_traits>
#include <utility>

#include "truescore/parallel.hpp"

namespace truescore::bindings {

namespace py = pybind11;

inline constexpr std::chrono::milliseconds kSignalPoll{50};

// Work (element steps) below which a call ends within a few milliseconds anyway: it runs
// without a poll (no clock reads).
inline constexpr double kInterruptibleWork = 1e6;

// The poll: Python's signal handlers, on the main thread (elsewhere CPython runs none).
// A handler's exception stays set on this thread for run_interruptible to raise.
inline bool python_signal_raised() {
    py::gil_scoped_acquire acquire;
    return PyErr_CheckSignals() != 0;
}

// kernel() with the GIL released, returning its result (kernels that write their output
// through pointers may return void); interruptible by Ctrl-C when `work` (element steps,
// an estimate) is at least kInterruptibleWork. Must be called with the GIL held.
template <class Kernel>
auto run_interruptible(double work, Kernel kernel) -> decltype(kernel()) {
    using Result = decltype(kernel());
    if constexpr (std::is_void_v<Result>) {
        run_interruptible(work, [&] {
            kernel();
            return true;
        });
        return;
    } else {
        std::optional<Result> result;
        bool interrupted = false;
        {
            py::gil_scoped_release release;
            if (work < kInterruptibleWork) {
                result.emplace(kernel());
            } else {
                CancelPoll poll(python_signal_raised, kSignalPoll);
                try {
                    result.emplace(kernel());
                } catch (const Cancelled&) {
                    interrupted = true;
                }
                // A poll that ran a raising handler after the kernel's last block (the
                // workers had finished): the kernel completed, but the handler's exception
                // is set and must be raised, not left pending under a returned result.
                if (poll.cancelled()) interrupted = true;
            }
        }
        if (interrupted) throw py::error_already_set();  // the handler's exception
        return std::move(*result);
    }
}

}  // namespace truescore::bindings
